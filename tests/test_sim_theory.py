"""The simulation against queueing theory, through the figures a capacity planner reads.

Every figure is read as a user reads it: from ``sim.records()``, from the frame
(``to_frame``), and from the summaries built on it (``task_summary``, ``utilisation``,
``lldsched.views.report.summarize``), and each must agree with the raw records too.

* **By hand** (exact): ``k`` fixed-rate tasks of equal period and duration on ``c``
  workers start in waves, so each start, each lateness and each worker's busy
  fraction is known; a run that outlasts its period, under each overrun and overlap
  policy, runs and drops slots at instants worked out below; a Monday 09:00 burst of
  cron in Berlin beside a HIGH heartbeat starts, waits and skips as worked out too.
* **Queueing theory** (statistical): one-off tasks arriving as a Poisson process
  (``lldsched.sim.models.poisson_arrivals``) with exponential durations on ``c``
  workers are an M/M/c queue, whose mean wait in queue is Erlang C's; with fixed
  durations on one worker, an M/D/1 queue, whose mean wait is Pollaczek-Khinchine's.
  Tolerance: the run's own standard error of the figure, by batch means (20
  batches of consecutive arrivals, each many relaxation times long), times 4; a
  run's figure further than that from the theory is a defect, not bad luck (about
  6 in 100,000 at 4 standard errors).  The runs (30,000 arrivals, about a second
  each) are long enough, and each test asserts it, that 4 standard errors are within
  12 % of the share of arrivals that wait and 11 to 25 % of the mean wait (its
  variance grows with the workers and the load), so a rule wrong by more fails.
  Utilisation's standard error is smaller (each worker's busy time is a sum of many
  independent durations): its tolerance is stated where it is checked.  The seeds
  are fixed, so each run is the same run every time: deterministic, not flaky.
* **Little's law** (exact, on the simulation's own records): over a run that ends
  empty, the time-average number of tasks waiting (read from the simulation's state
  at every event: arrived, minus started) equals the arrival rate times the mean wait
  (read from the records' lateness), to rounding.
* **Priority** breaks ties only: random arrivals of two priorities wait alike.
* **Tasks that left the registry** (retired, removed) keep their figures: the report
  counts their overruns and shows their priority.
* **The arrival model** itself: reproducible, as dense as its rate, bad arguments
  refused when it is called.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from lldsched import (
    ExecutionRecord,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    TaskRetiredError,
    ValidationError,
)
from lldsched.clock import LATEST
from lldsched.sim import Simulation, exponential, fixed, poisson_arrivals
from lldsched.views.frames import schedules_of, task_summary, to_frame, utilisation
from lldsched.views.report import percentile, summarize

T = 1_800_000_000.0  # a whole number of minutes and hours: utilisation's intervals align


def runs_of(sim: Simulation) -> list[ExecutionRecord]:
    return [r for r in sim.records() if r.outcome.ran]


def agree_with_the_records(sim: Simulation) -> None:
    """``task_summary`` (from the frame) and ``summarize`` (from the records) say what the
    raw records say: the same counts, and the largest lateness and duration."""
    records = sim.records()
    from_frame = task_summary(to_frame(sim), schedules_of(sim))
    plain_rows = summarize(records, schedules_of(sim))  # both in order of first appearance
    assert [row.name for row in plain_rows] == from_frame["name"].tolist()
    for (task_id, row), plain in zip(from_frame.iterrows(), plain_rows, strict=True):
        own = [r for r in records if r.task_id == task_id]
        ran = [r for r in own if r.outcome.ran]
        assert row["runs"] == plain.runs == len(ran)
        assert row["ok"] == plain.ok == sum(r.ok for r in ran)
        assert row["skipped"] == plain.skipped == sum(r.outcome == "skipped" for r in own)
        missed = sum(r.outcome in ("missed", "coalesced") for r in own)
        assert row["missed"] == plain.missed == missed
        if ran:
            worst = max(r.lateness for r in ran)
            assert row["lateness_max"].total_seconds() == pytest.approx(worst, abs=1e-6)
            assert plain.lateness_max == pytest.approx(worst, abs=1e-6)
            longest = max(r.duration for r in ran)
            assert row["duration_max"].total_seconds() == pytest.approx(longest, abs=1e-6)
        assert row["overruns"] == plain.overruns


# -- by hand -------------------------------------------------------------------------


@pytest.mark.parametrize(("tasks", "workers"), [(5, 2), (6, 3), (3, 3), (7, 4)])
def test_equal_fixed_rate_tasks_start_in_waves_with_the_lateness_and_load_computed_by_hand(
    tasks: int, workers: int
) -> None:
    """``tasks`` tasks every 60 s, each run 10 s, on ``workers`` workers (a cycle needs
    ceil(tasks / workers) waves of 10 s, under 60 s): in each slot the i-th task (in
    registration order) starts in wave i // workers, 10 s a wave late, on worker
    i % workers; worker w runs (the tasks whose i % workers == w) * 10 s a minute."""
    period, length, slots = 60, 10, 30
    sim = Simulation(workers=workers, start=T)
    for i in range(tasks):
        sim.schedule(f"t{i}", FixedRate(period), duration=fixed(length), id=f"t{i}")
    sim.run(T + slots * period)

    runs = runs_of(sim)
    assert len(runs) == tasks * slots
    for r in runs:
        i = int(r.task_id[1:])
        slot = (r.due - T) // period
        assert r.due == r.slot == T + slot * period
        assert r.lateness == (i // workers) * length
        assert r.started == r.due + r.lateness
        assert r.worker == i % workers
        assert r.duration == length

    frame = to_frame(sim)
    summary = task_summary(frame, schedules_of(sim))
    for i in range(tasks):
        row = summary.loc[f"t{i}"]
        late = (i // workers) * length
        assert (row["runs"], row["ok"], row["skipped"], row["overruns"]) == (slots, slots, 0, 0)
        assert row["lateness_p50"].total_seconds() == late
        assert row["lateness_max"].total_seconds() == late
    busy = utilisation(frame, workers=workers, freq="1min")
    assert len(busy) == slots
    for w in range(workers):
        share = len(range(w, tasks, workers)) * length / period
        assert busy[w].tolist() == pytest.approx([share] * slots)
    mean_load = busy.to_numpy().mean()
    assert mean_load == pytest.approx(tasks * length / (workers * period))
    agree_with_the_records(sim)


def test_a_monday_burst_of_cron_in_berlin_waits_as_worked_out_by_hand() -> None:
    """Five jobs on ``0 9 * * 1`` in Berlin (60, 60, 30, 90 and 10 s, registered in that
    order) and a HIGH heartbeat every 30 s (5 s) from 09:00, on two workers, from a
    second before 09:00 (a cron fires strictly after the start).  At 09:00 the heartbeat
    goes first (priority breaks the tie), then a, b, c, d, e as workers free up: w0 runs
    h 0-5 and b 5-65 then d 65-155; w1 a 0-60, c 60-90, e 90-100.  The heartbeat's 09:00:30
    slot waits behind the 09:00 entries (due first) until 100, ends at 105, so its slots
    at 60 and 90 are skipped; then it runs on time.  Lateness 0, 5, 60, 65, 90 and 70: the
    nearest-rank p99 of the burst's runs, and the summaries' maximum, is 90 s (e's)."""
    berlin = datetime(2026, 3, 23, 9, tzinfo=ZoneInfo("Europe/Berlin")).timestamp()
    sim = Simulation(workers=2, start=berlin - 1, tz="Europe/Berlin")
    for name, length in (("a", 60), ("b", 60), ("c", 30), ("d", 90), ("e", 10)):
        sim.schedule(name, "0 9 * * 1", id=name, duration=length)
    sim.schedule("h", FixedRate(30, start_delay=1), id="h", duration=5, priority=Priority.HIGH)
    sim.run(berlin + 200)
    rows = [
        (r.task_id, r.due - berlin, r.worker, r.started - berlin, r.outcome.value)
        for r in sim.records()
    ]
    assert sorted(rows) == sorted([
        ("h", 0, 0, 0, "ok"), ("a", 0, 1, 0, "ok"), ("b", 0, 0, 5, "ok"),
        ("c", 0, 1, 60, "ok"), ("d", 0, 0, 65, "ok"), ("e", 0, 1, 90, "ok"),
        ("h", 30, 1, 100, "ok"), ("h", 60, -1, 105, "skipped"), ("h", 90, -1, 105, "skipped"),
        ("h", 120, 1, 120, "ok"), ("h", 150, 1, 150, "ok"), ("h", 180, 0, 180, "ok"),
    ])  # fmt: skip
    waits = sorted(r.lateness for r in runs_of(sim) if r.due < berlin + 30)
    assert waits == [0, 0, 5, 60, 65, 90]
    assert percentile(waits, 99) == 90
    summary = task_summary(to_frame(sim), schedules_of(sim))
    assert summary["lateness_max"].dt.total_seconds().to_dict() == {
        "h": 70, "a": 0, "b": 5, "c": 60, "e": 90, "d": 65,
    }  # fmt: skip
    assert summary.loc["h", "skipped"] == 2
    agree_with_the_records(sim)


def slots_of(sim: Simulation) -> list[tuple[float, float, float, str]]:
    """(slot, start, finish, outcome) of every record, from T, in slot order."""
    rows = [(r.slot - T, r.started - T, r.finished - T, str(r.outcome)) for r in sim.records()]
    return sorted(rows)


def overrunning(workers: int, **options: object) -> Simulation:
    """One task every 60 s whose runs take 130 s (150 s with an overrun policy, so its
    slots do not fall on a finish), for ten minutes."""
    sim = Simulation(workers=workers, start=T)
    schedule = options.pop("schedule", FixedRate(60))
    length = 130 if "overlap" in options else 150
    sim.schedule("t", schedule, duration=fixed(length), id="t", **options)  # type: ignore[arg-type]
    sim.run(T + 600)
    agree_with_the_records(sim)
    return sim


def test_skip_runs_the_first_slot_not_before_each_finish_and_records_the_rest_skipped() -> None:
    """Runs of 150 s at slots 0, 180, 360 (each the first slot at or after the last
    finish, 150, 330); the two slots each run outlasted are skipped at its finish; the
    one at 540 is still running at 600."""
    sim = overrunning(1)
    assert slots_of(sim) == [
        (0, 0, 150, "ok"), (60, 150, 150, "skipped"), (120, 150, 150, "skipped"),
        (180, 180, 330, "ok"), (240, 330, 330, "skipped"), (300, 330, 330, "skipped"),
        (360, 360, 510, "ok"), (420, 510, 510, "skipped"), (480, 510, 510, "skipped"),
    ]  # fmt: skip
    row = task_summary(to_frame(sim), schedules_of(sim)).loc["t"]
    assert (row["runs"], row["skipped"], row["overruns"]) == (3, 6, 3)
    assert row["lateness_max"].total_seconds() == 0


def test_catch_up_runs_every_slot_back_to_back_each_90_s_later_than_the_last() -> None:
    sim = overrunning(1, schedule=FixedRate(60, OverrunPolicy.CATCH_UP))
    assert slots_of(sim) == [(0, 0, 150, "ok"), (60, 150, 300, "ok"), (120, 300, 450, "ok"),
                             (180, 450, 600, "ok")]  # fmt: skip
    lateness = [r.lateness for r in runs_of(sim)]
    assert lateness == [0, 90, 180, 270]
    row = task_summary(to_frame(sim), schedules_of(sim)).loc["t"]
    assert row["lateness_max"].total_seconds() == 270
    assert row["lateness_p50"].total_seconds() == 90  # nearest rank of 4: the 2nd


def test_buffer_one_folds_the_slots_of_each_run_into_one_run_for_the_latest() -> None:
    """Runs of 130 s: during [0, 130] slots 60 and 120 come due: 60 is coalesced into
    one run for 120, at 130; during [130, 260] 180 and 240, and so on."""
    sim = overrunning(1, overlap=Overlap.BUFFER_ONE)
    assert slots_of(sim) == [
        (0, 0, 130, "ok"), (60, 130, 130, "coalesced"), (120, 130, 260, "ok"),
        (180, 260, 260, "coalesced"), (240, 260, 390, "ok"), (300, 390, 390, "coalesced"),
        (360, 390, 520, "ok"), (420, 520, 520, "coalesced"),
    ]  # fmt: skip
    row = task_summary(to_frame(sim), schedules_of(sim)).loc["t"]
    assert (row["runs"], row["missed"], row["overruns"]) == (4, 4, 4)


def test_cancel_other_with_a_free_worker_cuts_each_run_when_the_next_slot_comes_due() -> None:
    sim = overrunning(2, overlap=Overlap.CANCEL_OTHER)
    expected = [(slot, slot, slot + 60, "cancelled") for slot in range(0, 600, 60)]
    assert slots_of(sim) == expected
    assert [r.worker for r in sim.records()] == [0, 1] * 5
    row = task_summary(to_frame(sim), schedules_of(sim)).loc["t"]
    assert (row["runs"], row["cancelled"], row["failed"], row["overruns"]) == (10, 10, 0, 0)


def test_allow_runs_up_to_max_instances_at_once_and_skips_a_slot_due_at_the_limit() -> None:
    """Runs of 130 s, at most two at once: slot 120 finds 0 and 60 running (skipped);
    180 and 240 run (0 and 60 finished at 130 and 190); 300 finds both running, and so on:
    every third slot is skipped."""
    sim = overrunning(3, overlap=Overlap.ALLOW, max_instances=2)
    expected = [
        (slot, slot, slot, "skipped") if slot % 180 == 120 else (slot, slot, slot + 130, "ok")
        for slot in range(0, 600, 60)
        if slot + 130 <= 600 or slot % 180 == 120
    ]
    assert slots_of(sim) == expected
    assert {r.worker for r in runs_of(sim)} == {0, 1}  # never three at once


def test_an_outage_is_decided_by_each_misfire_policy_as_worked_out_by_hand() -> None:
    """A task every 10 min, down from 00:25 to 01:17: the slots 00:30 .. 01:10 (five)
    passed.  SKIP records them missed; RUN_ONCE runs the last (01:10) at 01:17 and
    records four coalesced; RUN_ALL with max_catch_up=3 runs 00:50, 01:00, 01:10 back to
    back from 01:17 and records two missed."""
    store = InMemoryTaskStore()

    def register(sim: Simulation) -> None:
        for policy in Misfire:
            misfire = MisfirePolicy(policy, max_catch_up=3)
            sim.schedule(policy.name, FixedRate(600), id=policy.name, replace_existing=True,
                         duration=fixed(30), misfire=misfire)  # fmt: skip

    before = Simulation(workers=3, start=T, store=store)
    register(before)
    before.run(T + 25 * 60)
    after = Simulation(workers=3, start=T + 77 * 60, store=store)
    register(after)
    after.run(T + 120 * 60)
    minutes = {
        policy.name: [
            ((r.slot - T) / 60, (r.started - T) / 60, str(r.outcome))
            for r in after.records()
            if r.task_id == policy.name and r.slot < T + 80 * 60
        ]
        for policy in Misfire
    }
    at = 77.0
    assert sorted(minutes["SKIP"]) == [(m, at, "missed") for m in (30, 40, 50, 60, 70)]
    assert sorted(minutes["RUN_ONCE"]) == [
        *((m, at, "coalesced") for m in (30, 40, 50, 60)),
        (70, at, "ok"),
    ]
    assert sorted(minutes["RUN_ALL"]) == [
        (30, at, "missed"), (40, at, "missed"), (50, at, "ok"), (60, at + 0.5, "ok"),
        (70, at + 1.0, "ok"),
    ]  # fmt: skip
    agree_with_the_records(after)


# -- queueing theory -----------------------------------------------------------------


def erlang_c(servers: int, load: float) -> float:
    """The probability that an arrival waits in an M/M/c queue (``load`` = lambda / mu < c)."""
    waiting = load**servers / math.factorial(servers) * servers / (servers - load)
    idle = sum(load**k / math.factorial(k) for k in range(servers))
    return waiting / (idle + waiting)


def batch_standard_error(values: Sequence[float], batches: int = 20) -> float:
    """The standard error of the mean of ``values`` (in arrival order, correlated), by
    batch means."""
    size = len(values) // batches
    means = [statistics.fmean(values[b * size : (b + 1) * size]) for b in range(batches)]
    return statistics.stdev(means) / math.sqrt(batches)


def open_queue(
    *, workers: int, rate: float, duration: object, arrivals: int, seed: int
) -> tuple[Simulation, list[ExecutionRecord], float]:
    """``arrivals`` one-off tasks at the instants of a Poisson process of ``rate`` per
    second, each with ``duration``; run until every one has finished.  Returns the
    simulation, its records in arrival order, and the last arrival's instant."""
    sim = Simulation(workers=workers, start=T, seed=seed, history_limit=1, retain_finished=0)
    instants = list(poisson_arrivals(rate, start=T, seed=seed, count=arrivals))
    for instant in instants:
        sim.schedule("job", OneTime(at=instant), duration=duration)  # type: ignore[arg-type]
    sim.run(instants[-1] + 10_000)
    records = sorted(sim.records(), key=lambda r: r.due)
    assert len(records) == arrivals and all(r.ok for r in records)
    assert sim.busy == 0 and not sim.pending()
    return sim, records, instants[-1]


def mean_busy(sim: Simulation, workers: int, until: float) -> float:
    """The busy fraction of the pool from T to ``until``, as ``utilisation`` reports it."""
    busy = utilisation(to_frame(sim), workers=workers, freq="1h")
    hours = busy[
        busy.index < pd.Timestamp(until - 3600, unit="s", tz="UTC")
    ]  # whole hours of arrivals only
    return float(hours.to_numpy().mean())


@pytest.mark.parametrize(
    ("workers", "load", "seed", "precision"),
    [(1, 0.5, 11, 0.15), (2, 0.6, 12, 0.2), (4, 0.7, 14, 0.25)],
)
def test_one_off_poisson_arrivals_with_exponential_durations_wait_as_erlang_c_says(
    workers: int, load: float, seed: int, precision: float
) -> None:
    """M/M/c with a mean duration of 10 s and utilisation ``load``: the share of arrivals
    that wait at all is C(c, a) (a = lambda / mu), the mean wait in queue C(c, a) / (c mu
    - lambda), and the pool is busy ``load`` of the time.  ``precision``: what 4 standard
    errors of the mean wait come to, at most, as a share of it (a wait's variance grows
    with c and the load: 30,000 arrivals pin one worker's to 11 %, four's at 0.7 to
    22 %; the share that waited, to 12 % in every case)."""
    mean = 10.0
    rate = load * workers / mean
    sim, records, last = open_queue(
        workers=workers, rate=rate, duration=exponential(mean), arrivals=30_000, seed=seed
    )
    waits = [r.lateness for r in records]
    waited = erlang_c(workers, rate * mean)
    queued = [w > 0 for w in waits]
    error = batch_standard_error(queued)
    assert 4 * error < 0.12 * waited  # the run is long enough to tell 12 % apart
    assert statistics.fmean(queued) == pytest.approx(waited, abs=4 * error)
    expected = waited / (workers / mean - rate)
    error = batch_standard_error(waits)
    assert 4 * error < precision * expected
    assert statistics.fmean(waits) == pytest.approx(expected, abs=4 * error)
    frame = to_frame(sim)
    assert pd.Timedelta(frame["lateness"].mean()).total_seconds() == pytest.approx(
        statistics.fmean(waits)
    )
    # Busy time is a sum of 30,000 independent durations (sd 10 s each): its relative
    # error is about 1 / sqrt(30,000) = 0.6 %, and the Poisson count's as much: 4
    # standard errors of both, about 3.5 %.
    assert mean_busy(sim, workers, last) == pytest.approx(load, rel=0.035)


def test_one_off_poisson_arrivals_with_fixed_durations_wait_as_pollaczek_khinchine_says() -> None:
    """M/D/1: the mean wait is rho D / (2 (1 - rho)), half M/M/1's at the same load."""
    length, load = 10.0, 0.5
    sim, records, last = open_queue(
        workers=1, rate=load / length, duration=fixed(length), arrivals=30_000, seed=21
    )
    waits = [r.lateness for r in records]
    expected = load * length / (2 * (1 - load))
    error = batch_standard_error(waits)
    assert 4 * error < 0.12 * expected
    assert statistics.fmean(waits) == pytest.approx(expected, abs=4 * error)
    assert mean_busy(sim, 1, last) == pytest.approx(load, rel=0.035)


def test_priority_breaks_ties_only_so_random_arrivals_of_two_priorities_wait_alike() -> None:
    """``Priority`` breaks ties between runs due at the same instant; it does not reorder
    a backlog of runs due at different instants (work is taken in (due, priority,
    arrival) order).  So M/M/1 at load 0.5 with half the arrivals HIGH and half LOW is
    first come, first served for both: each class waits the M/M/1 mean, 10 s, not what a
    priority queue would give (Cobham's formula: 6.7 s for HIGH, 13.3 s for LOW), which
    the tolerance (4 standard errors, under 20 % of the wait) tells apart."""
    mean, load, arrivals = 10.0, 0.5, 30_000
    sim = Simulation(workers=1, start=T, seed=31, history_limit=1, retain_finished=0)
    choice = random.Random(31)
    for instant in poisson_arrivals(load / mean, start=T, seed=31, count=arrivals):
        priority = choice.choice((Priority.HIGH, Priority.LOW))
        sim.schedule("job", OneTime(at=instant), duration=exponential(mean), priority=priority)
    sim.run(sim.now + arrivals * mean / load + 10_000)
    frame = to_frame(sim).sort_values("due")
    assert len(frame) == arrivals and frame["ok"].all()
    expected = load / (1 / mean - load / mean)  # M/M/1: rho / (mu - lambda)
    for priority in (Priority.HIGH, Priority.LOW):
        waits = (frame.loc[frame["priority"] == priority, "lateness"].dt.total_seconds()).tolist()
        error = batch_standard_error(waits)
        assert 4 * error < 0.2 * expected
        assert statistics.fmean(waits) == pytest.approx(expected, abs=4 * error)


def test_littles_law_holds_between_the_simulation_state_and_its_records() -> None:
    """Stepping event by event, the number waiting (arrived, minus started: from the
    arrival instants and ``metrics()``, never from a record) integrated over time equals
    the sum of the records' waits, so mean number waiting = arrival rate x mean wait."""
    workers, mean, load = 2, 10.0, 0.8
    rate = load * workers / mean
    sim = Simulation(workers=workers, start=T, seed=5, history_limit=1, retain_finished=0)
    instants = list(poisson_arrivals(rate, start=T, seed=5, count=5_000))
    for instant in instants:
        sim.schedule("job", OneTime(at=instant), duration=exponential(mean))
    area, arrived, last_time, waiting = 0.0, 0, T, 0
    while (step := sim.step()) is not None:
        area += waiting * (step.at - last_time)
        # An arrival while every worker is busy is no event: it waits from its instant.
        while arrived < len(instants) and instants[arrived] <= step.at:
            area += step.at - instants[arrived]
            arrived += 1
        last_time = step.at
        metrics = sim.metrics()
        waiting = arrived - (metrics.runs + metrics.busy)  # arrived, minus started
        assert waiting >= 0
    records = sim.records()
    assert len(records) == len(instants) and sim.busy == 0
    span = last_time - T
    mean_waiting = area / span
    arrival_rate = len(records) / span
    mean_wait = statistics.fmean(r.lateness for r in records)
    assert mean_waiting == pytest.approx(arrival_rate * mean_wait, rel=1e-9)
    assert mean_waiting > 1  # a queue formed: the law is not 0 == 0


# -- the arrival model ---------------------------------------------------------------


def test_poisson_arrivals_are_reproducible_ascending_and_as_dense_as_the_rate() -> None:
    """20,000 gaps of mean 1 / rate: their mean is within 4 standard errors (the gap's
    sd is its mean, so 4 / sqrt(20,000) = 2.8 % of it) of 1 / rate."""
    instants = list(poisson_arrivals(0.5, start=T, seed=3, count=20_000))
    assert instants == list(poisson_arrivals(0.5, start=T, seed=3, count=20_000))
    assert instants != list(poisson_arrivals(0.5, start=T, seed=4, count=20_000))
    assert len(instants) == 20_000 and instants[0] > T
    assert all(a < b for a, b in itertools.pairwise(instants))
    gaps = [b - a for a, b in itertools.pairwise([T, *instants])]
    assert statistics.fmean(gaps) == pytest.approx(2.0, rel=4 / math.sqrt(len(gaps)))
    until = list(poisson_arrivals(0.5, start=T, seed=3, until=instants[99]))
    assert until == instants[:100]  # the same draws, cut at until (inclusive)
    start = datetime.fromtimestamp(T, tz=UTC)
    assert list(poisson_arrivals(0.5, start=start, seed=3, count=5)) == instants[:5]
    assert list(poisson_arrivals(0.5, start=T, count=0)) == []


@pytest.mark.parametrize("rate", [1e-308, 1e-10])
def test_poisson_arrivals_end_with_virtual_time_at_the_end_of_year_9999(rate: float) -> None:
    """A ``count`` of a rate too slow to reach it gave instants past year 9999 (``inf`` for
    the slowest), which no simulation reaches and no ``OneTime`` takes."""
    instants = list(poisson_arrivals(rate, start=T, seed=3, count=100))
    assert len(instants) < 100 and all(instant < LATEST for instant in instants)
    sim = Simulation(workers=1, start=T)
    for instant in instants:  # each one a simulation can hold
        sim.schedule("upload", OneTime(at=instant), duration=fixed(1))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"rate": 0, "count": 1}, "poisson_arrivals rate must be finite and > 0, got 0"),
        ({"rate": math.inf, "count": 1}, "got inf"),
        ({"rate": 1, "count": -1}, "poisson_arrivals count must be an int >= 0, got -1"),
        ({"rate": 1, "count": 1.5}, "got 1.5"),
        ({"rate": 1}, "exactly one of count= or until=, got count=None, until=None"),
        ({"rate": 1, "count": 3, "until": T + 9}, "exactly one of count= or until="),
        ({"rate": 1, "until": T - 1}, f"until={T - 1!r} is before start={T!r}"),
        ({"rate": 1, "count": 1, "seed": "s"}, "poisson_arrivals seed must be an int, got 's'"),
        ({"rate": 1, "count": 1, "start": "now"}, "got 'now'"),
    ],
)
def test_poisson_arrivals_refuses_bad_arguments_when_called_naming_the_value(
    arguments: dict[str, Any], message: str
) -> None:
    arguments.setdefault("start", T)
    with pytest.raises(ValidationError, match=re.escape(message)):
        poisson_arrivals(**arguments)  # raises here, not at the first instant read


