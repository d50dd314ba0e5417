"""The user's side of the types: mypy --strict on code written against the public API.

``tests/typed_user/readme_program.py`` is a program written from the user guide's tour
(docs/GUIDE.md; decorators, ``schedule()``, listeners, frames): it must pass, with every
public return it reads of its real type (its ``assert_type`` lines fail on an ``Any``).
Each line of :data:`WRONG` is a mistake a type checker should catch before the
registration refuses it: mypy must report an error on that line.  mypy runs as a
user's project would run it (no config of ours, ``--strict``, the package's
``py.typed``), once for both files, in a cache of its own: about 10 s from nothing,
most of it reading pandas' stubs and what they import (some 1,200 modules), under a
second again.  So the cache is kept between runs in pytest's cache folder
(``.pytest_cache``, :func:`folder`), as a user's project keeps its ``.mypy_cache``:
mypy checks again every file that changed and everything that depends on one, and
reports again the errors it cached for a file unchanged, under the path it had then:
the mistakes' file is written to the same path each run, beside the cache.  A cache
not there yet (a fresh clone's, or any run under ``-p no:cacheprovider``) starts as a
copy of the project's own, ``.mypy_cache``, which ``make test`` wrote just before
(``make typecheck``): mypy checks again what the user's run sees otherwise
(tests/mypy_seed.py).
tests/test_docs.py checks the documents' examples in the same cache, one run at a time
(:func:`user_mypy` holds the folder's lock), so that from no cache the second run reads
what the first cached (about 2 s of CPU time, not 13 to 15 again).  A subprocess, not
``mypy.api.run``: in-process, the interpreter then spent as long again freeing mypy's
objects.  Its bound is CPU time (:data:`MYPY_CPU`), which a machine loaded by others
cannot use up, not the suite's wall-clock bound per test.

``tests/typed_user/api_tour.py`` uses every public name the same way, and pyright (VS
Code's Pylance) in its strict mode reads both programs and the mistakes too
(:func:`user_pyright`): it infers where mypy asks, so each catches what the other lets
through.
"""

from __future__ import annotations

import fcntl
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests import mypy_seed

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "typed_user" / "readme_program.py"
TOUR = ROOT / "tests" / "typed_user" / "api_tour.py"
PROGRAMS = (PROGRAM, TOUR)
PACKAGE = ROOT / "lldsched"

MYPY_CPU = 300
"""CPU seconds one run of mypy may spend before the kernel stops it (``RLIMIT_CPU``): a
run from no cache spends 15 to 20 here, one from the kept cache 1 to 3.  A wall-clock
bound fails a run that is only starved: runs from no cache took 94 to 165 s of
wall-clock time for that CPU time at a load of 10 to 15 on two cores, and the suite's
120 s a test ended them (docs/decisions/what-the-documents-cite.md, "The tests that run mypy are
bounded in CPU time")."""

MYPY_BLOCKED = 3600
"""Wall-clock seconds after which a run of mypy is taken for blocked, not slow (it waits
on nothing but its cache's SQLite lock, seconds at most): the wall-clock bound of the
tests that run it, in place of the suite's 120 s.  A run of 20 s of CPU time would need
a load of several hundred on two cores to take this long."""

