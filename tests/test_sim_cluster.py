"""The cluster simulation: N nodes over one lease table, each on the core state machine.

Takeovers after a pause longer than the lease, the stale write that fencing
refuses, crashes that lose no slot, clock skew inside and past the lease margin,
determinism per seed, and bad input."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy
import pytest

from lldsched import FixedRate, ValidationError
from lldsched.sim import uniform
from lldsched.sim.cluster import simulate_cluster
from lldsched.sim.cluster_scenario import ClusterScenario, ClusterTask, Crash, Pause

ONE_TASK = (ClusterTask("report", every=60.0, duration=5.0),)
# node-0 claims the slot at 60, starts a 5 s run, and stops the world at 61 for 90 s:
# its 30 s lease expires at 90 without a renewal, and node-1 takes the slot over.
PAUSED_HOLDER = ClusterScenario(
    nodes=3, tasks=ONE_TASK, lease=30.0, renewal=10.0, horizon=600.0,
    pauses=(Pause(node=0, at=61.0, seconds=90.0),),
)  # fmt: skip
BUSY = tuple(ClusterTask(f"job-{i}", every=60.0, duration=uniform(5, 28)) for i in range(6))


def runs_of(result: Any, slot: float) -> list[Any]:
    return [run for run in result.runs if run.slot == slot]


def test_a_healthy_cluster_runs_every_slot_once_with_increasing_tokens() -> None:
    result = simulate_cluster(replace(PAUSED_HOLDER, pauses=()))
    assert [run.slot for run in result.runs] == [60.0 * k for k in range(1, 11)]
    tokens = [run.token for run in result.runs]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)
    assert result.summary() == {
        "fencing": True, "slots": 10, "executions": 10, "rerun": 0, "takeovers": 0,
        "rejected": 0, "duplicates": 0, "lost": 0,
    }  # fmt: skip


def test_a_fractional_period_runs_every_slot_of_the_rows_grid_on_every_node() -> None:
    """Each node counts a 0.1 s task's slots from the grid origin its row keeps (the
    first slot): every run's slot is ``slot_at(origin, k)``, the very float, whichever
    node ran it.  Counted from the node's own registration instead, a slot differed in
    its last bits from the row's, and 20 of the 50 were reported lost."""
    epoch = 1_767_571_200.0  # 2026-01-05 00:00 UTC: a 0.1 s sum rounds there
    poll = ClusterTask("poll", every=0.1, duration=0.01)
    result = simulate_cluster(ClusterScenario(nodes=2, tasks=(poll,), horizon=5.0, start=epoch))
    grid = [FixedRate(0.1).slot_at(epoch + 0.1, k) for k in range(50)]  # from the first slot
    assert [run.slot for run in result.runs] == grid
    assert result.summary()["lost"] == 0 and result.summary()["duplicates"] == 0


def test_a_pause_longer_than_the_lease_ends_in_a_takeover_with_a_larger_token() -> None:
    result = simulate_cluster(PAUSED_HOLDER)
    first, second = runs_of(result, 60.0)
    assert (first.node, first.claimed, first.takeover) == ("node-0", 60.0, False)
    assert (second.claimed, second.takeover) == (90.0, True)  # at the lease's expiry
    assert second.node != "node-0" and second.token > first.token
    assert first.finished == 151.0  # its run was frozen; it finishes when the pause ends


def test_a_node_paused_over_its_wake_claims_when_the_pause_ends() -> None:
    idle = replace(PAUSED_HOLDER, nodes=1, pauses=(Pause(node=0, at=55.0, seconds=10.0),))
    result = simulate_cluster(idle)
    assert (result.runs[0].slot, result.runs[0].claimed) == (60.0, 65.0)
    assert [run.claimed for run in result.runs[1:3]] == [120.0, 180.0]
    assert result.lost == ()


def test_overlapping_pauses_of_one_node_make_one_pause_to_the_later_end() -> None:
    pauses = (Pause(node=0, at=61.0, seconds=90.0), Pause(node=0, at=100.0, seconds=100.0))
    result = simulate_cluster(replace(PAUSED_HOLDER, pauses=pauses))
    assert [(s.node, s.kind, s.start, s.end) for s in result.spans] == [
        ("node-0", "pause", 61.0, 200.0)
    ]
    assert runs_of(result, 60.0)[0].finished == 200.0


