"""A cron expression in plain English: ``"At 03:00, Monday through Friday"``.

The sentence is built from the parsed terms (:class:`~.parse.Term`), so it
follows what the user wrote (``1-5`` reads "Monday through Friday", ``*/15``
reads "every 15 minutes") rather than a flattened list of values.  Two parts, a
time of day and an optional set of days, joined by a comma:

* time: "Every minute", "Every 15 minutes", "Every hour", "At 03:00",
  "At 09:00, 11:00 and 13:00", "Every hour from 09:00 through 17:00",
  "At minutes 0 and 30 of every hour", "Every 5 minutes from 09:00 through 09:59";
* days: "Monday through Friday", "on Sunday", "on day 1 of the month",
  "on the last Friday of the month", "on December 31", and real cron's day rule
  spelled out: "on day 13 of the month or on Friday" (either field matching is
  enough) against "on every 2nd day of the month if it is a Monday" (both must).

A seconds field (six fields) adds to the time: "Every second", "Every 15
seconds", "At second 30 of every minute", "At 09:00:30", or its phrase before
the minute's, "Every 10 seconds, at 09:00".  A seconds field of just ``0`` reads
as the five fields do.
"""

from __future__ import annotations

from collections.abc import Sequence

from lldsched.schedules.cron.parse import CronFields, Term

__all__ = ["explain"]