CPU_BOUNDED = (
    "import resource, runpy, sys; "
    "seconds = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5)); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)
"""``python -c CPU_BOUNDED SECONDS MODULE ARGS...``: ``python -m MODULE ARGS...`` stopped
by the kernel once it has spent SECONDS of CPU time (``SIGXCPU``; ``SIGKILL`` 5 s later).
The limit is set in the child itself: a ``preexec_fn`` is not safe in a process with
threads (an xdist worker's)."""

HEADER = """\
from __future__ import annotations

from datetime import timedelta

from lldsched import (CronSchedule, EventLog, FixedRate, Misfire, MisfirePolicy, OneTime,
                      RetryPolicy, Scheduler, Simulation)
from lldsched.sim import ClusterScenario
from lldsched.stores.codec import register_schedule
from lldsched.testing import Stepper


def backup() -> None: ...
def cron_fields(schedule: CronSchedule) -> dict[str, object]: ...
def rate_fields(schedule: FixedRate) -> dict[str, object]: ...
def rate_from(fields: dict[str, object]) -> FixedRate: ...


log = EventLog()
scheduler = Scheduler()
sim = Simulation()
steps = Stepper(scheduler)
"""

WRONG = [
    'scheduler.schedule("a", backup, 60)',  # a number for a schedule
    'scheduler.schedule("a", backup, FixedRate("60"))',
    'scheduler.schedule("a", 5, FixedRate(60))',
    'scheduler.schedule("a", backup, FixedRate(60), priority="HIGH")',
    'scheduler.schedule("a", backup, FixedRate(60), depends_on="upstream")',  # a str, not ids
    'scheduler.schedule("a", backup, FixedRate(60), isolation="proc")',
    'scheduler.schedule("a", backup, FixedRate(60), overlap="allow")',
    'scheduler.schedule("a", backup, FixedRate(60), retry=3)',
    'scheduler.schedule("a", backup, FixedRate(60), timeout="5")',
    'scheduler.schedule("a", backup, FixedRate(60), paused=None)',
    "scheduler.scheduled(backup)",  # the bare decorator: a function for a schedule
    "scheduler.scheduled(FixedRate(60))(5)",
    "scheduler.cancel(5)",
    'scheduler.modify("a", priority="LOW")',
    'scheduler.reschedule("a", 60)',
    "scheduler.shutdown(drain=None)",
    "scheduler.shutdown(False)",  # deprecated: a flag by position
    "Scheduler(2, None)",  # deprecated: every option but workers is keyword-only
    "Simulation(4, 100.0, 7)",  # deprecated: start and seed by position
    "RetryPolicy(3, 1.0, 2.0)",  # deprecated: numbers by position
    "MisfirePolicy(Misfire.SKIP, 60)",  # deprecated: grace by position
    "ClusterScenario(3, ())",  # deprecated: tasks by position
    "scheduler.wait_idle(timeout=None)",
    "Scheduler(listeners=log)",  # one listener, not a list
    'Scheduler(seed="4")',
    "Scheduler(workers=2.5)",
    'Scheduler(ids="task-")',
    'sim.run_for("5")',
    'sim.model("kept", duration=lambda rng: 1.0)',  # a model takes (rng, attempt)
    'sim.schedule("a", FixedRate(60), fails="x")',
    "sim.at(5, lambda x: None)",  # an intervention takes no argument
    "OneTime(at=timedelta(seconds=5))",  # a timedelta is not an instant
    'OneTime(delay="5")',
    "RetryPolicy(max_attempts=2.5)",
    "CronSchedule(5)",
    'CronSchedule("* * * * *").preview(n="3")',
    "log.wait_for(5)",
    "Stepper(sim)",  # the stepper steps a Scheduler; the simulation has run_for
    'steps.advance("60")',
    "steps.advance_to(timedelta(hours=1))",  # an instant, not a duration
    "steps.records(5)",
    'Stepper(scheduler, timeout="5")',
    # register_schedule's pair is typed over the class (its to_dict was Any -> dict):
    'register_schedule("r", FixedRate, cron_fields, lambda d: FixedRate(d["period"]))',
    'register_schedule("r", FixedRate, lambda s: {"expr": s.expr}, lambda d: FixedRate(60))',
    'register_schedule("r", FixedRate, lambda s: s.period, lambda d: FixedRate(d["period"]))',
    'register_schedule("r", FixedRate, rate_fields, lambda d: CronSchedule(d["expr"]))',
    'register_schedule("r", FixedRate, rate_fields, rate_from)',  # JSON gives a Mapping
    'register_schedule("r", int, lambda s: {}, lambda d: 5)',  # no Schedule
]


def kept_folder(request: pytest.FixtureRequest) -> Path:
    """Where mypy's cache (and the files written to be checked) are: kept in pytest's
    cache folder, or, where pytest keeps none (``-p no:cacheprovider``), in a folder of
    the session's temporary one, which its xdist workers share (each worker's own is a
    folder in it).  tests/test_docs.py checks the documents' examples in the same cache."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("typed_user_mypy"))
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    session = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session = session.parent  # the controller's, whose folder each worker's is
    folder = session / "typed_user_mypy"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def folder(request: pytest.FixtureRequest) -> Path:
    return kept_folder(request)


def user_mypy(
    files: list[Path], folder: Path, untyped: tuple[str, ...] = ()
) -> list[tuple[Path, int, str]]:
    """``mypy --strict`` on ``files`` as a user's project runs it, in the cache kept in
    ``folder``: each error's file (resolved), line, and mypy's line saying it.
    ``untyped``: the packages without types the project imports, each given the
    setting a user's configuration gives one (``ignore_missing_imports``), and no other
    setting of ours.  One run at a time in a folder (its lock, held across the run): two
    from no cache at once, in two of xdist's workers, each read pandas' stubs; one after
    the other, the second reads the first's cache."""
    config = ""  # a user's project: no configuration of ours
    if untyped:
        config = str(folder / "untyped.ini")
        sections = (f"[mypy-{name},{name}.*]\nignore_missing_imports = True\n" for name in untyped)
        Path(config).write_text("[mypy]\n" + "".join(sections))
    with (folder / "mypy.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        # A fresh clone's first run starts from the project's own mypy cache, which
        # `make test` wrote just before (make typecheck): 15 to 20 s of CPU time from
        # nothing, under 1 from there (tests/mypy_seed.py).
        mypy_seed.seed(folder / "cache", project=ROOT / ".mypy_cache")
        try:
            checked = subprocess.run(
                [
                    sys.executable, "-c", CPU_BOUNDED, str(MYPY_CPU), "mypy",
                    "--strict",
                    "--config-file", config,
                    "--cache-dir", str(folder / "cache"),
                    "--no-error-summary",
                    "--show-error-codes",
                    *map(str, files),
                ],
                capture_output=True, text=True, check=False, timeout=MYPY_BLOCKED, cwd=ROOT,
                env={**os.environ, "MYPYPATH": str(ROOT)},  # this tree's lldsched, as installed
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"mypy ran {MYPY_BLOCKED} s of wall-clock time: blocked, not slow")
    assert checked.returncode != -signal.SIGXCPU, (
        f"mypy spent its {MYPY_CPU} s of CPU time and was stopped: a run from no cache "
        "spends 15 to 20 s"
    )
    assert checked.returncode in (0, 1) and not checked.stderr, checked.stderr
    found = [
        ((ROOT / match.group(1)).resolve(), int(match.group(2)), line)  # ROOT / absolute: it
        for line in checked.stdout.splitlines()
        if (match := re.match(r"(.+?):(\d+): error:", line))
    ]  # mypy names a file under its working folder (ROOT) by its relative path
    # Not the package's own lines: found through MYPYPATH, lldsched is read as a source
    # tree, where an installed one's errors are silenced (a user's mypy says nothing of
    # views/panel.py importing ipywidgets, which has no types); the project's own mypy
    # checks the package.
    return [error for error in found if not error[0].is_relative_to(PACKAGE)]


@pytest.mark.timeout(MYPY_BLOCKED + 60)  # mypy's run is bounded in CPU time (MYPY_CPU)
def test_correct_user_code_type_checks_and_every_mistake_is_caught(folder: Path) -> None:
    wrong = folder / "wrong_usage.py"
    first = HEADER.count("\n") + 1
    wrong.write_text(HEADER + "\n".join(WRONG) + "\n")
    errors = user_mypy([*PROGRAMS, wrong], folder)
    in_program = [line for path, _, line in errors if path in PROGRAMS]
    assert not in_program, "\n".join(in_program)
    flagged = {number for path, number, _ in errors if path == wrong.resolve()}
    missed = [code for number, code in enumerate(WRONG, first) if number not in flagged]
    assert not missed, f"mypy --strict accepts these mistakes: {missed}"


def user_pyright(files: list[Path], folder: Path) -> list[tuple[Path, int, str]]:
    """pyright (VS Code's Pylance) in its strict mode on ``files``, as a user's project
    runs it: each error's file (resolved), line (from 1), and pyright's message.  This
    tree's lldsched is found through ``extraPaths`` (an editable install is an import
    hook, which pyright does not follow) and pandas' stubs in this interpreter's
    environment.  No cache: a run from nothing spends 3 to 4 s of CPU time, most of it
    reading pandas' stubs (docs/decisions/public-api.md, "What a user's pyright sees").
    pyright comes with the test extra (``pyright[nodejs]``: its bundled JavaScript, and
    Node.js from a wheel where none is installed), from PyPI alone."""
    config = folder / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {"typeCheckingMode": "strict", "pythonVersion": "3.11", "extraPaths": [str(ROOT)]}
        )
    )
    try:
        checked = subprocess.run(
            [
                sys.executable, "-c", CPU_BOUNDED, str(MYPY_CPU), "pyright",
                "--outputjson", "--project", str(config), "--pythonpath", sys.executable,
                *map(str, files),
            ],
            capture_output=True, text=True, check=False, timeout=MYPY_BLOCKED, cwd=folder,
            # pyright's Python wrapper asks PyPI for a newer version unless told not to
            env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"pyright ran {MYPY_BLOCKED} s of wall-clock time: blocked, not slow")
    assert checked.returncode in (0, 1), (
        f"pyright (the test extra's; `make install`) did not run: {checked.stderr}"
    )
    return [
        (Path(error["file"]).resolve(), error["range"]["start"]["line"] + 1, error["message"])
        for error in json.loads(checked.stdout)["generalDiagnostics"]
        if error["severity"] == "error"
    ]


