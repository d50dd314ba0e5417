"""ControlPanel: live control of a running scheduler, one row per task.

:class:`ControlPanel` shows one row per task (name, status, next run, runs, ok, not ok:
failed, timed out or cancelled, :data:`COLUMNS`; last error: cut to a line, the whole
text opened under it by a click) with pause, resume and cancel buttons, and redrive for
a dead-lettered task; past :data:`MAX_ROWS` tasks, the first registered, and a ``find``
box for the others.  It is updated by the scheduler's events, never by a polling loop:

* its listener runs on the scheduler's event-delivery thread and only notes which
  tasks changed; the first event of a burst schedules one refresh, the rest of
  the burst joins it (coalescing);
* the refresh runs on the notebook kernel's event loop (``call_soon_threadsafe``),
  so widget state is only ever touched on the kernel's own thread: ipykernel 7
  does not reliably carry widget updates sent from other threads.  Outside a
  kernel (a script, a test) there is no loop and the refresh runs on the
  delivering thread;
* :meth:`ControlPanel.close` removes the listener and closes every widget the panel
  made (rows, buttons, boxes, and each one's layout and style): nothing of it stays in
  ipywidgets' registry of open widgets, and once the caller drops it the panel is
  garbage (:func:`lldsched.views.widgetkit.close_tree`).  A panel made by a notebook cell
  is closed so when that cell runs again (in a front end that names its cells:
  :func:`lldsched.views.widgetkit.closes_when_its_cell_runs_again`).

Buttons act through the runtime's own verbs and refresh their row at once; a
simulation's (which has no lock) on the kernel's own thread, each press once and in
order, as its typed ``find`` does (its latest text; :mod:`lldsched.views.widgetkit`:
JupyterLab 4.4+ sends them on a subshell's thread, beside the running cell); a threaded
scheduler's on whichever thread the press comes, its verbs being safe there; the
message under the table says what the press did (:mod:`lldsched.views.presses`), and
for a redrive, once the re-run ends, how it ended.  Where widgets cannot render, it
reads as text: :meth:`ControlPanel.to_text` (the table), its plain-text bundle.
ipywidgets is imported only when a panel is made (:mod:`lldsched.views.widgetkit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, Protocol
from zoneinfo import ZoneInfo

from lldsched import checks
from lldsched.core.task import ScheduledTask
from lldsched.errors import LldschedError, TaskNotFoundError, ValidationError, shown
from lldsched.model import TaskEvent, TaskStatus
from lldsched.printable import one_line
from lldsched.runtime import Runtime, Stepped
from lldsched.schedules.cron.zone import zone_info
from lldsched.views.presses import RedriveWatch, fate_in_flight, pressed, runtime_noun
from lldsched.views.widgetkit import (
    EachOnKernelThread,
    OnKernelThread,
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

__all__ = ["COLUMNS", "HEADINGS", "MAX_ROWS", "ControlPanel"]

MAX_ROWS = 50
"""Rows a :class:`ControlPanel` shows at most (its ``max_rows``): the first tasks
registered, or those whose name holds the text typed in its ``find`` box.  A row is
eight cells, 13 widgets: 300 rows took ten seconds to appear, as a wall no one reads."""

COLUMNS = ("task", "status", "next run", "runs", "ok", "failed", "last error")
"""The keys of a row (:meth:`ControlPanel.row`).  Its ``failed`` is every run that did not
succeed (the task's ``failure_count``: a failed run, a timed-out or a cancelled one, so
``runs == ok + failed``), headed ``not ok`` (:data:`HEADINGS`) as ``tasks show`` says
"failed, timed out or cancelled": ``task_summary``'s ``failed`` counts errors only."""

