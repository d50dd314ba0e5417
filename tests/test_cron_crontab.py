"""Lines of a real crontab given where a cron expression is expected: each is refused
with a message that says what the line is and what to write instead (docs/CRON.md,
"Moving a crontab").

A sysadmin moving ``/etc/crontab`` or ``crontab -l`` into lldsched pastes its lines:
with the command after the fields (and a user name first in ``/etc/crontab``), a
macro with its command, ``MAILTO=``, ``SHELL=``, ``CRON_TZ=`` (also ``NAME = value``,
which cronie allows), comments and blank lines, cronie's ``~`` and Quartz's ``L-n``
and seven fields.  Before, ``0 3 * * * /usr/bin/backup`` was read as six fields and
refused for a "step" in the day of week, ``@hourly /usr/bin/x`` as an unknown macro,
and ``MAILTO=ops@example.com`` was told to pass ``tz='ops@example.com'``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lldsched import CronSchedule, FakeClock, FixedRate, ScheduleError, Scheduler

WHOLE_LINE = "is a whole crontab line: the schedule is"

CRONTAB_LINES = [
    # a user crontab's line: the command follows the five fields
    (
        "0 3 * * * /usr/bin/backup",
        f"{WHOLE_LINE} '0 3 * * *' and the rest, '/usr/bin/backup', is the command",
    ),
    ("*/15 * * * * date +%Y%m%d", f"{WHOLE_LINE} '*/15 * * * *' and the rest, 'date +%Y%m%d'"),
    # /etc/crontab and /etc/cron.d: a user name, then the command (Debian's own line)
    (
        "17 *\t* * *\troot    cd / && run-parts --report /etc/cron.hourly",
        f"{WHOLE_LINE} '17 * * * *' and the rest, 'root cd / && run-parts --report "
        "/etc/cron.hourly', is the command it runs (in /etc/crontab and /etc/cron.d, "
        "a user name and then the command)",
    ),
    ("0 3 * * mon-fri root /usr/bin/backup", f"{WHOLE_LINE} '0 3 * * mon-fri'"),
    ("@hourly /usr/bin/x", f"{WHOLE_LINE} '@hourly' and the rest, '/usr/bin/x'"),
    ("@daily root /x", f"{WHOLE_LINE} '@daily' and the rest, 'root /x'"),
    ("@reboot /usr/bin/x", "@reboot is not supported"),
    ("@reboot", "use OneTime for a job that runs once at start, OneTime(delay=0)"),
    # variable lines: only CRON_TZ and TZ are told to become tz=
    ("MAILTO=ops@example.com", "'MAILTO=ops@example.com' is a crontab variable, not a cron"),
    ("MAILTO=ops@example.com", "lldsched mails nothing: a listener hears every run's end"),
    ('MAILTO=""', "lldsched mails nothing"),
    ("SHELL=/bin/bash", "runs in the scheduler's process: set what it needs there"),
    ("PATH=/usr/local/bin:/usr/bin:/bin", "'PATH=/usr/local/bin:/usr/bin:/bin' is a crontab"),
    ("RANDOM_DELAY=30", "wrap the schedule: Jittered(schedule, max_delay, seed=...)"),
    ("CRON_TZ=Europe/Berlin", "give the zone as an argument, tz='Europe/Berlin'"),
    ("CRON_TZ = Europe/Berlin", "'CRON_TZ=Europe/Berlin' is a crontab variable"),
    ("CRON_TZ=Europe/Berlin 0 3 * * *", "give the zone as an argument, tz='Europe/Berlin'"),
    ("MAILTO = ops@example.com", "'MAILTO=ops@example.com' is a crontab variable"),
    # comments and blank lines
    ("# m h dom mon dow command", "is a crontab comment, not a schedule"),
    ("#0 3 * * * /usr/bin/backup", "is a crontab comment, not a schedule"),
    ("   ", "is empty; expected 5"),
    # other crons' syntax, naming the token and what to write
    ("0 3 * * 1~5", "day of week field: '1~5': cronie's random ~ is not supported; pick a"),
    ("~ 3 * * *", "minute field: '~': cronie's random ~ is not supported"),
    ("~ 3 * * *", "delay each run at random with Jittered(schedule, max_delay, seed=...)"),
    ("0 0 L-3 * *", "day of month field: 'L-3': Quartz's L-n (n days before the last)"),
    ("0 0 12 * * ? 2026", "has 7 fields; expected 5"),
    ("0 0 12 * * ? 2026", "Quartz writes a year seventh: drop it, and write * for Quartz's ?"),
    ("0 0 12 ? * MON", "day of month field: '?' is not a number (Quartz's 'no specific"),
    ("@every 5m", "unknown macro '@every'; use one of @yearly"),
]


@pytest.mark.parametrize(("line", "message"), CRONTAB_LINES)
def test_a_crontab_line_that_is_no_expression_says_what_it_is_and_what_to_write(
    line: str, message: str
) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(line)
    assert message in str(caught.value)
    assert f"cron expression {line!r}" in str(caught.value) or "field: " in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a sixth field that could be a field keeps the field's own message
        ("0 3 * * * 9", "day of week field: 9 is out of range 0-7"),
        ("0 3 * * * mon-sun", "reversed range 'mon-sun'"),
        # five fields that are no expression before a command: their field to fix
        ("0 25 * * * /usr/bin/backup", "hour field: 25 is out of range 0-23"),
        ("0 3 * * 9 root /x", "day of week field: 9 is out of range 0-7 (expression '0 3 * * 9 "),
        # "=" inside a field is no variable
        ("*/5=3 * * * *", "'*/5=3' holds '=', which no cron field does"),
    ],
)
def test_text_that_may_be_fields_keeps_the_fields_message(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(text)
    assert message in str(caught.value)
    assert WHOLE_LINE not in str(caught.value)
    assert f"(expression {text!r})" in str(caught.value) or f"expression {text!r}:" in str(
        caught.value
    )


def test_the_schedule_the_message_names_is_the_lines_and_a_six_field_one_still_reads() -> None:
    """The schedule quoted by the whole-line message builds, and fires as the line did;
    a six-field expression whose day of week is a name is not taken for a command."""
    assert CronSchedule("0 3 * * mon-fri").explain() == "At 03:00, Monday through Friday (UTC)"
    assert CronSchedule("0 5 * * * mon").explain() == "At minute 5 of every hour, on Monday (UTC)"


def test_a_crontab_line_registered_as_a_schedule_loses_nothing_registered() -> None:
    scheduler = Scheduler(clock=FakeClock(0.0))
    kept = scheduler.schedule("kept", len, FixedRate(60), args=("abc",))
    before = (kept.status, kept.next_run_at, scheduler.queue_stats())
    with pytest.raises(ScheduleError, match="'0 3 \\* \\* \\*' and the rest, '/usr/bin/backup'"):
        scheduler.schedule("backup", len, "0 3 * * * /usr/bin/backup", args=("abc",))
    assert scheduler.tasks() == [kept]
    assert (kept.status, kept.next_run_at, scheduler.queue_stats()) == before
    assert scheduler.shutdown()


def moving_a_crontab_rows() -> list[tuple[str, str]]:
    """(line, refusal) of each row of docs/CRON.md's "Moving a crontab" table: the
    first quoted text of its first and of its last cell."""
    text = (Path(__file__).parents[1] / "docs" / "CRON.md").read_text()
    section = text[text.index("| crontab line |", text.index("## Moving a crontab")) :]
    section = section[: section.index("\n\n")]
    rows = []
    for row in section.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        line, refusal = re.search(r"`([^`]+)`", cells[0]), re.search(r"`([^`]+)`", cells[-1])
        assert line and refusal, row
        rows.append((line.group(1), refusal.group(1)))
    return rows


def test_cron_md_moves_a_crontab_line_by_line() -> None:
    assert len(moving_a_crontab_rows()) >= 10


@pytest.mark.parametrize(("line", "refusal"), moving_a_crontab_rows())
def test_each_crontab_line_of_cron_md_is_refused_as_its_table_shows(
    line: str, refusal: str
) -> None:
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(line)
    pattern = ".*".join(re.escape(part.strip()) for part in refusal.split("..."))
    assert re.search(pattern, str(caught.value)), f"{line!r} raises {caught.value}"