_MONTH_NAMES = (
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_NTH = ("", "first", "second", "third", "fourth", "fifth")


def _join(words: Sequence[str], last: str = "and") -> str:
    """``a, b and c`` (``last="or"``: ``a, b or c``), each phrase once (``0,7`` is
    Sunday twice, said once)."""
    words = list(dict.fromkeys(words))
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def _ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def _every(step: int, unit: str) -> str:
    return f"every {unit}" if step == 1 else f"every {step} {unit}s"


def _every_in(step: int, unit: str, cycle: int, period: str) -> str:
    """A step over a whole field: "every 15 minutes" when it divides the field's
    ``cycle`` (60 minutes), else "every 7th minute of the hour": ``*/7`` fires at :00,
    :07 ... :56 and again at :00, four minutes later, so it is not every 7 minutes."""
    if cycle % step == 0:
        return _every(step, unit)
    return f"every {_ordinal(step)} {unit} of the {period}"


def _last_value(term: Term) -> int:
    """The last value a stepped term actually reaches (``9-17/2`` reaches 17, ``0-10/3`` 9)."""
    return term.start + (term.stop - term.start) // term.step * term.step


def _values(terms: Sequence[Term]) -> list[int] | None:
    """The values if every term is a single value, else ``None``."""
    if all(t.kind == "value" for t in terms):
        return sorted({t.start for t in terms})
    return None


def _hhmm(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


# -- time of day ---------------------------------------------------------------


def _time(minutes: Sequence[Term], hours: Sequence[Term]) -> str:
    minute_values, hour_values = _values(minutes), _values(hours)
    all_hours = any(t.kind == "all" for t in hours)
    if (
        minute_values is not None
        and hour_values is not None
        and len(minute_values) * len(hour_values) <= 6
    ):
        return "At " + _join([_hhmm(h, m) for h in hour_values for m in minute_values])
    if minute_values is not None and len(minute_values) == 1:
        return _at_one_minute(minute_values[0], hours, all_hours)
    if hour_values is not None and len(hour_values) == 1 and len(minutes) == 1:
        (t,), hour = minutes, hour_values[0]
        if t.kind in ("all", "range"):  # a stretch of one hour: "every minute from 02:00 ..."
            return f"Every minute from {_hhmm(hour, t.start)} through {_hhmm(hour, t.stop)}"
    if all_hours:
        if minute_values is not None:
            return f"At minutes {_join([str(m) for m in minute_values])} of every hour"
        return _capital(_sixty_phrase(minutes, "minute"))
    phrase, window = _capital(_sixty_phrase(minutes, "minute")), _hour_window(hours)
    if " from " in phrase and window.startswith("from "):  # two stretches: a comma between
        return f"{phrase}, {window}"
    return f"{phrase} {window}"


def _at_one_minute(minute: int, hours: Sequence[Term], all_hours: bool) -> str:
    """One minute of the hour: "Every hour", "Every 2 hours from 09:30 through 17:30"."""
    if all_hours:
        return "Every hour" if minute == 0 else f"At minute {minute} of every hour"
    phrases = []
    for t in hours:
        if t.kind == "value":
            phrases.append(f"at {_hhmm(t.start, minute)}")
        elif t.kind == "range":
            phrases.append(
                f"every hour from {_hhmm(t.start, minute)} through {_hhmm(t.stop, minute)}"
            )
        else:  # step
            every = _every(t.step, "hour")
            if t.start == 0 and t.stop == 23:
                every = _every_in(t.step, "hour", 24, "day")
                phrases.append(every if minute == 0 else f"{every} at minute {minute}")
            else:
                first, last = _hhmm(t.start, minute), _hhmm(_last_value(t), minute)
                phrases.append(f"{every} from {first} through {last}")
    return _capital(_join(phrases))


def _sixty_phrase(terms: Sequence[Term], unit: str) -> str:
    """The minutes of an hour or the seconds of a minute (``unit``, both fields 0-59):
    "every minute", "every 15 seconds from second 5 through 50", "at minutes 0 and 30"."""
    phrases = []
    singles = sorted({t.start for t in terms if t.kind == "value"})
    for t in terms:
        if t.kind == "all":
            phrases.append(f"every {unit}")
        elif t.kind == "range":
            phrases.append(f"every {unit} from {unit} {t.start} through {t.stop}")
        elif t.kind == "step":
            every = _every(t.step, unit)
            if t.start == 0 and t.stop == 59:
                period = "hour" if unit == "minute" else "minute"
                phrases.append(_every_in(t.step, unit, 60, period))
            else:
                phrases.append(f"{every} from {unit} {t.start} through {_last_value(t)}")
    if singles:
        word = unit if len(singles) == 1 else f"{unit}s"
        phrases.append(f"at {word} {_join([str(v) for v in singles])}")
    return _join(phrases)


def _hour_window(hours: Sequence[Term]) -> str:
    """Where in the day: "from 09:00 through 17:59", "of hours 9 and 17", "in every 2nd hour"."""
    values = _values(hours)
    if values is not None and len(values) > 1:
        return f"of hours {_join([str(h) for h in values])}"
    phrases = []
    for t in hours:
        if t.kind in ("value", "range"):
            phrases.append(f"from {_hhmm(t.start, 0)} through {_hhmm(t.stop, 59)}")
        else:  # step ("all" does not get here)
            window = f"in every {_ordinal(t.step)} hour"
            if t.start == 0 and t.stop == 23:
                phrases.append(window)
            else:
                phrases.append(f"{window} from {_hhmm(t.start, 0)} through {_hhmm(t.stop, 59)}")
    return _join(phrases)


# -- days ------------------------------------------------------------------------


def _dom_phrase(terms: Sequence[Term]) -> str:
    singles = sorted({t.start for t in terms if t.kind == "value"})
    phrases = []
    if singles:
        word = "day" if len(singles) == 1 else "days"
        phrases.append(f"{word} {_join([str(d) for d in singles])} of the month")
    for t in terms:
        if t.kind == "range":
            phrases.append(f"days {t.start} through {t.stop} of the month")
        elif t.kind == "step":
            every = f"every {_ordinal(t.step)} day of the month"
            if t.start == 1 and t.stop == 31:
                phrases.append(every)
            else:
                phrases.append(f"{every} from day {t.start} through {_last_value(t)}")
        elif t.kind == "last":
            phrases.append("the last day of the month")
        elif t.kind == "lastweekday":
            phrases.append("the last weekday of the month")
    return "on " + _join(phrases)


def _dow_phrase(terms: Sequence[Term], last: str = "and") -> str:
    """ "on Monday and Wednesday"; ``last="or"`` for one day that is any of them
    ("if it is Monday or Wednesday")."""
    if len(terms) == 1 and terms[0].kind == "range":
        return f"{_DAY_NAMES[terms[0].start % 7]} through {_DAY_NAMES[terms[0].stop % 7]}"
    phrases = []
    for t in terms:
        if t.kind == "value":
            phrases.append(_DAY_NAMES[t.start % 7])
        elif t.kind == "range":
            phrases.append(f"{_DAY_NAMES[t.start % 7]} through {_DAY_NAMES[t.stop % 7]}")
        elif t.kind == "step":
            days = sorted({d % 7 for d in range(t.start, t.stop + 1, t.step)})
            phrases.append(_join([_DAY_NAMES[d] for d in days], last))
        elif t.kind == "lastof":
            phrases.append(f"the last {_DAY_NAMES[t.start]} of the month")
        elif t.kind == "nth":
            phrases.append(f"the {_NTH[t.step]} {_DAY_NAMES[t.start]} of the month")
    return "on " + _join(phrases, last)


def _month_phrase(terms: Sequence[Term]) -> str:
    phrases = []
    for t in terms:
        if t.kind == "range":
            phrases.append(f"{_MONTH_NAMES[t.start]} through {_MONTH_NAMES[t.stop]}")
        else:
            phrases.extend(_MONTH_NAMES[m] for m in range(t.start, t.stop + 1, t.step))
    return "in " + _join(phrases)


def _days(fields: CronFields) -> list[str]:
    _, _, dom, month, dow = fields.terms
    every_month = len(fields.months) == 12
    all_dom, all_dow = fields.every_day_of_month, fields.every_day_of_week
    single_dom, single_month = _values(dom), _values(month)
    if (
        all_dow
        and fields.days_and
        and single_dom is not None
        and len(single_dom) == 1
        and single_month is not None
        and len(single_month) == 1
    ):
        return [f"on {_MONTH_NAMES[single_month[0]]} {single_dom[0]}"]
    parts: list[str] = []
    if fields.days_and:
        if not all_dom and not all_dow:
            dow_text = _dow_phrase(dow, "or").removeprefix("on ")  # a day is one weekday
            parts.append(f"{_dom_phrase(dom)} if it is {dow_text}")
        elif not all_dom:
            parts.append(_dom_phrase(dom))
        elif not all_dow:
            parts.append(_dow_phrase(dow))
    elif not all_dom and not all_dow:  # either field matching is enough
        parts.append(f"{_dom_phrase(dom)} or {_dow_phrase(dow)}")
    if not every_month:
        parts.append(_month_phrase(month))
    return parts


# -- seconds -----------------------------------------------------------------------


def _time_with_seconds(fields: CronFields) -> str:
    """The time of day of a six-field expression."""
    seconds, minutes, hours = fields.second_terms, fields.terms[0], fields.terms[1]
    second_values = _values(seconds)
    if second_values == [0]:
        return _time(minutes, hours)
    minute_values, hour_values = _values(minutes), _values(hours)
    if (
        second_values is not None
        and minute_values is not None
        and hour_values is not None
        and len(second_values) * len(minute_values) * len(hour_values) <= 6
    ):
        return "At " + _join(
            [
                f"{_hhmm(h, m)}:{s:02d}"
                for h in hour_values
                for m in minute_values
                for s in second_values
            ]
        )
    phrase = _capital(_sixty_phrase(seconds, "second"))
    every_minute = len(fields.minutes) == 60 and len(fields.hours) == 24
    if every_minute:
        return phrase if phrase.startswith("Every") else f"{phrase} of every minute"
    minute_text = _time(minutes, hours)
    return f"{phrase}, {minute_text[0].lower()}{minute_text[1:]}"


def _one_value_steps(terms: Sequence[Term]) -> tuple[Term, ...]:
    """Each step that reaches a single value (``*/31`` in the day of month is day 1,
    ``22-23/5`` is hour 22) as that value, so it is not said as a period."""
    return tuple(
        Term("value", t.start, t.start) if t.kind == "step" and _last_value(t) == t.start else t
        for t in terms
    )


def explain(fields: CronFields) -> str:
    """The sentence for a parsed expression (see the module docstring)."""
    fields = fields._replace(
        terms=tuple(_one_value_steps(terms) for terms in fields.terms),
        second_terms=_one_value_steps(fields.second_terms),
    )
    minute, hour = fields.terms[0], fields.terms[1]
    time = _time_with_seconds(fields) if fields.has_seconds else _time(minute, hour)
    return ", ".join([time, *_days(fields)])
