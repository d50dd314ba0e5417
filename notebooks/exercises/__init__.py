"""Exercises for notebook 07: write the piece, then run real checks against it.

Each ``check_*`` function runs a set of checks against the code you give it and
prints one line per check (passed, or what went wrong); it never raises, so a
half-written answer shows you where it stands.  Reference answers live in
``exercises/solutions/``: load one into a cell with ``%load``, when you want it.
"""

from exercises.checks import check_task_queue, check_wakes_for_a_push
from exercises.pause_checks import check_runs_after_resume
from exercises.retry_checks import check_retry_at
from exercises.schedule_checks import check_next_slot, check_parse_field

__all__ = [
    "check_next_slot",
    "check_parse_field",
    "check_retry_at",
    "check_runs_after_resume",
    "check_task_queue",
    "check_wakes_for_a_push",
]
