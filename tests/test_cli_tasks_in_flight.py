"""``lldsched tasks`` on a shared store says which process holds a task's run in flight.

On a shared store a run in flight is a lease, not a status: its row stays ``scheduled``
with its due instant passed.  ``show`` said only that, so an operator saw a task that
looked stuck, and ``run-now`` answered "nothing to run-now (its status is scheduled)",
the one status a run-now acts on: seen with three service processes on PostgreSQL and
on a shared SQLite file while another process ran the task.  Now ``show`` names the
attempt, the slot, the process holding its lease (its node id), the token and the
lease's expiry, ``--json`` gives them as ``lease``, and a verb that does nothing says
that a run is in flight (lldsched/cli/storetasks.py, ``_held``;
lldsched/stores/peek.py reads the lease with the row).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import FixedRate, Scheduler, SqliteTaskStore, TaskStatus
from lldsched.cli import main
from lldsched.coordination import Lease
from lldsched.stores.peek import Row
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.test_cluster_settle_refused_view import _expire
from tests.test_store_running_row import _crashed_mid_run
from tests.waits import wait_until

HOUR = 3600.0


def url(spec: StoreSpec) -> str:
    return f"sqlite:{spec.params['path']}" if spec.engine == "sqlite" else spec.params["dsn"]


def tasks(capsys: pytest.CaptureFixture[str], spec: StoreSpec, *argv: str) -> str:
    """``lldsched tasks --store URL ARGV``, in this process; its stdout (status 0)."""
    status = main(["tasks", "--store", url(spec), *argv])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), err
    return out


def shown(
    capsys: pytest.CaptureFixture[str], spec: StoreSpec, task_id: str = "slow"
) -> tuple[list[str], str]:
    """``show TASK_ID``'s lines, and its one ``claimed`` line."""
    lines = tasks(capsys, spec, "show", task_id).splitlines()
    (claimed,) = [line for line in lines if line.startswith("  claimed ")]
    return lines, claimed


def listed(capsys: pytest.CaptureFixture[str], spec: StoreSpec) -> dict[str, Any]:
    """``--json``'s tasks, by id."""
    return {
        task["id"]: task for task in map(json.loads, tasks(capsys, spec, "--json").splitlines())
    }


@pytest.fixture
def in_flight(store_spec: StoreSpec) -> Iterator[Lease]:
    """A scheduler on the shared store running ``slow`` (held at :data:`jobs.GATE`); yields
    the lease its claim holds.  The run let go and the scheduler shut down after."""
    # lease=300: no renewal within a test (every 100 s); one worker: busy with the run,
    # the scheduler claims nothing more (not even its own run, once a test expired it)
    with opened(store_spec, 1, lease=300.0) as (store,):
        scheduler = Scheduler(workers=1, store=store)
        scheduler.schedule("slow", jobs.gated, FixedRate(HOUR), id="slow")  # due at once
        scheduler.schedule("idle", jobs.noop, FixedRate(HOUR, start_delay=HOUR), id="idle")
        jobs.GATE.clear()
        scheduler.start()
        try:
            wait_until(lambda: bool(store.leases()), timeout=30, what="slow's run claimed")
            (lease,) = store.leases()
            yield lease
        finally:
            jobs.GATE.set()
            scheduler.shutdown()
            jobs.GATE.clear()