HEADINGS = {"failed": "not ok"}
"""The headings that differ from their row's key (:data:`COLUMNS`): the panel's table
and :meth:`ControlPanel.to_text`; the key stays as it was for code that reads a row."""
_HEADING_TIPS = {"not ok": "failed, timed out or cancelled: every run that did not succeed"}
_LIVE = frozenset(  # the statuses pause() accepts
    {TaskStatus.SCHEDULED, TaskStatus.RETRYING, TaskStatus.RUNNING, TaskStatus.BLOCKED}
)
_ERROR_WIDTH = 60
# The last error cut to _ERROR_WIDTH is a <details>' summary, and the whole text opens
# under it (a click, or Enter): ipywidgets 8.1 renders a Label's tooltip nowhere
# (jupyter-widgets/ipywidgets#3703), where the whole text used to be.  Its HTML view sets
# the value as the content's markup as it is; the styles keep the summary on its one
# line, cut to the column, and wrap the whole text within the column once opened (the
# details asks for no width of its own, "width: 0", and takes the cell's, "min-width:
# 100%": else its one-line summary widened the cell's content past the column).
_ERROR_DISCLOSURE = (
    '<details style="width: 0; min-width: 100%"><summary style="cursor: pointer; '
    'overflow: hidden; text-overflow: ellipsis; white-space: nowrap">{cut}</summary>'
    '<div style="line-height: 1.4; white-space: pre-wrap; overflow-wrap: anywhere; '
    'padding-bottom: 4px">{whole}</div></details>'
)
# A press that failed (a bug, not a refusal: a duration model that raised) is said under
# the table, its traceback a click away (the same disclosure as a last error's).
_FAILURE_DISCLOSURE = (
    '<details><summary style="cursor: pointer">{summary}</summary>'
    '<pre style="white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0 4px; '
    'font-size: 0.85em; line-height: 1.3">{traceback}</pre></details>'
)
# On screen the controls come right after the task's name, so they stay in view in a
# narrow cell and never move when a value changes; the cells whose text changes have
# fixed widths, and the last error (cut, the whole text a click away) comes last.
_SHOWN = ("task", "controls", "status", "next run", "runs", "ok", "failed", "last error")
_GRID_COLUMNS = "max-content max-content 5.5em 11em 3.5em 3.5em 3.5em minmax(8em, 20em)"


class _Loop(Protocol):
    def call_soon_threadsafe(self, callback: Callable[[], object]) -> object: ...


