"""What the notebooks' widgets share: ipywidgets imported on demand, text shown verbatim.

:func:`require_ipywidgets` imports ipywidgets, or says which extra installs it (the
package imports it only when a widget is made); :func:`plain` makes a text an HTML
widget shows as it is (a task's name or error text never becomes markup), and
:func:`text_of` reads it back; :func:`bundle` gives a widget a plain-text form
where widgets cannot render (a plain terminal, ``print``, nbconvert to text);
:func:`when` writes an instant in a zone, its abbreviation included outside UTC.

A view's ``close()`` rests on two more.  :func:`close_tree` closes a widget and every
widget it holds: ipywidgets' ``Widget.close`` closes only the widget it is called on,
not a box's children (jupyter-widgets/ipywidgets#1902) nor a widget's ``layout`` and
``style`` (#2308), and every widget left open stays in ipywidgets' registry of open
widgets for the life of the kernel, with whatever its callbacks hold (a whole panel, its
scheduler).  :func:`closes_when_its_cell_runs_again` closes what a notebook cell made when
that cell runs again: a cell re-run replaces its output, but the widgets of the run
before stayed open, and a live panel's listener went on refreshing a table no one sees.

A control's callback runs on the kernel's own thread (:class:`OnKernelThread`): JupyterLab
4.4 and later send widget messages on a kernel *subshell* (ipykernel 7 runs each
subshell's messages on a thread of its own), so a slider moved while a cell ran called
its function beside that cell, and the two could swap the process's output streams
under each other (docs/decisions/teaching-kit.md, "A control's callback runs on the kernel's
thread"). A button's press is not merged with the next: :class:`EachOnKernelThread` runs each one
there, once, in the order pressed (three presses of the player's "+1 hour" are three
hours; docs/decisions/teaching-kit.md, "A button's press runs on the kernel's thread, each once, in
order").

Once closed, a view acts no more: :func:`refuse_if_closed` is what its controls (the
player's ``step``, ``advance`` and ``run_until``, any view's buttons, which ``click()``
still calls once closed) raise instead of acting.

Used by :mod:`lldsched.views.panel`, :mod:`lldsched.views.player` and
:mod:`lldsched.views.interact`; the one state is the cells' record of what each made
(:data:`_MADE_BY_CELL`, under its lock).
"""

from __future__ import annotations

import asyncio
import html
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from lldsched.clock import UTC_NAMES, beyond_datetimes, dated, utc_datetime
from lldsched.errors import SchedulerStateError
from lldsched.views import missing_extra

__all__ = [
    "EachOnKernelThread",
    "OnKernelThread",
    "bundle",
    "close_tree",
    "closes_when_its_cell_runs_again",
    "plain",
    "refuse_if_closed",
    "require_ipywidgets",
    "text_of",
    "when",
]


def require_ipywidgets() -> Any:
    """Import ipywidgets, or say which extra installs it."""
    try:
        import ipywidgets
    except ImportError as exc:
        raise missing_extra(__name__, "ipywidgets", exc) from exc
    return ipywidgets


def plain(text: str) -> str:
    """``text`` as an HTML widget shows it verbatim: ipywidgets' ``HTML`` sets its value as
    markup, and a task's name or error text (a failing job's message may quote a web
    page, a store shared with others holds their names) must never become markup."""
    return html.escape(text, quote=False)


def text_of(value: str) -> str:
    """What an HTML widget made by :func:`plain` shows, as text again (its value unescaped):
    what the text fallbacks (:meth:`~lldsched.views.panel.ControlPanel.to_text`,
    :meth:`~lldsched.views.player.SimulationPlayer.to_text`) write of a note, a message
    or a step."""
    return html.unescape(value)


