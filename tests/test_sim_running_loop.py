"""A simulation's coroutine actions run to completion whatever loop the caller's thread
runs: driven from inside ``asyncio.run`` (or a Jupyter kernel's cell, whose loop is
running) they go to the simulation's own loop thread, with the same records as from
a thread with no loop; that thread ends at shutdown and never outlives the simulation.
Before, every such run was recorded "RuntimeError: Cannot run the event loop while
another loop is running"."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from lldsched import OneTime, RetryPolicy, Simulation, TaskStatus
from lldsched.errors import CANCELLED_INSIDE
from lldsched.sim.awaiting import NESTED
from tests.test_coroutines import forever

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def sim_loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("lldsched-sim-loop-")]


def in_loop(fn: Callable[[], T]) -> T:
    """``fn()`` called from a coroutine inside ``asyncio.run``: its thread runs a loop."""

    async def call() -> T:
        return fn()

    return asyncio.run(call())


def directly(fn: Callable[[], T]) -> T:
    return fn()


PATHS = pytest.mark.parametrize("drive", [directly, in_loop], ids=["no-loop", "in-loop"])


async def double(n: int) -> int:
    await asyncio.sleep(0)
    return 2 * n


# -- fails before: every run below was recorded with asyncio's RuntimeError -------------


def test_run_for_inside_a_running_loop_records_the_runs_succeeded_with_their_results() -> None:
    sim = Simulation(workers=1)
    sim.schedule("work", OneTime(delay=10), action=double, args=(21,), duration=5)
    sim.schedule("later", OneTime(delay=12), action=lambda: double(1), duration=0)

    async def main() -> None:
        sim.run_for(60)

    asyncio.run(main())
    second, first = sim.records()  # "later" took the worker at 12, "work" the coroutine lane
    assert (first.ok, first.result, first.error) == (True, "42", None)
    assert (first.started, first.finished) == (10, 15)
    assert (second.ok, second.result, second.started) == (True, "2", 12)
    assert sim.shutdown() is True


def test_aclose_with_a_drain_inside_a_running_loop_runs_what_is_due_to_success() -> None:
    ran: list[int] = []
    threads: set[threading.Thread] = set()

    async def note(n: int) -> int:
        await asyncio.sleep(0)
        ran.append(n)
        threads.add(threading.current_thread())
        return n

    later = None

    async def main() -> Simulation:
        nonlocal later
        async with Simulation(workers=1) as sim:
            for n in range(3):
                sim.schedule(f"c{n}", OneTime(delay=0), action=note, args=(n,), duration=1)
            later = sim.schedule("later", OneTime(delay=60), action=note, args=(99,))
        return sim

    sim = asyncio.run(main())
    assert sorted(ran) == [0, 1, 2]
    assert [(r.name, r.ok, r.result) for r in sim.records()] == [
        ("c0", True, "0"),
        ("c1", True, "1"),
        ("c2", True, "2"),
    ]
    assert later is not None and later.status is TaskStatus.SCHEDULED  # due after it
    (thread,) = threads  # the simulation's loop thread, ended with the aclose()
    assert thread.name.startswith("lldsched-sim-loop-") and not thread.is_alive()


# -- the same records on both paths ------------------------------------------------------


@PATHS
def test_a_coroutine_over_its_timeout_is_cancelled_and_recorded_timed_out(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def quick() -> str:
        return "done"

    sim = Simulation(workers=2)
    hung = sim.schedule(
        "hung", OneTime(delay=0), action=forever, args=(started, stopped), timeout=0.05,
        retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    sim.schedule(
        "long", OneTime(delay=0), action=quick, duration=30, timeout=10,
        retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    drive(lambda: sim.run_for(60))
    by_name = {record.name: record for record in sim.records()}
    assert stopped.is_set() and by_name["hung"].timed_out  # cancelled on the loop it ran on
    assert by_name["hung"].error == "TimeoutError: cancelled at its 0.05 s timeout"
    assert hung.status is TaskStatus.FAILED
    cut = by_name["long"]  # its simulated duration cut at the timeout, as before
    assert cut.timed_out and cut.finished - cut.started == 10
    assert cut.error == "TimeoutError: cancelled at its 10 s timeout"
    sim.shutdown()


@PATHS
def test_what_a_coroutine_raises_is_recorded_its_own_cancellation_too(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    async def broken() -> None:
        await asyncio.sleep(0)
        raise ConnectionError("refused")

    async def cancels_itself() -> None:
        raise asyncio.CancelledError

    sim = Simulation()
    once = RetryPolicy(max_attempts=1)
    sim.schedule("broken", OneTime(delay=0), action=broken, retry=once)
    sim.schedule("cancels", OneTime(delay=0), action=cancels_itself, retry=once)
    drive(lambda: sim.run_for(1))
    assert {r.name: r.error for r in sim.records()} == {
        "broken": "ConnectionError: refused",
        "cancels": CANCELLED_INSIDE,
    }
    assert all(t.status is TaskStatus.FAILED for t in sim.tasks())
    sim.shutdown()


@PATHS
def test_a_coroutine_sees_the_callers_context_and_keeps_what_it_sets_to_itself(
    drive: Callable[[Callable[[], object]], object],
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    async def mark(name: str) -> None:
        seen.append(var.get())
        var.set(name)
        await asyncio.sleep(0)
        assert var.get() == name  # its own, across the suspension

    sim = Simulation(workers=1)
    for n in range(3):
        sim.schedule(f"r{n}", OneTime(delay=n), action=mark, args=(f"r{n}",))

    def run() -> str:
        var.set("caller")
        sim.run_for(10)
        return var.get()

    assert drive(run) == "caller"  # nothing a run set reached the caller
    assert seen == ["caller"] * 3  # nor the next run
    assert all(r.ok for r in sim.records())
    sim.shutdown()


# -- the helper thread -------------------------------------------------------------------


def test_one_thread_runs_every_coroutine_and_ends_at_shutdown() -> None:
    names: list[str] = []

    async def where() -> None:
        names.append(threading.current_thread().name)

    sim = Simulation(workers=1)
    sim.schedule("a", OneTime(delay=0), action=where)
    sim.schedule("b", OneTime(delay=5), action=where)
    before = set(sim_loop_threads())

    async def main() -> None:
        sim.run_for(1)
        sim.run_for(10)  # a second run_for, the same thread

    asyncio.run(main())
    (made,) = set(sim_loop_threads()) - before
    assert made.daemon and names == [made.name, made.name]
    sim.schedule("c", OneTime(delay=0), action=where)
    sim.run_for(1)  # no loop runs here: the caller's thread, as before
    assert names[-1] == threading.current_thread().name
    assert sim.shutdown() is True
    assert not made.is_alive()


def test_a_simulation_dropped_without_shutdown_takes_its_thread_with_it() -> None:
    sim = Simulation()
    sim.schedule("a", OneTime(delay=0), action=double, args=(1,))
    before = set(sim_loop_threads())
    in_loop(functools.partial(sim.run_for, 1))
    (made,) = set(sim_loop_threads()) - before
    dropped = weakref.ref(sim)
    del sim
    gc.collect()
    assert dropped() is None
    assert not made.is_alive()


def test_a_simulation_left_open_at_exit_does_not_keep_the_process_alive() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys, threading
        sys.path.insert(0, sys.argv[1])
        from lldsched import OneTime, Simulation

        async def one():
            return 1

        KEPT = Simulation()  # referenced to the end, never shut down
        KEPT.schedule("a", OneTime(delay=0), action=one)

        async def main():
            KEPT.run_for(1)

        asyncio.run(main())
        assert [t.name for t in threading.enumerate() if t.name.startswith("lldsched-sim-loop")]
        print(KEPT.records()[0].result)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT)], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "1", "")


def test_a_coroutine_action_that_drives_its_simulation_again_never_waits_for_itself() -> None:
    sim = Simulation(workers=2)
    sim.schedule("inner", OneTime(delay=1), action=double, args=(4,))

    async def outer() -> str:
        sim.run_for(5)  # starts "inner" from inside this run
        return "outer done"

    sim.schedule("outer", OneTime(delay=0), action=outer)
    in_loop(lambda: sim.run_for(10))
    by_name = {r.name: r for r in sim.records()}
    assert by_name["outer"].result == "'outer done'"
    assert by_name["inner"].error == NESTED  # recorded, not a deadlock
    sim.shutdown()


def test_driven_from_a_coroutine_action_with_no_loop_around_the_inner_run_succeeds() -> None:
    threads: list[threading.Thread] = []

    async def inner(n: int) -> int:
        threads.append(threading.current_thread())
        return await double(n)

    sim = Simulation(workers=2)
    sim.schedule("inner", OneTime(delay=1), action=inner, args=(4,))

    async def outer() -> None:
        sim.run_for(5)  # the private loop runs this one: "inner" goes to the thread

    sim.schedule("outer", OneTime(delay=0), action=outer)
    sim.run_for(10)
    assert {r.name: (r.ok, r.result) for r in sim.records()} == {
        "outer": (True, None),
        "inner": (True, "8"),
    }
    (thread,) = threads
    assert thread in sim_loop_threads()  # the simulation's, the caller's loop being busy
    sim.shutdown()
    assert not thread.is_alive()


# -- the real case: a Jupyter kernel, whose loop runs while a cell does -----------------


@pytest.mark.timeout(180)
def test_a_notebook_cell_runs_a_simulation_with_an_async_action() -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cell = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import asyncio
        from lldsched import OneTime, Simulation

        async def work(n):
            await asyncio.sleep(0)
            return 2 * n

        assert asyncio.get_running_loop().is_running()  # the kernel's, running now
        sim = Simulation(workers=1)
        sim.schedule("work", OneTime(delay=10), action=work, args=(21,), duration=5)
        sim.run_for(60)
        await sim.aclose()
        print([(r.ok, r.result, r.error) for r in sim.records()])
        """
    )
    notebook: Any = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    client.execute()
    printed = [out["text"] for out in notebook.cells[0].outputs if out.get("name") == "stdout"]
    assert "".join(printed).strip() == "[(True, '42', None)]"