def _kernel_loop() -> _Loop | None:
    """The event loop running on this thread (a notebook kernel's), if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Shared:
    """The layouts and styles every row of a panel shares.  ipywidgets gives each widget
    a layout and a style of its own, each a widget: a row of eight columns was 35 widgets,
    and a table of ten rows sent some 900 messages to be made and closed.  Sent on the
    kernel's IOPub, which drops what a slow front end has not taken past its high-water
    mark (1000 messages a subscriber), a status "idle" among them: the cell then ran for
    ever in JupyterLab (docs/decisions/teaching-kit.md, "A table's rows share their layouts").  Its
    widgets are closed with the panel, never with a row (a row may leave the table while
    the others still use them)."""

    def __init__(self, widgets: Any) -> None:
        strings = widgets.widgets.widget_string  # their styles, not exported at the top
        self.cell_layout = widgets.Layout()
        self.label_style = strings.LabelStyle()
        self.html_style = strings.HTMLStyle()
        self.button_layout = widgets.Layout(width="auto")
        self.button_style = widgets.ButtonStyle()
        self.box_layout = widgets.Layout()

    @property
    def all(self) -> list[Any]:
        """Every layout and style it holds (what the panel closes, and a row keeps open)."""
        return [
            self.cell_layout,
            self.label_style,
            self.html_style,
            self.button_layout,
            self.button_style,
            self.box_layout,
        ]


class _Row:
    """The widgets of one task's row."""

    def __init__(self, widgets: Any, panel: ControlPanel, task_id: str, shared: _Shared) -> None:
        self.task_id = task_id
        self._shared = shared

        # Stable CSS classes: "lldsched-<column>" and "lldsched-<verb>", plus the task's
        # id on every cell, for styling and for browser tests (given when made: each
        # add_class after is one more message to the page).
        def classes(name: str) -> list[str]:
            return [f"lldsched-{name.replace(' ', '-')}", f"lldsched-{task_id}"]

        self.cells = {
            column: widgets.HTML(
                layout=shared.cell_layout, style=shared.html_style, _dom_classes=classes(column)
            )
            if column == "last error"
            else widgets.Label(
                layout=shared.cell_layout, style=shared.label_style, _dom_classes=classes(column)
            )
            for column in COLUMNS
        }
        self.shown = dict.fromkeys(COLUMNS, "")  # the row as text (the last error cut)
        self.buttons = {
            verb: widgets.Button(
                description=verb,
                # redrive's own: shown or hidden per row (its layout's visibility)
                layout=widgets.Layout(width="auto") if verb == "redrive" else shared.button_layout,
                style=shared.button_style,
                _dom_classes=classes(verb),
            )
            for verb in ("pause", "resume", "cancel", "redrive")
        }
        for verb, button in self.buttons.items():
            button.on_click(lambda _button, verb=verb: panel._presses.request(task_id, verb))
        # A button says its verb; its tooltip (the button's title, which a screen reader
        # reads with it) names the task too: a column of "pause" buttons says which.
        self.named = False
        self.controls = widgets.HBox(list(self.buttons.values()), layout=shared.box_layout)

    @property
    def children(self) -> list[Any]:
        return [self.controls if column == "controls" else self.cells[column] for column in _SHOWN]

    def close(self) -> None:
        """Close the row's widgets (a row no longer shown), and each one's own layout and
        style (those of every row stay open: the panel's, closed with it)."""
        close_tree(self.controls, *self.cells.values(), keep=self._shared.all)

    def show(self, task: ScheduledTask, tz: ZoneInfo) -> None:
        whole = task.last_error or ""
        error = whole if len(whole) <= _ERROR_WIDTH else whole[: _ERROR_WIDTH - 1] + "…"
        values = (
            one_line(task.name), task.status.value, when(task.next_run_at, tz),
            str(task.run_count), str(task.run_count - task.failure_count),
            str(task.failure_count), error,
        )  # fmt: skip
        for (column, cell), value in zip(self.cells.items(), values, strict=True):
            self.shown[column] = value
            if column != "last error":  # (a value set again unchanged sends nothing)
                cell.value = value
            elif error is whole:
                cell.value = plain(whole)
            else:
                cell.value = _ERROR_DISCLOSURE.format(cut=plain(error), whole=plain(whole))
        if not self.named:  # a row's task keeps its name: said once
            self.named = True
            for verb, button in self.buttons.items():
                button.tooltip = f"{verb} {one_line(task.name)}"
        status = task.status
        self.buttons["pause"].disabled = status not in _LIVE
        self.buttons["resume"].disabled = status is not TaskStatus.PAUSED
        self.buttons["cancel"].disabled = status.is_terminal
        # Hidden, not removed: the button keeps its room, so the controls never shift.
        self.buttons["redrive"].layout.visibility = (
            "visible" if status is TaskStatus.FAILED else "hidden"
        )


