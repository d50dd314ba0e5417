"""SimulationPlayer over a Simulation: step, an hour, a day, run until; the simulated time, the
task table and the Gantt chart follow every step; its buttons act at the simulated instant."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lldsched import (
    CronSchedule,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    ValidationError,
)
from lldsched.clock import EARLIEST
from lldsched.sim import Simulation, fixed
from lldsched.views.plots import PlotFigure
from lldsched.views.widgets import SimulationPlayer

START = datetime(2026, 1, 5, tzinfo=UTC)
T0 = START.timestamp()


def scenario() -> tuple[Simulation, str, str]:
    sim = Simulation(workers=2, start=START)
    tick = sim.schedule("tick", FixedRate(600), duration=fixed(30))
    report = sim.schedule("report", CronSchedule("0 * * * *"), duration=fixed(300))
    sim.schedule("broken", OneTime(delay=60), fails=1.0, retry=RetryPolicy.never())
    return sim, tick.id, report.id


def test_step_processes_one_event_and_the_view_follows() -> None:
    sim, tick, _ = scenario()
    player = SimulationPlayer(sim)
    drawn = player.charts_drawn
    player.buttons["step"].click()  # tick starts at T0
    player.buttons["step"].click()  # and finishes 30 s later
    assert sim.now == T0 + 30
    assert "2026-01-05 00:00:30 UTC" in player.clock.value
    assert player.table.row(tick)["runs"] == "1"
    assert player.charts_drawn == drawn + 2
    assert player.chart is not None and player.chart.value[:8] == b"\x89PNG\r\n\x1a\n"
    player.close()


def test_an_hour_and_a_day_advance_simulated_time_and_the_table() -> None:
    sim, tick, report = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.buttons["+1 hour"].click()
    assert sim.now == T0 + 3600
    assert player.table.row(tick)["runs"] == "6"  # 00:00, 00:10, ... 00:50 (01:00 not yet done)
    assert player.table.row(report)["runs"] == "0"  # 01:00 started, not finished
    player.buttons["+1 day"].click()
    assert sim.now == T0 + 25 * 3600
    assert player.table.row(report)["runs"] == "24"
    assert player.table.rows[2]["status"] == "failed"
    player.close()


def test_run_until_takes_an_iso_time_in_the_players_zone_and_reports_bad_input() -> None:
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False, tz="Europe/Berlin")
    player.until.value = "2026-01-05 02:00"  # Berlin: 01:00 UTC
    player.buttons["run"].click()
    assert sim.now == T0 + 3600 and player.table.message.value == ""
    assert "2026-01-05 02:00:00 CET Europe/Berlin" in player.clock.value
    player.until.value = "yesterday"
    player.buttons["run"].click()
    assert "run until 'yesterday'" in player.table.message.value
    player.until.value = "2026-01-05 01:00"  # before now
    player.buttons["run"].click()
    assert "is before now" in player.table.message.value and sim.now == T0 + 3600
    player.close()


def test_run_until_typed_before_now_or_without_a_date_is_told_so_in_the_player_s_zone() -> None:
    """What a learner types: an hour already passed, or a time of day alone.  The box said
    ``until=datetime.datetime(2026, 1, 5, 1, 0, tzinfo=zoneinfo.ZoneInfo(key=...)) is
    before now (1767578400.0)``, and ``Invalid isoformat string: '18:00'``."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False, tz="Europe/Berlin")
    player.until.value = "2026-01-05 02:00"  # Berlin: 01:00 UTC
    player.until.value = "2026-01-05 01:30"
    assert player.table.message.value == (
        "run until '2026-01-05 01:30': 2026-01-05 01:30:00 CET Europe/Berlin is before now, "
        "the simulated time (2026-01-05 02:00:00 CET Europe/Berlin): type a later instant"
    )
    player.until.value = "18:00"
    assert player.table.message.value == (
        "run until '18:00': Invalid isoformat string: '18:00'; type a date and a time, "
        "YYYY-MM-DD HH:MM, in Europe/Berlin"
    )
    assert sim.now == T0 + 3600
    player.close()