@pytest.mark.timeout(MYPY_BLOCKED + 60)  # pyright's run is bounded in CPU time (MYPY_CPU)
def test_pyright_strict_reads_the_programs_and_catches_every_mistake(tmp_path: Path) -> None:
    """What a user of VS Code sees: pyright, which infers where mypy asks (an attribute
    first assigned ``{}`` is ``dict[Unknown, Unknown]`` to it, an error in strict mode
    where mypy reads the later assignments), says nothing of the programs and flags each
    line of :data:`WRONG`."""
    wrong = tmp_path / "wrong_usage.py"
    first = HEADER.count("\n") + 1
    wrong.write_text(HEADER + "\n".join(WRONG) + "\n")
    errors = user_pyright([*PROGRAMS, wrong], tmp_path)
    in_programs = [f"{path.name}:{line}: {text}" for path, line, text in errors if path in PROGRAMS]
    assert not in_programs, "\n".join(in_programs)
    flagged = {line for path, line, _ in errors if path == wrong.resolve()}
    missed = [code for number, code in enumerate(WRONG, first) if number not in flagged]
    assert not missed, f"pyright --strict accepts these mistakes: {missed}"


def hover_classes() -> list[type]:
    """The classes a user's editor shows: those of ``lldsched.__all__``, of
    ``lldsched.sim`` and ``lldsched.stores``, and the protocols of ``lldsched.runtime``."""
    import lldsched
    import lldsched.runtime
    import lldsched.sim
    import lldsched.stores

    named = [
        getattr(module, name)
        for module in (lldsched, lldsched.sim, lldsched.stores, lldsched.runtime)
        for name in module.__all__
    ]
    return list(dict.fromkeys(kind for kind in named if isinstance(kind, type)))