def test_show_names_the_run_in_flight_and_the_process_holding_it(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lease = in_flight
    assert lease.holder != "" and lease.attempt == 0
    lines, held = shown(capsys, store_spec)
    assert "  status      scheduled  (a run is in flight)" in lines
    assert held.startswith("  claimed     attempt 1 of the slot ")
    assert f", on {lease.holder} (token {lease.token}, its lease until " in held
    idle = tasks(capsys, store_spec, "show", "idle")  # no lease: nothing said of one
    assert "claimed" not in idle and "  status      scheduled\n" in idle


def test_a_lease_that_ran_out_is_said_so_by_the_store_s_clock(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A process killed (or stalled) past its lease leaves the lease row until a claim
    takes the run over: with no process left to claim it, ``show`` would go on saying
    the run is in flight."""
    _expire(store_spec)  # its expiry an hour back, as a process killed an hour ago
    lines, held = shown(capsys, store_spec)
    assert "  status      scheduled  (a run was in flight: its lease ran out)" in lines
    assert f"(token {in_flight.token}), its lease ran out at " in held
    assert held.endswith(
        ": that process died or stalled, and the next claim runs the attempt again"
    )
    assert listed(capsys, store_spec)["slow"]["lease"]["ran_out"] is True


def test_a_paused_task_whose_lease_ran_out_says_its_resume_runs_the_attempt(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Paused during its run, then its process gone past the lease: a claim takes no
    paused row, so the attempt runs once the task is resumed (``show``'s ``claimed`` line
    and the table's legend said "the next claim runs the attempt again")."""
    with opened(store_spec, 1) as (store,):
        pauser = Scheduler(store=store)  # never started: the command line's verbs' way
        assert pauser.pause("slow")  # written to the row, as `tasks pause slow` writes it
    _expire(store_spec)
    owed = "the attempt runs again once the task is resumed"
    lines, held = shown(capsys, store_spec)
    assert "  status      paused  (a run was in flight: its lease ran out)" in lines
    assert held.endswith(f": that process died or stalled, and {owed}"), held
    listed = table(capsys, store_spec)
    assert listed["slow"][2] == "paused!"
    assert listed[""] == [
        "! a run of it was in flight and its lease ran out: that process died or stalled, "
        f"and {owed}"
    ]


def table(capsys: pytest.CaptureFixture[str], spec: StoreSpec) -> dict[str, list[str]]:
    """The table's rows, by id (each its cells), and its lines after them (``""``)."""
    lines = tasks(capsys, spec).splitlines()
    assert lines[0].split()[:3] == ["ID", "NAME", "STATUS"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    return {**rows, "": lines[3:]}


def test_the_table_marks_a_task_whose_run_is_in_flight_and_says_what_the_mark_means(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The table said ``scheduled``, a next run in the past, of a task another process
    was running: no sign of the run.  Now its STATUS is marked ``*`` (``!`` once the
    lease ran out, by the store's clock), and a line after the table says what each mark
    used means; a task without a lease is as before."""
    listed = table(capsys, store_spec)
    assert listed["slow"][2] == "scheduled*" and listed["idle"][2] == "scheduled"
    assert listed[""] == [
        "* a run of it is in flight: a process holds its lease (`tasks show ID` names it)"
    ]
    _expire(store_spec)  # as a process killed an hour ago
    listed = table(capsys, store_spec)
    assert listed["slow"][2] == "scheduled!" and listed["idle"][2] == "scheduled"
    assert listed[""] == [
        "! a run of it was in flight and its lease ran out: that process died or stalled, "
        "and the next claim runs the attempt again"
    ]
    scheduled = tasks(capsys, store_spec, "--status", "paused")  # no row: no legend
    assert scheduled.splitlines()[1:] == []


def test_json_gives_the_lease_and_none_for_a_task_without_one(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lease = in_flight
    documents = listed(capsys, store_spec)
    assert documents["slow"]["lease"] == {
        "holder": lease.holder,
        "token": lease.token,
        "attempt": 1,
        "slot": lease.slot,
        "expires_at": lease.expires_at,
        "ran_out": False,
    }
    assert documents["idle"]["lease"] is None
    one = json.loads(tasks(capsys, store_spec, "show", "slow", "--json"))
    assert one["lease"] == documents["slow"]["lease"]


def test_run_now_of_a_task_running_elsewhere_says_a_run_is_in_flight(
    store_spec: StoreSpec,
    in_flight: Lease,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lease = in_flight
    said = tasks(capsys, store_spec, "run-now", "slow")
    assert said.startswith(
        "task slow: nothing to run-now (its status is scheduled; a run of it claimed: "
        "attempt 1 of the slot "
    )
    assert f", on {lease.holder} (token {lease.token}, " in said
    assert said.endswith("); nothing changed\n")


def test_a_row_s_lease_is_read_with_it_by_the_peek(in_flight: Lease, store_spec: StoreSpec) -> None:
    from lldsched.cli.storeurl import parse_store, peek

    lease = in_flight
    reader = peek(parse_store(url(store_spec)))
    try:
        rows = {row.id: row for row in reader.tasks()}
    finally:
        reader.close()
    assert isinstance(rows["slow"], Row) and rows["slow"].lease == lease
    assert rows["idle"].lease is None


def test_an_attempt_an_unshared_process_left_owed_is_said_owed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file an unshared process died on mid-run, opened shared: the owed attempt's
    lease (``DIED_UNSHARED``, expired) is said as owed, not as a process holding it."""
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as unshared:  # the one process, killed mid-run
        _crashed_mid_run(unshared)
    with SqliteTaskStore(path, shared=True) as store:
        (row,) = store.load_all()
        assert store.owe(row._replace(status=TaskStatus.SCHEDULED, attempt=0, running=False))
        spec = StoreSpec("sqlite", {"path": str(path)})
        lines, held = shown(capsys, spec, "job")
    assert "  status      scheduled  (a run was in flight: its lease ran out)" in lines
    assert held.startswith("  claimed     attempt 1 of the slot ")
    assert held.endswith(
        ", owed: the process running it unshared died; the next claim runs it again"
    )
