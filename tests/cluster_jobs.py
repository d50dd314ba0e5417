"""The actions child schedulers run in the multi-process tests (importable by path).

Each run appends one JSON line to the file named by ``LLDSCHED_CLUSTER_LOG``:
the claim it holds (task, slot, attempt, fencing token) and the process;
:func:`claimed_run` appends a second, ``{"ended": token}``, once its work is done
(before it returns, so before its run is settled).  Given ``stop``, the one run that
takes that file away stops its whole process from inside its action (:func:`claimed_run`).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import IO

from lldsched import FixedRate, Priority, Scheduler
from lldsched.coordination import CoordinatedStore
from lldsched.core.context import RunContext
from lldsched.stores.sqlite.gate import WriteGate

_lock = threading.Lock()  # guards _log: workers of one child append whole lines, one at a time
_log: list[IO[str]] = []  # the open log file, opened at the first run
store: list[CoordinatedStore] = []
"""The store of the child scheduler this process runs (:mod:`tests.cluster_child` puts it)."""
scheduler: list[Scheduler] = []
"""The child scheduler this process runs (:mod:`tests.cluster_child` puts it)."""


def _write(line: str) -> None:
    with _lock:
        if not _log:
            _log.append(open(os.environ["LLDSCHED_CLUSTER_LOG"], "a", encoding="utf-8"))  # noqa: SIM115
        handle = _log[0]
        handle.write(line + "\n")
        handle.flush()


def claimed_run(ctx: RunContext, work: float = 0.02, stop: str | None = None) -> int | None:
    """Log the claim this run holds, then work for ``work`` seconds (stopping early if the
    flag goes up), log that it ended; returns the token.  A run logged and not ended in a
    stopped process is inside its action: its settle is not written yet.

    Given ``stop`` (a file's path), the run that removes that file (one in every process
    sharing it: the test creates it when a stop is wanted) logs ``{"stopping": token}`` and
    stops its process with SIGSTOP, right here, holding its store's lock: no other thread
    of the process is then inside a write (one that was is waited for), so the others go
    on while this run's lease runs out.  It goes on when the test sends SIGCONT."""
    _write(
        json.dumps(
            {
                "task": ctx.task_id,
                "slot": ctx.due,
                "attempt": ctx.attempt,
                "token": ctx.fencing_token,
                "pid": os.getpid(),
            }
        )
    )
    if stop is not None:
        _stop_if_asked(stop, ctx.fencing_token)
    ctx.wait(work)
    _write(json.dumps({"ended": ctx.fencing_token}))
    return ctx.fencing_token


def _stop_if_asked(marker: str, token: int | None) -> None:
    """SIGSTOP this process if this run is the one that removes ``marker``."""
    try:
        os.unlink(marker)  # one caller succeeds, whichever process or thread it is in
    except FileNotFoundError:
        return  # not asked yet, or another run took the stop
    # The store's lock guards its one connection: holding it, no thread of this process
    # is inside a write transaction, whose locks would stall every other process too.
    with store[0]._lock:  # type: ignore[attr-defined]  # the SQLite and PostgreSQL stores'
        _gate_let_go(getattr(store[0], "_gate", None))
        _write(json.dumps({"stopping": token}))
        # To this thread, not the process: a SIGSTOP sent to the process is taken by its
        # main thread (blocked reading stdin), and until a loaded host ran that thread,
        # this one went on: it let the store's lock go, ended its run ({"ended": token}
        # before the stop: "the stopping run is not in flight") and the other threads
        # began writes the stop then held for the whole stall (a registration's
        # WriteLockTimeout after 60 s).  Sent to this thread, it stops here, and the
        # others with it (a stop signal stops every thread).
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)  # until SIGCONT


def _gate_let_go(gate: WriteGate | None) -> None:
    """Wait until the shared SQLite store's write gate holds nothing for this process
    (the caller holds the store's lock, so no write of it starts one meanwhile).  Its
    thread, still blocked in ``flock`` for a write that gave up waiting (its timeout),
    takes the write lock as soon as another process lets it go, and lets it go only when
    it runs again: stopped in between, this process would hold every other writer up
    for the whole stall (shown by holding the gate's thread back; not seen in a run)."""
    if gate is None:  # PostgreSQL: no gate
        return
    deadline = time.monotonic() + 30  # then stop anyway: the test fails, it does not hang
    while time.monotonic() < deadline:
        with gate._state:
            if not gate._busy:  # its thread took nothing, or let it go (under this lock)
                return
        time.sleep(0.001)  # the polling interval of a bounded wait: the other writes end


seen: queue.Queue[tuple[str, int | None, bool, str | None]] = queue.Queue()
"""What :func:`until_flag` saw: (task id, token, lease lost, reason), one per run."""


def until_flag(ctx: RunContext) -> None:
    """Wait (up to 10 s) until the run's flag goes up, then tell :data:`seen` why."""
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    ctx.wait(10)
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))


async def token_of(ctx: RunContext) -> int | None:
    """A coroutine action: returns its run's fencing token."""
    return ctx.fencing_token