def bundle(widget: Any, text: Callable[[], str], **kwargs: Any) -> Any:
    """``widget``'s display bundle with ``text()`` as its plain text: what a renderer
    without widgets shows (a plain terminal, nbconvert to text, a notebook saved
    without widget state) instead of ipywidgets' ``VBox(children=...)`` dump.  A closed
    widget has no view (ipywidgets drops its ``_repr_mimebundle_``): its owner shows as
    that text alone, said to be closed."""
    if widget.comm is None:  # closed
        return {"text/plain": f"{text()}\n(closed: no longer updated)"}
    bundle = widget._repr_mimebundle_(**kwargs)
    if isinstance(bundle, dict):
        bundle["text/plain"] = text()
    return bundle


def when(timestamp: float | None, tz: ZoneInfo) -> str:
    """An instant in ``tz``; in any zone but UTC with its abbreviation (``CEST``, ``CET``),
    as :func:`~lldsched.views.tables.readable` writes it: the two 02:30 of a night the
    clocks go back read apart.  An instant a ``datetime`` cannot hold in ``tz`` (a
    fixed rate's next slot past the end of year 9999) reads ``after 9999``."""
    if timestamp is None:
        return "—"
    try:
        local = utc_datetime(timestamp).astimezone(tz)
    except OverflowError:  # past a datetime's span: a rate's next slot at the end of 9999
        return beyond_datetimes(timestamp)
    shown = dated(local, "%Y-%m-%d %H:%M:%S")
    return shown if tz.key in UTC_NAMES else f"{shown} {local:%Z}"


def close_tree(*roots: Any, keep: Iterable[Any] = ()) -> None:
    """Close each of ``roots`` and every widget it holds, at any depth: a box's children,
    a widget's ``layout`` and ``style`` (every synced trait whose value is a widget or a
    sequence of widgets).  A widget in ``keep`` (one its owner was given, not made) is
    left open, and so is what it holds.  Closing a closed widget does nothing."""
    widgets = require_ipywidgets()
    seen = {id(widget) for widget in keep}
    stack = list(roots)
    while stack:
        widget = stack.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        for name in widget.keys:  # the synced traits: children, layout, style, ...
            value = getattr(widget, name)
            if isinstance(value, widgets.Widget):
                stack.append(value)
            elif isinstance(value, list | tuple):
                stack.extend(item for item in value if isinstance(item, widgets.Widget))
        widget.close()


def refuse_if_closed(closed: bool, *, view: str, verb: str) -> None:
    """The one rule of a closed view's controls: a view whose ``close()`` was called
    (``closed``) acts no more, and says so: :class:`~lldsched.errors.SchedulerStateError`
    naming ``verb`` and the ``view``, before anything is done.  Its runtime is as it
    was; a new view over it acts."""
    if closed:
        raise SchedulerStateError(
            f"cannot {verb}: the {view} is closed (its close() was called), and a closed "
            f"view no longer acts; make a new {view} over the same runtime to go on"
        )


class Closeable(Protocol):
    def close(self) -> None: ...


_MADE_BY_CELL: dict[str, tuple[str, list[weakref.ref[Closeable]]]] = {}
"""Per notebook cell (its id): the id of its latest run's execute request, and what that
run made, weakly (a view closed and dropped is collected; a view open is held anyway by
ipywidgets' registry of open widgets)."""
# Guards _MADE_BY_CELL: a view may be made on any thread of the kernel.
_MADE_BY_CELL_LOCK = threading.Lock()


def closes_when_its_cell_runs_again(owner: Closeable) -> None:
    """Have ``owner.close()`` called when the notebook cell that made it runs again, as
    the cell's new run makes its first view: the new run's output replaces the old, so
    the old views are seen nowhere, and a live one would go on listening.  Only a front
    end that names its cells in the request (JupyterLab and Notebook 7 do:
    ``cellId`` in an execute request's metadata) says which cell runs; elsewhere (a
    script, nbclient's executors: nbconvert, Voila, nbval), and for a view made by a
    button's callback rather than a cell, this does nothing."""
    run = _cell_run()
    if run is None:
        return
    cell, request = run
    with _MADE_BY_CELL_LOCK:
        last_request, made = _MADE_BY_CELL.get(cell, (request, []))
        stale: list[weakref.ref[Closeable]] = []
        if last_request != request:
            stale, made = made, []
        _MADE_BY_CELL[cell] = (request, [*made, weakref.ref(owner)])
    for ref in stale:  # closed off the lock: a close may take its own
        old = ref()
        if old is not None:
            old.close()


