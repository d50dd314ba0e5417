"""The order in which pytest-xdist hands the suite's files to its workers (``--dist
loadfile``, tests/conftest.py's ``pytest_xdist_make_scheduler``): the longest files
first, so that the run does not end with the workers on its longest files.

pytest-xdist hands out the files with the most tests first, and so the browser files (one
to four tests of 30 to 100 s each, mostly a kernel's or a page's waiting) last: a whole
run ended with them, the workers on little else (docs/decisions/parallel-tests.md, "The
longest files are handed out first").  The files named below go first, in that order;
the rest follow in pytest-xdist's own order, the files of fewest tests last.  The browser
files go first of all and together: a worker starts the browser package's servers each
time it enters the package (tests/browser/conftest.py), so files of it handed out in a
row share one start.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

# The browser files, longest first, then every other file above 25 s of test time
# summed in a whole run (`pytest -n 3 --dist loadfile --durations=0`, 2026-12-07, at a
# load of 8 to 9), longest first.  tests/test_long_files.py fails when one is no longer
# there.
LONGEST: tuple[str, ...] = (
    "tests/browser/test_player_in_a_browser.py",  # 101 s, 2 tests
    "tests/browser/test_lab_run_all_in_a_browser.py",  # 75 s, 4 tests
    "tests/browser/test_design_lab_in_a_browser.py",  # 69 s, 1 test
    "tests/browser/test_panel_in_a_browser.py",  # 65 s, 2 tests
    "tests/browser/test_errors_in_a_browser.py",  # 65 s, 2 tests
    "tests/browser/test_presses_during_run_all_in_a_browser.py",  # 35 s, 1 test
    "tests/test_threaded_verb_interrupts.py",  # 75 s
    "tests/test_docs.py",  # 69 s
    "tests/test_cluster_processes.py",  # 62 s, 6 tests
    "tests/test_cluster_verb_kill_postgres.py",  # 61 s
    "tests/test_store_postgres_outage_one_timeout.py",  # 56 s
    "tests/test_cli_exits.py",  # 55 s
    "tests/test_sim_differential.py",  # 52 s
    "tests/test_cluster_verb_kill_sqlite.py",  # 47 s
    "tests/test_exercise_checkers.py",  # 44 s
    "tests/test_packaging.py",  # 42 s
    "tests/test_crash_before_start.py",  # 41 s
    "tests/test_exercise_checkers_adversarial.py",  # 39 s
    "tests/test_cluster_partition.py",  # 39 s, 6 tests
    "tests/test_crash_harness.py",  # 38 s, 6 tests
    "tests/test_process_isolation.py",  # 37 s
    "tests/test_cron_cronie.py",  # 37 s
    "tests/test_plots.py",  # 37 s
    "tests/test_cluster_control.py",  # 35 s
    "tests/test_cron_differential.py",  # 35 s, 5 tests
    "tests/test_accessibility.py",  # 34 s
    "tests/test_stress.py",  # 29 s, 2 tests
    "tests/test_store_settle_text.py",  # 29 s
    "notebooks/09-design-lab.ipynb",  # 28 s
    "tests/test_sim_interrupt_anywhere.py",  # 28 s, 1 test
    "tests/test_taskqueue_compaction.py",  # 27 s
    "tests/test_grid_downtime.py",  # 27 s
    "tests/test_core_statemachine.py",  # 26 s, 1 test
)


class LongestFirst(LoadFileScheduling):  # type: ignore[misc]  # (xdist has no type hints)
    """pytest-xdist's ``--dist loadfile``, with the files of :data:`LONGEST` (or of
    ``first``) handed out before the others, in that order."""

    def __init__(
        self,
        config: pytest.Config,
        log: Producer | None = None,
        *,
        first: tuple[str, ...] = LONGEST,
    ) -> None:
        super().__init__(config, log)
        self.first = first
        self.ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        # The queue is filled, in pytest-xdist's order, just before the first unit is
        # handed out: the files named go to its front once, the first named foremost.
        if not self.ordered:
            queue: OrderedDict[str, dict[str, bool]] = self.workqueue
            for path in reversed(self.first):
                if path in queue:
                    queue.move_to_end(path, last=False)
            self.ordered = True
        super()._assign_work_unit(node)
