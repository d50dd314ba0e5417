"""What the notebooks' widgets share: ipywidgets imported on demand, text shown verbatim.

:func:`require_ipywidgets` imports ipywidgets, or says which extra installs it (the
package imports it only when a widget is made); :func:`plain` makes a text an HTML
widget shows as it is (a task's name or error text never becomes markup), and
:func:`text_of` reads it back; :func:`bundle` gives a widget a plain-text form
where widgets cannot render (a plain terminal, ``print``, nbconvert to text);
:func:`when` writes an instant in a zone, its abbreviation included outside UTC.
Used by :mod:`lldsched.views.panel`, :mod:`lldsched.views.player` and
:mod:`lldsched.views.interact`; no state, no lock.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from lldsched.clock import UTC_NAMES, utc_datetime
from lldsched.views import missing_extra

__all__ = ["bundle", "plain", "require_ipywidgets", "text_of", "when"]


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
    without widget state) instead of ipywidgets' ``VBox(children=...)`` dump."""
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
