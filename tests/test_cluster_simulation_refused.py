"""A Simulation on a shared store may register and read, and refuses to run.

A simulation runs every due slot itself, with no claim and no fencing token, and writes
each run's record and its task's next state: on a store other processes share, they
followed those writes (an operator's "what if" on the production store recorded slots
as run that never ran, and moved the live processes' tasks to the simulated instants).
Found by an operator's audit (docs/CLUSTER.md, "Limits"; docs/DECISIONS.md).
"""

from __future__ import annotations

import time

import pytest

from lldsched import FixedRate, Scheduler, Simulation, StoreError
from tests import jobs
from tests.cluster import StoreSpec, open_store


def test_a_simulation_on_a_shared_store_registers_and_reads_and_refuses_to_run(
    store_spec: StoreSpec,
) -> None:
    live_store, sim_store = open_store(store_spec), open_store(store_spec)
    live = Scheduler(store=live_store).start()  # a process of the cluster, running
    try:
        live.schedule("hourly", jobs.noop, FixedRate(3600, start_delay=600), id="hourly")
        due = live.task("hourly").next_run_at
        sim = Simulation(start=time.time(), store=sim_store)  # built: it reads the tasks
        assert [task.id for task in sim.tasks()] == ["hourly"]
        # a verb: written (due in ten minutes, as "hourly": the live process, which
        # follows the row, would run it if due, and its record would be a run's)
        sim.schedule("more", FixedRate(60, start_delay=600), action=jobs.noop, id="more")
        for run in (lambda: sim.run_for(7200), lambda: sim.step(), lambda: sim.run(sim.now + 1)):
            with pytest.raises(StoreError) as refused:
                run()
            assert str(refused.value).startswith(
                f"a Simulation cannot run on the shared store {sim_store!r}: it runs every due "
                "slot itself, with no claim and no fencing token"
            )
        assert sim_store.records() == []  # nothing ran, nothing recorded
        (stored,) = [s for s in sim_store.load_all() if s.task.id == "hourly"]
        assert (stored.next_run_at, stored.run_count) == (due, 0)
        assert live.task("hourly").next_run_at == due and live.task("hourly").run_count == 0
        assert sim.shutdown()  # nothing ran: nothing to stop
    finally:
        live.shutdown()
        live_store.close()
        sim_store.close()


def test_building_a_simulation_on_a_shared_store_writes_nothing_there(
    store_spec: StoreSpec,
) -> None:
    """Built on a shared store, a simulation registers its rows as they are, as a
    process of the cluster does (no process decides misfires for all of them at start:
    whoever claims a passed slot does).  Before, it ran a restart's recovery: a task due
    long ago had every passed slot recorded coalesced (records with no token) and its
    due instant moved to the simulated clock's, in the live store, by construction."""
    writer, reader, sim_store = (open_store(store_spec) for _ in range(3))
    try:
        Simulation(start=1_000.0, store=writer).schedule(
            "hourly", FixedRate(3600), action=jobs.noop, id="hourly"
        )  # registered through a simulation (tests/test_upgrading.py): due at 1000
        (before,) = reader.load_all()
        assert before.next_run_at == 1_000.0
        sim = Simulation(start=1_000_000.0, store=sim_store)  # 277 hourly slots passed
        assert reader.records() == []  # no misfire recorded
        assert reader.load_all() == [before]  # the row as it was
        assert sim.task("hourly").next_run_at == 1_000.0  # read as stored
        with pytest.raises(StoreError, match="cannot run on the shared store"):
            sim.step()
    finally:
        for store in (writer, reader, sim_store):
            store.close()
