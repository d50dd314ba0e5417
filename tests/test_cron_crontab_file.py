"""``python -m lldsched cron --crontab FILE``: a whole crontab read as cronie reads it.

The samples in ``tests/crontabs/`` are real crontabs: ``cronie-crontab.5`` is the
example file of cronie's crontab(5), ``debian-etc-crontab`` Debian's ``/etc/crontab``
(a system crontab: a user name before each command), ``moving.crontab`` a user's
crontab with ``CRON_TZ`` changes (docs/CRON.md, "Moving a crontab", shows it run) and
``bad.crontab`` one bad line of each kind among good ones.  The rules checked are
cronie's (``src/misc.c``, ``src/env.c``, ``src/entry.c``, ``src/cron.c``,
``src/do_command.c``), as lldsched/cli/crontablines.py cites them.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lldsched import CronSchedule
from lldsched.cli import main
from lldsched.cli.crontab import schedule_call, system_place
from lldsched.cli.crontablines import BadLine, JobLine, NoteLine, read_crontab, split_percent
from lldsched.cli.crontabvariables import assignment

CRONTABS = Path(__file__).parent / "crontabs"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cron", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def sample(name: str) -> str:
    return str(CRONTABS / name)


def jobs(text: str, **options: Any) -> list[JobLine]:
    return [entry for entry in read_crontab(text, **options) if isinstance(entry, JobLine)]


# --- whole files -------------------------------------------------------------------------


def test_cron_tz_changes_the_zone_of_the_lines_after_it_and_an_empty_one_goes_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "--crontab", sample("moving.crontab"), "-n", "1", "--start", "2026-03-27"
    )
    assert (code, err) == (0, "")
    blocks = out.split("\n\n")
    name = sample("moving.crontab")
    assert blocks[2].splitlines() == [
        f"{name}:6: 30 2 * * mon-fri  /usr/local/bin/backup --to /srv",
        "30 2 * * mon-fri  (Europe/Berlin)",
        "At 02:30, Monday through Friday",
        "next fire time after 2026-03-27 00:00 CET:",
        "  Fri 2026-03-27 02:30 CET  = 2026-03-27 01:30 UTC",
        "scheduler.schedule('backup (line 6)', subprocess.run, CronSchedule('30 2 * * "
        "mon-fri', tz='Europe/Berlin'), args=(['/usr/bin/env', "
        "'PATH=/usr/local/bin:/usr/bin:/bin', '/bin/sh', '-c', '/usr/local/bin/backup "
        "--to /srv'],), kwargs={'check': True}, id='backup-line-6', replace_existing=True)",
    ]
    zones = [line for line in out.splitlines() if line.endswith(")") and "  (" in line]
    assert zones == [
        "30 2 * * mon-fri  (Europe/Berlin)",
        "0 5 1 * *  (Europe/Berlin)",
        "0 9 * * 1  (America/New_York)",
        "@hourly  (UTC)",  # CRON_TZ= : the system's zone again, --tz
    ]
    assert f"{name}:13: CRON_TZ=\nthe schedules after it are read in UTC (--tz)\n" in out
    assert out.splitlines()[-1] == (f"{name}: 4 jobs, 1 line lldsched cannot express, 0 bad lines")


def test_the_zone_before_any_cron_tz_is_tz(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--crontab", sample("moving.crontab"), "--tz", "Asia/Tokyo", "-n", "1"
    )
    assert code == 0
    assert "@hourly  (Asia/Tokyo)" in out
    assert "CronSchedule('@hourly', tz='Asia/Tokyo')" in out


def test_reboot_is_reported_with_its_line_and_why_and_is_no_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--crontab", sample("moving.crontab"))
    assert (code, err) == (0, "")
    assert (
        f"{sample('moving.crontab')}:15: @reboot /usr/bin/warm-cache\n"
        "not moved: @reboot runs when cron starts, at boot, and a scheduler has no boot: "
        "register OneTime(delay=0) when the service starts, which runs it at the "
        "scheduler's start\n"
    ) in out


def test_cronies_own_example_file_is_read_in_japan_with_its_percent_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--crontab", sample("cronie-crontab.5"), "-n", "1")
    assert (code, err) == (0, "")
    assert out.count("  (Japan)\n") == 5
    assert (
        "scheduler.schedule('mail (line 12)', subprocess.run, CronSchedule('0 22 * * 1-5', "
        "tz='Japan'), args=(['/bin/sh', '-c', 'mail -s \"It\\'s 10pm\" joe'],), "
        "kwargs={'check': True, 'input': 'Joe,\\n\\nWhere are your kids?\\n', 'text': True}, "
        "id='mail-line-12', replace_existing=True)"
    ) in out
    assert out.splitlines()[-1].endswith(": 5 jobs, 0 lines lldsched cannot express, 0 bad lines")


def test_a_system_crontab_has_a_user_before_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "--crontab", sample("debian-etc-crontab"), "--system", "-n", "1")
    assert (code, err) == (0, "")
    assert (
        "# cron ran it as 'root'; every action runs as the scheduler's user: run the "
        "service as that user, or start the command with sudo -u root\n"
        "scheduler.schedule('cd (line 19)', subprocess.run, CronSchedule('17 * * * *', "
        "tz='UTC'), args=(['/bin/sh', '-c', 'cd / && run-parts --report "
        "/etc/cron.hourly'],), kwargs={'check': True}, id='cd-line-19', replace_existing=True)\n"
    ) in out
    assert "'47 6 * * 7'" in out
    assert out.splitlines()[-1].endswith(": 4 jobs, 0 lines lldsched cannot express, 0 bad lines")


def test_a_system_crontab_read_as_a_users_says_its_user_name_may_be_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Read without --system, cron's own reading of such a line: 'root' is the
    command's first word (a user crontab has no user field); the call says so."""
    code, out, _ = run(capsys, "--crontab", sample("debian-etc-crontab"), "-n", "1")
    assert code == 0
    assert (
        "# 'root' first: a system crontab's user name? Read the file with --system\n"
        "scheduler.schedule('root (line 19)'"
    ) in out


