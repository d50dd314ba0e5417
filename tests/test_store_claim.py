"""One store per file: a second SqliteTaskStore on a file held by a live store is refused,
by another process or this one, and the claim dies with its holder (close, or SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lldsched import (
    FixedRate,
    Scheduler,
    SchedulerStateError,
    Simulation,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.stores.sqlite import claim as claim_module
from lldsched.stores.sqlite.claim import FileClaim, briefly, claim_path
from tests import jobs
from tests.processes import lines_of, parent_of_a_helper

ROOT = Path(__file__).resolve().parent.parent

# The child: a running scheduler on the store, with one task; it prints the task's id,
# then holds the store until it is killed (it waits on its stdin, which stays open).
CHILD = """
import sys
from lldsched import FixedRate, Scheduler, SqliteTaskStore
from tests import jobs

scheduler = Scheduler(store=SqliteTaskStore(sys.argv[1])).start()
print(scheduler.schedule("hourly", jobs.noop, FixedRate(3600)).id, flush=True)
sys.stdin.read()
"""


@dataclass
class Holder:
    process: subprocess.Popen[str]
    task_id: str  # of the task its scheduler registered


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Holder]:
    """A child process running a scheduler on ``tmp_path / "tasks.db"``; killed after the test."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "tasks.db")],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield Holder(process, lines_of(process).get(timeout=20))  # bounded wait for the id
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(20)
        assert process.stdin is not None
        process.stdin.close()


def test_a_store_held_by_a_live_scheduler_in_another_process_is_refused_naming_file_and_pid(
    tmp_path: Path, holder: Holder
) -> None:
    path = tmp_path / "tasks.db"
    expected = re.escape(f"{str(path)!r} is already open by pid {holder.process.pid} on ")
    with pytest.raises(StoreError, match=expected + r".*one scheduler per file") as refused:
        Scheduler(store=SqliteTaskStore(path))
    # The most common second process: a development server's reloader (flask --debug).
    assert "a development server's reloader runs the application twice" in str(refused.value)
    with pytest.raises(StoreError, match=expected):
        SqliteTaskStore(path)
    assert holder.process.poll() is None  # the holder is unharmed


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_the_claim_dies_with_a_holder_killed_by_sigkill(tmp_path: Path, holder: Holder) -> None:
    path = tmp_path / "tasks.db"
    with pytest.raises(StoreError, match="already open"):
        SqliteTaskStore(path)
    holder.process.send_signal(signal.SIGKILL)
    holder.process.wait(20)
    assert holder.process.returncode == -signal.SIGKILL
    with SqliteTaskStore(path) as store:  # at once: no stale claim, no timeout to wait out
        scheduler = Scheduler(store=store)
        assert [task.id for task in scheduler.tasks()] == [holder.task_id]
        assert scheduler.shutdown()


# A holder of the store, which then forks a helper (tests.processes.parent_of_a_helper).
FORKING_CHILD = """
import os
import sys
from lldsched import Scheduler, SqliteTaskStore

store = SqliteTaskStore(sys.argv[1], shared=sys.argv[2] == "shared")
scheduler = Scheduler(store=store).start()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
@pytest.mark.parametrize("mode", ["unshared", "shared"])
def test_a_child_forked_with_the_store_open_does_not_keep_the_claim_once_its_parent_died(
    tmp_path: Path, mode: str
) -> None:
    """Before, the forked helper kept the claim: the restarted service was refused,
    naming its dead parent's pid, for as long as the helper lived."""
    path = tmp_path / "tasks.db"
    with parent_of_a_helper(FORKING_CHILD, str(path), mode) as (holder, helper):
        with pytest.raises(StoreError, match=r"already open|open by pid"):
            SqliteTaskStore(path)  # the holder has it
        holder.kill()
        holder.wait(20)
        os.kill(helper, 0)  # the helper still lives...
        with SqliteTaskStore(path) as store:  # ...and the claim went with its parent
            assert Scheduler(store=store).shutdown()


def test_a_second_store_in_the_same_process_is_refused_until_the_first_is_closed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    first = SqliteTaskStore(path)
    with pytest.raises(StoreError, match=r"already open in this process"):
        SqliteTaskStore(path)
    with pytest.raises(StoreError, match="already open"):
        SqliteTaskStore(f"{tmp_path}/./tasks.db")  # another spelling of the file
    first.close()
    with SqliteTaskStore(path) as second:  # closing released it
        assert len(second) == 0
    with SqliteTaskStore(path):  # and so does leaving the block
        pass