class ControlPanel:
    """A live table of ``source``'s tasks with per-task controls (see the module docstring).

    ``source`` is a :class:`~lldsched.runtime.Runtime`: a ``Scheduler`` or a
    ``Simulation``.  Display it as the last expression of a cell, or ``panel.widget``.
    ``loop`` overrides where refreshes run (tests pass a fake).  With ``live=False``
    the panel does not listen: its owner calls :meth:`refresh` (the simulation
    player does, once per step, instead of once per event of a simulated day).

    At most ``max_rows`` rows are shown (default :data:`MAX_ROWS`; ``None``: a row
    per task): the first tasks registered, and past that many a ``find`` box above
    the table shows instead the tasks whose name holds what is typed in it (any
    case), with a note saying how many of how many are shown.
    """

    def __init__(
        self,
        source: Runtime,
        *,
        tz: str = "UTC",
        loop: _Loop | Literal["auto"] | None = "auto",
        live: bool = True,
        max_rows: int | None = MAX_ROWS,
    ) -> None:
        if not isinstance(source, Runtime):  # None raised AttributeError ('tasks')
            raise ValidationError(
                f"ControlPanel takes a runtime (a Scheduler or a Simulation), got {shown(source)}"
            )
        if loop != "auto" and loop is not None and not hasattr(loop, "call_soon_threadsafe"):
            # found here, not as an AttributeError in the listener at the first event
            raise ValidationError(f'loop must be "auto", None or an event loop, got {shown(loop)}')
        if max_rows is not None:
            checks.whole(max_rows, name="max_rows", at_least=1)
        checks.flag(live, name="ControlPanel live")  # live=None made a panel that never listened
        self.max_rows = max_rows
        widgets = require_ipywidgets()
        self._widgets = widgets
        self._source = source
        self._tz = zone_info(tz)
        self._loop: _Loop | None = _kernel_loop() if loop == "auto" else loop
        # Guards _dirty and _scheduled: written by the event thread, read by the refresh.
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._scheduled = False
        # Serialises refreshes (the kernel loop, a click, or the event thread outside
        # a kernel), so two never interleave their label updates; guards _watch too.
        self._render = threading.RLock()
        self._watch: RedriveWatch | None = None  # the task the last press redrove
        # A simulation's press, and a typed find, run on the kernel's thread (whatever
        # ``loop`` says of the events': the player's table takes none, and is pressed all
        # the same): a simulation has no lock.  A threaded scheduler's verbs are safe on
        # any thread, and act at once: a cell waiting on a stuck task (wait_idle) can
        # still be unstuck from the panel (cancel), which a press queued behind that
        # cell could not do.
        at_once = not isinstance(source, Stepped)
        self._presses = EachOnKernelThread(self._press, at_once=at_once)
        self._finds = OnKernelThread(self.refresh, at_once=at_once)
        self._rows: dict[str, _Row] = {}
        self._shared = shared = _Shared(widgets)
        self._titles = {column: HEADINGS.get(column, column) for column in COLUMNS}
        self._titles["next run"] = f"next run ({self._tz.key})"
        titles = {**self._titles, "controls": "controls"}
        self._header = [
            widgets.HTML(
                _heading(titles[column]),
                layout=shared.cell_layout,
                style=shared.html_style,
            )
            for column in _SHOWN
        ]
        self._grid = widgets.GridBox(
            self._header,
            layout=widgets.Layout(grid_template_columns=_GRID_COLUMNS, grid_gap="2px 10px"),
        )
        self.message = widgets.HTML()
        self.message.add_class("lldsched-message")
        self._said = ""  # the message as text (what to_text writes)
        # Its value comes on Enter (or on leaving the box), not per keystroke.  The hint
        # is in the placeholder: ipywidgets 8.1 renders a Text's tooltip nowhere once it
        # has a description (jupyter-widgets/ipywidgets#3964; docs/DECISIONS.md).
        self.find = widgets.Text(
            placeholder="part of a name, then Enter", description="find",
            tooltip="show the tasks whose name holds this text (Enter applies it)",
            continuous_update=False, layout=widgets.Layout(display="none"),
        )  # fmt: skip
        self.find.add_class("lldsched-find")
        self.find.observe(lambda _change: self._finds.request(), names="value")
        self.note = widgets.HTML()
        self.note.add_class("lldsched-note")
        finder = widgets.HBox([self.find, self.note])
        self.widget: ipywidgets.VBox = widgets.VBox([finder, self._grid, self.message])
        self.refreshes = 0  # how many refreshes ran (bursts coalesce into one)
        self._closed = False
        self._live = live
        self.refresh()
        if live:
            source.add_listener(self._on_event)
        closes_when_its_cell_runs_again(self)

    # -- what tests and notebooks read --------------------------------------------------

    @property
    def rows(self) -> list[dict[str, str]]:
        """The table as shown: one dict per task, keyed by :data:`COLUMNS`."""
        with self._render:
            return [dict(row.shown) for row in self._rows.values()]

    def row(self, task_id: str) -> dict[str, str]:
        """The row shown for ``task_id``."""
        with self._render:
            return dict(self._shown_row(task_id).shown)

    def button(self, task_id: str, verb: str) -> Any:
        """The ``verb`` button ("pause", "resume", "cancel", "redrive") of a task's row;
        :class:`~lldsched.errors.ValidationError` for a task not shown or another verb, as
        :meth:`row` (a ``KeyError`` before)."""
        with self._render:
            buttons = self._shown_row(task_id).buttons
        if verb not in buttons:
            raise ValidationError(f"verb must be one of {list(buttons)}, got {verb!r}")
        return buttons[verb]

    def _shown_row(self, task_id: str) -> _Row:
        if task_id not in self._rows:
            raise ValidationError(f"{task_id!r} is not shown: {self.note.value or 'no such task'}")
        return self._rows[task_id]

    @property
    def closed(self) -> bool:
        return self._closed

    # -- updating ------------------------------------------------------------------------

    def refresh(self, task_ids: Iterable[str] | None = None) -> None:
        """Redraw the rows of ``task_ids`` (all rows when None), adding rows for new tasks."""
        if task_ids is not None and (
            isinstance(task_ids, str | bytes) or not isinstance(task_ids, Iterable)
        ):  # a text was read as ids of one character, an int raised TypeError
            raise ValidationError(
                f"task_ids must be task ids (a list) or None, got {shown(task_ids)}"
            )
        with self._render:
            if self._closed:
                return
            self.refreshes += 1
            tasks = self._shown(self._source.tasks())
            wanted = None if task_ids is None else set(task_ids)
            changed = [task.id for task in tasks] != list(self._rows)
            gone: list[_Row] = []
            if changed:
                rows = {task.id: self._rows.pop(task.id, None) for task in tasks}
                gone = list(self._rows.values())
                self._rows = {
                    task_id: row if row is not None else self._new_row(task_id)
                    for task_id, row in rows.items()
                }
            for task in tasks:
                if wanted is not None and task.id not in wanted and not changed:
                    continue
                self._rows[task.id].show(task, self._tz)
                if self._watch is not None and task.id == self._watch.task_id:
                    self._follow_redrive(self._watch, task)
            if changed:
                self._grid.children = [
                    *self._header,
                    *(c for r in self._rows.values() for c in r.children),
                ]
            # Closed only once out of the grid: a browser drops a closed widget's view at
            # once, and the grid's cells shifted into the wrong columns until it caught up.
            for row in gone:
                row.close()

    def _new_row(self, task_id: str) -> _Row:
        return _Row(self._widgets, self, task_id, self._shared)

    def _shown(self, tasks: list[ScheduledTask]) -> list[ScheduledTask]:
        """The tasks to show (see the class docstring), and the note that says so."""
        needle = self.find.value.strip()
        if self.max_rows is None or (len(tasks) <= self.max_rows and not needle):
            self.find.layout.display = "none"
            self.note.value = ""
            return tasks
        self.find.layout.display = None
        if not needle:
            self.note.value = plain(
                f"{self.max_rows} of {len(tasks)} tasks shown (the first registered): "
                "type part of a name to find others"
            )
            return tasks[: self.max_rows]
        lowered = needle.lower()
        found = [task for task in tasks if lowered in task.name.lower()]
        if len(found) > self.max_rows:
            said = f"{self.max_rows} of {len(found)} tasks matching {needle!r} shown"
        else:
            said = f"{len(found)} of {len(tasks)} tasks match {needle!r}"
        self.note.value = plain(said)
        return found[: self.max_rows]

    def _on_event(self, event: TaskEvent) -> None:
        """The scheduler's listener: note the change, schedule one refresh per burst."""
        with self._lock:
            self._dirty.add(event.task_id)
            if self._scheduled:
                return
            self._scheduled = True
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._flush)
        else:
            self._flush()

    def _flush(self) -> None:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
            self._scheduled = False
        self.refresh(dirty)

    def say(self, text: str) -> None:
        """Show ``text`` under the table, as text (never markup); a redrive's outcome no
        longer replaces it."""
        with self._render:
            self._watch = None
            self._said = text
            self.message.value = plain(text)

    def say_failed(self, what: str, exc: BaseException) -> None:
        """Show under the table that ``what`` (a press: ``"step"``, ``"pause tick"``)
        failed with ``exc``, a bug rather than a refusal (a duration model or a listener
        that raised): its type and text on a line, its traceback opened under it by a
        click.  A callback's exception otherwise goes where a learner does not look:
        the kernel's log (a press queued to the kernel's thread), or JupyterLab's log
        console (a press run at once)."""
        summary = f"{what} failed: {type(exc).__name__}: {exc}"
        lines = "".join(traceback.format_exception(exc)).rstrip()
        with self._render:
            self._watch = None
            self._said = f"{summary}\n{lines}"
            self.message.value = _FAILURE_DISCLOSURE.format(
                summary=plain(summary), traceback=plain(lines)
            )

    @property
    def said(self) -> str:
        """The message under the table, as text ("" when there is none); a failure's
        with its traceback."""
        with self._render:
            return self._said

    def take_back(self, text: str) -> None:
        """Clear the message under the table if it still says ``text`` (as :meth:`say`
        was given it): a caller takes back its own word once it no longer holds (the
        player's refused "run until", once one runs), never what was said since."""
        with self._render:
            if self.message.value == plain(text):
                self.message.value = ""
                self._said = ""

    def _follow_redrive(self, watch: RedriveWatch, task: ScheduledTask) -> None:
        """Say how the redriven task's re-run ended, once it has (under ``_render``)."""
        outcome = watch.outcome(task, when=self._when)
        if outcome is not None:
            said, watching = outcome
            self._said = said
            self.message.value = plain(said)
            if not watching:
                self._watch = None

    def _when(self, timestamp: float | None) -> str:
        return when(timestamp, self._tz)

    def _press(self, task_id: str, verb: str) -> None:
        """A button's callback: act, say what the press did, redraw the row.  Never
        waits for a run: a redrive's outcome is said by a later refresh."""
        with self._render:
            row = self._rows.get(task_id)
            name = row.shown["task"] if row is not None else task_id  # as the row says
            # A closed button's click() still calls this: a closed panel refuses it.
            refuse_if_closed(self._closed, view="control panel", verb=f"{verb} {name}")
            try:
                # The counts before the verb: the re-run may end before it returns; and
                # the run in flight at the press, which a pause or cancel may end at once.
                task = self._source.task(task_id)
                before = RedriveWatch.of(task)
                in_flight = fate_in_flight(self._source, task) if task.running else None
                changed = getattr(self._source, verb)(task_id)
            except LldschedError as exc:
                self.say(f"{verb} {name}: {exc}")
                return
            except Exception as exc:  # a bug (a listener that raised): said, not logged
                self.say_failed(f"{verb} {name}", exc)
                self.refresh([task_id])  # the row as the failed verb left it
                return
            # Read again, as the verb left it; a task the verb finished may be retired
            # already (retain_finished=0): then the one read before names it (a verb
            # that finishes a task, cancel, is said by the task's name alone).
            with contextlib.suppress(TaskNotFoundError):
                task = self._source.task(task_id)
            # The runtime's state as the verb left it: a shut-down scheduler takes a pause
            # but refuses a resume, and the message must not promise one.
            said = pressed(
                verb,
                task,
                changed=changed,
                when=self._when,
                in_flight=in_flight,
                state=self._source.metrics().state,
                noun=runtime_noun(self._source),
            )
            self.say(said)
            if verb == "redrive" and changed:
                self._watch = before
            self.refresh([task_id])

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop listening, and close every widget the panel made: its rows, buttons and
        boxes, and each one's layout and style (ipywidgets' own ``close`` closes only the
        outer box).  A refresh already asked for does nothing once closed; the panel
        holds nothing open and is garbage once its caller drops it (IPython's ``Out``
        and ``_`` keep a cell's last value).  Shown after this, it reads as its last
        table, said to be closed; a button's ``click()`` then raises
        :class:`~lldsched.errors.SchedulerStateError` and acts on nothing
        (:func:`~lldsched.views.widgetkit.refuse_if_closed`).  Idempotent."""
        with self._render:
            if self._closed:
                return
            self._closed = True
        if self._live:
            self._source.remove_listener(self._on_event)
        close_tree(self.widget, *self._shared.all)

    def to_text(self) -> str:
        """The table as fixed-width text (what a notebook shows where widgets cannot render)."""
        rows = [self._titles, *self.rows]
        widths = {column: max(len(row[column]) for row in rows) for column in COLUMNS}
        lines = [
            "  ".join(row[column].ljust(widths[column]) for column in COLUMNS).rstrip()
            for row in rows
        ]
        if self.note.value:  # how many of how many tasks the table shows
            lines.append(text_of(self.note.value))
        return "\n".join(lines)

    def __str__(self) -> str:  # print(panel)
        return self.to_text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return bundle(self.widget, self.to_text, **kwargs)


def _heading(title: str) -> str:
    """A column's heading as the table's HTML: bold, with what it counts on hover where
    its word is short for more (:data:`HEADINGS`)."""
    tip = _HEADING_TIPS.get(title)
    hover = "" if tip is None else f' title="{plain(tip)}"'
    return f"<b{hover}>{plain(title)}</b>"
