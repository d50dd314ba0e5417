"""``python -m lldsched cron --crontab FILE [--system]``: a whole crontab, moved line by line.

The file (``-``: stdin) is read as cronie reads it (:mod:`lldsched.cli.crontablines`,
its variables :mod:`lldsched.cli.crontabvariables`'), and every job line gets what
``cron EXPR`` prints for its schedule, then the ``scheduler.schedule(...)`` call that
runs its command on lldsched (:func:`schedule_call`; docs/CRON.md, "Moving a
crontab"); a line lldsched cannot express (``@reboot``, cronie's random ``~``) is
reported with what to write instead; a bad line is reported on stderr with the file's
name, the line's number and what is bad, and the other lines go on.  Status 1 if any
line was bad (the work found it), 0 otherwise; an unreadable file or a bad option is
2, refused before any line is read.
"""

from __future__ import annotations

import os
import re
import sys

from lldsched.cli import BAD_ARGUMENTS, FAILED, say, to_stderr
from lldsched.cli.cron import check_count, cron_report, start_in
from lldsched.cli.crontablines import BadLine, Entry, JobLine, read_crontab
from lldsched.errors import ScheduleError, shown
from lldsched.schedules.cron.zone import zone_info

__all__ = ["crontab_report", "run_crontab", "schedule_call", "system_place"]


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