def test_without_fencing_the_paused_holders_late_write_lands_a_duplicate() -> None:
    result = simulate_cluster(replace(PAUSED_HOLDER, fencing=False))
    stale, fresh = runs_of(result, 60.0)[:2]
    assert (stale.write, fresh.write) == ("landed", "landed")
    assert result.landed()[("report", 60.0)] == 2
    assert result.duplicates >= 1 and result.rejected == 0
    assert result.lost == ()


def test_with_fencing_the_late_write_is_rejected_and_no_slot_lands_twice() -> None:
    result = simulate_cluster(PAUSED_HOLDER)
    stale, fresh = runs_of(result, 60.0)
    assert (stale.write, stale.settled) == ("rejected", False)
    assert (fresh.write, fresh.settled) == ("landed", True)
    assert (result.duplicates, result.rejected, result.rerun, result.lost) == (0, 1, 1, ())


def test_without_fencing_the_late_settle_rolls_the_task_back_and_a_later_slot_reruns() -> None:
    result = simulate_cluster(replace(PAUSED_HOLDER, fencing=False))
    assert len(runs_of(result, 120.0)) == 2  # the stale row sent the task back to 120
    assert len(runs_of(simulate_cluster(PAUSED_HOLDER), 120.0)) == 1


@pytest.mark.parametrize("fencing", [True, False], ids=["fenced", "unfenced"])
@pytest.mark.parametrize(
    "crashes",
    [
        (Crash(node=0, at=62.0),),  # the holder dies mid-run, for good
        (Crash(node=0, at=62.0, restart_after=5.0),),  # ... and comes back before expiry
        (Crash(node=0, at=62.0, restart_after=100.0), Crash(node=1, at=150.0)),
    ],
    ids=["holder-dies", "holder-restarts", "two-crashes"],
)
def test_crashes_lose_no_slot(crashes: tuple[Crash, ...], fencing: bool) -> None:
    result = simulate_cluster(replace(PAUSED_HOLDER, pauses=(), crashes=crashes, fencing=fencing))
    assert result.lost == () and result.duplicates == 0
    dead = runs_of(result, 60.0)[0]
    assert (dead.node, dead.write, dead.finished) == ("node-0", "none", None)
    assert runs_of(result, 60.0)[1].takeover
    assert {span.kind for span in result.spans} == {"down"}


def test_a_restarted_node_is_a_new_holder_and_claims_again() -> None:
    crash = Crash(node=0, at=62.0, restart_after=5.0)
    result = simulate_cluster(replace(PAUSED_HOLDER, nodes=1, pauses=(), crashes=(crash,)))
    assert [run.node for run in result.runs[:3]] == ["node-0"] * 3
    assert runs_of(result, 60.0)[1].claimed == 90.0  # its old lease had to expire first
    assert result.lost == ()


def test_a_lone_node_that_dies_for_good_loses_the_slots_after_it() -> None:
    crash = Crash(node=0, at=62.0)
    result = simulate_cluster(replace(PAUSED_HOLDER, nodes=1, pauses=(), crashes=(crash,)))
    assert result.lost == tuple(("report", 60.0 * k) for k in range(1, 11))


@pytest.mark.parametrize("fencing", [True, False], ids=["fenced", "unfenced"])
def test_skew_within_the_lease_margin_causes_no_duplicate(fencing: bool) -> None:
    scenario = ClusterScenario(
        nodes=3, tasks=BUSY, workers=1, horizon=3600.0, skews=(0.0, 9.5, -9.5), fencing=fencing
    )
    assert scenario.margin == 20.0  # the skews differ by 19 s at most
    result = simulate_cluster(scenario)
    assert (result.takeovers, result.duplicates, len(result.lost)) == (0, 0, 0)
    assert len(result.runs) == len(result.expected) == 360


def test_skew_past_the_margin_steals_live_leases_unless_the_database_keeps_time() -> None:
    scenario = ClusterScenario(
        nodes=3, tasks=BUSY, workers=1, horizon=3600.0, skews=(0.0, 25.0, -10.0), fencing=False
    )
    assert simulate_cluster(scenario).duplicates > 0
    on_the_database = simulate_cluster(replace(scenario, lease_clock="database"))
    assert (on_the_database.takeovers, on_the_database.duplicates) == (0, 0)


