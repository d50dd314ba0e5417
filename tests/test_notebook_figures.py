"""The figures the notebooks' prose states are what the code gives.

Notebook 07's answer on a laptop that sleeps counts the slots the timer decides. 04 reads
figures off its charts and tables in prose: the heartbeat's wait at 09:01 on
Monday (annotated on the Gantt chart, printed nowhere), its worst wait of the week and
when, the backup that holds a worker meanwhile, compaction's worst wait, and what each
pool size does to lateness. The simulation is seeded, so each is fixed: a change to the
scenario or the runtime that moves one fails here, naming it, instead of leaving the
prose stale (nbval compares a tagged cell's output, never the prose beside it).
02 reads its DST lines zone by zone and says which runs its boundary lists hold; 06 says
where its reports' action comes from, and why a store's action lives in a module."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest

from lldsched import (
    CronSchedule,
    ExecutionRecord,
    FixedRate,
    OneTime,
    OverrunPolicy,
    Scheduler,
    SqliteTaskStore,
    ValidationError,
)
from lldsched.model import Outcome
from lldsched.sim import Simulation
from lldsched.sim.overrun import simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import task_summary, to_frame
from lldsched.views.report import percentile
from lldsched.views.tables import seconds_text
from tests.conftest import SchedulerFactory
from tests.test_recovery import minutely_over_a_two_hour_suspend

ROOT = Path(__file__).resolve().parent.parent


def prose(notebook: str) -> str:
    """The comment lines of ``notebook``'s source (its Markdown cells) as one line: a
    figure the prose wraps across lines still reads whole."""
    source = (ROOT / "notebooks" / "src" / f"{notebook}.py").read_text()
    lines = source.splitlines()
    return " ".join(line.removeprefix("#").strip() for line in lines if line.startswith("#"))


PROSE = prose("04-simulation")
WEEK = 7 * 86400.0
MONDAY_NINE = datetime(2026, 1, 5, 9, tzinfo=UTC).timestamp()


def week_on(workers: int) -> list[ExecutionRecord]:
    """The runs (not the skipped slots) of 04's week on ``workers`` workers."""
    simulation = build_scenario(workers=workers, seed=0)
    simulation.run_for(WEEK)
    return [record for record in simulation.records() if record.outcome.ran]


@pytest.fixture(scope="module")
def week() -> list[ExecutionRecord]:
    return week_on(4)


def latest(runs: list[ExecutionRecord], name: str) -> ExecutionRecord:
    return max((run for run in runs if run.name == name), key=lambda run: run.lateness)


def test_the_heartbeats_wait_annotated_at_nine_on_monday_is_the_one_stated(
    week: list[ExecutionRecord],
) -> None:
    hour = [run for run in week if MONDAY_NINE <= run.due < MONDAY_NINE + 3600]
    beat = latest(hour, "heartbeat")
    assert beat.due == MONDAY_NINE + 60
    assert f"The heartbeat's 09:01 run waits {seconds_text(beat.lateness)}" in PROSE


def test_the_heartbeats_worst_wait_of_the_week_and_the_backup_beside_it_are_as_stated(
    week: list[ExecutionRecord],
) -> None:
    beat = latest(week, "heartbeat")
    when = datetime.fromtimestamp(beat.due, UTC).strftime("%A %H:%M")
    assert f"its worst wait this week is {seconds_text(beat.lateness)}" in PROSE
    assert f"`worst wait`, {when})" in PROSE
    # "at 02:00 the nightly backup holds one for three quarters of an hour"
    (backup,) = [run for run in week if run.name == "nightly-backup" and run.due == beat.due - 60]
    assert round(backup.duration / 900) == 3
    assert "the nightly backup holds one for three quarters of an hour" in PROSE


def test_compactions_worst_wait_is_as_stated(week: list[ExecutionRecord]) -> None:
    compaction = latest(week, "compaction")
    assert f"still waited {seconds_text(compaction.lateness)} once" in PROSE


def test_the_catch_up_runs_listed_start_and_fall_behind_as_stated() -> None:
    # It said "each starts 90 s later than the one before": they start 150 s apart.
    runs = [r for r in simulate_overrun(60, 150)[OverrunPolicy.CATCH_UP] if r.outcome.ran]
    pairs = list(pairwise(runs))
    (start_gap,) = {round(later.started - earlier.started) for earlier, later in pairs}
    (slot_gap,) = {round(later.slot - earlier.slot) for earlier, later in pairs}
    (more_late,) = {round(later.lateness - earlier.lateness) for earlier, later in pairs}
    assert (
        f"each starts {start_gap} s after the one before, whose slot was only {slot_gap} s"
        f" earlier: {more_late} s more late each time"
    ) in PROSE