def test_bad_lines_are_reported_by_file_line_and_field_and_the_rest_go_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = sample("bad.crontab")
    code, out, err = run(capsys, "--crontab", name, "-n", "1", "--start", "2026-03-27")
    assert code == 1
    assert err.splitlines() == [
        f"{name}:2: error: cron minute field: 61 is out of range 0-59 (expression '61 * * * *')",
        f"{name}:3: error: 4 fields before '/usr/bin/four-fields', which is no cron field: "
        "a crontab line has 5 (minute hour day-of-month month day-of-week), then the "
        "command",
        f"{name}:4: error: '@Daily' is no cron nickname: write '@daily' (cronie: bad time "
        "specifier)",
        f"{name}:5: error: '@fortnightly' is no cron nickname: cron knows @reboot, @yearly, "
        "@annually, @monthly, @weekly, @daily, @midnight, @hourly (cronie: bad time "
        "specifier)",
        f"{name}:6: error: a sixth field '*' after '* * * * *': a crontab line has five, "
        "then the command; a seconds field or a year is another cron's (cronie: bad "
        "command)",
        f"{name}:7: error: no command after the schedule '0 4 * * *' (cronie: bad command)",
        f"{name}:8: error: CRON_TZ: unknown time zone 'Mars/Olympus': use an IANA name "
        "such as 'Europe/Berlin'",
        f"{name}:9: error: its zone, CRON_TZ='Mars/Olympus' on line 8, is unknown",
        f"{name}:11: error: cron day of month field: '30' never occurs in Feb (at most 29 "
        "days) (expression '0 0 30 2 *')",
        f"{name}:12: error: '-x': cronie reads a '-' starting the command as its option, "
        "and knows -n alone (then a blank); cronie: bad option",
        f"{name}:14: error: the last line has no newline at its end: cron ignores such a "
        "line (crontab refuses the file: premature EOF); end the file with a newline",
    ]
    assert f"{name}:13: 15 3 * * * /usr/bin/fine\n15 3 * * *  (Europe/Berlin)\n" in out
    assert out.splitlines()[-1] == (f"{name}: 1 job, 0 lines lldsched cannot express, 11 bad lines")


