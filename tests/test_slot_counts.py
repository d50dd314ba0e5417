"""The views count slots where they say slots: past a cap (10 slots one run skipped,
1,000 slots of one misfire decision) one record stands for the rest and states how many
(``SkipCap:``, ``MisfireCap:``), and ``task_summary``'s ``missed`` and ``skipped``, the
overrun chart's "N slots dropped" and a chart's "slots decided without a run" count
those slots, not the records.  Each expected figure is recomputed here from the raw
records and the schedule's grid, never from the records' count.  Before: a day of a
60 s task whose runs last 1,000 s counted 11 skipped slots a run for 16."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FixedRate,
    InMemoryTaskStore,
    Misfire,
    MisfirePolicy,
    OverrunPolicy,
    Schedule,
    Window,
)
from lldsched.model import Outcome
from lldsched.schedules.base import slots_on
from lldsched.schedules.slotcount import slots_counted
from lldsched.sim import Simulation, fixed
from lldsched.views.frames import task_summary, to_frame
from lldsched.views.plots import gantt, overrun_comparison
from lldsched.views.report import slots_of, slots_stood_for, summarize

T = 1_800_000_000.0  # a whole number of minutes
DAY = 86400.0


def unrun_slots(records: list[ExecutionRecord], first: float, before: float) -> int:
    """The minutely grid's slots from ``first`` and before ``before`` that no run served:
    the slots dropped, recomputed from the raw records."""
    served = {r.slot for r in records if r.outcome.ran}
    grid = [first + 60.0 * k for k in range(int((before - first) // 60.0) + 1)]
    return sum(1 for slot in grid if slot < before and slot not in served)


def all_text(figure: Figure) -> list[str]:
    return [t.get_text() for t in figure.findobj(Text) if t.get_text()]


def overran_a_day() -> list[ExecutionRecord]:
    """A minutely task on one worker whose runs last 1,000 s, for a day: each run skips
    16 slots, 10 recorded one by one and one ``SkipCap:`` record for the other 6."""
    sim = Simulation(workers=1, start=T)
    sim.schedule("heartbeat", FixedRate(60), id="beat", duration=fixed(1000))
    sim.run(T + DAY)
    return list(sim.records())


def test_an_overrun_counts_the_slots_a_skip_cap_stands_for() -> None:
    records = overran_a_day()
    caps = [r for r in records if r.error is not None and r.error.startswith("SkipCap:")]
    assert caps and all(slots_of(r) == 6 for r in caps)
    last_finish = max(r.finished for r in records if r.outcome.ran)
    expected = unrun_slots(records, T, last_finish)  # every slot before it not run: skipped
    assert expected == 16 * len([r for r in records if r.outcome.ran])
    dropped = [r for r in records if r.outcome is Outcome.SKIPPED]
    assert len(dropped) < expected  # records are fewer than the slots they stand for
    assert sum(slots_of(r) for r in dropped) == expected
    (row,) = summarize(records)
    assert row.skipped == expected and row.missed == 0
    summary = task_summary(to_frame(records))
    assert summary.loc["beat", "skipped"] == expected


def test_the_overrun_chart_and_a_chart_of_no_runs_count_the_slots() -> None:
    records = overran_a_day()
    last_finish = max(r.finished for r in records if r.outcome.ran)
    expected = unrun_slots(records, T, last_finish)
    runs = len([r for r in records if r.outcome.ran])
    figure = overrun_comparison({OverrunPolicy.SKIP: records})
    assert any(f"{runs} runs, {expected:,} slots dropped" in text for text in all_text(figure))
    frame = to_frame(records)
    decided = frame[frame["outcome"] == "skipped"]
    said = all_text(gantt(decided))
    assert f"no runs\n{expected:,} slots decided without a run: {expected:,} skipped" in said


@pytest.mark.parametrize("schedule", [FixedRate(60), CronSchedule("* * * * *")])
@pytest.mark.parametrize(
    ("action", "column", "outcome"),
    [
        (Misfire.SKIP, "missed", Outcome.MISSED),
        (Misfire.RUN_ONCE, "missed", Outcome.COALESCED),
    ],
)
def test_a_downtime_counts_the_slots_a_misfire_cap_stands_for(
    schedule: Schedule, action: Misfire, column: str, outcome: Outcome
) -> None:
    """A minutely task down for a day: 1,440 slots passed, 1,000 recorded one by one and
    one ``MisfireCap:`` record for the rest (a fixed rate's counted on its grid, a
    cron's stepped through)."""
    store = InMemoryTaskStore()

    def register(sim: Simulation) -> None:
        sim.schedule("sync", schedule, id="sync", replace_existing=True,
                     duration=fixed(1), misfire=MisfirePolicy(action))  # fmt: skip

    before = Simulation(workers=1, start=T, store=store)
    register(before)
    before.run(T + 600)  # runs from 00:00 (each a second long)
    back = T + 600 + DAY + 30
    after = Simulation(workers=1, start=back, store=store)
    register(after)
    after.run(back + 300)
    records = [r for r in after.records() if r.task_id == "sync"]
    caps = [r for r in records if r.error is not None and r.error.startswith("MisfireCap:")]
    assert len(caps) == 1 and caps[0].outcome is outcome
    served = [*before.records(), *records]
    first = min(r.slot for r in served)  # a fixed rate's is its start, a cron's the minute after
    expected = unrun_slots(served, first, back)  # the slots of the downtime no run served
    assert len([r for r in records if r.outcome is outcome]) <= 1001 < expected  # records
    (row,) = summarize(records)
    assert getattr(row, column) == expected
    assert task_summary(to_frame(records)).loc["sync", column] == expected


@pytest.mark.parametrize(
    ("error", "slots"),
    [
        (None, 1),
        ("ValueError: stands for 5 slots", 1),  # not a cap's record
        ("SkipCap: ...; this record stands for 6 slots, every later one, from ...", 6),
        ("MisfireCap: ...; this record stands for 1 slot, every later one, from ...", 1),
        ("MisfireCap: ...; this record stands for 12,345 slots, every later one, ...", 12345),
        ("SkipCap: ...; this record stands for more than 100,000 slots, every later ...", 100001),
        # written before a cap stated its count: its slots are not known, one is counted
        ("SkipCap: ...; this record stands for every later one, from ...", 1),
    ],
)
def test_the_one_rule_reads_the_count_a_cap_states(error: str | None, slots: int) -> None:
    assert slots_stood_for(error) == slots


def test_a_frame_without_its_error_column_still_summarises() -> None:
    """A frame cut to the columns task_summary needs (without ``error``) still reads,
    each record a slot, as before a cap stated a count."""
    frame = to_frame(overran_a_day())
    cut = frame[["task_id", "name", "attempt", "ok", "timed_out", "outcome", "lateness",
                 "duration"]]  # fmt: skip
    assert task_summary(cut).loc["beat", "skipped"] == int((frame["outcome"] == "skipped").sum())
    assert isinstance(cut, pd.DataFrame)


@pytest.mark.parametrize(
    "schedule",
    [FixedRate(7), Window(FixedRate(7), end=T + 7 * 40), CronSchedule("*/5 * * * *")],
    ids=["fixed rate", "window", "cron"],
)
@pytest.mark.parametrize("inclusive", [False, True])
def test_slots_counted_agrees_with_the_slots_listed_one_by_one(
    schedule: Schedule, inclusive: bool
) -> None:
    """The count a cap's record states: a grid's by a binary search, the very count of
    the slots listed one by one (an end on a slot itself, in or out as asked), past a
    window's end none; any other schedule's stepped through."""
    first = T if not isinstance(schedule, CronSchedule) else T + 300
    listed = [first, *itertools.islice(slots_on(schedule, first), 600)]
    for end in (first, first + 1, listed[17], listed[17] + 0.5, first + 7 * 60, first + 3000):
        expected = sum(1 for slot in listed if (slot <= end if inclusive else slot < end))
        assert slots_counted(schedule, first, end, inclusive=inclusive) == max(expected, 1)
    stepped = isinstance(schedule, CronSchedule)  # past its limit: "more than"
    assert slots_counted(schedule, first, listed[-1], limit=5) == (
        None if stepped else len(listed) - 1
    )
