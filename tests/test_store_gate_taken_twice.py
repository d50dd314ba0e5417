"""A shared SQLite store's write gate taken twice without a release between
(lldsched/stores/sqlite/gate.py; docs/decisions/persistence.md, "Persistence").

The gate is not re-entrant, and said so, but a second take passed silently: ``flock``
on a descriptor that holds the lock succeeds, and that take's release let the lock go
under the first (a verb's hold rolled back under it did so,
``tests/test_store_hold_gone.py``).  Now it is refused, naming the holder.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lldsched.stores.sqlite.gate import WRITE, WriteGate, WriteGateTakenTwice
from tests.test_store_hold_nested import gate_taken
from tests.waits import wait_until

HANG_GUARD = 60.0
"""Seconds a thread may take to end before the test says it hangs (at once when fixed)."""


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[WriteGate]:
    gate = WriteGate(str(tmp_path / "tasks.db"), HANG_GUARD)
    yield gate
    gate.close()


def test_the_gate_taken_twice_by_its_holder_is_refused_and_kept(gate: WriteGate) -> None:
    """Before, the second take passed (``flock`` on a descriptor that holds the lock
    succeeds), and its release let the lock go under the first."""
    gate.acquire()
    with pytest.raises(WriteGateTakenTwice) as raised:
        gate.acquire()
    me = threading.current_thread()
    assert str(raised.value) == (
        f"the write lock {gate.path + WRITE!r} is taken twice: thread {me.name!r} "
        f"(ident {me.ident}) holds it already (the gate is not re-entrant: a second take "
        "would let it go at its own release, under the first)"
    )
    assert gate_taken(gate.path)  # the refusal let nothing go
    gate.release()
    assert not gate_taken(gate.path)
    gate.acquire()  # taken again once let go
    gate.release()


def test_the_gate_taken_by_another_thread_while_held_names_the_holder(
    gate: WriteGate,
) -> None:
    """The holder named is the thread that took it, here one that blocked for it (its
    wait through the gate's thread), not the thread refused; once it ended, it is said
    to have ended."""
    other = os.open(gate.path + WRITE, os.O_RDWR)  # another process's write
    fcntl.flock(other, fcntl.LOCK_EX)
    gate.patience = 0.0  # straight to the blocking wait
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        gate.acquire()
        taken.set()
        done.wait(HANG_GUARD)

    holder = threading.Thread(target=hold, name="the-holder")
    holder.start()
    wait_until(lambda: gate._busy, timeout=HANG_GUARD, what="the gate's thread to block")
    os.close(other)  # the other write done: the gate's thread takes it for the holder
    assert taken.wait(HANG_GUARD)
    with pytest.raises(WriteGateTakenTwice) as raised:
        gate.acquire()
    assert f"taken twice: thread 'the-holder' (ident {holder.ident}) holds it" in str(raised.value)
    done.set()
    holder.join(HANG_GUARD)
    assert not holder.is_alive()
    with pytest.raises(WriteGateTakenTwice, match=r"a thread that has ended \(ident \d+\) holds"):
        gate.acquire()
    assert gate_taken(gate.path)
    gate.release()
    assert not gate_taken(gate.path)
