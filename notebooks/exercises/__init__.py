"""Exercises for notebook 07: write the piece, then run real checks against it.

Each ``check_*`` function runs a set of checks against the function you give it and
prints one line per check (passed, or what went wrong); it never raises, so a
half-written answer shows you where it stands.  ``show_solution(name)`` prints a
reference answer, on demand.
"""

from exercises.checks import check_next_slot, check_parse_field, check_pop_due, show_solution

__all__ = ["check_next_slot", "check_parse_field", "check_pop_due", "show_solution"]
