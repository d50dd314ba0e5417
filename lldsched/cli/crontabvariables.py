"""A crontab's variable lines (``NAME=value``), as cronie reads them, and what each means
for the move.

:func:`assignment` is cronie's ``load_env`` (``src/env.c``), state by state: ``NAME =
value``, quoted names and values.  ``CRON_TZ`` is the zone of the schedules after it
(:func:`cron_tz_zone`: an empty one, back to ``--tz``, cron's system zone; ``:NAME`` and
a path into a ``zoneinfo`` folder are that zone, as glibc reads them); ``TZ``,
``SHELL``, ``PATH`` and the rest are the commands' environment: cronie reads a schedule
in ``CRON_TZ``'s zone or its own (``src/cron.c``, ``find_jobs``), never ``TZ``'s.
``MAILTO``, ``MAILFROM`` and ``RANDOM_DELAY`` are cron's own (:data:`CRON_SETTINGS`),
said as such (:func:`setting_note`), and ``LOGNAME`` and ``USER`` cron sets over the
crontab's (:data:`CRON_SETS`).  A value is taken as cron takes it, and said when its
writer may have meant otherwise (:func:`value_notes`): a ``#`` in it (no comment), a
``$`` (not expanded).  The crontab's lines are :mod:`lldsched.cli.crontablines`'s.
"""

from __future__ import annotations

import re

from lldsched.errors import ScheduleError
from lldsched.schedules.cron.zone import zone_info

__all__ = [
    "CRON_SETS",
    "CRON_SETTINGS",
    "assignment",
    "cron_tz_zone",
    "setting_note",
    "value_notes",
]

CRON_SETTINGS = frozenset(
    (
        "CRON_TZ",
        "MAILTO",
        "MAILFROM",
        "RANDOM_DELAY",
        "CONTENT_TYPE",
        "CONTENT_TRANSFER_ENCODING",
        "MLS_LEVEL",
        "XDG_SESSION_CLASS",
        "SHELL",  # the program the call runs
    )
)
"""Variables the daemon reads for itself: not part of a call's ``env=``."""

CRON_SETS = ("LOGNAME", "USER")
"""Variables ``load_entry`` sets over the crontab's, to the user a job runs as."""

_SPACE = " \t\n\v\f\r"  # C's isspace, as load_env tests a character


def assignment(body: str) -> tuple[str, str] | None:
    """``(name, value)`` if the line ``body`` (blanks before it skipped) sets a
    variable, else None: cronie's ``load_env``, state by state.  A name or a value may
    be quoted with ``'`` or ``"`` (the quotes dropped); blanks may stand around ``=``;
    an unquoted value loses its trailing blanks, a quoted one may be followed by
    blanks alone."""
    name_i, name, eq1, eq2, value_i, value, fini, error = range(8)
    state, quote, chars, start, i = name_i, "", [], 0, 0
    while state != error and i < len(body):
        c = body[i]
        if state in (name_i, value_i):
            state += 1
            if c in "'\"":
                quote = c
                i += 1
                continue
        if state in (name, value):
            if quote and c == quote:
                state += 1
                i += 1
                continue
            if quote and state == name and c == "=":
                state = error
                continue
            if not quote and state == name and c in _SPACE:
                state, i = eq1, i + 1
                continue
            if not quote and state == name and c == "=":
                state = eq1  # the = is read there
                continue
            chars.append(c)
            i += 1
        elif state == eq1:
            if c == "=":
                state, quote, start = eq2, "", len(chars) + 1
                chars.append(c)
            elif c not in _SPACE:
                state = error
            i += 1
        elif c in _SPACE:  # eq2, fini: blanks skipped
            i += 1
        else:
            state += 1  # eq2 -> value_i; fini -> error: something after a quoted value
    if not (state in (fini, eq2) or (state == value and not quote)):
        return None
    text = "".join(chars)
    found = text[start:].rstrip(_SPACE) if state == value else text[start:]
    return text[: start - 1], found