def test_a_run_until_typed_far_past_the_box_s_reach_is_refused_and_runs_nothing() -> None:
    """2062 typed for 2026: 36 years of a simulation (notebook 04's scenario makes 60,000
    records a month) froze the kernel for minutes and took over a gigabyte."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.until.value = "2062-01-05 18:00"
    said = player.table.message.value
    assert said.startswith("run until '2062-01-05 18:00': 2062-01-05 18:00:00 UTC is ")
    assert "at most 31 days past the simulated time" in said and "run_until(" in said
    assert sim.now == T0 and sim.records() == []  # nothing advanced
    player.until.value = "2026-02-05 00:00"  # 31 days: within reach
    assert sim.now == T0 + 31 * 86400
    player.run_until(datetime(2026, 3, 20, tzinfo=UTC))  # code runs as far as it asks
    assert sim.now == datetime(2026, 3, 20, tzinfo=UTC).timestamp()
    player.close()


def test_a_run_until_just_past_the_reach_says_by_how_much() -> None:
    """A minute past 31 days read "is 31.0 days ahead, and the box runs at most 31 days":
    a refusal whose two figures agreed (one decimal of a day is 2.4 hours)."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.until.value = "2026-02-05 00:01"  # 31 days and a minute
    said = player.table.message.value
    assert "is 31 days, 0:01:00 ahead, and the box runs at most 31 days past" in said, said
    assert sim.now == T0
    player.close()


def test_the_run_until_box_s_reach_is_the_player_s_to_set() -> None:
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False, max_typed=timedelta(days=40))
    player.until.value = "2026-02-14 00:00"  # 40 days
    assert sim.now == T0 + 40 * 86400 and player.table.message.value == ""
    player.until.value = "2026-03-26 00:01"  # 40 days and a minute
    assert "at most 40 days past" in player.table.message.value and sim.now == T0 + 40 * 86400
    player.close()
    with pytest.raises(ValidationError, match=r"max_typed .* got 0"):
        SimulationPlayer(sim, chart=False, max_typed=0)


def test_pause_and_resume_act_at_the_current_simulated_instant() -> None:
    sim, tick, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.advance(900)  # runs at 00:00 and 00:10
    player.table.button(tick, "pause").click()
    assert player.table.row(tick)["status"] == "paused"
    player.advance(3600)
    assert player.table.row(tick)["runs"] == "2"
    player.table.button(tick, "resume").click()
    player.advance(60)  # resumed at 01:15: it runs at once
    assert [r.started - T0 for r in sim.task(tick).history][-1] == 900 + 3600
    assert player.table.row(tick)["runs"] == "3"
    player.close()


def test_the_player_refreshes_per_step_not_per_event() -> None:
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    refreshes = player.table.refreshes
    player.advance(86400)  # hundreds of events, one refresh
    assert player.table.refreshes == refreshes + 1
    assert sim._callbacks == []  # without a chart nothing listens: the player redraws it
    player.close()


def test_the_first_chart_shows_the_simulations_own_time_then_follows_now() -> None:
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, window=6 * 3600)
    assert player.span() == (T0, T0 + 6 * 3600)  # not 1970: the simulation's first six hours
    ax = rendered_axes(player)
    low, high = ax.get_xlim()
    end = T0 + 6 * 3600 + 6 * 3600 / 50  # the window's end, and a fiftieth of it past
    assert low < T0 / 86400 < high and abs(high - end / 86400) < 1e-9
    player.advance(86400)
    assert player.span() == (T0 + 18 * 3600, T0 + 24 * 3600)  # the six hours up to now
    player.close()


def test_once_the_window_scrolls_the_now_line_is_inside_the_frame_not_on_it() -> None:
    # Before: the chart ended at now, so the dashed "now" line notebook 04 points the
    # learner at was drawn on the axes' right edge, hidden by the frame.
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, window=6 * 3600)
    player.advance(86400)
    ax = rendered_axes(player)
    (line,) = [line for line in ax.lines if line.get_gid() == "now"]
    (at,) = set(np.asarray(line.get_xdata(), dtype=float))  # a vertical line: one x
    low, high = ax.get_xlim()
    assert at == float(sim.now) / 86400
    assert high - at == pytest.approx(6 * 3600 / 50 / 86400)  # a fiftieth of the window past
    assert at - low == pytest.approx((6 * 3600 + 6 * 3600 / 50) / 86400)
    player.close()