# -- a task retired from the registry keeps its figures --------------------------------


def test_a_retired_task_keeps_its_overruns_and_priority_in_the_report() -> None:
    """The simulation keeps every record, also of tasks retired from its registry
    (``retain_finished``): the report must still count a retired task's overruns (its
    schedule) and show its priority, as it did before it retired.  A HIGH compaction
    every 60 s whose runs take 90 s, cancelled at 400 s and retired an hour later, while
    a heartbeat keeps the simulation going; and 30 one-off tasks, LOW and NORMAL, all
    retired at once."""
    sim = Simulation(workers=2, start=T, retain_finished=timedelta(hours=1))
    sim.schedule("compaction", FixedRate(60), duration=fixed(90), id="compaction",
                 priority=Priority.HIGH)  # fmt: skip
    sim.schedule("beat", FixedRate(30), duration=fixed(1), id="beat")
    for n in range(30):
        priority = Priority.LOW if n % 2 else Priority.NORMAL
        sim.schedule("job", OneTime(at=T + 500 + n), duration=fixed(2), id=f"job-{n}",
                     priority=priority)  # fmt: skip
    sim.schedule("slow", FixedRate(100), duration=fixed(150), id="slow", priority=Priority.LOW)
    sim.at(T + 400, lambda: sim.cancel("compaction"))
    sim.at(T + 500, lambda: sim.remove("slow"))  # removed, not retired: the same holds
    sim.run(T + 3 * 3600)
    with pytest.raises(TaskRetiredError):
        sim.task("compaction")
    runs = [r for r in runs_of(sim) if r.task_id == "compaction"]
    assert [r.duration for r in runs] == [90] * 4  # each longer than the 60 s period
    agree_with_the_records(sim)
    summary = task_summary(to_frame(sim), schedules_of(sim))
    assert summary.loc["compaction", "overruns"] == 4
    assert (summary.loc["slow", "overruns"], summary.loc["slow", "runs"]) == (3, 3)
    frame = to_frame(sim)
    priorities = frame.groupby("task_id")["priority"].first()
    assert priorities["compaction"] == Priority.HIGH
    assert priorities["beat"] == Priority.NORMAL
    assert priorities["slow"] == Priority.LOW
    assert [priorities[f"job-{n}"] for n in range(4)] == [1, 2, 1, 2]  # NORMAL, LOW, ...
    assert not frame["priority"].isna().any()


def test_an_id_used_again_after_its_task_left_reports_the_later_tasks_priority() -> None:
    """A HIGH task removed, its id registered again as a NORMAL one-off task that then
    retires: the id's rows say NORMAL, the priority it had when it last left."""
    sim = Simulation(workers=1, start=T, retain_finished=0)
    sim.schedule("a", FixedRate(60), duration=fixed(1), id="a", priority=Priority.HIGH)
    sim.run(T + 10)
    sim.remove("a")
    sim.schedule("a", OneTime(delay=5), duration=fixed(1), id="a")
    sim.schedule("beat", FixedRate(30), duration=fixed(1), id="beat")
    sim.run(T + 100)
    with pytest.raises(TaskRetiredError):
        sim.task("a")
    assert sim.priorities()["a"] == Priority.NORMAL
    assert "a" not in sim.schedules()  # a one-off task: never an overrun to count
