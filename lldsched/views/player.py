"""SimulationPlayer: a simulation stepped by hand, with its task table and a chart.

:class:`SimulationPlayer` steps a :class:`~lldsched.runtime.Stepped` runtime (a
simulation) one event, an hour, a day, or until an instant, and shows the simulated
instant, the last step, the task table (a :class:`~lldsched.views.panel.ControlPanel`
whose verbs act at the simulated instant) and a Gantt chart redrawn after each step
(matplotlib and pandas imported for it only, through :mod:`lldsched.views.plots` and
:mod:`lldsched.views.frames`).  Where widgets cannot render it reads as text
(:meth:`SimulationPlayer.to_text`: the instant, the last step, the same table).  The
thread that steps the simulation is the only one that touches it: no lock.  So a press of
a button (or Enter in the "run until" box) runs on the kernel's own thread, each press
once and in order (:class:`~lldsched.views.widgetkit.EachOnKernelThread`): JupyterLab 4.4+
sends it on a subshell's thread, beside the cell the kernel runs.

The "run until" box runs at most :data:`MAX_TYPED_RUN` (31 days; ``max_typed=``) past
the simulated instant: a typo (2062 for 2026) would run decades and freeze the kernel.
:meth:`SimulationPlayer.run_until` in code, and the simulation's own ``run``, run as far
as they are asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lldsched import checks
from lldsched.clock import EARLIEST, LATEST, within_datetimes
from lldsched.errors import LldschedError, ValidationError, shown
from lldsched.model import ExecutionRecord, TaskEvent, TaskStatus
from lldsched.runtime import Stepped
from lldsched.schedules.cron.zone import zone_info
from lldsched.views.panel import ControlPanel
from lldsched.views.widgetkit import (
    EachOnKernelThread,
    bundle,
    close_tree,
    closes_when_its_cell_runs_again,
    plain,
    refuse_if_closed,
    require_ipywidgets,
    text_of,
    when,
)

if TYPE_CHECKING:
    import ipywidgets

__all__ = ["MAX_TYPED_RUN", "SHORT_MARK_CELLS", "SimulationPlayer"]

SHORT_MARK_CELLS = 90
"""Past ``DETAIL_RUNS`` runs, the player's chart marks a lane's runs too short for a
bar with one diamond per ninetieth of its ``window`` at most (4 minutes of six hours:
about seven pixels apart, the diamonds distinct), where ``gantt`` marks none."""

MAX_TYPED_RUN = timedelta(days=31)
"""How far past the simulated instant the player's "run until" box runs at most (its
``max_typed``).  A month of notebook 04's scenario is about 60,000 records, made in a
second or so; a year typed wrong by decades (2062 for 2026) is 432 months of it: about
ten minutes and over a gigabyte, with the kernel frozen meanwhile (docs/DECISIONS.md)."""


@runtime_checkable
class _StepDone(Protocol):
    """What a simulation's ``step()`` reports (``lldsched.sim.SimStep`` has these; the
    views read them through this protocol, importing no runtime)."""

    at: float
    kind: str
    task_id: str | None
    record: ExecutionRecord | None


class SimulationPlayer:
    """Step a simulation (a :class:`~lldsched.runtime.Stepped` runtime) by hand: one
    event, an hour, a day, or until an instant; see the simulated time, the task table
    (pause, resume and cancel act at the current simulated instant) and a Gantt chart
    (a lane per task) redrawn after every step.  ``chart=False`` leaves the chart out
    (no matplotlib or pandas needed).

    The "run until" box refuses an instant more than ``max_typed`` (seconds or a
    ``timedelta``; :data:`MAX_TYPED_RUN`, 31 days, by default) past the simulated
    instant, saying so under the table (until a "run until" runs), and runs nothing: a
    typo must not freeze the kernel for minutes.  To go further on purpose, call
    :meth:`run_until` in a cell (unbounded), or make the player with a larger
    ``max_typed``.

    The chart always shows the simulation's own time: at first the ``window`` seconds
    from the instant the player was made, later the ``window`` seconds up to now,
    with a line at the current instant (and a fiftieth of the window past each end, so
    that line is never drawn on the frame).  A run in flight is drawn up to that line, so
    a step that starts a run shows it at once.  To know when each run in flight
    started, the player listens to the simulation (a note per start and finish; the
    table is still refreshed once per step, not per event).  A run too short for a bar
    (a one-second heartbeat) is a diamond at its start, as ``gantt`` draws it up to
    ``DETAIL_RUNS`` (200) runs drawn in the window (waits and skipped slots not
    counted, by ``gantt``'s rule); past that, where ``gantt`` marks none, the
    player keeps one diamond a lane per :data:`SHORT_MARK_CELLS`-th of the window (4
    minutes of six hours) that holds such a run, and its key says so.
    """

    def __init__(
        self,
        sim: Stepped,
        *,
        tz: str = "UTC",
        chart: bool = True,
        window: float | timedelta = 6 * 3600,
        max_typed: float | timedelta = MAX_TYPED_RUN,
    ) -> None:
        if not isinstance(sim, Stepped):  # None raised AttributeError; a Scheduler, at step
            raise ValidationError(
                "SimulationPlayer steps a simulation (a runtime with step(), run() and "
                f"run_for()), got {shown(sim)}"
            )
        checks.flag(chart, name="SimulationPlayer chart")  # chart="no" drew a chart
        self.max_typed = checks.seconds(max_typed, name="SimulationPlayer max_typed", above=0)
        # Checked here, not by the chart's span at the first draw: window=0 said "span
        # must run forwards", "6h" raised TypeError, and the listener stayed on sim.
        self.window = checks.seconds(window, name="SimulationPlayer window", above=0)
        self._origin = float(sim.now)
        within_datetimes(
            self._origin + self.window, name="SimulationPlayer window", given=window,
            words="must end, from the simulated instant, within year 9999",
        )  # fmt: skip
        widgets = require_ipywidgets()
        self.sim = sim
        self._tz = zone_info(tz)
        self.table = ControlPanel(sim, tz=tz, loop=None, live=False)
        # Every press (a button, Enter in the box) runs on the kernel's thread, in order.
        self._presses = EachOnKernelThread(self._press)
        self.clock = widgets.HTML()
        buttons = {
            "step": (lambda: self.step(), "process the next simulated event"),
            "+1 hour": (lambda: self.advance(3600), "run one simulated hour"),
            "+1 day": (lambda: self.advance(86400), "run one simulated day"),
        }
        # Annotated: from an empty dict pyright reads a user's player.buttons as
        # dict[Unknown, Unknown], an error in its strict mode (docs/decisions/public-api.md,
        # "What a user's pyright sees").
        self.buttons: dict[str, ipywidgets.Button] = {}
        for label, (action, tooltip) in buttons.items():
            button = widgets.Button(
                description=label, tooltip=tooltip, layout=widgets.Layout(width="auto")
            )
            button.on_click(
                lambda _button, action=action, label=label: self._presses.request(label, action)
            )
            button.add_class(f"lldsched-player-{label.replace(' ', '').replace('+', 'plus')}")
            self.buttons[label] = button
        # Enter runs (ipywidgets 8's way: the value comes once, on Enter or on leaving
        # the box, and is observed; on_submit is deprecated); the hint is in the
        # placeholder, which the page shows (the tooltip it does not: see self.find).
        self.until = widgets.Text(
            placeholder="2026-01-05 18:00, Enter", description="run until",
            tooltip=f"an instant (YYYY-MM-DD HH:MM, in {self._tz.key}); Enter runs until it",
            continuous_update=False,
        )  # fmt: skip
        self.until.observe(self._until_typed, names="value")
        self.buttons["run"] = widgets.Button(
            description="run", tooltip="run until the instant typed in 'run until'",
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.buttons["run"].on_click(lambda _button: self._until_pressed(self.until.value))
        self.buttons["run"].add_class("lldsched-player-run")
        self.clock.add_class("lldsched-player-clock")
        self.last_step = widgets.HTML()
        self.last_step.add_class("lldsched-player-last-step")
        self.chart = widgets.Image(format="png") if chart else None
        if self.chart is not None:
            self.chart.add_class("lldsched-player-chart")
            # Its tooltip (the chart in words) becomes the image's title, which a screen
            # reader reads as its name; ipywidgets 8.1's view reads the model's
            # description first, which an Image has not: without one synced, the view
            # threw and the page showed "Click to show javascript error" instead.
            import traitlets  # ipywidgets' own dependency, as lazily as it is

            self.chart.add_traits(description=traitlets.Unicode("").tag(sync=True))
        # Runs in flight: task id -> when it started (written by _note on the thread that
        # steps the simulation, the only thread that touches the player).
        self._started: dict[str, float] = {}
        self._listener = self._note  # one bound method: removal finds it by identity
        if self.chart is not None:
            sim.add_listener(self._listener)
        controls = widgets.HBox([*(self.buttons[k] for k in ("step", "+1 hour", "+1 day")),
                                 self.until, self.buttons["run"]])  # fmt: skip
        parts = [self.clock, controls, self.last_step, self.table.widget]
        if self.chart is not None:
            parts.append(self.chart)
        self.widget = widgets.VBox(parts)
        self.charts_drawn = 0
        self._closed = False
        self._refused: str | None = None  # what the box's last refusal said, until a run
        try:
            self._refresh()
        except BaseException:  # no player: nothing of it stays on sim, or open
            self.close()
            raise
        closes_when_its_cell_runs_again(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: a closed player acts no more."""
        return self._closed

    def _check_open(self, verb: str) -> None:
        refuse_if_closed(self._closed, view="player", verb=verb)

    def step(self) -> None:
        """Process the next event, and say what it was.  Raises
        :class:`~lldsched.errors.SchedulerStateError` once the player is closed, as
        :meth:`advance` and :meth:`run_until` do (nothing is run)."""
        self._check_open("step")
        done = self.sim.step()
        if isinstance(done, _StepDone):
            if done.record is not None:  # its task may have finished and retired
                name = done.record.name
            else:
                name = self.sim.task(done.task_id).name if done.task_id else ""
            what = {"start": "started", "finish": "finished"}.get(done.kind, done.kind)
            self.last_step.value = plain(f"last step: {name} {what} at {when(done.at, self._tz)}")
        else:
            self.last_step.value = "nothing left to happen"
        self._refresh()

    def advance(self, seconds: float) -> None:
        """Run ``seconds`` of simulated time."""
        self._check_open("advance")
        self.sim.run_for(seconds)
        self.last_step.value = ""
        self._refresh()

    def run_until(self, when: datetime | float) -> None:
        """Run until ``when`` (an aware datetime, or epoch seconds), however far: the
        "run until" box's bound (``max_typed``) is the box's, not this call's.  Once it
        has run, the box's last refusal is taken back from under the table, unless
        something was said there since (:meth:`ControlPanel.take_back
        <lldsched.views.panel.ControlPanel.take_back>`)."""
        self._check_open("run until")
        self.sim.run(when)
        self.last_step.value = ""
        if self._refused is not None:
            self.table.take_back(self._refused)
            self._refused = None
        self._refresh()

    def _press(self, label: str, action: Callable[[], None]) -> None:
        """A button's callback: ``action``, and what the simulation refuses (a simulation
        shut down) said under the table, as the "run until" box says its refusals: out of
        a callback, ipywidgets logs it where the user does not look.  Any other exception
        (a duration model, a listener, the chart that raised) is said there too, with its
        traceback (:meth:`ControlPanel.say_failed
        <lldsched.views.panel.ControlPanel.say_failed>`), on whichever thread the press
        ran: queued to the kernel's thread it went to the kernel's log.  The player is
        then redrawn as the failed press left the simulation, and the next press acts.
        A closed player raises (:meth:`_check_open`): nothing is said under a closed
        table."""
        self._check_open(label)
        try:
            action()
        except LldschedError as exc:
            self.table.say(f"{label}: {exc}")
        except Exception as exc:
            self.table.say_failed(label, exc)
            self.last_step.value = ""
            with contextlib.suppress(Exception):  # what failed may be the drawing itself
                self._refresh()

    def _until_typed(self, change: dict[str, Any]) -> None:
        """The box's text was committed (Enter, or leaving it): run until it, unless it
        was emptied (nothing to run to, nothing to complain about)."""
        if str(change["new"]).strip():
            self._until_pressed(str(change["new"]))

    def _until_pressed(self, text: str) -> None:
        """Run until the box's ``text`` as it was at the press, on the kernel's thread."""
        self._presses.request("run until", lambda: self._run_until_text(text))

    def _run_until_text(self, text: str) -> None:
        self._check_open("run until")  # raised, not said under a closed table
        if not text.strip():  # only the run button gets here with nothing typed
            self._refused = (
                f"run: the 'run until' box is empty; type a date and a time, YYYY-MM-DD "
                f"HH:MM, in {self._tz.key}, then press Enter or run"
            )
            self.table.say(self._refused)
            return
        try:
            try:
                when = datetime.fromisoformat(text.strip())
            except ValueError as exc:  # a time of day alone, a word: say what to type
                raise ValidationError(
                    f"{exc}; type a date and a time, YYYY-MM-DD HH:MM, in {self._tz.key}"
                ) from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=self._tz)
            self._within_reach(when)
            self.run_until(when)
        except (ValueError, LldschedError) as exc:
            self._refused = f"run until {text!r}: {exc}"
            self.table.say(self._refused)

    def _within_reach(self, until: datetime) -> None:
        """Refuse a typed instant before the simulated instant, or more than ``max_typed``
        past it (the one place the box's bound is kept; see the class docstring), each
        said in the player's zone."""
        ahead = until.timestamp() - float(self.sim.now)
        if ahead < 0:
            raise ValidationError(
                f"{when(until.timestamp(), self._tz)} {self._tz.key} is before now, the "
                f"simulated time ({self._now()}): type a later instant"
            )
        if ahead > self.max_typed:
            reach = timedelta(seconds=self.max_typed)
            raise ValidationError(
                f"{when(until.timestamp(), self._tz)} {self._tz.key} is "
                f"{_days(timedelta(seconds=round(ahead)))} ahead, and the box runs at most "
                f"{_days(reach)} past the simulated time ({self._now()}): type an earlier "
                "instant, or run there on purpose with player.run_until(...) in a cell (or a "
                "player made with a larger max_typed)"
            )

    def _note(self, event: TaskEvent) -> None:
        if event.record is not None or event.status is not TaskStatus.RUNNING:
            self._started.pop(event.task_id, None)
        elif event.previous is not TaskStatus.RUNNING:
            self._started[event.task_id] = event.at

    def _now(self) -> str:
        """The simulated instant, with its zone's name (what the clock line says)."""
        return f"{when(self.sim.now, self._tz)} {self._tz.key}"

    def _refresh(self) -> None:
        self.clock.value = f"<b>simulated time</b> {plain(self._now())}"
        self.table.refresh()
        if self.chart is not None:
            self.chart.value, self.chart.tooltip = self._draw()

    def span(self) -> tuple[float, float]:
        """The chart's time span, epoch seconds: ``window`` seconds from the player's first
        instant, or up to now once now is past that."""
        end = max(self._origin + self.window, float(self.sim.now))
        return end - self.window, end

    def in_flight(self) -> list[ExecutionRecord]:
        """The runs in flight now, as records that end now (what the chart draws)."""
        now = float(self.sim.now)
        flying = []
        for task_id, started in self._started.items():
            task = self.sim.task(task_id)
            flying.append(
                ExecutionRecord(
                    task_id=task_id, name=task.name, attempt=max(task.attempt, 1), due=started,
                    slot=started, worker=0, started=started, finished=now, ok=True,
                )
            )  # fmt: skip
        return flying

    def _draw(self) -> tuple[bytes, str]:
        """The chart as PNG, and in words (the image's tooltip: its title, which a
        screen reader reads as the picture's name)."""
        import io

        from lldsched.views.frames import to_frame
        from lldsched.views.plots import PlotFigure, gantt

        low, high = self.span()
        order = {task.id: index for index, task in enumerate(self.sim.tasks())}
        recent = self._finished_since(low)
        recent = sorted([*recent, *self.in_flight()], key=lambda r: order.get(r.task_id, -1))
        figure = PlotFigure(figsize=(11.0, 4.2), layout="constrained")
        ax = figure.add_subplot()
        # A fiftieth of the window on each side: a run at the first instant, and once the
        # window scrolls the "now" line at its end, sit inside the frame, not on it (a
        # simulation of year 1 has no before, nor one of year 9999 an after).
        pad = self.window / 50
        shown = (max(low - pad, EARLIEST), high + pad if high + pad < LATEST else high)
        frame = to_frame(recent)
        gantt(frame, by="task", ax=ax, tz=self._tz.key, span=shown)
        self._mark_short_runs(ax, recent, frame, shown)
        mark_now(ax, float(self.sim.now))
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80)
        self.charts_drawn += 1
        return buffer.getvalue(), figure.description

    def short_mark_every(self) -> float:
        """Seconds of the chart's time a lane has one diamond for at most, past
        ``DETAIL_RUNS`` runs (:meth:`_mark_short_runs`): the ``window`` cut in
        :data:`SHORT_MARK_CELLS` (4 minutes of the default six hours)."""
        return self.window / SHORT_MARK_CELLS

    def _mark_short_runs(
        self, ax: Any, records: list[ExecutionRecord], frame: Any, span: tuple[float, float]
    ) -> None:
        """The runs too short for a bar, marked on a chart of more than ``DETAIL_RUNS``
        runs drawn, where ``gantt`` marks none (a diamond a run would be a smear): on each
        lane, one diamond per :meth:`short_mark_every` seconds that holds one or more
        (the cells counted from the epoch, so a mark stays put as the window scrolls),
        at the first such run's start, in its task's colour, and the key says so.
        Without it, a heartbeat of one-second runs, drawn as a bar a fiftieth of a
        pixel wide, vanished from its lane once the window held 200 runs.

        A run finds its lane by the label ``gantt`` gave its task (``frame``'s, by
        :func:`~lldsched.views.plots.taskcolours.task_codes`: a name stored with a newline
        written escaped, a long one shortened, one two tasks share followed by the id),
        never by its raw name, which no lane of such a task is labelled with.

        The runs drawn are counted as ``gantt`` counts them, by its rule
        (:func:`~lldsched.views.plots._base.detailed`): the rows that ran, on the lanes
        it kept.  Counting the records in the window, a wait and a skipped slot counted
        too, a chart of 60 runs among 350 records got gantt's diamonds and these."""
        import numpy as np
        from matplotlib.lines import Line2D

        from lldsched.views.durations import seconds_text
        from lldsched.views.frames import ran
        from lldsched.views.plots import OTHER_TASKS, SHORT_RUN
        from lldsched.views.plots._base import add_legend, detailed
        from lldsched.views.plots.runbars import SHORT_LABEL
        from lldsched.views.plots.taskcolours import task_codes

        legend = ax.get_legend()
        if legend is None:
            return
        lanes = {
            label.get_text(): y
            for y, label in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
        }
        keys = [text.get_text() for text in legend.get_texts()]
        handles = list(legend.legend_handles)
        colours = {
            key: handle.get_facecolor()
            for key, handle in zip(keys, handles, strict=True)
            if hasattr(handle, "get_facecolor") and key in lanes
        }
        runs_drawn = ran(frame)
        codes, labels, _, _ = task_codes(runs_drawn)
        if detailed(sum(labels[code] in lanes for code in codes.tolist())):
            return  # gantt marked every short run
        label_of = {
            task_id: labels[code]
            for task_id, code in zip(runs_drawn["task_id"].tolist(), codes.tolist(), strict=True)
        }
        shortest = (span[1] - span[0]) * SHORT_RUN
        every = self.short_mark_every()
        marked: dict[tuple[str, int], tuple[str, ExecutionRecord]] = {}
        for record in records:
            lane = label_of.get(record.task_id)
            if lane is not None and lane in lanes and record.finished - record.started < shortest:
                cell = (lane, int(record.started // every))
                if cell not in marked or record.started < marked[cell][1].started:
                    marked[cell] = (lane, record)  # the cell's first
        if not marked:
            return
        runs = list(marked.values())
        ax.scatter(
            np.array([run.started for _, run in runs]) / 86400.0,  # matplotlib dates: days
            [lanes[lane] for lane, _ in runs],
            marker="D", s=22, c=[colours.get(lane, OTHER_TASKS) for lane, _ in runs],
            edgecolors="0.15", linewidths=0.5, zorder=6, gid="short_runs",
        )  # fmt: skip
        said = f"{SHORT_LABEL}\n(one per {seconds_text(every)} a lane at most;\ntask's colour)"
        key = Line2D([], [], color="white", marker="D", markersize=5, markeredgecolor="0.15",
                     markeredgewidth=0.5, linestyle="none", label=said)  # fmt: skip
        for handle, text in zip(handles, keys, strict=True):
            handle.set_label(text)
        add_legend(ax, [*handles, key])

    def _finished_since(self, low: float) -> list[ExecutionRecord]:
        """The records that finished at ``low`` or later.  A runtime that keeps its
        records as columns (``record_log()``, as a ``Simulation`` does) has only those
        rows decoded: a week of 300 tasks is a million records, and decoding them all
        for a six-hour chart took seconds a step."""
        log = getattr(self.sim, "record_log", None)
        if not callable(log):
            return [r for r in self.sim.records() if r.finished >= low]
        import numpy as np

        records = log()
        finished = np.frombuffer(records.columns().numbers["finished"], dtype=np.float64)
        return [records[int(row)] for row in np.flatnonzero(finished >= low)]

    def close(self) -> None:
        """Stop listening to the simulation, close the table (:meth:`ControlPanel.close`)
        and every other widget the player made (buttons, boxes, the chart, each one's
        layout and style): nothing of it stays open, and it is garbage once its caller
        drops it.  The simulation is left as it is; the player's controls then raise
        :class:`~lldsched.errors.SchedulerStateError` and run nothing.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.chart is not None:
            self.sim.remove_listener(self._listener)
        self.table.close()
        close_tree(self.widget)

    def to_text(self) -> str:
        """The player as text (what a notebook shows where widgets cannot render): the
        simulated instant, the last step, the task table as :meth:`ControlPanel.to_text`
        writes it, and what the last press said (a ``run until`` refused).  The chart is
        left out: ``player.sim.records()`` holds the runs it draws."""
        lines = [f"simulated time {self._now()}"]
        if self.last_step.value:
            lines.append(text_of(self.last_step.value))
        lines.append(self.table.to_text())
        if self.table.said:
            lines.append(self.table.said)
        return "\n".join(lines)

    def __str__(self) -> str:  # print(player)
        return self.to_text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return bundle(self.widget, self.to_text, **kwargs)


def _days(span: timedelta) -> str:
    """``31 days``, ``1 day``, or ``6:00:00`` under a day, ``31 days, 0:01:00`` past whole
    days (a ``max_typed``, or how far a typed instant is, in words: to the second, so a
    minute past the reach does not read as the reach itself, as ``31.0 days`` did)."""
    if span.seconds or span.microseconds or not span.days:
        return str(span)
    return f"{span.days} day" if span.days == 1 else f"{span.days} days"


def mark_now(ax: Any, now: float) -> None:
    """The player's dashed line at ``now`` (epoch seconds) on its chart, labelled "now"
    on the side of the line with room: to its right in the left half of the chart, to
    its left in the right half (once the window scrolls, now is the right edge, and a
    label past it was cut off under the legend)."""
    from lldsched.views.plots.palette import ACCENT

    at = now / 86400.0  # a matplotlib date: days since 1970
    ax.axvline(at, color=ACCENT, linestyle="--", linewidth=1, gid="now")
    low, high = ax.get_xlim()
    left = at > (low + high) / 2
    ax.text(
        at, 0.99, "now " if left else " now", color="black", va="top",
        ha="right" if left else "left", transform=ax.get_xaxis_transform(),
    )  # fmt: skip