def setting_note(name: str, value: str, zone: str, tz: str) -> str | None:
    """What a variable line means for the move, or None for one that only goes into
    the commands' ``env=`` (``PATH``, ``HOME``) or names their ``SHELL``."""
    if name == "CRON_TZ":
        if not value:
            return f"the schedules after it are read in {zone} (--tz)"
        glibc = f" (glibc reads {value!r} as that zone's file)" if zone != value else ""
        return f"the schedules after it are read in {zone}{glibc}"
    if name == "TZ":
        return (
            f"the commands' zone (env= below), not the schedules': cronie reads those in "
            f"CRON_TZ's zone or its system's (--tz, here {tz}); write CRON_TZ={value} if "
            "the schedules meant it"
        )
    if name in ("MAILTO", "MAILFROM"):
        return (
            "lldsched mails nothing: a listener hears every run's end, failures included "
            "(listeners=[...] on the Scheduler)"
        )
    if name == "RANDOM_DELAY":
        return (
            f"cronie delays the jobs after it by up to {value} minutes, drawn once at its "
            "start; to start each run up to max_delay seconds late, wrap the schedule: "
            "Jittered(CronSchedule(...), max_delay, seed=...)"
        )
    return None


_ZONEINFO = "/zoneinfo/"
_POSIX_RULE = re.compile(r"(?:[A-Za-z]{3,}|<[^>]*>)[+-]?[0-9]")  # std name, then its offset


def cron_tz_zone(value: str, tz: str) -> str:
    """The IANA name of the zone cronie read the schedules after ``CRON_TZ=value`` in:
    ``tz`` for an empty one, else the zone glibc reads when cronie sets ``TZ`` to it
    (``find_jobs``), ``:NAME`` being the zone file NAME and a path into a ``zoneinfo``
    folder that file.  :class:`ScheduleError` for a value lldsched cannot name a zone by,
    saying what it is: a comment after the name (cron has none), a POSIX TZ rule, a file."""
    if not value:
        return tz
    name = value.removeprefix(":")
    if name.startswith("/") and _ZONEINFO in name:
        name = name.rsplit(_ZONEINFO, 1)[1]
    try:
        zone_info(name)
    except ScheduleError as exc:
        if "#" in value:
            why = (
                f"cron has no comment after a value: it read the whole {value!r} as the "
                "zone, which glibc does not find (so it ran the jobs in UTC); put the "
                "comment on a line of its own"
            )
        elif _POSIX_RULE.match(name):
            why = (
                f"{value!r} is a POSIX TZ rule, which glibc reads and lldsched does not: "
                "write the IANA name of the zone it describes"
            )
        elif name.startswith("/"):
            why = (
                f"{value!r} is a file, not a zone's name: write the IANA name of the zone "
                "it holds (the machine's own: timedatectl)"
            )
        elif name != value:
            why = f"glibc reads {value!r} as the zone file {name!r}"
        else:
            raise
        raise ScheduleError(f"{exc}; {why}") from None
    return name


def value_notes(name: str, value: str) -> list[str]:
    """What cron made of the variable ``name=value`` that its writer may not have
    meant: a comment taken into the value, a ``$`` kept, a variable cron sets over it."""
    notes = []
    if name in CRON_SETS:
        notes.append(
            f"cron sets {name} itself, to the user the job runs as, over this line: its "
            f"commands never saw {value!r}, and the call leaves it out"
        )
    if name != "CRON_TZ" and re.search(r"\s#", value):
        notes.append(
            f"cron has no comment after a value: {name} is {value!r}, '#' and all (as "
            "here); put the comment on a line of its own"
        )
    if "$" in value:
        notes.append(
            f"cron sets {name} as written, '$' and all: it expands no variable in a value "
            "(nor does the call); write the value out in full"
        )
    return notes
