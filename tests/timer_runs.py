"""The timer checker's whole run of many answers, in a few processes at once.

Each answer's run is every check of ``timer_checks``, in order, in one process, as a
learner's ``check_task_queue`` makes it; most of it is waiting (a task due in 0.2 s, a
consumer watched idle for 0.3 s, a wrong answer's task waited for until its due instant
plus ``LATE``), about 1.5 to 6.5 s an answer (13 s for one that reads another clock) and
120 s for the 38 of ``tests/test_exercise_checkers.py`` one after the other.  Here
:data:`PROCESSES` child processes each take the next answer not yet run as soon as they
finish one (a queue, not shares dealt in advance: the answers' runs differ up to
eightfold in length), so the waits overlap and no check shares a process (its CPU time,
which the poll check reads, and its threads) with a check running at the same time.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROCESSES = 6
"""Child processes: the runs wait far more than they compute (about 10 s of CPU in the
120 s of the 38 answers), so six share two cores with the suite's other worker."""

_CHILD = """\
import importlib, os, pickle, sys
results = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # what an answer prints goes to stderr, not into the results
module = importlib.import_module(sys.argv[1])
from exercises.checks import run_checks, timer_checks
for line in sys.stdin:
    run = pickle.dumps(run_checks(timer_checks(getattr(module, line.strip()))))
    results.write(len(run).to_bytes(8, "big") + run)
    results.flush()
"""


def _read_run(out: IO[bytes]) -> list[Any] | None:
    """The next run a child wrote, None if it ended first."""
    size = out.read(8)
    if len(size) < 8:
        return None
    run: list[Any] = pickle.loads(out.read(int.from_bytes(size, "big")))
    return run


def timer_runs_apart(module: str, names: Sequence[str]) -> dict[str, list[Any]]:
    """Each answer named (a class of the test module ``module``, importable from the
    repository's root) to the results of its whole run of the timer checks."""
    todo = list(dict.fromkeys(names))
    runs: dict[str, list[Any]] = {}
    lost: dict[int, str] = {}  # a child that ended before it gave a run: that answer
    taking = threading.Lock()  # guards todo: each answer goes to one child only

    def feed(n: int, child: subprocess.Popen[bytes]) -> None:
        """Give ``child`` the next answer each time it gives back a run, until none is left."""
        assert child.stdin is not None and child.stdout is not None
        while True:
            with taking:
                if not todo:
                    break
                name = todo.pop(0)
            try:
                child.stdin.write(f"{name}\n".encode())
                child.stdin.flush()
            except BrokenPipeError:
                run = None
            else:
                run = _read_run(child.stdout)
            if run is None:
                lost[n] = name
                return
            runs[name] = run
        child.stdin.close()

    with tempfile.TemporaryDirectory() as folder:
        children: list[subprocess.Popen[bytes]] = []
        try:
            for n in range(min(PROCESSES, len(todo))):
                with open(Path(folder) / f"stderr-{n}", "wb") as stderr:
                    children.append(
                        subprocess.Popen(
                            [sys.executable, "-c", _CHILD, module],
                            cwd=ROOT,
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            stderr=stderr,
                        )
                    )
            feeders = [
                threading.Thread(target=feed, args=(n, child)) for n, child in enumerate(children)
            ]
            for feeder in feeders:
                feeder.start()
            for feeder in feeders:
                feeder.join()
            for n, child in enumerate(children):
                child.wait()
                said = (Path(folder) / f"stderr-{n}").read_text(errors="replace")
                assert child.returncode == 0 and n not in lost, (
                    f"the child given {lost.get(n)} ended {child.returncode}:\n{said}"
                )
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                for pipe in (child.stdin, child.stdout):
                    if pipe is not None:
                        pipe.close()
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
