"""Reference answers for notebook 07 (``show_solution(name)`` prints one)."""

from exercises.solutions.next_slot import next_slot
from exercises.solutions.parse_field import parse_field
from exercises.solutions.pop_due import pop_due

__all__ = ["next_slot", "parse_field", "pop_due"]