def test_every_public_member_has_a_docstring_an_editors_hover_shows() -> None:
    """pyright's hover (VS Code's) shows a member's docstring, or else that of the same
    name in a base class; a protocol a class satisfies without naming it as a base (a
    clock, a store, a schedule) lends it none.  So each public method and property a
    class defines has one of its own or a base's."""

    def documented(kind: type, name: str) -> bool:
        for base in kind.__mro__:
            member = vars(base).get(name)
            if member is not None and (getattr(member, "__doc__", None) or "").strip():
                return True
        return False

    bare = [
        f"{kind.__module__}.{kind.__qualname__}.{name}"
        for kind in hover_classes()
        for name, member in vars(kind).items()
        if not name.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, property))
        and not documented(kind, name)
    ]
    assert not bare, bare


def test_a_run_is_stopped_by_the_cpu_time_it_spent_not_by_the_clock(tmp_path: Path) -> None:
    """What bounds a run of mypy (:data:`CPU_BOUNDED`): a program that loops for ever is
    stopped once it has spent its second of CPU time, however long the machine's load
    makes that take."""
    (tmp_path / "loops.py").write_text("while True:\n    pass\n")
    ended = subprocess.run(
        [sys.executable, "-c", CPU_BOUNDED, "1", "loops"], cwd=tmp_path, check=False
    )
    assert ended.returncode == -signal.SIGXCPU


def test_the_program_runs() -> None:
    """The typed programs are real code, not only annotations: they run (a FakeClock,
    simulations, the tour's charts; about a second)."""
    from tests.typed_user import api_tour, readme_program

    readme_program.main()
    api_tour.main()


def test_a_run_of_mypy_holds_its_folders_lock_so_another_waits_for_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """:func:`user_mypy` runs mypy holding ``folder``'s lock: a run of tests/test_docs.py
    in the other xdist worker waits for it, then reads the cache it wrote."""
    held: list[bool] = []

    def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        with (tmp_path / "mypy.lock").open("w") as other:  # as the other worker opens it
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(True)
            else:
                held.append(False)
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    assert user_mypy([PROGRAM], tmp_path) == []
    assert held == [True]


def test_without_pytests_cache_a_session_has_one_mypy_folder_for_its_workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``-p no:cacheprovider``: the two tests' runs share a folder of the session (its
    workers' too), not one each, so the second reads what the first cached."""
    uncached = types.SimpleNamespace(
        config=types.SimpleNamespace(), getfixturevalue=request.getfixturevalue
    )
    folder = kept_folder(uncached)  # type: ignore[arg-type]
    assert kept_folder(uncached) == folder  # type: ignore[arg-type]
    assert folder.is_dir() and folder.name == "typed_user_mypy"
    assert tmp_path_factory.getbasetemp().is_relative_to(folder.parent)  # a worker's is in it
