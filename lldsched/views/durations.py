"""Durations for people: the one rule every view and command writes a length of time by
(standard library only).

**A duration is rounded to the precision its text shows before its unit is chosen,**
and the unit is the largest whose threshold the rounded number reaches.  So no value
ever reads as the next unit's threshold in the smaller unit: 3599 s is ``1.0h`` in the
command line's table (``60.0m`` said an hour in minutes, a unit the next cell over
would have called ``1.0h``), 59.99 s is ``1.0m`` there (not ``60s``), and ``readable``
shows 3599.5 s as ``1 h 00 min`` (not ``60 min``).  Rounding up to the next unit,
rather than writing more digits in the smaller one (``59.98m``), keeps the precision
each unit is shown with the same in every cell: 3599 s is one hour to the table's
tenth of an hour, and a column read down changes unit where its values do.

Two forms, one rule:

* :func:`short_text`, the command line's table cells: ``0s``, ``0.2s`` (tenths under
  10 s), ``42s`` (whole seconds), ``1.5m`` (tenths of a minute), ``2.0h`` (tenths of an
  hour, the largest unit: a day is ``24.0h``);
* :func:`seconds_text`, a notebook's cells and charts' words: ``0.25 s`` (three
  significant figures under 10 s), ``43 µs`` (under a millisecond: ``4.3e-05 s`` was
  the text), ``42 s``, ``5 min 51 s`` (whole seconds), ``2 h 05 min`` (the whole
  seconds in whole minutes, half up; the largest unit).  From 10 s on the text
  depends on the whole seconds alone, which ``readable`` relies on.

A negative duration (a run started before it was due) is the same text after a
``-``; one that rounds to zero has no sign.  No state, no lock.
"""

from __future__ import annotations

from lldsched.errors import ValidationError, shown

__all__ = ["seconds_text", "short_text"]

NO_TIME = "—"
""":func:`seconds_text` of a time not known (NaN: a percentile of no runs)."""
NO_SHORT_TIME = "-"
""":func:`short_text` of a time not known (``None``: a task with no run)."""


def short_text(seconds: float | None) -> str:
    """``seconds`` as a table cell of the command line (see the module docstring):
    ``0s``, ``9.5s``, ``59s``, ``1.0m``, ``1.0h``; ``-`` for ``None`` or NaN."""
    if seconds is None or seconds != seconds:
        return NO_SHORT_TIME
    if seconds == 0:
        return "0s"
    size = abs(seconds)
    tenths = f"{size:.1f}"
    if float(tenths) < 10:
        text = f"{tenths}s"
    elif round(size) < 60:
        text = f"{size:.0f}s"
    elif float(minutes := f"{size / 60:.1f}") < 60:
        text = f"{minutes}m"
    else:
        text = f"{size / 3600:.1f}h"
    return _signed(seconds, text)


def seconds_text(seconds: float) -> str:
    """``seconds`` for reading (see the module docstring): ``43 µs``, ``0.25 s``,
    ``12 s``, ``5 min 51 s``, ``2 h 05 min``; ``—`` for NaN.  Anything but a finite
    number (a bool too) is a :class:`~lldsched.errors.ValidationError` naming it, where
    ``inf`` raised ``OverflowError`` and ``None`` or ``"5"`` a bare ``TypeError``:
    judged once the text failed (a ``try``, free until it raises) but for two identity
    tests, as ``readable`` asks this of every distinct duration."""
    try:
        if seconds != seconds:  # NaN: a percentile of no runs
            return NO_TIME
        if seconds is True or seconds is False:
            raise TypeError
        size = abs(seconds)
        if size == 0:
            return "0 s"
        micro = f"{size * 1e6:.3g}"
        if float(micro) < 1000:  # .3g of seconds writes an exponent under 1e-4 s
            return _signed(seconds, f"{micro} µs")
        significant = f"{size:.3g}"
        if float(significant) < 10:
            return _signed(seconds, f"{significant} s")
        whole = round(size)
        if whole < 60:
            return _signed(seconds, f"{whole} s")
        if whole < 3600:
            minutes, rest = divmod(whole, 60)
            return _signed(seconds, f"{minutes} min {rest:02d} s" if rest else f"{minutes} min")
        hours, minutes = divmod((whole + 30) // 60, 60)  # of the whole seconds, half up
        return _signed(seconds, f"{hours} h {minutes:02d} min")
    except (TypeError, ValueError, OverflowError):
        raise ValidationError(
            f"seconds_text() takes a finite number of seconds, got {shown(seconds)}"
        ) from None


def _signed(seconds: float, text: str) -> str:
    """``text`` after a ``-`` for a negative ``seconds`` whose text is not of zero."""
    shown_zero = text[0] == "0" and not any(digit in text for digit in "123456789")
    return f"-{text}" if seconds < 0 and not shown_zero else text