def test_stdin_is_read_for_a_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"CRON_TZ=Europe/Berlin\n0 3 * * * /usr/bin/backup\n61 * * * * x\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(capsys, "--crontab", "-", "-n", "1", "--start", "2026-03-27")
    assert code == 1
    assert out.startswith("<stdin>:1: CRON_TZ=Europe/Berlin\n")
    assert "<stdin>:2: 0 3 * * * /usr/bin/backup\n0 3 * * *  (Europe/Berlin)\n" in out
    assert err == (
        "<stdin>:3: error: cron minute field: 61 is out of range 0-59 (expression '61 * * * *')\n"
    )


def test_stdin_of_the_real_command(tmp_path: Path) -> None:
    """A crontab piped in (``crontab -l | lldsched cron --crontab -``), bytes as they
    come: a carriage return is not turned into a line end on the way."""
    done = subprocess.run(
        [sys.executable, "-m", "lldsched", "cron", "--crontab", "-", "-n", "1"],
        input=b"@daily /usr/bin/ok\n0 3 * * * /usr/bin/windows\r\n",
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
        check=False,
    )
    assert done.returncode == 1
    assert b"<stdin>:1: @daily /usr/bin/ok\n@daily  (UTC)\n" in done.stdout
    assert done.stderr.decode().startswith(
        "<stdin>:2: error: the line ends in a carriage return (a file with Windows line ends)"
    )


# --- refused before any line: status 2 ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--crontab", "no-such.crontab"], "error: --crontab 'no-such.crontab': cannot read "
         "it: No such file or directory"),
        (["--crontab", "."], "error: --crontab '.': cannot read it: Is a directory"),
        # tools/fuzz/fuzz_cli.py: open() raised a ValueError, out of main() as a traceback
        (["--crontab", "a\x00b"], "error: --crontab 'a\\x00b': cannot read it: embedded null"),
        (["--crontab", "x", "--tz", "Mars/Olympus"], "error: unknown time zone 'Mars/Olympus'"),
        (["--crontab", "x", "-n", "0"], "error: -n must be at least 1, got 0"),
        (["--crontab", "x", "--start", "soon"], "error: --start 'soon' is not an ISO"),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_read_or_a_bad_option_is_refused_before_any_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(said) and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["@daily", "--system"], "argument --system: only with --crontab"),
        (["@daily", "--crontab", "x"], "argument --crontab: not allowed with argument expr"),
        ([], "one of the arguments expr --crontab is required"),
    ],
)
def test_an_expression_and_a_crontab_are_one_or_the_other(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["cron", *argv])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


# --- the reader, line by line ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "setting"),
    [
        ("MAILTO=ops@example.com", ("MAILTO", "ops@example.com")),
        ("MAILTO = ops@example.com  ", ("MAILTO", "ops@example.com")),  # blanks around =
        ("MAILTO=", ("MAILTO", "")),
        ('MAILTO=""', ("MAILTO", "")),
        ("PATH = /usr/bin:/bin  ", ("PATH", "/usr/bin:/bin")),  # trailing blanks dropped
        ("GREETING=hello world", ("GREETING", "hello world")),  # an unquoted value's blanks
        ("GREETING=' hello '  ", ("GREETING", " hello ")),  # quoted: kept, blanks after
        ('"MY NAME"=x', ("MY NAME", "x")),  # a quoted name
        ('CRON_TZ="Europe/Berlin"', ("CRON_TZ", "Europe/Berlin")),
        ("=x", ("", "x")),  # cronie sets it; nothing reads it
        ("GREETING='hello'x", None),  # something after a quoted value
        ("GREETING='hello", None),  # an open quote
        ('"A=B"=x', None),  # = inside a quoted name
        ("MAILTO", None),
        ("MAIL TO=x", None),
        ("0 3 * * * x=1", None),
        ("* * * * * a=b", None),
        ("@daily A=1", None),
    ],
)
def test_a_variable_is_read_as_cronies_load_env_reads_it(
    line: str, setting: tuple[str, str] | None
) -> None:
    assert assignment(line) == setting


