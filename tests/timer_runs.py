"""The timer checker's whole run of many answers, in a few processes at once.

Each answer's run is every check of ``timer_checks``, in order, in one process, as a
learner's ``check_task_queue`` makes it; most of it is waiting (a task due in 0.2 s, a
consumer watched idle for 0.3 s, a wrong answer's task waited for until its due instant
plus ``LATE``), about 2 to 5 s an answer and 100 s for the 40 of
``tests/test_exercise_checkers.py`` one after the other.  Here the answers are dealt to
:data:`PROCESSES` child processes, each running its share one answer after another, so the
waits overlap and no check shares a process (its CPU time, which the poll check reads, and
its threads) with a check running at the same time.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROCESSES = 3
"""Child processes: the runs wait far more than they compute (a few seconds of CPU in
100 s), so three share two cores with the suite's other worker."""

_CHILD = """\
import importlib, pickle, sys
module = importlib.import_module(sys.argv[1])
from exercises.checks import run_checks, timer_checks
runs = {name: run_checks(timer_checks(getattr(module, name))) for name in sys.argv[3:]}
with open(sys.argv[2], "wb") as out:
    pickle.dump(runs, out)
"""


def timer_runs_apart(module: str, names: Sequence[str]) -> dict[str, list[Any]]:
    """Each answer named (a class of the test module ``module``, importable from the
    repository's root) to the results of its whole run of the timer checks."""
    names = list(dict.fromkeys(names))
    groups = [names[n::PROCESSES] for n in range(PROCESSES) if names[n::PROCESSES]]
    runs: dict[str, list[Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        started = []
        for n, group in enumerate(groups):
            out = Path(folder) / f"runs-{n}.pickle"
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, module, str(out), *group],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            started.append((child, out, group))
        try:
            for child, out, group in started:
                _, stderr = child.communicate()
                assert child.returncode == 0, (
                    f"the runs of {group} ended {child.returncode}:\n{stderr}"
                )
                runs.update(pickle.loads(out.read_bytes()))
        finally:
            for child, _, _ in started:
                if child.poll() is None:
                    child.kill()
                    child.wait()
    return runs


def timer_results_of(request: pytest.FixtureRequest) -> Callable[[Any], list[Any]]:
    """For a module-wide fixture named ``timer_results`` of a test module: runs (all at
    once, by :func:`timer_runs_apart`) the ``answer`` of every selected test of that module
    that asks for it, and gives a function from an answer to its run's results."""
    from exercises.checks import run_checks, timer_checks

    wanted = [
        answer.__name__
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.module is request.module
        and "timer_results" in item.fixturenames
        for answer in [item.callspec.params["answer"]]
        if isinstance(answer, type)
    ]
    runs = timer_runs_apart(request.module.__name__, wanted)

    def results(answer: Any) -> list[Any]:
        if answer.__name__ not in runs:  # a test not among those selected asked
            runs[answer.__name__] = run_checks(timer_checks(answer))
        return runs[answer.__name__]

    return results
