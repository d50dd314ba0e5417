"""A crontab's lines, read as cronie reads them, each a :class:`JobLine`, a
:class:`NoteLine` or a :class:`BadLine` (:func:`read_crontab`).

The text is read as cronie reads a crontab (its ``src/user.c``, ``load_user``;
``src/misc.c``, ``skip_comments``; ``src/env.c``, ``load_env``; ``src/entry.c``,
``load_entry``; ``src/do_command.c`` for ``%``):

* a line whose first character past blanks (spaces and tabs) is ``#``, or that has
  nothing else, is skipped;
* ``NAME=value`` sets a variable for the lines *after* it
  (:mod:`lldsched.cli.crontabvariables`: ``CRON_TZ`` the zone of the schedules after
  it, the rest the commands' environment or cron's own); past cronie's 131,071 bytes a
  line is cut, and said so;
* a job is five fields (or a nickname, ``@daily``, lower case as cron compares it), a
  user name with ``--system`` (``/etc/crontab``, ``/etc/cron.d``), then the command, up
  to its first unescaped ``%``; what follows is the command's standard input, every
  ``%`` a newline (:func:`split_percent`).  cronie's ``-`` before a line (log no start)
  and ``-n`` before a command (mail only a failure) are read and said, as is a command
  longer than cronie's buffer;
* ``@reboot`` and cronie's random ``~`` are lines lldsched cannot express: noted, with
  what to write instead; a bad line (a bad field, no command, a last line without its
  newline, which cron ignores, a ``CRON_TZ`` that names no zone lldsched knows, a
  shell's ``export``, a byte-order mark before line 1, a no-break space among the
  fields) is a :class:`BadLine` saying what is bad, and the other lines go on.

What ``cron --crontab`` prints of them is :mod:`lldsched.cli.crontab`'s.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from lldsched.cli.crontabvariables import (
    CRON_SETS,
    CRON_SETTINGS,
    assignment,
    cron_tz_zone,
    setting_note,
    value_notes,
)
from lldsched.errors import ScheduleError, shown
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.cron.parse import field_like

__all__ = ["BadLine", "Entry", "JobLine", "NoteLine", "read_crontab", "split_percent"]

NICKNAMES = ("reboot", "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly")
"""The ``@`` nicknames cronie knows, compared as written (``@Daily`` is none)."""

MAX_LINE = 131_072 - 1
"""The bytes of a command (``MAX_COMMAND``) or a variable's line (``MAX_ENVSTR``) that
cronie reads (``get_string``, its buffer's last byte the NUL); it drops the rest."""

_BLANKS = " \t"  # what separates fields and skips before a line (Skip_Blanks)


@dataclass(frozen=True)
class JobLine:
    """A job line: its schedule in its zone, and the command cron runs."""

    number: int
    text: str
    schedule: str  # the five fields, one blank apart, or the nickname
    tz: str
    command: str  # as the shell gets it: up to the first unescaped %, \\% made %
    stdin: str | None  # what cron writes to the command's input, or None
    shell: str
    env: tuple[tuple[str, str], ...]  # the crontab's variables for the command
    notes: tuple[str, ...] = ()  # what cron did around it that the call does not
    cron_tz_line: int | None = None  # the CRON_TZ that named ``tz``; None: the default


@dataclass(frozen=True)
class NoteLine:
    """A line that is no job to move: a variable cron reads (``moved`` True) or a job
    lldsched cannot express (``@reboot``: False).  ``note`` is a line, or several."""

    number: int
    text: str
    note: str
    moved: bool = True


@dataclass(frozen=True)
class BadLine:
    """A line cron would refuse, or lldsched: ``why`` names the bad part."""

    number: int
    text: str
    why: str


Entry = JobLine | NoteLine | BadLine


def read_crontab(
    text: str, *, tz: str = "UTC", system: bool = False, system_place: bool = False
) -> list[Entry]:
    """Each line of the crontab ``text`` that is not blank or a comment, in order.
    ``tz`` is the zone of the lines before any ``CRON_TZ`` (cron's system zone);
    ``system``: a user name stands between the schedule and the command;
    ``system_place``: the file is where system crontabs are, so a job read without
    ``system`` says to give it."""
    entries: list[Entry] = []
    env: dict[str, str] = {}
    zone, unknown = tz, ""  # unknown: why the CRON_TZ in force names no zone
    zone_line: int | None = None  # the line of the CRON_TZ in force, None for tz
    lines = text.split("\n")
    unterminated = lines.pop()  # "" when the text ends with its newline
    numbered = [*enumerate(lines, 1), (len(lines) + 1, unterminated)]
    for number, line in numbered:
        body = line.lstrip(_BLANKS)
        if number == 1 and body.startswith(_BOM):
            entries.append(BadLine(number, line, _after_bom(body[1:])))
            setting = assignment(body[1:]) if body[1:2] not in (" ", "\t") else None
            if setting is not None and setting[0] == "CRON_TZ":
                unknown = (
                    f"its zone, CRON_TZ={setting[1]!r} on line 1, was never cron's: a "
                    "byte-order mark starts that line"
                )
            continue
        if not body or body.startswith("#"):  # skip_comments
            continue
        if number > len(lines):
            entries.append(BadLine(number, line, _NO_NEWLINE))
            continue
        setting = assignment(body)
        if setting is None:
            job = _job(number, line, body, zone, unknown, env, system, system_place)
            entries.append(
                replace(job, cron_tz_line=zone_line) if isinstance(job, JobLine) else job
            )
            continue
        name, value = setting
        env[name] = value
        if name == "CRON_TZ":
            try:
                zone, unknown = cron_tz_zone(value, tz), ""
                zone_line = number if value else None
            except ScheduleError as exc:
                unknown = f"its zone, CRON_TZ={value!r} on line {number}, is unknown"
                entries.append(BadLine(number, line, f"CRON_TZ: {exc}"))
                continue
        notes = [setting_note(name, value, zone, tz), *value_notes(name, value)]
        notes.append(_cut(body, "read", "this line"))
        if said := [note for note in notes if note is not None]:
            entries.append(NoteLine(number, line, "\n".join(said)))
    return entries


def _cut(text: str, verb: str, thing: str) -> str | None:
    """What cron did (``verb``: read, ran) with ``text``, ``thing`` (this line, this
    command), when cronie's buffer was too short for it; else None."""
    size = len(text.encode("utf-8", "surrogateescape"))
    if size <= MAX_LINE:
        return None
    return (
        f"cron {verb} the first {MAX_LINE:,} bytes of {thing} ({size:,} here) and dropped "
        "the rest; the call has it whole"
    )


_BOM = "\ufeff"


def _after_bom(rest: str) -> str:
    """Why line 1, ``rest`` after a byte-order mark, is bad: cronie's ``skip_comments``
    sees no blank, ``#`` or newline first, and reads the mark's bytes as the line's."""
    setting = assignment(rest) if rest[:1] not in (" ", "\t") else None
    if setting is not None:
        what = f"it set a variable named {_BOM + setting[0]!r}, not {setting[0]}"
    elif not rest.strip(_BLANKS) or rest.lstrip(_BLANKS).startswith("#"):
        what = "it is no comment or blank line but one cronie refuses (bad minute)"
    else:
        what = "the job never ran (cronie: bad minute)"
    return (
        "the file starts with a byte-order mark (U+FEFF, written by some Windows editors): "
        f"cron reads it as the start of this line, so {what}; save the file without it"
    )


def _odd_blank(fields: list[str], errors: tuple[str, ...]) -> str | None:
    """Why ``fields`` are bad when one holds a character cron takes for no blank but
    that looks like one or like nothing (U+00A0 from a web page, U+200B), or None;
    ``errors``: cronie's word for each field's error (one, for a nickname)."""
    for count, field in enumerate(fields):
        for c in field:
            if c.isspace() or unicodedata.category(c) == "Cf":
                name = unicodedata.name(c, f"character {c!r}")
                error = errors[min(count, len(errors) - 1)]
                return (
                    f"a {name} (U+{ord(c):04X}) among the fields: cron separates them, and "
                    f"the command, by spaces and tabs alone; write a space (cronie: bad {error})"
                )
    return None


_NO_NEWLINE = (
    "the last line has no newline at its end: cron ignores such a line (crontab "
    "refuses the file: premature EOF); end the file with a newline"
)


def _token(text: str) -> tuple[str, str]:
    """The word ``text`` starts with (up to a blank) and what follows its blanks."""
    end = len(text)
    for blank in _BLANKS:
        found = text.find(blank)
        if found != -1:
            end = min(end, found)
    return text[:end], text[end:].lstrip(_BLANKS)


class _Bad(Exception):
    """Why a job line is bad (a :class:`BadLine`'s reason), raised by a step of
    :func:`_job`."""


def _job(
    number: int,
    line: str,
    body: str,
    zone: str,
    unknown: str,
    env: dict[str, str],
    system: bool,
    system_place: bool,
) -> Entry:
    """The job line ``body`` (blanks before it skipped), read as ``load_entry`` reads
    it, in ``zone`` (``unknown``: why that zone cannot be used) with ``env`` set;
    ``system``, ``system_place`` as :func:`read_crontab` takes them."""

    def bad(why: str) -> BadLine:
        return BadLine(number, line, why)

    notes: list[str] = []
    try:
        _refuse_shell_lines(body)
        schedule, rest = _schedule_of(body, notes, system=system)
        rest = _command_of(rest, schedule, notes, system=system)
    except _Bad as exc:
        return bad(str(exc))
    if schedule == "@reboot":
        return NoteLine(number, line, _REBOOT, moved=False)
    if "~" in schedule:  # cronie's random value: a line cron runs that lldsched does not
        try:
            CronSchedule(schedule)
        except ScheduleError as exc:
            return NoteLine(number, line, str(exc), moved=False)
    if unknown:
        return bad(unknown)
    if not system and system_place:
        notes.append(
            f"{_token(rest)[0]!r} first, in a system crontab's place (/etc/crontab, "
            "/etc/cron.d), whose lines name a user before the command: read the file with "
            "--system"
        )
    elif not system and _token(rest)[0] == "root":
        notes.append("'root' first: a system crontab's user name? Read the file with --system")
    if (cut := _cut(rest, "ran", "this command")) is not None:
        notes.append(cut)
    command, stdin = split_percent(rest)
    shell = env.get("SHELL", "/bin/sh")
    variables = tuple(
        (k, v) for k, v in env.items() if k and k not in CRON_SETTINGS and k not in CRON_SETS
    )
    return JobLine(number, line, schedule, zone, command, stdin, shell, variables, tuple(notes))


def _refuse_shell_lines(body: str) -> None:
    """A job line cron reads otherwise than a shell would (a carriage return at its
    end, a shell's ``export``, a variable cron cannot read): :class:`_Bad`."""
    if body.endswith("\r"):
        raise _Bad(
            "the line ends in a carriage return (a file with Windows line ends): cron "
            "gives it to the shell as part of the command; save the file with Unix "
            "line ends (dos2unix)"
        )
    export = re.match(r"export[ \t]+", body)
    if export and (setting := assignment(body[export.end() :])) is not None:
        raise _Bad(
            "a shell's 'export': a crontab sets a variable by NAME=value alone, and every "
            f"one reaches the commands; write '{setting[0]}={setting[1]}' (cronie: bad minute)"
        )
    if _VARIABLE_LIKE.match(body):
        raise _Bad(
            "a variable as cron cannot read one, so it took the line for a job (cronie: bad "
            "minute): NAME=value, a name or value quoted whole or not at all, with blanks "
            "alone after a quoted one; cron knows no backslash escape"
        )


def _schedule_of(body: str, notes: list[str], *, system: bool) -> tuple[str, str]:
    """The schedule a job line starts with (cronie's ``-`` before it noted in
    ``notes``), a nickname or five fields checked as cron reads them, and the rest of
    the line; :class:`_Bad` for a bad one."""
    rest = body
    if rest.startswith("-"):  # cronie: root's "no syslog line for this job"
        notes.append(
            "cronie's '-' before the line: it logged no start of this job (taken in root's "
            "crontab and the system ones; in another user's, cronie refused the line)"
        )
        rest = rest[1:]
        if rest[:1] in (" ", "\t"):
            raise _Bad(
                "'-' then a blank: cronie's '-' (log no start) is written against the first "
                "field, '-0 3 * * * command' (cronie: bad minute)"
            )
    if rest.startswith("@"):
        schedule, rest = _token(rest)
        if (odd := _odd_blank([schedule], ("time specifier",))) is not None:
            raise _Bad(odd)
        if schedule[1:] not in NICKNAMES:
            lower = schedule.lower()
            fix = f"write {lower!r}" if lower[1:] in NICKNAMES else _NICKNAMES_ARE
            raise _Bad(f"{shown(schedule)} is no cron nickname: {fix} (cronie: bad time specifier)")
    else:
        fields: list[str] = []
        while len(fields) < 5:
            field, rest = _token(rest)
            if not field:
                raise _Bad(
                    f"{len(fields)} fields before the end of the line: a crontab line has "
                    "5 (minute hour day-of-month month day-of-week), then "
                    f"{'the user and ' if system else ''}the command"
                )
            fields.append(field)
        if (odd := _odd_blank(fields, _CRONIE_FIELDS)) is not None:
            raise _Bad(odd)
        schedule = " ".join(fields)
    if schedule != "@reboot" and "~" not in schedule:  # the fields first, as cron reads them
        try:
            CronSchedule(schedule)
        except ScheduleError as exc:
            raise _Bad(_fields_error(schedule, exc, system)) from None
    return schedule, rest


def _command_of(rest: str, schedule: str, notes: list[str], *, system: bool) -> str:
    """What follows the schedule ``rest`` begins: the user of a system crontab's line
    and cronie's ``-n`` noted in ``notes``, the command returned; :class:`_Bad` when
    there is none, or a sixth field or an option cronie refuses."""
    if not rest:
        raise _Bad(f"no command after the schedule {shown(schedule)} (cronie: bad command)")
    if rest.startswith("*"):
        raise _Bad(
            f"a sixth field {shown(_token(rest)[0])} after {shown(schedule)}: a crontab "
            "line has five, then the command; a seconds field or a year is another "
            "cron's (cronie: bad command)"
        )
    if system:
        user, rest = _token(rest)
        if not rest:
            raise _Bad(
                f"no command after the user {shown(user)} (--system: the schedule, a user "
                "name, then the command; cronie: bad command)"
            )
        notes.append(
            f"cron ran it as {user!r}; every action runs as the scheduler's user: run the "
            f"service as that user, or start the command with sudo -u {user}"
        )
    while rest.startswith("-"):  # cronie's options before the command: -n alone
        if rest[1:2] != "n" or rest[2:3] not in (" ", "\t"):
            raise _Bad(
                f"{shown(_token(rest)[0])}: cronie reads a '-' starting the command as its "
                "option, and knows -n alone (then a blank); cronie: bad option"
            )
        if any(note.startswith("-n") for note in notes):
            raise _Bad("-n twice before the command (cronie: bad option)")
        rest = rest[2:].lstrip(_BLANKS)
        if not rest:
            raise _Bad("no command after -n (cronie: bad command)")
        notes.append("-n: cronie mailed its output only when it failed")
    return rest


def _fields_error(schedule: str, error: ScheduleError, system: bool) -> str:
    """Why the fields ``schedule`` are bad: ``error``, or, when one of them could be no
    cron field and is no word either (``/usr/bin/backup``, ``run-parts``, where
    ``monday`` gets the parser's advice), that the line has fewer fields than five."""
    fields = schedule.split(" ")
    for count, field in enumerate(fields):
        if not field_like(field) and not field.isalpha():
            return (
                f"{count} fields before {shown(field)}, which is no cron field: a crontab "
                "line has 5 (minute hour day-of-month month day-of-week), then "
                f"{'the user and ' if system else ''}the command"
            )
    return str(error)


_VARIABLE_LIKE = re.compile(r"""["']?[A-Za-z_][\w \t]*["']?[ \t]*=""")  # a name, then =

_CRONIE_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")  # "bad minute"

_NICKNAMES_ARE = "cron knows " + ", ".join(f"@{name}" for name in NICKNAMES)

_REBOOT = (
    "@reboot runs when cron starts, at boot, and a scheduler has no boot: register "
    "OneTime(delay=0) when the service starts, which runs it at the scheduler's start"
)


def split_percent(command: str) -> tuple[str, str | None]:
    """cronie's reading of ``%`` in a command (``src/do_command.c``): the command up to
    its first unescaped ``%`` (``\\%`` is a ``%``, any other backslash stays), and what
    cron writes to its standard input, or None when nothing: after that ``%``, every
    ``%`` a newline, ``\\%`` a ``%``, and a newline at the end unless the last character
    written is one."""
    kept: list[str] = []
    escaped = False
    for i, c in enumerate(command):
        if escaped:
            if c == "%":
                kept[-1] = c  # in place of the backslash
            else:
                kept.append(c)
            escaped = False
            continue
        if c == "%":
            return "".join(kept), _input(command[i + 1 :])
        kept.append(c)
        escaped = c == "\\"
    return "".join(kept), None


def _input(data: str) -> str | None:
    if not data:
        return None  # cronie writes nothing
    written: list[str] = []
    escaped = newline = False
    for c in data:
        if escaped and c != "%":
            written.append("\\")
        elif not escaped and c == "%":
            c = "\n"
        escaped = c == "\\"
        if not escaped:
            written.append(c)
            newline = c != "\n"
    if escaped:
        written.append("\\")
    if newline:
        written.append("\n")
    return "".join(written)