@pytest.mark.parametrize(
    ("command", "split"),
    [
        ("/usr/bin/backup", ("/usr/bin/backup", None)),
        ("date +\\%Y\\%m\\%d", ("date +%Y%m%d", None)),  # \% is a plain %
        ("mail -s hi ops%hello%world", ("mail -s hi ops", "hello\nworld\n")),
        ("cat%a%%b%", ("cat", "a\n\nb\n")),  # no newline added after the last %'s
        ("cat%", ("cat", None)),  # nothing written
        ("cat%50\\% off", ("cat", "50% off\n")),
        ("echo a\\\\b", ("echo a\\\\b", None)),  # other backslashes stay
        ("printf x\\\\%in", ("printf x\\\\", "in\n")),  # an escaped backslash: % splits
        ("cat%a\\", ("cat", "a\\\n")),  # a last backslash is written
        ("cat%\\", ("cat", "\\")),  # ... and nothing else: no newline
    ],
)
def test_percent_splits_the_command_from_its_input_as_cron_does(
    command: str, split: tuple[str, str | None]
) -> None:
    assert split_percent(command) == split


def test_the_call_runs_the_command_with_crons_input_and_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The printed call, run as pasted: the shell gets the command and the input and
    variables cron would have given it, over the environment the run inherits, which the
    call does not hold: the registration's copy of it (``env={**os.environ, ...}``) was
    written into a durable store with the task's definition, its secrets with it."""
    monkeypatch.setenv("LLDSCHED_SECRET", "hunter2")
    (job,) = jobs(
        'SHELL=/bin/sh\nWHO="the team"\n* * * * * cat; echo "$WHO" "$LLDSCHED_SECRET"%hello%world\n'
    )
    calls: list[tuple[Any, ...]] = []

    class Recorder:
        def schedule(self, *args: Any, **kwargs: Any) -> None:
            calls.append((*args, kwargs))

    namespace = {"scheduler": Recorder(), "subprocess": subprocess, "os": os,
                 "CronSchedule": CronSchedule}  # fmt: skip
    exec(schedule_call(job), namespace)  # the text the command prints
    ((name, action, schedule, options),) = calls
    assert (name, action, schedule) == (
        "cat (line 3)",
        subprocess.run,
        CronSchedule("* * * * *", tz="UTC"),
    )
    assert "hunter2" not in repr(options)
    assert (options["id"], options["replace_existing"]) == ("cat-line-3", True)
    done = action(*options["args"], **options["kwargs"], stdout=subprocess.PIPE)
    assert done.stdout == "hello\nworld\nthe team hunter2\n"


def test_tz_is_the_commands_environment_not_the_schedules_zone() -> None:
    entries = read_crontab("TZ=Europe/Berlin\n0 3 * * * date\n", tz="UTC")
    note, job = entries
    assert isinstance(note, NoteLine) and "not the schedules'" in note.note
    assert isinstance(job, JobLine)
    assert (job.tz, job.env) == ("UTC", (("TZ", "Europe/Berlin"),))


def test_a_variable_holds_from_its_line_on() -> None:
    first, second, third = jobs("0 1 * * * a\nFOO=1\n0 2 * * * b\nFOO=2\n0 3 * * * c\n")
    assert (first.env, second.env, third.env) == ((), (("FOO", "1"),), (("FOO", "2"),))


def test_blank_lines_and_comments_are_skipped_and_blanks_before_a_line_too() -> None:
    entries = read_crontab("\n  \t\n   # a comment\n\t#0 3 * * * old\n  \t0 3 * * * x\n")
    assert [(e.number, type(e)) for e in entries] == [(5, JobLine)]
    # a last comment or blank line without its newline is no bad line (skip_comments)
    assert [type(e) for e in read_crontab("0 3 * * * x\n# last")] == [JobLine]
    assert [type(e) for e in read_crontab("0 3 * * * x\n  \t")] == [JobLine]


def test_cronies_random_value_is_a_line_lldsched_cannot_express() -> None:
    (entry,) = read_crontab("0~30 * * * * /usr/bin/spread\n")
    assert isinstance(entry, NoteLine) and not entry.moved
    assert "cronie's random ~ is not supported" in entry.note


