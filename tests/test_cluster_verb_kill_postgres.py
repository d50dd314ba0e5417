"""A process killed in the middle of a verb on a task, on a shared PostgreSQL store: the
cases and what they show are in :mod:`tests.cluster_verb_kill` (a file per engine, so
that ``make test``'s workers can run the two at once)."""

from __future__ import annotations

from tests.cluster_verb_kill import (  # noqa: F401 - collected here, on this engine
    test_a_process_killed_in_the_middle_of_a_verb_leaves_a_task_the_others_honour,
)

ENGINES = ("postgres",)  # store_spec's engine here (tests/cluster.py)