async def until_cancelled() -> None:
    """A coroutine action that only ends when it is cancelled (or after 60 s)."""
    await asyncio.sleep(60)


gate = threading.Event()
"""Set by a test to let the held run of :func:`held_past_its_lease` finish."""
moments: queue.Queue[tuple[str, int | None]] = queue.Queue()
"""What :func:`held_past_its_lease` saw, in order: ``("started", token)`` when a run
began, then ``("flag", token)`` when the held run's wait for its flag ended (what
:data:`seen` says of it: the flag up, or 20 s passed)."""
_held: set[str] = set()  # task ids whose first run here was held (under _lock)


def held_past_its_lease(ctx: RunContext) -> None:
    """The first run of a task in this process: tell :data:`seen` it started, wait (up to
    20 s) until its flag goes up, tell :data:`seen` why, then wait (up to 20 s) for
    :data:`gate`: a run that outlives its lease and ends later.  Any later run of the
    task here just tells :data:`seen` it started and ends."""
    moments.put(("started", ctx.fencing_token))
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    with _lock:
        first = ctx.task_id not in _held
        _held.add(ctx.task_id)
    if not first:
        return
    ctx.wait(20)
    moments.put(("flag", ctx.fencing_token))
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))
    gate.wait(20)


released = threading.Event()
"""Set by a test to let the runs of :func:`held_until_released` end."""


def held_until_released(ctx: RunContext) -> None:
    """Tell :data:`seen` the run started, wait (up to 20 s) for :data:`released` whatever
    the flag says, then tell :data:`seen` how it ended: a run that outlives its lease."""
    seen.put((ctx.task_id, ctx.fencing_token, False, None))  # started
    released.wait(20)
    seen.put((ctx.task_id, ctx.fencing_token, ctx.lease_lost, ctx.reason))


async def held_until_released_async() -> None:
    """A coroutine action that holds its slot on the event loop until :data:`released` is
    set (up to 20 s), waiting for it on a thread of the loop's ``asyncio.to_thread``."""
    await asyncio.to_thread(released.wait, 20)


async def quick_async() -> None:
    """A coroutine action that returns at once."""


def held_then_broken(ctx: RunContext) -> None:
    """:func:`held_until_released`, then raise: a run that fails once it is let go."""
    held_until_released(ctx)
    raise RuntimeError("broken once released")


VERBS = {
    "pause": lambda s, task_id: s.pause(task_id),
    "resume": lambda s, task_id: (s.pause(task_id), s.resume(task_id))[1],
    "cancel": lambda s, task_id: s.cancel(task_id),
    "modify": lambda s, task_id: s.modify(task_id, priority=Priority.HIGH),
    "reschedule": lambda s, task_id: s.reschedule(task_id, FixedRate(7200)),
    "run_now": lambda s, task_id: s.run_now(task_id),
    "remove": lambda s, task_id: s.remove(task_id),
}
"""The verbs :func:`verb_then_hang` calls on its own task, by name (a ``resume`` pauses
first, so that it has something to resume)."""


def verb_then_hang(ctx: RunContext, verb: str, marker: str, inside: bool) -> None:
    """The first run anywhere (``marker`` does not exist yet) calls ``verb`` on its own
    task, through this child's scheduler, then hangs until its process is killed: with
    ``inside``, in the middle of the verb, at its first write of the task (the row held
    for the verb, nothing committed); else once the verb returned (its write committed,
    the run not settled).  Either way it creates ``marker`` (holding the verb's answer,
    or ``"inside"``) just before it hangs.  Any later run logs itself and returns."""
    _write(json.dumps({"task": ctx.task_id, "slot": ctx.due, "attempt": ctx.attempt,
                       "token": ctx.fencing_token, "pid": os.getpid()}))  # fmt: skip
    if os.path.exists(marker):
        return
    if inside:
        _hang_at_first_write(ctx.task_id, marker)
    answer = VERBS[verb](scheduler[0], ctx.task_id)
    _hang(marker, repr(answer))


def _hang(marker: str, text: str) -> None:
    """Create ``marker`` with ``text``, then wait until this process is killed."""
    with open(marker + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(marker + ".tmp", marker)  # whole, once there
    threading.Event().wait()


def _hang_at_first_write(task_id: str, marker: str) -> None:
    """Hang this thread at its first ``save`` or ``delete`` of ``task_id`` through the
    store (a verb's, inside its hold of the row)."""
    shared = store[0]
    caller = threading.current_thread()

    def hooked(method: Callable[..., object]) -> Callable[..., object]:
        def call(first: object, *args: object, **kwargs: object) -> object:
            held = getattr(first, "task", None)  # a save's snapshot; a delete's id
            written = first if isinstance(first, str) else getattr(held, "id", None)
            if threading.current_thread() is caller and written == task_id:
                _hang(marker, "inside")
            return method(first, *args, **kwargs)

        return call

    for name in ("save", "delete"):
        setattr(shared, name, hooked(getattr(shared, name)))