def test_cronies_options_are_read_and_said() -> None:
    (job,) = jobs("-0 3 * * * -n /usr/bin/quiet\n")
    assert job.command == "/usr/bin/quiet"
    assert job.notes == (
        "cronie's '-' before the line: it logged no start of this job (taken in root's "
        "crontab and the system ones; in another user's, cronie refused the line)",
        "-n: cronie mailed its output only when it failed",
    )
    (twice,) = read_crontab("0 3 * * * -n -n x\n")
    assert (
        isinstance(twice, BadLine)
        and twice.why == "-n twice before the command (cronie: bad option)"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0 3 * *\n", "4 fields before the end of the line"),
        ("0 3 * run-parts /etc/x\n", "3 fields before 'run-parts', which is no cron field"),
        ("0 3 * * monday x\n", "cron day of week field: 'monday': use a three-letter day"),
        ("@daily\n", "no command after the schedule '@daily'"),
        ("@reboot\n", "no command after the schedule '@reboot'"),
        ("0 3 * * * root\n", None),  # a user crontab: 'root' is the command
        ("\r\n", "the line ends in a carriage return"),
        ("0 3 * * * -n\n", "'-n': cronie reads a '-' starting the command as its option"),
        ("0 3 * * * -n  \n", "no command after -n (cronie: bad command)"),
        ("0 3 * * * -nx y\n", "'-nx': cronie reads"),
    ],
)
def test_a_line_cron_refuses_is_bad(text: str, why: str | None) -> None:
    (entry,) = read_crontab(text)
    if why is None:
        assert isinstance(entry, JobLine)
    else:
        assert isinstance(entry, BadLine) and entry.why.startswith(why)


def test_a_system_line_needs_a_command_after_its_user() -> None:
    (entry,) = read_crontab("0 3 * * * root\n", system=True)
    assert isinstance(entry, BadLine)
    assert entry.why.startswith("no command after the user 'root'")


# --- a sysadmin's own crontab: what cronie (and glibc under it) made of it --------------


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        (":Europe/Berlin", "Europe/Berlin"),  # glibc: a TZ starting with ':' names a file
        ("/usr/share/zoneinfo/America/New_York", "America/New_York"),  # a zone file's path
        ('":/usr/share/zoneinfo/Asia/Tokyo"', "Asia/Tokyo"),
    ],
)
def test_cron_tz_written_as_glibc_also_reads_it_is_that_zone(value: str, zone: str) -> None:
    """cronie sets ``TZ`` to the ``CRON_TZ`` of a job (``find_jobs``), and glibc reads
    ``:NAME`` and a path to a zone file as that zone: cronie ran the jobs there."""
    note, job = read_crontab(f"CRON_TZ={value}\n0 3 * * * /usr/bin/backup\n")
    assert isinstance(job, JobLine) and job.tz == zone
    assert isinstance(note, NoteLine)
    assert note.note.startswith(f"the schedules after it are read in {zone} (glibc reads")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (
            "Europe/Berlin   # the office",
            "cron has no comment after a value: it read the whole 'Europe/Berlin   # the "
            "office' as the zone, which glibc does not find (so it ran the jobs in UTC); put "
            "the comment on a line of its own",
        ),
        (
            "CET-1CEST,M3.5.0,M10.5.0/3",
            "'CET-1CEST,M3.5.0,M10.5.0/3' is a POSIX TZ rule, which glibc reads and lldsched "
            "does not: write the IANA name of the zone it describes",
        ),
        (":Mars/Olympus", "glibc reads ':Mars/Olympus' as the zone file 'Mars/Olympus'"),
        (
            "/etc/localtime",
            "'/etc/localtime' is a file, not a zone's name: write the IANA name of the zone "
            "it holds (the machine's own: timedatectl)",
        ),
    ],
)
def test_a_cron_tz_lldsched_cannot_name_says_what_it_is(value: str, why: str) -> None:
    bad, job = read_crontab(f"CRON_TZ={value}\n0 3 * * * /usr/bin/backup\n")
    assert isinstance(bad, BadLine) and bad.why.startswith("CRON_TZ: unknown time zone")
    assert bad.why.endswith(why)
    assert isinstance(job, BadLine) and job.why.startswith("its zone, CRON_TZ=")


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            "/usr/local/bin:/usr/bin   # for backup",
            "cron has no comment after a value: PATH is '/usr/local/bin:/usr/bin   # for "
            "backup', '#' and all (as here); put the comment on a line of its own",
        ),
        (
            "$HOME/bin:$PATH",
            "cron sets PATH as written, '$' and all: it expands no variable in a value (nor "
            "does the call); write the value out in full",
        ),
    ],
)
def test_a_value_is_crons_as_written_and_said_where_its_writer_meant_otherwise(
    value: str, said: str
) -> None:
    note, job = read_crontab(f"PATH={value}\n0 3 * * * x\n")
    assert isinstance(note, NoteLine) and note.note == said
    assert isinstance(job, JobLine) and job.env == (("PATH", value),)