def test_what_each_pool_size_does_is_as_the_prose_reads_it() -> None:
    # "on one worker even the heartbeat is late by half an hour at the 95th percentile,
    # and skipped slots cut the run count by more than half. On two it still waits 20 s
    # at the 95th percentile; with four workers it is on time 95 times in 100 [...] the
    # worst wait shrinks from 43 minutes at two workers to 2 at eight, and twelve run
    # everything at once."
    p95: dict[int, float] = {}
    worst: dict[int, float] = {}
    runs: dict[int, int] = {}
    for workers in (1, 2, 4, 8, 12):
        week = week_on(workers)
        beats = [run.lateness for run in week if run.name == "heartbeat"]
        wait = percentile(beats, 95)  # as the notebook's cell reads it
        assert wait is not None
        p95[workers] = wait
        worst[workers] = max(run.lateness for run in week)
        runs[workers] = len(week)
    assert round(p95[1] / 1800) == 1  # half an hour
    assert runs[1] < runs[12] / 2
    assert f"On two it still waits {round(p95[2])} s" in PROSE
    assert p95[4] == 0.0
    assert f"from {round(worst[2] / 60)} minutes at two" in PROSE
    assert f"workers to {round(worst[8] / 60)} at eight" in PROSE
    assert worst[12] == 0.0


def test_the_pool_sizes_heartbeat_p95_is_task_summarys_lateness_p95() -> None:
    # 04's table of pool sizes took its p95 as beats[int(0.95 * len(beats)) - 1], a rank
    # below the nearest rank whenever 0.95 * n is not whole: it printed 1774.2 s on one
    # worker and 20.2 s on two, where task_summary (shown for two workers a cell above,
    # "the 95th percentile") and the lateness distribution's 95 % line say 1780.6 and 20.4.
    notebook = json.loads((ROOT / "notebooks" / "04-simulation.ipynb").read_text())
    (cell,) = [
        c for c in notebook["cells"]
        if c["cell_type"] == "code" and "heartbeat p95 wait" in "".join(c["source"])
    ]  # fmt: skip
    printed = "".join(text for output in cell["outputs"] for text in output.get("text", ()))
    rows = [line.split() for line in printed.splitlines()[1:]]
    for workers, _, p95, *_ in rows:
        frame = to_frame(build_scenario(workers=int(workers), seed=0).run_for(WEEK))
        waits = task_summary(frame).set_index("name")["lateness_p95"].dt.total_seconds()
        expected = float(waits["heartbeat"])
        assert p95 == f"{expected:.1f}", f"{workers} workers"
    assert len(rows) == 5


def test_notebook_07s_laptop_that_sleeps_counts_the_slots_as_the_timer_decides_them(
    make_scheduler: SchedulerFactory,
) -> None:
    # It said "the 120 passed slots meet the misfire policy", one run and "the others"
    # coalesced: 119. The slot due as the timer wakes is one more.
    task = minutely_over_a_two_hour_suspend(make_scheduler)
    coalesced = sum(record.outcome is Outcome.COALESCED for record in task.history)
    answer = prose("07-interview-walkthrough")
    assert f"the {coalesced} slots slept through, and the one due as the timer wakes" in answer
    assert f"the {coalesced} before it are recorded `coalesced`" in answer


def test_notebook_10_names_each_slot_fencing_left_landing_twice_once_with_its_writes() -> None:
    # The lines under 10's table of the busy hour printed "landed twice" once per write,
    # so the one duplicate read as two, on lines the output area wrapped mid-word.
    path = ROOT / "notebooks" / "10-when-one-process-is-not-enough.ipynb"
    notebook = json.loads(path.read_text())
    (cell,) = [c for c in notebook["cells"] if "landed twice" in "".join(c["source"])]
    lines = "".join("".join(o.get("text", "")) for o in cell["outputs"]).splitlines()
    columns = lines[0].split()
    fenced = next(line.split() for line in lines if line.startswith("fencing"))
    duplicates = int(fenced[columns.index("duplicates") + 1])  # the row's label comes first
    headings = [index for index, line in enumerate(lines) if line.endswith("landed twice:")]
    assert duplicates >= 1 and len(headings) == duplicates, lines
    for start, end in zip(headings, [*headings[1:], len(lines)], strict=True):
        writes = [line for line in lines[start + 1 : end] if "claimed it at" in line]
        assert len(writes) == 2 and all(line.startswith("  ") for line in writes), lines


def _fires_on(expression: str, zone: str, day: str) -> list[str]:
    """What 02's ``fires_on`` prints: the local times ``expression`` fires on ``day``."""
    cron = CronSchedule(expression, tz=zone)
    begin = datetime.fromisoformat(day).replace(tzinfo=cron.tzinfo).timestamp() - 1
    fires = []
    for instant in cron.fire_times(begin, 40):
        moment = datetime.fromtimestamp(instant, cron.tzinfo)
        if moment.strftime("%Y-%m-%d") != day:
            break
        fires.append(moment.strftime("%H:%M %Z"))
    return fires


