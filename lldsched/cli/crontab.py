"""``python -m lldsched cron --crontab FILE [--system]``: a whole crontab, moved line by line.

The file (``-``: stdin) is read as cronie reads it (its ``src/user.c``, ``load_user``;
``src/misc.c``, ``skip_comments``; ``src/env.c``, ``load_env``; ``src/entry.c``,
``load_entry``; ``src/do_command.c`` for ``%``), and every job line gets what ``cron
EXPR`` prints for its schedule, then the ``scheduler.schedule(...)`` call that runs its
command on lldsched (docs/CRON.md, "Moving a crontab"):

* a line whose first character past blanks (spaces and tabs) is ``#``, or that has
  nothing else, is skipped;
* ``NAME=value`` sets a variable for the lines *after* it (``NAME = value``, quoted
  names and values, as ``load_env`` reads them).  ``CRON_TZ`` is the zone of the
  schedules after it (an empty one: back to ``--tz``, cron's system zone; ``:NAME``
  and a path into a ``zoneinfo`` folder are that zone, as glibc reads them); ``TZ``,
  ``SHELL``, ``PATH`` and the rest are the commands' environment: cronie reads a
  schedule in ``CRON_TZ``'s zone or its own (``src/cron.c``, ``find_jobs``), never
  ``TZ``'s.  ``MAILTO``, ``MAILFROM`` and ``RANDOM_DELAY`` are cron's own, said as such,
  and ``LOGNAME`` and ``USER`` cron sets over the crontab's.  A value is taken as
  cron takes it, and said when its writer may have meant otherwise: a ``#`` in it (no
  comment), a ``$`` (not expanded), past cronie's 131,071 bytes (cut);
* a job is five fields (or a nickname, ``@daily``, lower case as cron compares it), a
  user name with ``--system`` (``/etc/crontab``, ``/etc/cron.d``), then the command, up
  to its first unescaped ``%``; what follows is the command's standard input, every
  ``%`` a newline.  cronie's ``-`` before a line (log no start) and ``-n`` before a
  command (mail only a failure) are read and said, as is a command longer than
  cronie's buffer;
* ``@reboot`` and cronie's random ``~`` are lines lldsched cannot express: reported,
  with what to write instead; a bad line (a bad field, no command, a last line without
  its newline, which cron ignores, a ``CRON_TZ`` that names no zone lldsched knows, a
  shell's ``export``, a byte-order mark before line 1, a no-break space among the
  fields) is reported on stderr with the file's name, the
  line's number and what is bad, and the other lines go on.  Status 1 if any line was
  bad (the work found it), 0 otherwise; an unreadable file or a bad option is 2,
  refused before any line is read.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from dataclasses import dataclass, replace

from lldsched.cli import BAD_ARGUMENTS, FAILED, say, to_stderr
from lldsched.cli.cron import check_count, cron_report, start_in
from lldsched.errors import ScheduleError, shown
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.cron.parse import field_like
from lldsched.schedules.cron.zone import zone_info

__all__ = ["BadLine", "JobLine", "NoteLine", "read_crontab", "run_crontab", "system_place"]

NICKNAMES = ("reboot", "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly")
"""The ``@`` nicknames cronie knows, compared as written (``@Daily`` is none)."""

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

MAX_LINE = 131_072 - 1
"""The bytes of a command (``MAX_COMMAND``) or a variable's line (``MAX_ENVSTR``) that
cronie reads (``get_string``, its buffer's last byte the NUL); it drops the rest."""

_BLANKS = " \t"  # what separates fields and skips before a line (Skip_Blanks)
_SPACE = " \t\n\v\f\r"  # C's isspace, as load_env tests a character


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
                zone, unknown = _cron_tz_zone(value, tz), ""
                zone_line = number if value else None
            except ScheduleError as exc:
                unknown = f"its zone, CRON_TZ={value!r} on line {number}, is unknown"
                entries.append(BadLine(number, line, f"CRON_TZ: {exc}"))
                continue
        notes = [_setting_note(name, value, zone, tz), *_value_notes(name, value)]
        notes.append(_cut(body, "read", "this line"))
        if said := [note for note in notes if note is not None]:
            entries.append(NoteLine(number, line, "\n".join(said)))
    return entries


_ZONEINFO = "/zoneinfo/"
_POSIX_RULE = re.compile(r"(?:[A-Za-z]{3,}|<[^>]*>)[+-]?[0-9]")  # std name, then its offset


def _cron_tz_zone(value: str, tz: str) -> str:
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


def _value_notes(name: str, value: str) -> list[str]:
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


def _setting_note(name: str, value: str, zone: str, tz: str) -> str | None:
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


def _token(text: str) -> tuple[str, str]:
    """The word ``text`` starts with (up to a blank) and what follows its blanks."""
    end = len(text)
    for blank in _BLANKS:
        found = text.find(blank)
        if found != -1:
            end = min(end, found)
    return text[:end], text[end:].lstrip(_BLANKS)


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

    if body.endswith("\r"):
        return bad(
            "the line ends in a carriage return (a file with Windows line ends): cron "
            "gives it to the shell as part of the command; save the file with Unix "
            "line ends (dos2unix)"
        )
    export = re.match(r"export[ \t]+", body)
    if export and (setting := assignment(body[export.end() :])) is not None:
        return bad(
            "a shell's 'export': a crontab sets a variable by NAME=value alone, and every "
            f"one reaches the commands; write '{setting[0]}={setting[1]}' (cronie: bad minute)"
        )
    if _VARIABLE_LIKE.match(body):
        return bad(
            "a variable as cron cannot read one, so it took the line for a job (cronie: bad "
            "minute): NAME=value, a name or value quoted whole or not at all, with blanks "
            "alone after a quoted one; cron knows no backslash escape"
        )
    notes: list[str] = []
    rest = body
    if rest.startswith("-"):  # cronie: root's "no syslog line for this job"
        notes.append(
            "cronie's '-' before the line: it logged no start of this job (taken in root's "
            "crontab and the system ones; in another user's, cronie refused the line)"
        )
        rest = rest[1:]
        if rest[:1] in (" ", "\t"):
            return bad(
                "'-' then a blank: cronie's '-' (log no start) is written against the first "
                "field, '-0 3 * * * command' (cronie: bad minute)"
            )
    if rest.startswith("@"):
        schedule, rest = _token(rest)
        if (odd := _odd_blank([schedule], ("time specifier",))) is not None:
            return bad(odd)
        if schedule[1:] not in NICKNAMES:
            lower = schedule.lower()
            fix = f"write {lower!r}" if lower[1:] in NICKNAMES else _NICKNAMES_ARE
            return bad(f"{shown(schedule)} is no cron nickname: {fix} (cronie: bad time specifier)")
    else:
        fields: list[str] = []
        while len(fields) < 5:
            field, rest = _token(rest)
            if not field:
                return bad(
                    f"{len(fields)} fields before the end of the line: a crontab line has "
                    "5 (minute hour day-of-month month day-of-week), then "
                    f"{'the user and ' if system else ''}the command"
                )
            fields.append(field)
        if (odd := _odd_blank(fields, _CRONIE_FIELDS)) is not None:
            return bad(odd)
        schedule = " ".join(fields)
    if schedule != "@reboot" and "~" not in schedule:  # the fields first, as cron reads them
        try:
            CronSchedule(schedule)
        except ScheduleError as exc:
            return bad(_fields_error(schedule, exc, system))
    if not rest:
        return bad(f"no command after the schedule {shown(schedule)} (cronie: bad command)")
    if rest.startswith("*"):
        return bad(
            f"a sixth field {shown(_token(rest)[0])} after {shown(schedule)}: a crontab "
            "line has five, then the command; a seconds field or a year is another "
            "cron's (cronie: bad command)"
        )
    if system:
        user, rest = _token(rest)
        if not rest:
            return bad(
                f"no command after the user {shown(user)} (--system: the schedule, a user "
                "name, then the command; cronie: bad command)"
            )
        notes.append(
            f"cron ran it as {user!r}; every action runs as the scheduler's user: run the "
            f"service as that user, or start the command with sudo -u {user}"
        )
    while rest.startswith("-"):  # cronie's options before the command: -n alone
        if rest[1:2] != "n" or rest[2:3] not in (" ", "\t"):
            return bad(
                f"{shown(_token(rest)[0])}: cronie reads a '-' starting the command as its "
                "option, and knows -n alone (then a blank); cronie: bad option"
            )
        if any(note.startswith("-n") for note in notes):
            return bad("-n twice before the command (cronie: bad option)")
        rest = rest[2:].lstrip(_BLANKS)
        if not rest:
            return bad("no command after -n (cronie: bad command)")
        notes.append("-n: cronie mailed its output only when it failed")
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


def schedule_call(job: JobLine) -> str:
    """The ``scheduler.schedule(...)`` call that runs ``job``'s command as cron did: by
    its shell, ``check=True`` so a failure is the run's, its input and variables given
    (``import subprocess`` and ``from lldsched import CronSchedule`` assumed), by an
    ``id`` with ``replace_existing=True`` so a restart on a durable store does not add a
    copy.

    The crontab's variables go on the command line, ``/usr/bin/env NAME=value ... SHELL
    -c COMMAND``, which adds them to the environment the run inherits, *when it runs*:
    ``env={**os.environ, ...}`` in the call would be read at registration and written
    with the task's definition into a durable store, every secret of the scheduler's
    environment with it."""
    variables = [f"{name}={value}" for name, value in job.env]
    program = [*(["/usr/bin/env", *variables] if variables else []), job.shell, "-c", job.command]
    words = job.command.split()
    word = next(iter(re.findall(r"[\w.-]+", os.path.basename(words[0]))), "job") if words else "job"
    options = ["'check': True"]
    if job.stdin is not None:
        options += [f"'input': {job.stdin!r}", "'text': True"]
    return (
        f"scheduler.schedule({f'{word} (line {job.number})'!r}, subprocess.run, "
        f"CronSchedule({job.schedule!r}, tz={job.tz!r}), args=({program!r},), "
        f"kwargs={{{', '.join(options)}}}, id={f'{word}-line-{job.number}'!r}, "
        "replace_existing=True)"
    )


def crontab_report(
    name: str,
    entries: list[Entry],
    *,
    n: int = 5,
    start: str | None = None,
    tz_given: bool = True,
) -> list[tuple[bool, str]]:
    """The lines ``run_crontab`` prints, in the file's order, each with whether it is
    an error (stderr: ``NAME:LINE: error: ...``, a bad line) or not (stdout: each
    job's ``cron_report`` and call, each note, then a count).  ``tz_given``: False
    when ``--tz`` was not given, and a job read in its default is said to be."""
    said: list[tuple[bool, str]] = []
    jobs = not_moved = bad = defaulted = 0
    for entry in entries:
        where = f"{name}:{entry.number}"
        if isinstance(entry, JobLine):
            try:
                lines = cron_report(entry.schedule, tz=entry.tz, n=n, start=start)
            except ScheduleError as exc:  # --start outside the years 1-9999 in this zone
                entry = BadLine(entry.number, entry.text, str(exc))
            else:
                jobs += 1
                defaulted += entry.cron_tz_line is None
                lines += [f"# {note}" for note in entry.notes]
                lines += [schedule_call(entry), ""]
                said += [(False, line) for line in [f"{where}: {entry.text.strip()}", *lines]]
                continue
        if isinstance(entry, BadLine):
            bad += 1
            said.append((True, f"{where}: error: {entry.why}"))
        else:
            not_moved += not entry.moved
            note = entry.note if entry.moved else f"not moved: {entry.note}"
            said += [(False, f"{where}: {entry.text.strip()}"), (False, note), (False, "")]
    count = (
        f"{name}: {_count(jobs, 'job')}, {_count(not_moved, 'line')} lldsched cannot "
        f"express, {_count(bad, 'bad line')}"
    )
    if defaulted and not tz_given:
        them = "it" if defaulted == 1 else "them"
        said.append(
            (
                False,
                f"{name}: {_count(defaulted, 'job')} without a CRON_TZ read in UTC, --tz's "
                f"default: cron read {them} in its machine's zone; give that zone with "
                "--tz (timedatectl shows it)",
            )
        )
    return [*said, (False, count)]


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


SYSTEM_CRONTAB = "/etc/crontab"
SYSTEM_FOLDER = "/etc/cron.d"  # each file in it a system crontab


def system_place(path: str) -> bool:
    """Whether the file ``path`` names (``-``: stdin, none) is where cron keeps system
    crontabs: a hint for a file read without ``--system``, never a reason to read it
    so (a file of ``/etc/cron.d`` is copied elsewhere, and a user's may be put there)."""
    if path == "-":
        return False
    where = os.path.normpath(os.path.abspath(path))
    return where == SYSTEM_CRONTAB or os.path.dirname(where) == SYSTEM_FOLDER


def _read(path: str) -> str:
    """The text of the file ``path`` names (``-``: stdin), its bytes read as UTF-8 (a
    byte that is none kept as it is); an OSError for a file that cannot be read, a
    ValueError for a path no file can have (a NUL in it)."""
    if path == "-":
        stream = sys.stdin
        if stream is None:  # started with stdin closed (<&-)
            raise OSError("stdin is closed")
        data: bytes | str = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
    else:
        with open(path, "rb") as file:
            data = file.read()
    return data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")


def run_crontab(
    path: str,
    *,
    tz: str | None = None,
    n: int = 5,
    start: str | None = None,
    system: bool = False,
) -> int:
    """Print the report of the crontab ``path`` names (``-``: stdin), its lines
    before any ``CRON_TZ`` read in ``tz`` (None: not given, UTC, and said); 2 for a
    bad option or a file that cannot be read (before any line), 1 if a line was bad."""
    tz_given, tz = tz is not None, "UTC" if tz is None else tz
    try:
        check_count(n)
        start_in(start, zone_info(tz), tz)
    except ScheduleError as exc:
        return to_stderr(f"error: {exc}", BAD_ARGUMENTS)
    try:
        text = _read(path)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL, which no file has
        why = (exc.strerror if isinstance(exc, OSError) else None) or exc
        return to_stderr(f"error: --crontab {shown(path)}: cannot read it: {why}", BAD_ARGUMENTS)
    name = "<stdin>" if path == "-" else path
    status = 0
    for error, line in crontab_report(
        name,
        read_crontab(text, tz=tz, system=system, system_place=system_place(path)),
        n=n,
        start=start,
        tz_given=tz_given,
    ):
        if error:
            status = to_stderr(line, FAILED)
        else:
            say(line)
    return status


if __name__ == "__main__":  # python -m lldsched.cli.crontab
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("cron")