@pytest.mark.parametrize("name", ["USER", "LOGNAME"])
def test_user_and_logname_are_set_by_cron_over_the_crontabs(name: str) -> None:
    """cronie's ``load_entry`` sets ``LOGNAME`` and ``USER`` to the crontab's owner
    after copying the crontab's variables: a crontab's own never reached a command."""
    note, job = read_crontab(f"{name}=bob\nHOME=/srv\n0 3 * * * x\n")
    assert isinstance(note, NoteLine)
    assert note.note == (
        f"cron sets {name} itself, to the user the job runs as, over this line: its "
        "commands never saw 'bob', and the call leaves it out"
    )
    assert isinstance(job, JobLine) and job.env == (("HOME", "/srv"),)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            "- 0 3 * * * /usr/bin/quiet\n",  # was: "0 fields before the end of the line"
            "'-' then a blank: cronie's '-' (log no start) is written against the first "
            "field, '-0 3 * * * command' (cronie: bad minute)",
        ),
        (
            "export PATH=/usr/local/bin:/usr/bin\n",  # was: "2 fields before the end ..."
            "a shell's 'export': a crontab sets a variable by NAME=value alone, and every "
            "one reaches the commands; write 'PATH=/usr/local/bin:/usr/bin' (cronie: bad "
            "minute)",
        ),
    ],
)
def test_a_bad_line_says_what_its_writer_meant(text: str, why: str) -> None:
    (bad,) = read_crontab(text)
    assert isinstance(bad, BadLine) and bad.why == why


def test_the_no_log_dash_says_whose_crontab_cronie_takes_it_in() -> None:
    (job,) = jobs("-@daily /usr/bin/quiet\n")
    assert job.notes == (
        "cronie's '-' before the line: it logged no start of this job (taken in root's "
        "crontab and the system ones; in another user's, cronie refused the line)",
    )


def test_a_command_longer_than_cronies_buffer_is_moved_whole_and_said_cut() -> None:
    """cronie reads a command into ``MAX_COMMAND`` (131,072) bytes, its last the NUL,
    and drops the rest of the line; a variable's line likewise (``MAX_ENVSTR``)."""
    command = "/usr/bin/echo " + "x" * 131_072
    note, job = read_crontab(f"LONG={'y' * 131_072}\n0 3 * * * -n {command}\n")
    assert isinstance(note, NoteLine)
    assert note.note == (
        "cron read the first 131,071 bytes of this line (131,077 here) and dropped "
        "the rest; the call has it whole"
    )
    assert isinstance(job, JobLine) and job.command == command
    assert job.notes[-1] == (
        "cron ran the first 131,071 bytes of this command (131,086 here) and "
        "dropped the rest; the call has it whole"
    )
    (short,) = jobs(f"0 3 * * * {'z' * 131_071}\n")
    assert not short.notes