def test_notebook_02_names_the_hour_each_zone_repeats_in_autumn() -> None:
    # It said "a 02:30 job [...] happens twice on another" night of every zone with DST,
    # above New York's lines, where 02:30 happens once: New York repeats 01:00-02:00.
    text = prose("02-schedules-and-cron")
    berlin = _fires_on("0 * * * *", "Europe/Berlin", "2026-10-25")
    assert _fires_on("30 2 * * *", "Europe/Berlin", "2026-10-25") == ["02:30 CEST"]
    assert "02:00 CEST" in berlin and "02:00 CET" in berlin
    assert "in Berlin, both times 02:00-03:00" in text
    new_york = _fires_on("0 * * * *", "America/New_York", "2026-11-01")
    assert _fires_on("30 2 * * *", "America/New_York", "2026-11-01") == ["02:30 EST"]
    assert "01:00 EDT" in new_york and "01:00 EST" in new_york
    assert "the hour it repeats is 01:00-02:00. There 02:30 happens once (EST)" in text
    assert "runs twice at one reading of the clock: 01:00 EDT and 01:00 EST" in text


def test_notebook_02_s_boundary_lists_are_the_runs_finished_and_the_next_starts_at_240() -> None:
    # It printed "starts at t+ [0, 120]" for the 60.5 s report, after 250 s: the run
    # started at t+240 was left out (the records hold finished runs), unsaid.
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    for seconds, listed in ((60.0, [0, 60, 120, 180]), (60.5, [0, 120])):
        simulation = Simulation(workers=1, start=start)
        simulation.schedule("report", FixedRate(60), duration=seconds)
        simulation.run_for(250)
        ran = [round(r.started - start.timestamp()) for r in simulation.records() if r.outcome.ran]
        assert ran == listed
        simulation.run_for(120)  # the run in flight at t+250 finishes
        ran = [round(r.started - start.timestamp()) for r in simulation.records() if r.outcome.ran]
        assert ran[len(listed)] == 240
    text = prose("02-schedules-and-cron")
    assert "The lists hold the runs finished by t+250" in text
    assert "the next run starts at t+240 and is still going then" in text


def test_notebook_06_says_where_its_action_comes_from_and_why_not_a_lambda(
    tmp_path: Path,
) -> None:
    # It called jobs.send_report, and read jobs.SENT, without a word on what they are.
    spec = importlib.util.spec_from_file_location("notebook_jobs", ROOT / "notebooks" / "jobs.py")
    assert spec is not None and spec.loader is not None
    jobs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jobs)
    jobs.send_report("emea")
    assert jobs.SENT == ["emea"]
    text = prose("06-persistence-and-shutdown")
    assert "from `notebooks/jobs.py` beside this notebook" in text
    assert "it appends its region to the list `jobs.SENT`" in text
    assert "a lambda has no import path, and registration on a durable store refuses it" in text
    with SqliteTaskStore(tmp_path / "tasks.db") as store, Scheduler(store=store) as scheduler:
        with pytest.raises(ValidationError, match="import path"):
            scheduler.schedule("report", lambda: None, OneTime(delay=60))
        assert scheduler.tasks() == []


@pytest.mark.parametrize(
    ("notebook", "used", "said"),
    [
        ("03-failure", "EventLog()", "`EventLog` is a *listener*"),
        ("03-failure", "gantt(to_frame(", "(`to_frame` turns the records into a table, `gantt`"),
        ("06-persistence-and-shutdown", "jobs.send_report", "The reports' action is `jobs"),
    ],
)
def test_a_name_a_notebook_uses_is_explained_before_the_cell_that_uses_it(
    notebook: str, used: str, said: str
) -> None:
    # 03 called EventLog, to_frame and gantt before a word on them (04 and 08 explain
    # them later); 06 called jobs.send_report without saying what it is.
    source = (ROOT / "notebooks" / "src" / f"{notebook}.py").read_text()
    first_use = next(
        index
        for index, line in enumerate(source.splitlines())
        if used in line and not line.startswith("#")
    )
    before = " ".join(
        line.removeprefix("#").strip()
        for line in source.splitlines()[:first_use]
        if line.startswith("#")
    )
    assert said in before, f"notebook {notebook} uses {used} before it says {said!r}"


def test_notebook_02_s_question_on_skip_gives_the_period_its_answer_counts_on() -> None:
    # It asked when a SKIP task runs after a run that ends at t+120, without a period;
    # the answer (t+120, or t+180 for t+120.5) holds for a period of 60 s.
    text = prose("02-schedules-and-cron")
    assert "2. A `FixedRate(60)` task under SKIP: its run for the slot at t+0 finishes" in text
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    for finished, then in ((120.0, 120.0), (120.5, 180.0)):
        simulation = Simulation(workers=1, start=start)
        task = simulation.schedule("job", FixedRate(60), duration=finished)
        simulation.run_for(finished)
        assert task.next_run_at == start.timestamp() + then
    assert "2. At t+120, at once" in text and "SKIP moves to t+180" in text