def _cell_run() -> tuple[str, str] | None:
    """``(cell id, execute request id)`` of the notebook cell running on this thread,
    if a kernel runs one a front end named; else None."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)  # ipykernel 6 and later
    parent = get_parent() if callable(get_parent) else None
    if not isinstance(parent, dict):
        return None
    header = parent.get("header") or {}
    cell = (parent.get("metadata") or {}).get("cellId")
    request = header.get("msg_id")
    if header.get("msg_type") != "execute_request" or not cell or not request:
        return None
    return str(cell), str(request)


class OnKernelThread:
    """``callback`` run on the kernel's own thread, once per burst of requests.

    Made on the thread a notebook cell runs on (the kernel's, whose event loop runs
    there); :meth:`request` runs ``callback`` at once on that thread, and from any other
    thread asks the loop to run it (``call_soon_threadsafe``) once: requests made before
    it runs join that one run (it reads the controls' latest values).  JupyterLab 4.4 and
    later send widget messages on a kernel subshell, which ipykernel 7 handles on a
    thread of its own, beside the cell the main thread runs: a callback run there could
    swap the process's output streams under that cell's (interact's capture), and the
    kernel's dispatch failed meanwhile (docs/DECISIONS.md).  Made where no loop runs (a
    script, a test), :meth:`request` always runs ``callback`` at once."""

    def __init__(self, callback: Callable[[], None], *, at_once: bool = False) -> None:
        self._callback = callback
        self._loop = None if at_once else _running_loop()  # None: called at once
        self._lock = threading.Lock()  # guards _pending: set off the loop, cleared on it
        self._pending = False

    def request(self) -> None:
        """Run the callback now if this is the kernel's thread, else soon on it (once for
        every request made until it runs)."""
        if self._loop is None or _running_loop() is self._loop:
            self._callback()
            return
        with self._lock:
            if self._pending:
                return
            self._pending = True
        self._loop.call_soon_threadsafe(self._run)

    def _run(self) -> None:
        with self._lock:
            self._pending = False
        self._callback()


class EachOnKernelThread:
    """``callback`` run on the kernel's own thread once per request, in the order made.

    :class:`OnKernelThread`'s sibling for a button: a press is an act, not a value to
    read at its latest, so none joins another (three presses of "+1 hour" are three
    hours).  Made on the thread a notebook cell runs on; :meth:`request` calls
    ``callback(*args)`` at once on that thread (a cell's ``click()``, Voila, a Lab
    before 4.4), and from any other thread (a kernel subshell's) hands that call to the
    kernel's event loop (``call_soon_threadsafe``, which runs its callbacks in the
    order given), where it runs between cells: never beside a cell using the same
    simulation, scheduler or view.  Made where no loop runs (a script, a test),
    :meth:`request` always calls at once, and so does one made ``at_once``: for a
    callback safe on any thread that must not wait for the cell (a threaded scheduler's
    verbs).  A call handed to the loop that raises is reported by the loop, in the
    kernel's log, where a learner never looks: so the views' callbacks say their own
    failures in the view (``ControlPanel.say_failed``), and only a press of a view
    closed in between raises here."""

    def __init__(self, callback: Callable[..., None], *, at_once: bool = False) -> None:
        self._callback = callback
        self._loop = None if at_once else _running_loop()  # None: called at once

    def request(self, *args: Any) -> None:
        """Call ``callback(*args)`` now if this is the kernel's thread, else soon on it,
        after every call handed over before."""
        if self._loop is None or _running_loop() is self._loop:
            self._callback(*args)
            return
        self._loop.call_soon_threadsafe(self._callback, *args)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