def test_a_store_opened_through_a_symlink_is_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    link = tmp_path / "link.db"
    with SqliteTaskStore(path):
        link.symlink_to(path)
        with pytest.raises(StoreError, match=re.escape(f"{str(link)!r} is already open")):
            SqliteTaskStore(link)


def test_a_refused_store_never_claims_nor_keeps_a_claim(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE accounts (id INTEGER)")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="not an lldsched store"):
        SqliteTaskStore(other)
    assert not Path(claim_path(str(other))).exists()  # no lock file left beside it


def test_private_in_memory_stores_claim_nothing() -> None:
    with SqliteTaskStore(":memory:") as first, SqliteTaskStore(":memory:") as second:
        assert len(first) == len(second) == 0


def test_an_unwritable_lock_file_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    Path(claim_path(str(path))).mkdir()  # a directory where the lock file should be
    with pytest.raises(StoreError, match=r"cannot claim the store .*its lock file"):
        SqliteTaskStore(path)


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_second_scheduler_on_a_store_a_running_scheduler_uses_is_refused_naming_both(
    tmp_path: Path, shared: bool
) -> None:
    """The file's claim refuses a second store, not a second scheduler on the same store
    object: two running schedulers on one unshared store each ran every task (every slot
    twice), and on a shared one the second never heard of the first's registrations (a
    store object is one node: the feed leaves its own writes out)."""
    with SqliteTaskStore(tmp_path / "tasks.db", shared=shared) as store:
        first = Scheduler(store=store, name="first").start()
        try:
            task = first.schedule("hourly", jobs.noop, FixedRate(3600), id="hourly")
            with pytest.raises(StoreError, match=r"already serves the running scheduler 'first'"):
                Scheduler(store=store, name="second")
            assert [t.id for t in first.tasks()] == ["hourly"]  # nothing of first's lost
            assert first.task("hourly") is task and first.running
        finally:
            assert first.shutdown()
        after = Scheduler(store=store, name="after").start()  # shutdown() let the store go
        assert [t.id for t in after.tasks()] == ["hourly"]
        assert after.shutdown()


def test_of_two_schedulers_built_on_one_store_only_the_first_started_may_run(
    tmp_path: Path,
) -> None:
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        first = Scheduler(store=store, name="first")
        first.schedule("hourly", jobs.noop, FixedRate(3600), id="hourly")
        second = Scheduler(store=store, name="second")  # built, not running: reads only
        assert [t.id for t in second.tasks()] == ["hourly"]
        second.start()
        try:
            message = f"the store {store!r} already serves the running scheduler 'second'"
            with pytest.raises(StoreError, match=re.escape(message)):
                first.start()
            assert not first.running
        finally:
            assert second.shutdown()
        assert first.shutdown()


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_simulation_on_a_store_a_running_scheduler_holds_is_refused_naming_both(
    tmp_path: Path, shared: bool
) -> None:
    """A Simulation on the store object a running scheduler holds recovered its tasks
    (writing its misfire decisions) and wrote its simulated runs through it, rows and
    records at virtual instants, behind the scheduler's back; on a shared store it is
    the same node, so the scheduler's feed left those writes out as its own."""
    with SqliteTaskStore(tmp_path / "tasks.db", shared=shared) as store:
        first = Scheduler(store=store, name="first").start()
        try:
            first.schedule("hourly", jobs.noop, FixedRate(3600, start_delay=3600), id="hourly")
            row = store.get("hourly")
            message = f"the store {store!r} already serves the running scheduler 'first'"
            with pytest.raises(StoreError, match=re.escape(message) + ".*a Simulation"):
                Simulation(start=0.0, store=store)
            assert store.get("hourly") == row and store.records("hourly") == []
            assert first.task("hourly").status is TaskStatus.SCHEDULED and first.running
        finally:
            assert first.shutdown()
        sim = Simulation(start=0.0, store=store)  # shutdown() let the store go
        assert [t.id for t in sim.tasks()] == ["hourly"]


@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_simulation_built_before_a_scheduler_started_on_its_store_runs_nothing_after(
    tmp_path: Path, shared: bool
) -> None:
    """The other way round: a Simulation holds no store (it has no running life to end:
    no shutdown, and a restart is simulated by a second Simulation on the same store),
    so a scheduler may start on a store one was built on; the Simulation's runs, which
    write through the store, are then refused until that scheduler shuts down.  On a
    shared store they stay refused after it (a Simulation claims nothing:
    tests/test_cluster_simulation_refused.py)."""
    T0 = time.time() + 86_400  # a day ahead: nothing of the simulation's is due for first
    with SqliteTaskStore(tmp_path / "tasks.db", shared=shared) as store:
        sim = Simulation(start=T0, store=store)
        sim.schedule("sim", FixedRate(60), id="sim", action=jobs.noop)
        first = Scheduler(store=store, name="first").start()  # not refused
        try:
            for advance in (lambda: sim.run_for(600), sim.step, lambda: sim.run(T0 + 60)):
                with pytest.raises(StoreError, match=r"running scheduler 'first'.*a Simulation"):
                    advance()
            assert sim.now == T0 and store.records("sim") == []  # nothing ran, nothing written
        finally:
            assert first.shutdown()
        if shared:  # refused still: it claims nothing, whatever else runs there
            with pytest.raises(StoreError, match="cannot run on the shared store"):
                sim.run_for(90)
            assert store.records("sim") == []
            return
        sim.run_for(90)  # the store is free again
        assert [r.task_id for r in store.records("sim")] == ["sim", "sim"]


def _other_runtime(kind: str, store: SqliteTaskStore, start: float) -> Scheduler | Simulation:
    """A runtime on ``store`` that holds none of it, with a task "mine" (hourly) it
    registered: built and never started, started and shut down, or a Simulation."""
    if kind == "simulation":
        sim = Simulation(start=start, store=store)
        sim.schedule("mine", FixedRate(3600), id="mine", action=jobs.noop)
        return sim
    other = Scheduler(store=store, name="other")
    # due in an hour: nothing runs while the test does (due at once, "first" ran it as it
    # started, and the test could find it RUNNING)
    other.schedule("mine", jobs.noop, FixedRate(3600, start_delay=3600), id="mine")
    if kind == "shut down":
        other.start()
        assert other.shutdown()
    return other


VERBS: dict[str, Callable[[Scheduler | Simulation], object]] = {
    "schedule": lambda runtime: (
        runtime.schedule("new", FixedRate(60), id="new", action=jobs.noop)
        if isinstance(runtime, Simulation)
        else runtime.schedule("new", jobs.noop, FixedRate(60), id="new")
    ),
    "pause": lambda runtime: runtime.pause("mine"),
    "cancel": lambda runtime: runtime.cancel("mine"),
    "remove": lambda runtime: runtime.remove("mine"),
    "run_now": lambda runtime: runtime.run_now("mine"),
}
"""The verbs that change a task, as a runtime not running is asked them."""

WORDS = {"schedule": "register 'new'", "pause": "pause 'mine'", "cancel": "cancel 'mine'",
         "remove": "remove 'mine'", "run_now": "run now 'mine'"}  # fmt: skip


@pytest.mark.parametrize("verb", list(VERBS))
@pytest.mark.parametrize("kind", ["never started", "shut down", "simulation"])
@pytest.mark.parametrize("shared", [False, True], ids=["unshared", "shared"])
def test_a_verb_on_a_runtime_not_running_is_refused_while_another_scheduler_holds_its_store(
    tmp_path: Path, shared: bool, kind: str, verb: str
) -> None:
    """A scheduler never started or shut down, or a Simulation, holds no store (only a
    running scheduler does), and core/store/use.py checked only construction, start() and a
    simulation's runs: their verbs wrote through the store a running scheduler held, a
    row changed (a pause, a removal) or added behind its back, which on an unshared
    store it never read again.  They are refused (StoreError, naming the store, the
    scheduler that holds it, the runtime and the verb), nothing changed; once that
    scheduler shuts down they work again."""
    start = time.time() + 86_400  # a day ahead: nothing is due while the test runs
    with SqliteTaskStore(tmp_path / "tasks.db", shared=shared) as store:
        other = _other_runtime(kind, store, start)
        row = store.get("mine")
        first = Scheduler(store=store, name="first").start()
        try:
            if kind == "shut down" and verb in ("schedule", "run_now"):
                expected: type[Exception] = SchedulerStateError  # refused after shutdown
                words = r"the scheduler is shut down"
            else:
                expected = StoreError
                words = (
                    re.escape(f"the store {store!r} already serves the running scheduler 'first'")
                    + f", so {'a Simulation' if kind == 'simulation' else 'Scheduler .other.'} "
                    + re.escape(f"cannot {WORDS[verb]} through it (nothing was changed)")
                )
            with pytest.raises(expected, match=words):
                VERBS[verb](other)
            assert store.get("mine") == row and store.get("new") is None  # nothing written
            assert other.task("mine").status is TaskStatus.SCHEDULED  # nor changed there
            assert first.task("mine").status is TaskStatus.SCHEDULED and first.running
        finally:
            assert first.shutdown()
        if kind != "shut down" or verb not in ("schedule", "run_now"):
            VERBS[verb](other)  # the store is free again: the verb works


def test_a_claim_says_whether_it_is_held_until_released(tmp_path: Path) -> None:
    claim = FileClaim(str(tmp_path / "tasks.db"))
    assert claim.held is True and "held" in repr(claim)
    claim.release()
    assert claim.held is False and "released" in repr(claim)
    claim.release()  # idempotent
    assert claim.held is False


@pytest.mark.skipif(not hasattr(os, "fork"), reason="flock (POSIX)")
def test_a_holder_that_wrote_no_note_yet_is_named_as_shared_schedulers(tmp_path: Path) -> None:
    """A holder whose note is empty (between its lock and its note, or its write failed)
    is refused as a holder, in words: before the note is read, nothing says who it is."""
    import fcntl

    path = tmp_path / "tasks.db"
    fd = os.open(claim_path(str(path)), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # held, its note not written
        with pytest.raises(StoreError) as refused:
            SqliteTaskStore(path)
        assert str(refused.value).startswith(
            f"the store {str(path)!r} is already open by other schedulers (shared=True): "
            "one scheduler per file."
        )
    finally:
        os.close(fd)
    with SqliteTaskStore(path):  # let go: it opens
        pass


def test_an_operators_command_is_named_only_while_it_lasts(tmp_path: Path) -> None:
    """``briefly`` names the shared claims taken inside it; once it ends, a shared
    scheduler's claim names the shared schedulers again, and an unshared opener refused
    by it is told to open with ``shared=True``, not to start again in a moment."""
    path = str(tmp_path / "tasks.db")
    with briefly("python -m lldsched tasks pause nightly"):
        FileClaim.shared(path).release()
    shared = FileClaim.shared(path)  # a scheduler opened with shared=True, after the verb
    try:
        with pytest.raises(StoreError) as refused:
            FileClaim(path)
        said = str(refused.value)
        assert "is already open by shared=True schedulers (the last to open: pid " in said
        assert "held for a moment" not in said and "operator's command" not in said
    finally:
        shared.release()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists descriptors (Linux)")
def test_a_lock_file_claimed_again_keeps_no_descriptor_of_the_deleted_one(tmp_path: Path) -> None:
    """The claim taken again on a new lock file lets go of the descriptor of the one
    deleted: one descriptor per deletion was left open for the life of the process."""
    path = str(tmp_path / "tasks.db")
    claim = FileClaim(path)
    for _ in range(3):
        os.unlink(claim_path(path))
        claim.check()  # claimed again, on a new lock file
    assert len(_lock_files(path)) == 1  # the new one's only
    claim.release()
    assert _lock_files(path) == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists descriptors (Linux)")
def test_a_refused_opener_keeps_no_descriptor_of_the_lock_file(tmp_path: Path) -> None:
    """A service that tries its store again while another holds it (a restart loop)
    opened the lock file at each try and kept the descriptor when refused."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path):
        for _ in range(3):
            with pytest.raises(StoreError, match="already open in this process"):
                SqliteTaskStore(path)
        assert len(_lock_files(str(path))) == 1  # the holder's only
    assert _lock_files(str(path)) == []


def test_a_refusal_names_the_holder_not_the_note_an_earlier_holder_left(tmp_path: Path) -> None:
    """The lock file keeps the last holder's note (it is never deleted); a new holder
    writes its own in its place, so a refusal names who holds the file now."""
    path = tmp_path / "tasks.db"
    Path(claim_path(str(path))).write_text("pid 4242 on a host long gone\n")
    with SqliteTaskStore(path), pytest.raises(StoreError) as refused:
        SqliteTaskStore(path)
    said = str(refused.value)
    assert "is already open in this process (another SqliteTaskStore on the same file, " in said
    assert "4242" not in said


def _lock_files(path: str) -> list[str]:
    """This process's descriptors open on the lock file of the store at ``path`` (one
    deleted included: its link ends in " (deleted)")."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone
            if os.readlink(f"/proc/self/fd/{fd}").startswith(claim_path(path)):
                found.append(fd)
    return found


def test_a_holder_whose_note_cannot_be_read_is_refused_without_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note only names the holder: a lock file that cannot be read (an I/O error)
    still refuses the second opener, in words, naming nobody."""

    def unreadable(fd: int, size: int) -> bytes:
        raise OSError(5, "Input/output error")

    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path):
        failing = types.SimpleNamespace(**{**vars(os), "read": unreadable})
        monkeypatch.setattr(claim_module, "os", failing)  # the claim module's reads only
        with pytest.raises(StoreError) as refused:
            SqliteTaskStore(path)
        monkeypatch.undo()
    assert str(refused.value).startswith(
        f"the store {str(path)!r} is already open: one scheduler per file."
    )
