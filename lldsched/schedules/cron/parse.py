"""Cron grammar: from the text of an expression to :class:`CronFields`, or a clear error.

This module owns what a cron expression *says*; when it fires is computed by
:mod:`lldsched.schedules.cron.days` (which dates) and :mod:`lldsched.schedules.cron`
(which instants).  The grammar is real cron's (Vixie / cronie), in cronsim's
spelling for the extensions:

* five fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12),
  day of week (0-7, where both 0 and 7 are Sunday); or six, with a second (0-59)
  first, as cronsim reads them (``*/15 * * * * *``: every 15 seconds);
* in each field ``*``, ``n``, ``a-b`` (``a-a`` is one value), ``*/s``, ``a-b/s``,
  ``n/s`` (``n-MAX/s``; the day-of-week MAX is 7, so ``1/2`` includes Sunday, as in
  cronsim) and comma lists of these;
* three-letter month (``JAN``-``DEC``) and day (``SUN``-``SAT``) names in any case,
  also as range ends and step starts; full names (``MONDAY``) are rejected;
* day of month: ``L`` (last day) and ``LW`` (last weekday, Monday-Friday);
  day of week: ``nL`` (the last weekday *n* of the month, ``5L`` = last Friday) and
  ``d#n`` (the *n*-th weekday *d* of the month, ``5#3`` = third Friday, ``n`` 1-5);
* ``@yearly @annually @monthly @weekly @daily @midnight @hourly`` in any case.

Real cron's day rule: when the day-of-month or the day-of-week text *starts with*
``*``, a day must match both fields; otherwise matching either one is enough.
The month always has to match.

Everything is checked here, at construction, with a message that names the field
and quotes the bad text: reversed ranges, step 0, empty list items, out-of-range
values, unknown names (the seconds field has none), ``@reboot``, a crontab variable
in front (cronie's ``CRON_TZ=...``: the zone is the ``tz`` argument), a wrong field
count, other lines of a crontab pasted whole (a command after the fields, a comment:
said as such only once the text failed as fields, docs/CRON.md "Moving a crontab"),
other crons' tokens (cronie's ``~``, Quartz's ``?``, ``nW``, ``L-n``), and a day of
month that cannot occur in the chosen months when the day fields are ANDed
(``0 0 30 2 *``).  A range that wraps past its field's end (``22-2``, as Celery's
``crontab`` and croniter read it) is refused naming the list to write; a systemd
calendar event and Celery's display of a crontab are named as such
(:mod:`lldsched.schedules.cron.foreign`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lldsched.errors import ScheduleError, doc_url, shown
from lldsched.schedules.cron.foreign import foreign_text

__all__ = ["FIELD_NAMES", "MACROS", "CronFields", "Term", "blanks_mended", "field_like", "parse"]

# The seconds field comes first in the text but last here, so the five classic
# fields keep their indices 0-4.
FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week", "second")
_SECOND = 5
_LOW = (0, 0, 1, 1, 0, 0)
_HIGH = (59, 23, 31, 12, 7, 59)
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MONTH_NUMBERS = {name: number for number, name in enumerate(_MONTHS, start=1)}
_DAY_NUMBERS = {name: number for number, name in enumerate(_DAYS)}
_FULL_DAY_NAMES = frozenset(
    ("SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY")
)
# Longest month lengths, February counted as 29 (the day-rule check below).
_MAX_DAYS_IN_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DIGITS = frozenset("0123456789")

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_ALL = tuple(tuple(range(low, high + 1)) for low, high in zip(_LOW, _HIGH, strict=True))
_ALL_WEEKDAYS = tuple(range(7))


class Term(NamedTuple):
    """One comma-separated item of a field, kept for :func:`~.explain.explain`.

    ``kind`` is ``"all"`` (``*``), ``"value"``, ``"range"`` (``a-b``), ``"step"``
    (``*/s``, ``a-b/s``, ``n/s``: ``start``-``stop`` every ``step``), ``"last"``
    (``L``), ``"lastweekday"`` (``LW``), ``"lastof"`` (``nL``: ``start`` is the
    weekday) or ``"nth"`` (``d#n``: weekday ``start``, ``step`` is *n*).
    """

    kind: str
    start: int = 0
    stop: int = 0
    step: int = 1


class CronFields(NamedTuple):
    """A parsed, validated expression: sorted allowed values and the special days.

    ``weekdays`` uses 0-6 with Sunday 0 (a 7 in the text is folded onto 0).
    ``days_and`` is real cron's day rule; ``wall_clock`` is true when neither the
    minute nor the hour field starts with ``*`` (such a job keeps its wall-clock
    meaning across DST changes, see :mod:`lldsched.schedules.cron`; the seconds
    field plays no part in it).  ``seconds`` is ``(0,)`` and ``second_terms`` empty
    for a five-field expression.
    """

    text: str  # the five or six fields as given (after expanding an @ macro)
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]  # plain days of the month, 1-31
    last_day: bool  # L
    last_weekday: bool  # LW
    months: tuple[int, ...]
    weekdays: tuple[int, ...]  # 0-6, Sunday 0
    last_of: tuple[int, ...]  # nL: the last weekday n of the month
    nth: tuple[tuple[int, int], ...]  # d#n: (weekday, n)
    days_and: bool
    wall_clock: bool
    terms: tuple[tuple[Term, ...], ...]  # the five classic fields, minute first
    seconds: tuple[int, ...] = (0,)
    second_terms: tuple[Term, ...] = ()  # empty: the text has no seconds field

    @property
    def has_seconds(self) -> bool:
        """The text has a seconds field (six fields)."""
        return bool(self.second_terms)

    @property
    def every_day_of_month(self) -> bool:
        """The day-of-month field allows every day (``*`` or an equivalent)."""
        return len(self.days) == 31

    @property
    def every_day_of_week(self) -> bool:
        """The day-of-week field allows every day (``*`` or an equivalent)."""
        return len(self.weekdays) == 7


def _fail(index: int, problem: str, expr: str) -> ScheduleError:
    return ScheduleError(f"cron {FIELD_NAMES[index]} field: {problem} (expression {shown(expr)})")


def _value(index: int, text: str, expr: str, *, item: str) -> int:
    """A number or (month and day-of-week fields) a three-letter name, range-checked;
    ``item`` is the list item it was read from, quoted when a value is missing."""
    if text and _DIGITS.issuperset(text):
        value = int(text)
        if not _LOW[index] <= value <= _HIGH[index]:
            raise _fail(index, f"{value} is out of range {_LOW[index]}-{_HIGH[index]}", expr)
        return value
    if text == "?":  # before the month and day-of-week messages: Quartz writes ? there
        raise _fail(index, "'?' is not a number (Quartz's 'no specific value': write *)", expr)
    if "~" in text:  # cronie's random value, any field
        raise _fail(
            index,
            f"{shown(text)}: cronie's random ~ is not supported; pick a value, or delay "
            "each run at random with Jittered(schedule, max_delay, seed=...)",
            expr,
        )
    upper = text.upper()
    if ".." in text:  # systemd's range, as in OnCalendar=Mon..Fri
        fix = text.replace("..", "-")
        raise _fail(index, f"{shown(text)}: cron writes a range with '-', {fix!r}", expr)
    if index == 3 and upper in _MONTH_NUMBERS:
        return _MONTH_NUMBERS[upper]
    if index == 4 and upper in _DAY_NUMBERS:
        return _DAY_NUMBERS[upper]
    if index == 4 and upper in _FULL_DAY_NAMES:  # Celery's and systemd's spelling
        raise _fail(
            index,
            f"{shown(text)}: use a three-letter day name, {text[:3]!r} (SUN-SAT), or 0-7",
            expr,
        )
    if index == 3 and len(upper) > 3 and upper[:3] in _MONTH_NUMBERS:  # "january"
        raise _fail(
            index,
            f"{shown(text)} is not a number 1-12 or a month name: use {text[:3]!r} (JAN-DEC)",
            expr,
        )
    if not text:
        raise _fail(index, f"a value is missing in {shown(item)}", expr)
    if index == 3:
        raise _fail(index, f"{shown(text)} is not a number 1-12 or a month name (JAN-DEC)", expr)
    if index == 4:
        raise _fail(index, f"{shown(text)} is not a number 0-7 or a day name (SUN-SAT)", expr)
    if index == 2 and upper.endswith("W"):
        raise _fail(
            index,
            f"{shown(text)} is not a number (Quartz's nearest weekday nW is not supported; "
            "LW, the last weekday of the month, is)",
            expr,
        )
    raise _fail(index, f"{shown(text)} is not a number", expr)


def _item(index: int, item: str, expr: str, values: set[int], specials: list[Term]) -> Term:
    """Parse one list item into ``values`` (or ``specials``) and return its term."""
    upper = item.upper()
    if index == 2 and upper in ("L", "LW"):
        term = Term("last" if upper == "L" else "lastweekday")
        specials.append(term)
        return term
    if index == 2 and upper.partition("/")[0] in ("L", "LW"):
        raise _fail(index, f"{shown(item)}: L and LW take no step", expr)
    if index == 2 and upper.startswith("L-"):
        raise _fail(
            index,
            f"{shown(item)}: Quartz's L-n (n days before the last) is not supported; "
            "L is the last day, LW the last weekday",
            expr,
        )
    if index == 4 and "L" in upper:
        number = upper[:-1]
        if not upper.endswith("L") or not number or not _DIGITS.issuperset(number):
            raise _fail(index, f"{shown(item)}: write nL for the last weekday n, e.g. 5L", expr)
        term = Term("lastof", _value(index, number, expr, item=item) % 7)
        specials.append(term)
        return term
    if index == 4 and "#" in item:
        day_text, _, nth_text = item.partition("#")
        if not nth_text or not _DIGITS.issuperset(nth_text) or not 1 <= int(nth_text) <= 5:
            raise _fail(index, f"{shown(item)}: write d#n with n from 1 to 5, e.g. 5#3", expr)
        term = Term("nth", _value(index, day_text, expr, item=item) % 7, 0, int(nth_text))
        specials.append(term)
        return term
    base, slash, step_text = item.partition("/")
    low, high = _LOW[index], _HIGH[index]
    if slash:
        if not step_text or not _DIGITS.issuperset(step_text) or int(step_text) == 0:
            raise _fail(index, f"step must be a number >= 1 in {shown(item)}", expr)
        step = int(step_text)
    else:
        step = 1
    if base == "*":
        start, stop = low, high
        kind = "step" if slash else "all"
    elif "-" in base:
        first, _, last = base.partition("-")
        start, stop = _value(index, first, expr, item=item), _value(index, last, expr, item=item)
        if start > stop:
            if index == 4 and stop == 0:  # "sat-sun", as APScheduler's day_of_week reads it
                raise _fail(index, _ends_on_sunday(item, f"{first}-7{slash}{step_text}"), expr)
            raise _fail(index, _wraps(index, item, first, last, start, stop, step), expr)
        kind = "step" if slash else ("value" if start == stop else "range")
    else:
        start = _value(index, base, expr, item=item)
        stop = high if slash else start
        kind = "step" if slash else "value"
    values.update(range(start, stop + 1, step))
    return Term(kind, start, stop, step)


def _wraps(index: int, item: str, first: str, last: str, start: int, stop: int, step: int) -> str:
    """Why ``first-last`` (``item``, with its ``/step``) is refused, and the list it
    means where Celery's ``crontab`` and croniter wrap it past the field's end
    (``hour="22-2"``: 22, 23, 0, 1, 2; ``fri-mon``).  The day of week wraps after
    Saturday, 6, as in both."""
    high = 6 if index == 4 else _HIGH[index]
    low = _LOW[index]
    if step == 1:
        names = _DAYS if index == 4 else _MONTHS if index == 3 else ()
        named = bool(names) and not first.isdigit() and not last.isdigit()

        def spelled(value: int) -> str:
            if not named:
                return str(value)
            name = names[value if index == 4 else value - 1]
            return name.lower() if first.islower() else name.title() if first.istitle() else name

        head = first if start == high else f"{first}-{spelled(high)}"
        tail = last if stop == low else f"{spelled(low)}-{last}"
        fix = f"{head},{tail}"
    else:
        wrapped = [*range(start, high + 1), *range(low, stop + 1)][::step]
        fix = ",".join(map(str, wrapped))
    return (
        f"reversed range {shown(item)}: a range does not wrap past the field's end; for "
        f"the values Celery's crontab and croniter read, write {fix!r}"
    )


def _ends_on_sunday(item: str, fix: str) -> str:
    """Why a day-of-week range ending on Sunday as 0 (``5-0``, ``FRI-SUN``: ``item``)
    is refused, and ``fix``, the text to write.  cronie reads it three ways by release
    (src/entry.c, ``get_range``): refused up to 1.5.7; no day at all, silently, from
    1.6.0 to 1.7.2 (its range parser's rewrite, fc8b0e5: ``0 9 * * 5-0`` never fires);
    ``a-7`` since 2025 (d037042, e6c2853), but not with a step, which is no day still.
    ``5-7`` is Friday to Sunday in every one, in cronsim and in croniter
    (docs/CRON.md, "A range that ends on Sunday")."""
    since = (
        "and reads it as no day at all since"
        if "/" in item
        else "reads it as no day at all in 1.6.0 to 1.7.2 and as Sunday-ended only since 2025"
    )
    return (
        f"reversed range {shown(item)}: a range that ends on Sunday ends at 7, write {fix!r} "
        f"(cronie refused {shown(item)} before 1.6.0, {since}; {fix!r} is read alike by every cron)"
    )


def _field(index: int, text: str, expr: str) -> tuple[tuple[int, ...], list[Term], list[Term]]:
    """The sorted values, special terms and all terms of one field."""
    if text == "*":  # the common case, fast
        return _ALL[index], [], [Term("all", _LOW[index], _HIGH[index])]
    if text.isdigit() and text.isascii():
        value = _value(index, text, expr, item=text)
        return (value,), [], [Term("value", value, value)]
    values: set[int] = set()
    specials: list[Term] = []
    terms: list[Term] = []
    for item in text.split(","):
        if not item:
            raise _fail(index, f"empty list item in {shown(text)}", expr)
        terms.append(_item(index, item, expr, values, specials))
    return tuple(sorted(values)), specials, terms


def parse(expr: str) -> CronFields:
    """Parse and validate ``expr``; raise :class:`ScheduleError` naming the bad field."""
    if not isinstance(expr, str):
        raise ScheduleError(f"cron expression must be a string, got {shown(expr)}")
    text = expr.strip()
    not_blank = _NOT_BLANKS.search(text)
    if not_blank is not None:
        raise _not_a_blank(expr, not_blank.group())
    if text.startswith("@"):
        macro = MACROS.get(text.lower())
        if macro is None:
            raise _not_a_macro(expr, text.split())
        text = macro
    fields = text.split()
    if fields and ("=" in fields[0] or (len(fields) > 1 and fields[1].startswith("="))):
        raise _variable(expr, fields)  # no field holds "=": a crontab line's variable
    if len(fields) not in (5, 6):
        raise foreign_text(expr, fields) or _not_five_fields(expr, fields)
    try:
        return _fields(expr, fields)
    except ScheduleError as error:
        foreign = foreign_text(expr, fields)  # Celery's display: its mark is the sixth word
        if foreign is not None:
            raise foreign from None
        if text.startswith("#"):  # a commented-out line: "#0 3 * * * /usr/bin/backup"
            raise _comment(expr) from None
        # Only a sixth field that no cron field could be ("/usr/bin/backup") turns
        # the message into the crontab line's; "0 3 * * * 9" keeps the field's.
        if len(fields) == 6 and not field_like(fields[5]):
            raise _crontab_line(expr, fields) or error from None
        raise


def _fields(expr: str, fields: list[str]) -> CronFields:
    """Parse five or six whitespace-split ``fields`` of ``expr``."""
    seconds: tuple[int, ...] = (0,)
    t_second: tuple[Term, ...] = ()
    if len(fields) == 6:
        values, _, terms = _field(_SECOND, fields[0], expr)
        seconds, t_second = values, tuple(terms)
    given = fields
    fields = fields[-5:]
    minutes, _, t_minute = _field(0, fields[0], expr)
    hours, _, t_hour = _field(1, fields[1], expr)
    days, dom_specials, t_dom = _field(2, fields[2], expr)
    months, _, t_month = _field(3, fields[3], expr)
    raw_weekdays, dow_specials, t_dow = _field(4, fields[4], expr)
    if fields[4] == "*":
        weekdays = _ALL_WEEKDAYS
    elif raw_weekdays and raw_weekdays[-1] == 7:  # 7 is Sunday too
        weekdays = tuple(sorted({0, *raw_weekdays[:-1]}))
    else:
        weekdays = raw_weekdays
    days_and = fields[2].startswith("*") or fields[4].startswith("*")
    last_day = any(t.kind == "last" for t in dom_specials)
    last_weekday = any(t.kind == "lastweekday" for t in dom_specials)
    if days_and and days and not dom_specials:
        # As cronsim: with the day fields ANDed, a day of month that no chosen month
        # has would never fire (cronie reads it and never runs it: docs/CRON.md, "Where
        # we differ from croniter and cronie", item 8).  February counts 29 days.
        longest = max(_MAX_DAYS_IN_MONTH[m] for m in months)
        if days[0] > longest:
            names = ", ".join(_MONTHS[m - 1].title() for m in months)
            raise _fail(
                2,
                f"{fields[2]!r} never occurs in {names} (at most {longest} days)",
                expr,
            )
    return CronFields(
        text=" ".join(given),
        minutes=minutes,
        hours=hours,
        days=days,
        last_day=last_day,
        last_weekday=last_weekday,
        months=months,
        weekdays=weekdays,
        last_of=tuple(sorted({t.start for t in dow_specials if t.kind == "lastof"})),
        nth=tuple(sorted({(t.start, t.step) for t in dow_specials if t.kind == "nth"})),
        days_and=days_and,
        wall_clock=not fields[0].startswith("*") and not fields[1].startswith("*"),
        terms=(tuple(t_minute), tuple(t_hour), tuple(t_dom), tuple(t_month), tuple(t_dow)),
        seconds=seconds,
        second_terms=t_second,
    )


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAMES = frozenset((*_MONTHS, *_DAYS, "L", "W", "LW"))
_FIELD_CHARACTERS = re.compile(r"[0-9A-Za-z*?,/#-]+")
_LETTERS = re.compile(r"[A-Za-z]+")
_SYNTAX = doc_url("docs/CRON.md#moving-a-crontab")
_GRAMMAR = doc_url("docs/CRON.md#the-grammar")
_NOT_BLANKS = re.compile("[\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]")
"""What ``str.split`` takes for whitespace and is no blank: the line breaks and control
characters among it, refused between fields (:func:`_not_a_blank`).  The rest of its
whitespace separates fields: a tab and Unicode's spaces (``Zs``: a no-break space pasted
from a web page, an ideographic space)."""


def field_like(token: str) -> bool:
    """Could ``token`` be meant as a cron field (valid or not): only the characters
    fields are written with, and no words but month and day names, ``L`` and ``W``?
    ``/usr/bin/backup``, ``root`` and ``run-parts`` cannot; ``?``, ``2026`` can."""
    return bool(_FIELD_CHARACTERS.fullmatch(token)) and all(
        word.upper() in _NAMES for word in _LETTERS.findall(token)
    )


def _crontab_line(expr: str, fields: list[str]) -> ScheduleError | None:
    """The error for a whole crontab line given as the expression (``0 3 * * *
    /usr/bin/backup``, with ``root`` first in /etc/crontab), or None when everything
    after the first five fields could be fields.  When those five are no expression
    either (``0 25 * * * /usr/bin/backup``), the error is theirs: the field to fix."""
    rest = fields[5:]
    if all(field_like(token) for token in rest):
        return None
    try:
        _fields(expr, fields[:5])
    except ScheduleError as error:
        return error
    return _line_error(expr, " ".join(fields[:5]), rest)


def _line_error(expr: str, schedule: str, rest: list[str]) -> ScheduleError:
    return ScheduleError(
        f"cron expression {shown(expr)} is a whole crontab line: the schedule is "
        f"{shown(schedule)} and the rest, {shown(' '.join(rest))}, is the command it runs "
        "(in /etc/crontab and /etc/cron.d, a user name and then the command); give the "
        f"schedule alone and make the command the task's action ({_SYNTAX})"
    )


def _not_a_macro(expr: str, words: list[str]) -> ScheduleError:
    """The error for text starting with ``@`` that is no macro: ``@reboot``, a macro
    followed by a crontab line's command (``@hourly /usr/bin/x``), or an unknown one."""
    macro = words[0].lower()
    if macro == "@reboot":
        return ScheduleError(
            f"cron expression {shown(expr)}: @reboot is not supported (a scheduler has "
            "no boot to run at); use OneTime for a job that runs once at start, "
            f"OneTime(delay=0) ({_SYNTAX})"
        )
    if macro in MACROS:
        return _line_error(expr, words[0], words[1:])
    return ScheduleError(
        f"cron expression {shown(expr)}: unknown macro {shown(words[0])}; use one of "
        f"{', '.join(MACROS)}"
    )


def _variable(expr: str, fields: list[str]) -> ScheduleError:
    """The error for a crontab's variable line, ``NAME=value`` or ``NAME = value``
    (cronie allows blanks around ``=``), alone or in front of the fields."""
    name, _, value = " ".join(fields).partition("=")
    name, value = name.strip(), value.strip()
    setting = shown(fields[0] if "=" in fields[0] else f"{name}={value}")
    if not _VARIABLE.fullmatch(name):
        what = "holds '=', which no cron field does"
        return ScheduleError(f"cron expression {shown(expr)}: {shown(fields[0])} {what}")
    zone = value.split()[0] if value else ""
    if name == "CRON_TZ":
        advice = (
            f"give the zone as an argument, tz={zone!r} (CronSchedule(text, tz=...), or the "
            "scheduler's tz= for cron text)"
        )
    elif name == "TZ":  # cronie: the commands' environment, not the schedule's zone
        advice = (
            "cronie reads the schedule in CRON_TZ's zone or the system's and gives TZ to "
            f"the commands: tz={zone!r} if the schedule meant that zone, env= for a command"
        )
    elif name in ("MAILTO", "MAILFROM"):
        advice = (
            "lldsched mails nothing: a listener hears every run's end, failures included "
            "(listeners=[...] on the Scheduler)"
        )
    elif name == "RANDOM_DELAY":
        advice = (
            "cronie delays its jobs by up to that many minutes, drawn once at its start; "
            "to start each run up to max_delay seconds late, wrap the schedule: "
            "Jittered(schedule, max_delay, seed=...)"
        )
    else:
        advice = (
            "a task's action runs in the scheduler's process: set what it needs there "
            "(for a shell command, subprocess.run(..., env=...))"
        )
    return ScheduleError(
        f"cron expression {shown(expr)}: {setting} is a crontab variable, not a cron field; "
        f"{advice} ({_SYNTAX})"
    )


def _not_a_blank(expr: str, char: str) -> ScheduleError:
    """The error for a line break or a control character (``char``) inside ``expr``,
    which ``str.split`` would take for a blank: two lines pasted as one, or a text
    joined from a file's lines (docs/decisions/schedules.md, "A cron expression is one
    line: its fields are separated by blanks")."""
    return ScheduleError(
        f"cron expression {shown(expr)}: {char!r} (U+{ord(char):04X}) between its fields is "
        "a line break or a control character, not a blank; a cron expression is one line, "
        f"its fields separated by spaces or tabs ({_GRAMMAR})"
    )


def blanks_mended(expr: str) -> str | None:
    """``expr`` with a space for each line break or control character between its
    fields (:func:`_not_a_blank`), the blanks at its ends kept as they are; None when
    it holds none.  How a durable store reads an expression an earlier release took."""
    text = expr.strip()
    if _NOT_BLANKS.search(text) is None:
        return None
    start = expr.index(text[0])
    return expr[:start] + _NOT_BLANKS.sub(" ", text) + expr[start + len(text) :]


def _comment(expr: str) -> ScheduleError:
    return ScheduleError(
        f"cron expression {shown(expr)} is a crontab comment, not a schedule ({_SYNTAX})"
    )


def _not_five_fields(expr: str, fields: list[str]) -> ScheduleError:
    """The error for a field count other than five or six: an empty text, a comment,
    a whole crontab line, Quartz's seven fields (a year last) or a miscount."""
    expected = (
        "expected 5 (minute hour day-of-month month day-of-week), 6 with a second first "
        "(second minute hour day-of-month month day-of-week) or an @ macro such as @daily"
    )
    if not fields:
        return ScheduleError(f"cron expression {shown(expr)} is empty; {expected}")
    if fields[0].startswith("#"):
        return _comment(expr)
    if len(fields) > 6:
        line = _crontab_line(expr, fields)
        if line is not None:
            return line
        if len(fields) == 7:
            return ScheduleError(
                f"cron expression {shown(expr)} has 7 fields; {expected}. Quartz writes a "
                "year seventh: drop it, and write * for Quartz's ?"
            )
    return ScheduleError(f"cron expression {shown(expr)} has {len(fields)} fields; {expected}")
