"""Reference answers for notebook 07 (``%load exercises/solutions/NAME.py`` shows one)."""

from exercises.solutions.next_slot import next_slot
from exercises.solutions.parse_field import parse_field
from exercises.solutions.retry_at import retry_at
from exercises.solutions.runs_after_resume import runs_after_resume
from exercises.solutions.task_queue import TaskQueue

__all__ = ["TaskQueue", "next_slot", "parse_field", "retry_at", "runs_after_resume"]
