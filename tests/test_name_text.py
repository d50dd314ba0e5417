"""A task's name is printed for people (log lines, the ``lldsched tasks`` table and
``show``, the control panel): a new name that would break the line it is printed on is
refused at registration, on both runtimes, and a name an older release stored with such a
character still loads, runs and is printed escaped on one line
(docs/decisions/checking-input.md, "A task's name that would break the line it is printed
on is refused")."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SqliteTaskStore, ValidationError
from lldsched.cli import main
from tests import jobs
from tests.conftest import T0, settle
from tests.test_store_sqlite import snapshot, task

BREAKING = {
    "newline": ("nightly\nWARNING lldsched.jobs task task-9 'x' forged", "'\\n'"),
    "carriage-return": ("a\rb", "'\\r'"),
    "tab": ("a\tb", "'\\t'"),
    "escape": ("\x1b[31mred\x1b[0m", "'\\x1b'"),
    "next-line": ("a\x85b", "'\\x85'"),
    "del": ("a\x7fb", "'\\x7f'"),
    "line-separator": ("a\u2028b", "'\\u2028'"),
    "paragraph-separator": ("a\u2029b", "'\\u2029'"),
    "bidi-override": ("invoice\u202egpj.exe", "'\\u202e'"),
    "bidi-isolate": ("a\u2066b", "'\\u2066'"),
}


@pytest.mark.parametrize("case", list(BREAKING))
def test_a_name_that_would_break_its_line_is_refused_naming_it_and_nothing_is_registered(
    driven: Any, case: str
) -> None:
    name, char = BREAKING[case]
    kept = driven.add("kept", FixedRate(60))
    with pytest.raises(ValidationError) as caught:
        driven.add(name, FixedRate(60))
    said = str(caught.value)
    assert said.startswith(f"task name {name!r} holds ")
    assert f"({char})" in said and "nothing was registered" in said
    assert "\n" not in said and "\x1b" not in said  # the message itself is one safe line
    assert driven.runtime.tasks() == [kept]


@pytest.mark.parametrize(
    "name",
    [
        "Rapport mensuel\xa0: ventes",  # a no-break space before a colon (French)
        "family 👨\u200d👩\u200d👧",  # emoji joined by zero-width joiners
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # a zero-width non-joiner (Persian)
        "שלום\u200f report",  # a right-to-left mark
        "  padded  ",
        "a\\nb",  # a backslash and an n: two printable characters
    ],
    ids=["nbsp", "zwj", "zwnj", "rlm", "padded", "backslash"],
)
def test_text_a_name_may_hold_is_taken_as_it_is(driven: Any, name: str) -> None:
    assert driven.add(name, FixedRate(60)).name == name


def test_the_decorator_refuses_such_a_name_too(driven: Any) -> None:
    with pytest.raises(ValidationError, match=r"task name 'a\\nb' holds a control character"):
        driven.runtime.scheduled(FixedRate(60), name="a\nb")(jobs.noop)
    assert driven.runtime.tasks() == []


STORED = "nightly\nWARNING forged\x1b[2J\u202eend"
ON_ONE_LINE = "nightly\\nWARNING forged\\x1b[2J\\u202eend"


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    """A store an older release wrote, its task's name holding a newline, an escape
    sequence and a bidi override (written through the store, which keeps any text UTF-8
    holds)."""
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:
        store.save(snapshot(task(id="nightly", name=STORED, action=jobs.broken)))
    return path


def test_a_name_stored_by_an_older_release_still_loads_and_runs_its_log_line_escaped(
    old_store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lldsched.jobs")
    with SqliteTaskStore(old_store) as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0)).start()
        try:
            assert scheduler.task("nightly").name == STORED
            scheduler.run_now("nightly")
            settle(scheduler)
        finally:
            scheduler.shutdown()
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lldsched.jobs"]
    assert line.startswith(f"task nightly {STORED!r} attempt 1 of 3 failed")
    assert "\n" not in line and "\x1b" not in line


def test_the_tasks_table_and_show_print_a_stored_name_escaped_and_json_gives_it_whole(
    old_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:{old_store}"
    assert main(["tasks", "--store", url]) == 0
    _title, row = capsys.readouterr().out.splitlines()
    assert row.split("  ")[:2] == ["nightly", ON_ONE_LINE]
    assert main(["tasks", "--store", url, "show", "nightly"]) == 0
    out = capsys.readouterr().out
    assert f"  name        {ON_ONE_LINE}\n" in out
    assert "\x1b" not in out and "\u202e" not in out and "forged\n" not in out
    assert main(["tasks", "--store", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == STORED  # data, for a program


def test_the_control_panel_shows_a_stored_name_escaped_in_its_row_text_and_messages(
    old_store: Path,
) -> None:
    pytest.importorskip("ipywidgets")
    from lldsched.views.presses import pressed
    from lldsched.views.widgets import ControlPanel

    with SqliteTaskStore(old_store) as store:
        scheduler = Scheduler(store=store, clock=FakeClock(T0))
        try:
            panel = ControlPanel(scheduler, loop=None)
            assert panel.row("nightly")["task"] == ON_ONE_LINE
            text = panel.to_text()
            assert len(text.splitlines()) == 2 and "\x1b" not in text  # its title, its row
            assert panel._rows["nightly"].buttons["pause"].tooltip == f"pause {ON_ONE_LINE}"
            said = pressed("pause", scheduler.task("nightly"), changed=False, when=str)
            assert said.startswith(f"pause {ON_ONE_LINE}: nothing to do")
            panel.close()
        finally:
            scheduler.shutdown()


def test_a_chart_labels_a_stored_name_on_one_line_and_marks_its_wait() -> None:
    pytest.importorskip("matplotlib")
    from lldsched import ExecutionRecord
    from lldsched.views.frames import to_frame
    from lldsched.views.plots import gantt, mark_wait

    frame = to_frame([ExecutionRecord("nightly", STORED, 1, T0, T0, 0, T0 + 5, T0 + 9, True)])
    figure = gantt(frame, by="task")
    ax = figure.axes[0]
    (lane,) = [label.get_text() for label in ax.get_yticklabels()]
    assert "\n" not in lane and lane.startswith("nightly\\nWARNING")
    mark_wait(figure, frame.iloc[0], by="task")
    assert any(t.get_text().startswith("nightly\\nWARNING") for t in ax.texts)


def test_the_players_short_runs_find_the_lane_of_a_stored_or_long_name(old_store: Path) -> None:
    """Past 200 runs the player marks a lane's runs too short for a bar; it looked a run's
    lane up by its raw name, which labels no lane of a name stored with a newline (its
    label is escaped) or of a long one (shortened): their lanes stayed blank."""
    pytest.importorskip("ipywidgets")
    from lldsched.sim import Simulation, fixed
    from lldsched.views.widgets import SimulationPlayer
    from tests.test_widgets_player import rendered_axes

    long_name = "a nightly export of every invoice to the accounting system " * 2
    with SqliteTaskStore(old_store) as store:
        sim = Simulation(workers=2, start=T0, store=store)  # nightly: every 60 s, no time
        sim.schedule(long_name, FixedRate(60), id="long", duration=fixed(0))
        sim.schedule("job", FixedRate(120), duration=fixed(60))
        player = SimulationPlayer(sim)
        try:
            player.advance(3 * 3600)
            ax = rendered_axes(player)
        finally:
            player.close()
    labels = zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
    lanes = {label.get_text(): y for y, label in labels}
    (marks,) = [c for c in ax.collections if c.get_gid() == "short_runs"]
    on = np.asarray(marks.get_offsets())[:, 1]
    stored = next(label for label in lanes if label.startswith("nightly\\nWARNING"))
    shortened = next(label for label in lanes if label.startswith("a nightly export"))
    assert shortened != long_name
    assert (on == lanes[stored]).sum() == 46 and (on == lanes[shortened]).sum() == 46


def test_an_overrun_charts_title_a_bars_name_and_the_summary_table_print_it_on_one_line() -> None:
    """Printed raw before: the overrun chart's title, the name a chart by worker writes
    on a bar wide enough for it, and format_summary's table (a second row forged)."""
    pytest.importorskip("matplotlib")
    from lldsched import ExecutionRecord, OverrunPolicy
    from lldsched.views.frames import to_frame
    from lldsched.views.plots import gantt, overrun_comparison
    from lldsched.views.report import format_summary, summarize

    runs = [
        ExecutionRecord("nightly", STORED, 1, T0 + k * 60, T0 + k * 60, 0, T0 + k * 60,
                        T0 + k * 60 + 50, True)
        for k in range(2)
    ]  # fmt: skip
    figure = overrun_comparison({OverrunPolicy.SKIP: runs})
    assert figure.get_suptitle() == f"Overrun and overlap policies: {ON_ONE_LINE}"
    long_run = ExecutionRecord("nightly", STORED, 1, T0, T0, 0, T0, T0 + 3600, True)
    ax = gantt(to_frame([long_run]), by="worker").axes[0]
    assert [t.get_text() for t in ax.texts if t.get_gid() == "bar_names"] == [ON_ONE_LINE]
    table = format_summary(summarize(runs))
    _header, row = table.splitlines()
    assert row.startswith(f"{ON_ONE_LINE}  ") and "\x1b" not in table
