"""What the notebooks' widgets share: ipywidgets imported on demand, text shown verbatim.

:func:`require_ipywidgets` imports ipywidgets, or says which extra installs it (the
package imports it only when a widget is made); :func:`plain` makes a text an HTML
widget shows as it is (a task's name or error text never becomes markup), and
:func:`text_of` reads it back; :func:`bundle` gives a widget a plain-text form
where widgets cannot render (a plain terminal, ``print``, nbconvert to text);
:func:`when` writes an instant in a zone, its abbreviation included outside UTC.

A view's ``close()`` rests on :func:`close_tree`, which closes a widget and every
widget it holds: ipywidgets' ``Widget.close`` closes only the widget it is called on,
not a box's children (jupyter-widgets/ipywidgets#1902) nor a widget's ``layout`` and
``style`` (#2308), and every widget left open stays in ipywidgets' registry of open
widgets for the life of the kernel, with whatever its callbacks hold (a whole panel, its
scheduler).

Used by :mod:`lldsched.views.panel`, :mod:`lldsched.views.player` and
:mod:`lldsched.views.interact`; no state, no lock.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import Any
from zoneinfo import ZoneInfo

from lldsched.clock import UTC_NAMES, utc_datetime
from lldsched.views import missing_extra

__all__ = [
    "bundle",
    "close_tree",
    "plain",
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
        return "after 9999" if timestamp > 0 else "before 0001"
    return local.strftime("%Y-%m-%d %H:%M:%S" if tz.key in UTC_NAMES else "%Y-%m-%d %H:%M:%S %Z")


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