def test_a_player_at_the_end_of_year_9999_draws_its_chart_without_a_margin_past_it() -> None:
    sim = Simulation(workers=1, start=datetime(9999, 12, 31, 17, 55, tzinfo=UTC))
    sim.schedule("tick", FixedRate(600), duration=fixed(30))
    player = SimulationPlayer(sim)  # its six hours end five minutes before year 10000
    player.step()
    _, high = rendered_axes(player).get_xlim()
    assert high == (float(sim.now) + 6 * 3600) / 86400
    player.close()


@pytest.mark.parametrize(
    ("window", "named"),
    [
        (0, "SimulationPlayer window must be finite and > 0 seconds, got 0"),
        (-3600, "got -3600"),
        ("6h", "SimulationPlayer window must be a number of seconds or a timedelta, got '6h'"),
        (3 * 10**11, "SimulationPlayer window must end, from the simulated instant, within year"),
    ],
)
def test_a_bad_window_is_refused_naming_it_and_leaves_nothing_on_the_simulation(
    window: object, named: str
) -> None:
    # Before: window=0 said "span must run forwards, got (...)", "6h" raised TypeError and
    # 3 * 10**11 blamed a span too, once the player had put its listener on the simulation,
    # where it stayed, called at every event.
    sim, _, _ = scenario()
    with pytest.raises(ValidationError, match=re.escape(named)):
        SimulationPlayer(sim, window=window)  # type: ignore[arg-type]
    assert sim._callbacks == []
    player = SimulationPlayer(sim, window=timedelta(hours=2))
    assert player.span() == (T0, T0 + 2 * 3600)
    player.close()


def test_what_is_no_simulation_is_refused_naming_it() -> None:
    # Before: SimulationPlayer(None) raised AttributeError ('NoneType' object has no
    # attribute 'now'), and a Scheduler was taken, its step button raising AttributeError.
    for runtime in (None, Scheduler(workers=1)):
        with pytest.raises(ValidationError, match=r"SimulationPlayer steps a simulation .* got "):
            SimulationPlayer(runtime)  # type: ignore[arg-type]


def test_a_player_whose_first_chart_fails_leaves_nothing_on_the_simulation() -> None:
    sim, _, _ = scenario()
    with (
        patch("lldsched.views.plots.gantt", side_effect=RuntimeError("no chart")),
        pytest.raises(RuntimeError, match="no chart"),
    ):
        SimulationPlayer(sim)
    assert sim._callbacks == []


def test_a_player_of_a_simulation_at_year_1_draws_its_chart() -> None:
    # Before: "span must be an instant from year 1 ..." out of the first chart, whose span
    # began a 50th of the window before the first instant.
    sim = Simulation(workers=1, start=EARLIEST)
    sim.schedule("tick", FixedRate(600), duration=fixed(30))
    player = SimulationPlayer(sim)
    player.step()
    low, _ = rendered_axes(player).get_xlim()
    assert low == EARLIEST / 86400
    player.close()


def test_a_step_that_starts_a_run_draws_it_up_to_now_and_says_so() -> None:
    sim, tick, _ = scenario()
    player = SimulationPlayer(sim)
    player.step()  # tick starts at T0
    assert player.last_step.value == "last step: tick started at 2026-01-05 00:00:00"
    (flying,) = player.in_flight()
    assert (flying.task_id, flying.started, flying.finished) == (tick, T0, T0)
    ax = rendered_axes(player)
    assert [label.get_text() for label in ax.get_yticklabels()] == ["tick"]
    assert any(c.get_gid() == "short_runs" for c in ax.collections)  # a zero-length bar: a mark
    player.step()  # and finishes 30 s later: a record, nothing in flight
    assert player.in_flight() == [] and "tick finished" in player.last_step.value
    player.close()
    assert sim._callbacks == []  # closing removes the player's listener


