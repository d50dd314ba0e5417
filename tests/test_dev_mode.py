"""A strict user's interpreter: ``python -X dev -W error`` (every warning an error,
ResourceWarning and un-awaited coroutines included).  (Add ``-X tracemalloc=5`` by hand
to see where a leaked object was made: it makes the child three times slower.)

One child process goes through what a service does with lldsched: a scheduler on an
SQLite store with a listener, a plain, an ``async def``, a failing (retried) and a
process-isolated job, a cron schedule, a shutdown and the store closed; then a
simulation of the same kinds of schedule.  Anything lldsched leaves unclosed, a
coroutine it never awaits or a deprecated call it makes is an error there, or an
"Exception ignored" line (a warning raised in ``__del__``) on its stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SERVICE = """
import asyncio, sys
from lldsched import EventLog, FixedRate, OneTime, RetryPolicy, Scheduler, SqliteTaskStore
from lldsched.sim import Simulation

def plain():
    return "done"

async def awaited():
    await asyncio.sleep(0)
    return "awaited"

def failing():
    raise ValueError("always")

log = EventLog()
with SqliteTaskStore(sys.argv[1]) as store:
    with Scheduler(store=store, workers=2, tz="Europe/Berlin") as scheduler:
        scheduler.add_listener(log)
        scheduler.schedule("plain", plain, OneTime(delay=0))
        scheduler.schedule("awaited", awaited, OneTime(delay=0))
        scheduler.schedule("failing", failing, OneTime(delay=0),
                           retry=RetryPolicy(max_attempts=2, initial_backoff=0.01, jitter=0))
        scheduler.schedule("isolated", "tests.process_jobs:pid", OneTime(delay=0),
                           isolation="process")
        scheduler.schedule("nightly", plain, "0 3 * * *")
        if not scheduler.wait_idle(timeout=20):
            raise SystemExit("not idle")
        outcomes = sorted((r.task_id, r.ok) for r in scheduler.records())
simulation = Simulation(seed=1)
simulation.schedule("sim", FixedRate(60), action=awaited)
simulation.schedule("sim cron", "*/5 * * * *")
simulation.run(until=3600)
print(len(outcomes), len(simulation.records()))
"""


def test_a_service_and_a_simulation_run_clean_under_dev_mode_and_warnings_as_errors(
    tmp_path: Path,
) -> None:
    child = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", _SERVICE,
         str(tmp_path / "tasks.db")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["5", "73"]  # 2 failed attempts; 61 + 12 simulated
    assert "Exception ignored" not in child.stderr, child.stderr
    assert "Warning" not in child.stderr, child.stderr


_EVERY_MODULE = """
import importlib, pathlib, pkgutil, sys, warnings
import lldsched

# What Python deprecates, or says of a source, is an error when lldsched's own code is
# where it was said: a module of the package (third-party ones, matplotlib's for the
# views, are theirs to fix and stay as the interpreter has them).
for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
    warnings.filterwarnings("error", category=category, module=r"lldsched(\\.|$)")
names = [m.name for m in pkgutil.walk_packages(lldsched.__path__, "lldsched.")]
for name in names:
    if name != "lldsched.__main__":
        importlib.import_module(name)
# Imports read the cached bytecode: the sources are compiled here, so that what the
# compiler warns of (an escape Python does not know; from 3.14, a return, break or
# continue that leaves a finally block) is an error on the interpreter running this.
with warnings.catch_warnings():
    warnings.simplefilter("error", SyntaxWarning)
    warnings.simplefilter("error", DeprecationWarning)  # Python 3.11's for an escape
    for path in sorted(pathlib.Path(lldsched.__file__).parent.rglob("*.py")):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
print(len(names))
"""


def test_every_module_imports_and_compiles_without_a_deprecated_call_of_its_own() -> None:
    """Every module of the package (the views and the PostgreSQL store too) imports, and
    its source compiles, with no deprecation warning raised from lldsched's own code: on
    each Python the suite runs on, what that Python deprecates (and will remove) fails
    here first (docs/decisions/platforms.md, "Forward compatibility")."""
    child = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _EVERY_MODULE],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert int(child.stdout) > 100, child.stdout  # every module, not an empty walk
    assert "Exception ignored" not in child.stderr, child.stderr


def test_no_sqlite_statement_numbers_its_parameters() -> None:
    """No SQL text of the SQLite store numbers its parameters (``?1``): Python 3.12.0 to
    3.12.3 warn at every such call that the parameter is taken as a named one given a
    sequence (CPython gh-117995), an error under ``-W error``.  Checked on the source, so
    on every Python, not only those: a statement that uses a parameter twice names it
    (``:status``) and is passed a mapping (docs/decisions/platforms.md, "Python 3.12 and
    3.13")."""
    modules = sorted((ROOT / "lldsched" / "stores" / "sqlite").glob("*.py"))
    assert len(modules) > 10  # the store's folder: an empty glob would check nothing
    numbered = [
        f"{path.name}:{number}: {line.strip()}"
        for path in modules
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\?\d", line)
    ]
    assert numbered == []


def test_the_demo_and_the_simulate_command_run_clean_under_warnings_as_errors() -> None:
    """The two commands a new user runs first, under ``-X dev -W error``: nothing of
    lldsched's is deprecated, unclosed or left un-awaited on their paths."""
    for command in (["demo"], ["simulate", "--days", "1"]):
        child = subprocess.run(
            [sys.executable, "-X", "dev", "-W", "error", "-m", "lldsched", *command],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert child.returncode == 0, (command, child.stderr)
        assert child.stdout and not child.stderr, (command, child.stderr)