def test_fencing_refuses_only_writes_that_come_after_a_newer_one() -> None:
    # Past the margin, a holder whose lease was stolen often writes *before* the thief:
    # the sink has seen no newer token yet, so that write lands (an upsert keyed by slot
    # is what keeps it harmless). Fencing refuses the rest.
    scenario = ClusterScenario(
        nodes=3, tasks=BUSY, workers=1, horizon=3600.0, skews=(0.0, 25.0, -10.0)
    )
    result = simulate_cluster(scenario)
    assert result.rejected > 0 and result.duplicates > 0
    for run in result.runs:
        if run.write == "rejected":
            assert run.finished is not None
            newer = [o for o in result.runs if o.task_id == run.task_id and o.token > run.token]
            assert any(o.finished is not None and o.finished <= run.finished for o in newer)


def test_the_same_seed_gives_the_same_result_and_another_seed_another() -> None:
    scenario = ClusterScenario(
        nodes=3, tasks=BUSY, workers=1, horizon=1800.0, skews=(0.0, 25.0, -10.0),
        pauses=(Pause(node=1, at=300.0, seconds=45.0),),
        crashes=(Crash(node=2, at=700.0, restart_after=60.0),), seed=7,
    )  # fmt: skip
    assert simulate_cluster(scenario) == simulate_cluster(scenario)
    assert simulate_cluster(scenario).runs != simulate_cluster(replace(scenario, seed=8)).runs


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"nodes": 0}, "nodes must be an int >= 1, got 0"),
        ({"lease": 0.0}, "lease must be finite and > 0 seconds, got 0.0"),
        ({"lease": -5.0}, "lease must be finite and > 0 seconds, got -5.0"),
        ({"renewal": 30.0}, "renewal must be shorter than the lease (30.0 s), got 30.0"),
        ({"renewal": 45.0}, "got 45.0"),
        ({"renewal": 0}, "renewal must be finite and > 0 seconds, got 0"),
        ({"horizon": 0.0}, "horizon must be finite and > 0 seconds, got 0.0"),
        ({"workers": 0}, "workers must be an int >= 1, got 0"),
        ({"nodes": 10**9}, "nodes must be an int <= 1000, got 1000000000"),  # would hang
        ({"workers": 10**9}, "workers must be an int <= 1000, got 1000000000"),
        ({"skews": (1.0,)}, "one offset per node (3), got (1.0,)"),
        ({"skews": (0.0, float("nan"), 0.0)}, "skew must be finite, got nan"),
        ({"pauses": (Pause(node=3, at=1.0, seconds=1.0),)}, "names node 3, but there are 3"),
        ({"crashes": (Crash(node=5, at=1.0),)}, "names node 5"),
        ({"tasks": ()}, "tasks must be a non-empty list or tuple of ClusterTask, got ()"),
        ({"tasks": "report"}, "tasks must be a non-empty list or tuple of ClusterTask, got 'r"),
        ({"pauses": iter(())}, "pauses must be a list or tuple, got <tuple_iterator"),
        ({"skews": {0.0: 1}}, "skews must be empty or one offset per node (3), got {0.0: 1}"),
        ({"lease_clock": "wall"}, "lease_clock must be 'node' or 'database', got 'wall'"),
        ({"fencing": "yes"}, "fencing must be True or False, got 'yes'"),
    ],
)
def test_a_bad_scenario_raises_a_validation_error_naming_the_value(
    changes: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        ClusterScenario(**changes)
    assert named in str(raised.value)


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (lambda: ClusterTask("x", every=0.0), "task 'x' every must be finite and > 0 seconds"),
        # Before: taken, and refused by simulate_cluster, as a FixedRate period
        (lambda: ClusterTask("x", every=1e-9), "task 'x' every must be at least 1e-06 seconds"),
        (lambda: ClusterTask("x", every=60.0, duration=-1.0), "duration must be finite and >= 0"),
        (lambda: ClusterTask("", every=60.0), "non-empty str, got ''"),
        (lambda: Pause(node=0, at=1.0, seconds=0.0), "pause seconds must be finite and > 0"),
        (lambda: Pause(node=-1, at=1.0, seconds=1.0), "pause node must be an int >= 0, got -1"),
        (lambda: Crash(node=0, at=-1.0), "crash at must be finite and >= 0 seconds, got -1.0"),
        (lambda: Crash(node=0, at=1.0, restart_after=0.0), "restart_after must be finite and > 0"),
    ],
)
def test_a_bad_task_or_fault_raises_a_validation_error_naming_the_value(
    build: Any, named: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        build()
    assert named in str(raised.value)


def test_a_scheduler_option_given_to_a_cluster_task_is_refused_naming_it_and_its_value() -> None:
    """A task of the cluster simulation has no dependencies (nor retries): ``depends_on=``
    was Python's bare TypeError, naming neither the value nor what a ClusterTask takes."""
    with pytest.raises(ValidationError) as raised:
        ClusterTask("x", every=60.0, depends_on=["report"])  # type: ignore[arg-type]
    said = str(raised.value)
    assert said.startswith("cluster task 'x' was given depends_on=['report']: ")
    assert "takes name, every and duration only" in said and "dependencies" in said
    with pytest.raises(ValidationError, match=r"given depends_on=5, retry=None: "):
        ClusterTask("x", 60.0, 1.0, depends_on=5, retry=None)  # type: ignore[arg-type]


def test_a_duration_model_that_draws_a_negative_number_names_the_task() -> None:
    task = ClusterTask("report", every=60.0, duration=lambda rng, attempt: -1.0)
    with pytest.raises(ValidationError, match=r"task 'report' returned -1\.0"):
        simulate_cluster(ClusterScenario(tasks=(task,)))


def test_a_duration_model_that_draws_numpys_int64_runs_that_many_seconds() -> None:
    """Refused as "no duration" before, as in the one-node simulation."""
    task = ClusterTask("report", every=60.0, duration=lambda rng, attempt: numpy.int64(5))  # type: ignore[arg-type]
    outcome = simulate_cluster(ClusterScenario(tasks=(task,)))
    durations = {run.finished - run.claimed for run in outcome.runs if run.finished is not None}
    assert durations == {5.0}


def test_simulate_cluster_takes_only_a_scenario() -> None:
    with pytest.raises(ValidationError, match="takes a ClusterScenario, got 3"):
        simulate_cluster(3)  # type: ignore[arg-type]


def test_lists_are_kept_as_tuples_and_the_scenario_stays_a_hashable_value() -> None:
    """A user's list (a comprehension of tasks, a list of faults) is taken as its tuple:
    the frozen scenario equals the one built from tuples and hashes like it."""
    tasks = [ClusterTask(f"job-{n}", every=60.0) for n in range(2)]
    pauses = [Pause(node=0, at=61.0, seconds=5.0)]
    crashes = [Crash(node=1, at=30.0)]
    listed = ClusterScenario(2, tasks=tasks, skews=[0.0, 1.0], pauses=pauses, crashes=crashes)
    tupled = ClusterScenario(
        2, tasks=tuple(tasks), skews=(0.0, 1.0), pauses=tuple(pauses), crashes=tuple(crashes)
    )
    assert listed == tupled and hash(listed) == hash(tupled)
    assert isinstance(listed.tasks, tuple) and isinstance(listed.pauses, tuple)
    tasks.append(ClusterTask("late", every=60.0))  # the caller's list is not the field
    assert len(listed.tasks) == 2


@pytest.mark.parametrize("every", [0.1, 1 / 3 + 0.1, 60.0])
@pytest.mark.parametrize("skews", [(), (0.0, 0.25, -0.4)], ids=["no-skew", "skewed"])
def test_fractional_periods_at_todays_epochs_run_on_one_grid_every_node_counts(
    every: float, skews: tuple[float, ...]
) -> None:
    """Every node counts the task's slots from the origin its row keeps (the first
    slot), as the processes of a shared store count from ``tasks.grid``, and the slots
    expected are that grid's, ``FixedRate.slot_at(first, k)``, the very floats.  Before,
    the expected slots were summed (``0.1`` at 2026's epochs steps 0.0999999046) and a
    node booted on a skewed clock counted from its own registration instant: a healthy
    cluster with a 0.1 s period reported 299 of its 300 slots lost."""
    start = 1_767_571_200.0
    scenario = ClusterScenario(
        3, tasks=(ClusterTask("poll", every=every, duration=every / 10),), start=start,
        horizon=every * 300, skews=skews,
    )  # fmt: skip
    result = simulate_cluster(scenario)
    rate = FixedRate(every)
    first = start + every
    assert [slot for _, slot in result.expected] == [
        rate.slot_at(first, k) for k in range(len(result.expected))
    ]
    assert len(result.expected) >= 299
    grid = {rate.slot_at(first, k) for k in range(len(result.expected) + 2)}
    assert {run.slot for run in result.runs} <= grid  # every node's slots, the very floats
    assert result.lost == ()
    assert result.summary()["duplicates"] == 0