def test_each_thing_said_of_a_variable_is_a_line_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text("PATH=$HOME/bin:/usr/bin  # mine\n0 3 * * * x\n")
    code, out, _ = run(capsys, "--crontab", str(crontab), "-n", "1")
    assert code == 0
    assert out.startswith(
        f"{crontab}:1: PATH=$HOME/bin:/usr/bin  # mine\n"
        "cron has no comment after a value: PATH is '$HOME/bin:/usr/bin  # mine', '#' and "
        "all (as here); put the comment on a line of its own\n"
        "cron sets PATH as written, '$' and all: it expands no variable in a value (nor "
        "does the call); write the value out in full\n\n"
    )


def test_bytes_that_are_not_utf8_reach_the_command_unchanged(tmp_path: Path) -> None:
    """A Latin-1 crontab: cron gives the shell its bytes, and so does the call."""
    crontab = tmp_path / "crontab"
    crontab.write_bytes(b"0 3 * * * echo caf\xe9\n")
    done = subprocess.run(
        [sys.executable, "-m", "lldsched", "cron", "--crontab", str(crontab), "-n", "1"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
        check=False,
    )
    assert done.returncode == 0
    assert f"{crontab}:1: 0 3 * * * echo caf\xe9\n".encode("latin-1") in done.stdout
    (job,) = jobs(crontab.read_bytes().decode("utf-8", "surrogateescape"))
    assert os.fsencode(job.command) == b"echo caf\xe9"
    assert "'echo caf\\udce9'" in schedule_call(job)


@pytest.mark.parametrize(
    ("first", "what"),
    [
        ("# my jobs", "it is no comment or blank line but one cronie refuses (bad minute)"),
        ("MAILTO=ops", "it set a variable named '\\ufeffMAILTO', not MAILTO"),
        ("0 3 * * * /usr/bin/backup", "the job never ran (cronie: bad minute)"),
    ],
)
def test_a_byte_order_mark_before_the_first_line_is_said_to_be_in_it(first: str, what: str) -> None:
    """An editor on Windows may write U+FEFF first; cronie reads its three bytes as the
    start of line 1 (``skip_comments`` sees no blank, ``#`` or newline)."""
    bad, job = read_crontab(f"\ufeff{first}\n0 4 * * * /usr/bin/after\n")
    assert isinstance(bad, BadLine) and bad.number == 1
    assert bad.why == (
        "the file starts with a byte-order mark (U+FEFF, written by some Windows editors): "
        f"cron reads it as the start of this line, so {what}; save the file without it"
    )
    assert isinstance(job, JobLine) and job.env == ()


def test_a_cron_tz_behind_a_byte_order_mark_leaves_the_jobs_after_it_without_a_zone() -> None:
    bad, job = read_crontab("\ufeffCRON_TZ=Europe/Berlin\n0 4 * * * /usr/bin/after\n")
    assert isinstance(bad, BadLine)
    assert "it set a variable named '\\ufeffCRON_TZ', not CRON_TZ" in bad.why
    assert isinstance(job, BadLine)
    assert job.why == (
        "its zone, CRON_TZ='Europe/Berlin' on line 1, was never cron's: a byte-order "
        "mark starts that line"
    )


@pytest.mark.parametrize(
    "text",
    [
        "0 3 * * *\u00a0/usr/bin/x\n",
        "0\u00a03 * * * /usr/bin/x\n",
        "@daily\u00a0/usr/bin/x\n",
        # was read as six fields, '0 3 * * * 1' (seconds first: minute 3 of Monday's hours)
        "0 3 * * *\u00a01 /usr/bin/x\n",
    ],
)
def test_a_no_break_space_between_fields_is_named(text: str) -> None:
    """A line pasted from a web page or a chat: cron separates fields by spaces and
    tabs alone (``Skip_Blanks``, ``is_separator``)."""
    (bad,) = read_crontab(text)
    assert isinstance(bad, BadLine)
    assert bad.why.startswith(
        "a NO-BREAK SPACE (U+00A0) among the fields: cron separates them, and the "
        "command, by spaces and tabs alone; write a space (cronie: bad "
    )


def test_a_file_in_a_system_crontabs_place_read_as_a_users_says_to_use_system() -> None:
    """``/etc/cron.d/nextcloud`` read without --system: 'www-data' is taken for the
    command, as cron would take it in a user's crontab; the place says it is none."""
    text = "*/5 * * * * www-data php -f /var/www/nextcloud/cron.php\n"
    (plain,) = jobs(text)
    assert plain.notes == ()
    (placed,) = jobs(text, system_place=True)
    assert placed.command == "www-data php -f /var/www/nextcloud/cron.php"
    assert placed.notes == (
        "'www-data' first, in a system crontab's place (/etc/crontab, /etc/cron.d), whose "
        "lines name a user before the command: read the file with --system",
    )
    (system,) = jobs(text, system=True, system_place=True)
    assert system.command == "php -f /var/www/nextcloud/cron.php"


@pytest.mark.parametrize(
    ("path", "placed"),
    [
        ("/etc/crontab", True),
        ("/etc/cron.d/nextcloud", True),
        ("/etc/cron.d/../crontab", True),
        ("/etc/cron.daily/logrotate", False),  # a script run-parts runs, no crontab
        ("/etc/cron.d/sub/x", False),
        ("/home/ops/crontab", False),
        ("-", False),
    ],
)
def test_the_places_of_system_crontabs(path: str, placed: bool) -> None:
    assert system_place(path) is placed


def test_the_command_line_notes_the_place(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    crontab = tmp_path / "nextcloud"
    crontab.write_text("*/5 * * * * www-data php cron.php\n")
    monkeypatch.setattr("lldsched.cli.crontab.SYSTEM_FOLDER", str(tmp_path))
    code, out, _ = run(capsys, "--crontab", str(crontab), "-n", "1")
    assert code == 0
    assert "# 'www-data' first, in a system crontab's place" in out


def test_jobs_read_in_utc_only_because_tz_was_not_given_are_said_to_be(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cron read a job without ``CRON_TZ`` in its machine's zone, which the file does
    not say: a sysadmin who forgets ``--tz`` on a Berlin machine would paste every such
    schedule an hour or two off.  ``moving.crontab``: one job after ``CRON_TZ=``."""
    name = sample("moving.crontab")
    hint = (
        f"{name}: 1 job without a CRON_TZ read in UTC, --tz's default: cron read it in "
        "its machine's zone; give that zone with --tz (timedatectl shows it)"
    )
    code, out, _ = run(capsys, "--crontab", name, "-n", "1")
    assert code == 0
    assert out.splitlines()[-2:] == [
        hint,
        f"{name}: 4 jobs, 1 line lldsched cannot express, 0 bad lines",
    ]
    for tz in ("UTC", "Europe/Berlin"):
        code, out, _ = run(capsys, "--crontab", name, "-n", "1", "--tz", tz)
        assert code == 0 and "--tz's default" not in out
    code, out, _ = run(capsys, "--crontab", sample("cronie-crontab.5"), "-n", "1")
    assert code == 0 and "--tz's default" not in out  # CRON_TZ=Japan above every job
    code, out, _ = run(capsys, "--crontab", sample("debian-etc-crontab"), "--system", "-n", "1")
    assert (
        "debian-etc-crontab: 4 jobs without a CRON_TZ read in UTC, --tz's default: cron "
        "read them in its machine's zone; give that zone with --tz (timedatectl shows it)"
    ) in out


def test_an_expression_is_still_read_in_utc_without_tz(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "@daily", "-n", "1")
    assert code == 0 and out.startswith("@daily  (UTC)\n")


@pytest.mark.parametrize(
    "line",
    [
        'FOO="a\\"b"',  # cron knows no backslash escape: the value ends at the 2nd quote
        "GREETING='it's me'",
        'FOO="never closed',
        "MAIL TO=x",  # a blank in an unquoted name
    ],
)
def test_a_variable_cron_cannot_read_is_said_to_be_one(line: str) -> None:
    (bad,) = read_crontab(f"{line}\n")
    assert isinstance(bad, BadLine)
    assert bad.why == (
        "a variable as cron cannot read one, so it took the line for a job (cronie: bad "
        "minute): NAME=value, a name or value quoted whole or not at all, with blanks "
        "alone after a quoted one; cron knows no backslash escape"
    )