def rendered_axes(player: SimulationPlayer) -> Axes:
    """The axes of the chart the player would draw now (its PNG, rebuilt as a figure)."""
    figures: list[Figure] = []
    with patch.object(PlotFigure, "savefig", lambda self, *a, **k: figures.append(self)):
        player._draw()
    return figures[-1].axes[0]


def test_a_redrive_says_at_a_later_step_how_the_re_run_ended() -> None:
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.advance(120)  # "broken" failed at 00:01
    broken = next(task.id for task in sim.tasks() if task.name == "broken")
    player.table.button(broken, "redrive").click()
    assert player.table.message.value.startswith("redrive broken: queued again, due now")
    player.advance(60)
    assert player.table.message.value.startswith(
        "redrive broken: re-driven, and the re-run failed again ("
    )
    player.table.button(broken, "redrive").click()
    player.until.value = "yesterday"
    player.buttons["run"].click()  # a later message: the outcome no longer replaces it
    player.advance(60)
    assert player.table.message.value.startswith("run until 'yesterday'")
    player.close()


def test_a_step_after_a_long_history_decodes_only_the_records_of_its_window() -> None:
    # A week of a 300-task service is a million records: decoding every one to draw
    # six hours made each press of "step" take seconds, longer each day.
    sim, tick, _ = scenario()
    sim.run_for(7 * 86400)
    player = SimulationPlayer(sim, window=3600)
    player.advance(3600)
    low, _ = player.span()
    log = sim.record_log()
    window = [record for record in log if record.finished >= low]
    decoded: list[int] = []
    read = type(log).__getitem__

    def counted(self: object, row: int) -> object:
        decoded.append(row)
        return read(log, row)

    with (
        patch.object(Simulation, "records", side_effect=AssertionError("every record")),
        patch.object(type(log), "__getitem__", counted),
    ):
        ax = rendered_axes(player)
    assert len(decoded) == len(window) < len(log) / 100
    runs = [r for r in window if r.task_id == tick]
    assert len(runs) == 6 and "tick" in [t.get_text() for t in ax.get_yticklabels()]
    player.close()


def test_where_widgets_cannot_render_the_player_shows_its_instant_step_and_table_as_text() -> None:
    # It showed ipywidgets' dump, "VBox(children=(HTML(value='<b>simulated time</b> ...".
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    player.step()  # tick starts at T0
    player.step()  # and finishes 30 s later
    text = player._repr_mimebundle_()["text/plain"]
    assert text.splitlines() == [
        "simulated time 2026-01-05 00:00:30 UTC",
        "last step: tick finished at 2026-01-05 00:00:30",
        *player.table.to_text().splitlines(),  # the panel's own text, as the panel shows it
    ]
    assert text.splitlines()[2:5] == [
        "task    status     next run (UTC)       runs  ok  not ok  last error",
        "tick    scheduled  2026-01-05 00:10:00  1     1   0",
        "report  scheduled  2026-01-05 01:00:00  0     0   0",
    ]
    assert str(player) == text  # print(player)
    player.until.value = "<soon>"
    player.buttons["run"].click()  # refused: the text says so, as text, not markup
    assert player.to_text().splitlines()[-1].startswith("run until '<soon>': ")
    player.close()


def _typed(box: Any, text: str) -> None:
    """What the page sends when the user commits ``text`` in ``box``: with
    ``continuous_update=False`` a Text's view sends its value once, on Enter (or on
    leaving the box); each keystroke otherwise.  A comm ``update`` message is
    ``set_state``."""
    if box.continuous_update:
        for end in range(1, len(text) + 1):
            box.set_state({"value": text[:end]})
    else:
        box.set_state({"value": text})


def test_enter_in_the_run_until_box_runs_until_its_instant() -> None:
    sim, tick, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    # Before: Enter did nothing; the user had to reach the run button.
    _typed(player.until, "2026-01-05 01:00")
    assert sim.now == T0 + 3600, "Enter did not run"
    assert player.table.message.value == ""  # no "before now" from a partly typed instant
    assert player.table.row(tick)["runs"] == "6"
    player.buttons["run"].click()  # the button still runs it: already there, nothing to do
    assert sim.now == T0 + 3600 and player.table.message.value == ""
    _typed(player.until, "soon")
    assert player.table.message.value.startswith("run until 'soon': ")
    assert sim.now == T0 + 3600
    player.table.say("")
    _typed(player.until, "")  # emptied: nothing to run to, nothing said
    assert player.table.message.value == "" and sim.now == T0 + 3600
    player.close()


def test_a_run_until_that_runs_takes_back_the_box_s_earlier_refusal() -> None:
    """Before: a refused instant's message stayed under the table after a good one ran,
    saying the box had refused what it had just run."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    _typed(player.until, "tomorrow")
    assert player.table.message.value.startswith("run until 'tomorrow': ")
    _typed(player.until, "2026-01-05 01:00")  # runs
    assert sim.now == T0 + 3600 and player.table.message.value == ""
    assert "run until" not in player.to_text()
    _typed(player.until, "2062-01-05 01:00")  # out of reach: refused, then run in code
    player.run_until(T0 + 7200)
    assert sim.now == T0 + 7200 and player.table.message.value == ""
    player.close()


def test_a_run_until_leaves_a_later_message_of_the_table_as_it_is() -> None:
    """What the table said after the refusal (a press) is not the player's to take back."""
    sim, tick, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    _typed(player.until, "tomorrow")
    player.table.button(tick, "pause").click()
    said = player.table.message.value
    assert said.startswith("pause tick: ")
    _typed(player.until, "2026-01-05 01:00")
    assert sim.now == T0 + 3600 and player.table.message.value == said
    player.close()


def test_a_button_the_simulation_refuses_says_why_under_the_table() -> None:
    """Before: a shut-down simulation's refusal left the button's callback, which
    ipywidgets logs out of sight: the press seemed to do nothing.  In code it raises."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    sim.shutdown(drain=False)
    now = sim.now
    for label in ("step", "+1 hour", "+1 day"):
        player.buttons[label].click()
        said = player.table.message.value
        assert said.startswith(f"{label}: cannot ") and "the simulation is shut down" in said
    assert sim.now == now
    with pytest.raises(SchedulerStateError, match="cannot step: the simulation is shut down"):
        player.step()
    player.close()


def test_the_run_until_box_says_how_to_run_where_the_page_shows_it() -> None:
    # ipywidgets 8.1 renders a Text's tooltip nowhere once it has a description
    # (jupyter-widgets/ipywidgets#3964): its placeholder is what the page shows.
    player = SimulationPlayer(scenario()[0], chart=False, tz="Europe/Berlin")
    assert player.until.description == "run until"
    assert "Enter" in player.until.placeholder
    assert "Enter" in player.until.tooltip and "Europe/Berlin" in player.until.tooltip
    player.close()


def test_the_charts_words_reach_the_page_without_breaking_its_view() -> None:
    # ipywidgets 8.1's DOMWidgetView.updateTooltip reads the model's description's
    # length; an Image has no description, so a tooltip on it threw in the page ("Click
    # to show javascript error" where the chart was, in JupyterLab and Voila alike).
    # Its synced state carries an empty description: the view sets the words as the
    # image's title, which a screen reader reads as its name.
    player = SimulationPlayer(scenario()[0])
    assert player.chart is not None
    state = player.chart.get_state()
    assert state["tooltip"].startswith("Chart: ")
    assert state.get("description") == ""
    player.close()


def test_past_detail_runs_a_lane_of_short_runs_keeps_a_diamond_every_ninetieth_of_the_window() -> (
    None
):
    """A heartbeat of one-second runs every minute beside a busy job: past 200 runs in the
    window the chart marked no short run (gantt's rule for its own charts), and the
    heartbeat's lane went blank, its bars a fiftieth of a pixel wide.  It keeps one
    diamond per 4 minutes (a ninetieth of six hours) that holds a run, in its colour,
    at that run's start, and the key says so."""
    sim = Simulation(workers=2, start=START)
    sim.schedule("heartbeat", FixedRate(60), duration=fixed(1))
    sim.schedule("job", FixedRate(120), duration=fixed(60))
    player = SimulationPlayer(sim)
    player.advance(3 * 3600)  # 181 beats and 91 jobs (one of each in flight): 272 runs
    ax = rendered_axes(player)
    marks: Any
    (marks,) = [c for c in ax.collections if c.get_gid() == "short_runs"]
    lanes = {
        label.get_text(): y for y, label in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
    }
    at = np.asarray(marks.get_offsets())
    on_beats = at[:, 1] == lanes["heartbeat"]
    days = at[on_beats, 0]
    ran = [*sim.records(), *player.in_flight()]  # the beat starting now too
    beats = sorted(r.started for r in ran if r.name == "heartbeat")
    firsts = sorted({int(at // 240): at for at in reversed(beats)}.values())
    assert np.allclose(days, np.array(firsts) / 86400)  # each cell's first beat
    assert len(days) == 46  # 45 cells in three hours, and 03:00's beat in flight
    legend = ax.get_legend()
    assert legend is not None
    keys = [text.get_text() for text in legend.get_texts()]
    assert keys[-1] == "a run too short for a bar\n(one per 4 min a lane at most;\ntask's colour)"
    beat_key: Any = legend.legend_handles[keys.index("heartbeat")]
    assert np.allclose(marks.get_facecolors()[on_beats], beat_key.get_facecolor())
    assert player.short_mark_every() == 240.0
    player.close()


def test_records_that_are_no_runs_do_not_count_towards_detail_runs() -> None:
    """The player chose between gantt's diamonds and its own by the records in the window,
    waits (blocked) and skipped slots counted: 60 runs among 350 records got both, two
    diamonds a short run and two keys for them.  It counts the runs gantt draws, by
    gantt's rule (``plots._base.detailed``)."""
    sim = Simulation(workers=2, start=START)
    sim.schedule("up", FixedRate(600), duration=fixed(1), id="up")
    sim.schedule("down", FixedRate(60), duration=fixed(1), depends_on=["up"], id="down")
    player = SimulationPlayer(sim)
    player.advance(5 * 3600)
    runs = [r for r in sim.records() if r.outcome.ran]
    assert len(runs) <= 200 < len(sim.records())
    ax = rendered_axes(player)
    assert [c.get_gid() for c in ax.collections].count("short_runs") == 1  # gantt's
    legend = ax.get_legend()
    assert legend is not None
    keys = [text.get_text() for text in legend.get_texts()]
    assert [key for key in keys if key.startswith("a run too short")] == [
        "a run too short for a bar\n(task's colour)"
    ]
    player.close()


def test_run_pressed_with_the_box_empty_says_to_type_an_instant_first() -> None:
    """Before: "run until '': Invalid isoformat string: ''", Python's words for a box
    the learner left empty (Enter in an empty box says nothing: it was emptied)."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False, tz="Europe/Berlin")
    for blank in ("", "   "):
        player.until.value = blank
        player.buttons["run"].click()
        assert player.table.message.value == (
            "run: the 'run until' box is empty; type a date and a time, YYYY-MM-DD HH:MM, "
            "in Europe/Berlin, then press Enter or run"
        )
    assert sim.now == T0
    _typed(player.until, "2026-01-05 02:00")  # Berlin: 01:00 UTC; the refusal taken back
    assert sim.now == T0 + 3600 and player.table.message.value == ""
    player.close()


def test_an_instant_before_year_1000_is_said_with_its_four_digit_year() -> None:
    """Before: '0001-01-01' typed was said back as "1-01-01 00:00:00 UTC is before now"
    (glibc's %Y does not pad), a date the box would not take."""
    sim, _, _ = scenario()
    player = SimulationPlayer(sim, chart=False)
    _typed(player.until, "0001-01-01")
    assert player.table.message.value.startswith(
        "run until '0001-01-01': 0001-01-01 00:00:00 UTC is before now"
    ), player.table.message.value
    player.close()
