"""``python -m lldsched cron``: the explanation and the next fire times, or a clear error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lldsched.cli import main
from lldsched.cli.cron import cron_report


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cron", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_explains_and_lists_fires_in_the_zone_across_a_dst_change(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "0 3 * * 1-5", "--tz", "Europe/Berlin", "-n", "3", "--start", "2026-03-27"
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "0 3 * * 1-5  (Europe/Berlin)",
        "At 03:00, Monday through Friday",
        "next 3 fire times after 2026-03-27 00:00 CET:",
        "  Fri 2026-03-27 03:00 CET   = 2026-03-27 02:00 UTC",
        "  Mon 2026-03-30 03:00 CEST  = 2026-03-30 01:00 UTC",
        "  Tue 2026-03-31 03:00 CEST  = 2026-03-31 01:00 UTC",
    ]


def test_the_default_zone_is_utc_and_a_start_with_an_offset_is_respected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "@hourly", "-n", "2", "--start", "2026-06-01T09:30+02:00")
    assert code == 0
    assert out.splitlines()[1:] == [
        "Every hour",
        "next 2 fire times after 2026-06-01 07:30 UTC:",
        "  Mon 2026-06-01 08:00 UTC  = 2026-06-01 08:00 UTC",
        "  Mon 2026-06-01 09:00 UTC  = 2026-06-01 09:00 UTC",
    ]


def test_one_fire_is_said_in_the_singular() -> None:
    lines = cron_report("@daily", n=1, start="2026-03-27T10:00")
    assert lines[2:] == [
        "next fire time after 2026-03-27 10:00 UTC:",
        "  Sat 2026-03-28 00:00 UTC  = 2026-03-28 00:00 UTC",
    ]


def test_a_start_in_a_spring_forward_gap_is_shown_as_the_instant_it_is_read_as() -> None:
    """02:30 on 29 March does not exist in Berlin; read with fold=0 (CRON.md), it is
    01:30 UTC, 03:30 CEST: the header says that, and the 03:00 fire before it is not
    listed."""
    lines = cron_report("0 3 * * *", tz="Europe/Berlin", n=1, start="2026-03-29T02:30")
    assert lines[2:] == [
        "next fire time after 2026-03-29 03:30 CEST:",
        "  Mon 2026-03-30 03:00 CEST  = 2026-03-30 01:00 UTC",
    ]


def test_without_a_start_the_fires_follow_now(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "* * * * *")
    assert code == 0
    assert len(out.splitlines()) == 3 + 5


def test_an_expression_that_stops_firing_says_so() -> None:
    lines = cron_report("0 0 * 2 MON#5", n=3, start="9950-01-01")
    assert lines[-2:] == [
        "  Mon 9988-02-29 00:00 UTC  = 9988-02-29 00:00 UTC",
        "  (only 2: nothing more fires within 100 years or after 9999-12-29)",
    ]


def test_the_last_fires_are_on_9999_12_29_as_the_note_says() -> None:
    """Fires stop on the local date 9999-12-29 (docs/CRON.md): December 30 and 31 of
    9999 never fire, so the note names that date, not "before 10000"."""
    assert cron_report("0 0 30 12 *", n=1, start="9999-12-01")[-1] == (
        "  (only 0: nothing more fires within 100 years or after 9999-12-29)"
    )
    assert cron_report("0 0 29 12 *", n=2, start="9999-12-01")[-2:] == [
        "  Wed 9999-12-29 00:00 UTC  = 9999-12-29 00:00 UTC",
        "  (only 1: nothing more fires within 100 years or after 9999-12-29)",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["61 * * * *"], "error: cron minute field: 61 is out of range 0-59"),
        (["@reboot"], "@reboot is not supported"),
        (["* * * *"], "has 4 fields; expected 5"),
        (["* * * * *", "--tz", "Nowhere/Land"], "unknown time zone 'Nowhere/Land'"),
        (["* * * * *", "-n", "0"], "-n must be at least 1, got 0"),
        (["* * * * *", "--start", "soon"], "--start 'soon' is not an ISO date-time"),
    ],
)
def test_bad_input_is_an_error_on_stderr_with_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in err


def test_python_dash_m_lldsched_cron_runs_as_a_program() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lldsched", "cron", "30 2 * * *", "--tz", "America/New_York",
         "-n", "2", "--start", "2026-03-07T12:00"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "At 02:30",
        "next 2 fire times after 2026-03-07 12:00 EST:",
        "  Sun 2026-03-08 03:00 EDT  = 2026-03-08 07:00 UTC  (for a time the clock skipped: it "
        "went forward)",
        "  Mon 2026-03-09 02:30 EDT  = 2026-03-09 06:30 UTC",
    ]


def test_a_fire_moved_by_a_gap_or_repeated_by_an_overlap_says_why() -> None:
    """New York springs forward on 8 March 2026 (02:00 EST -> 03:00 EDT) and falls back
    on 1 November (02:00 EDT -> 01:00 EST).  "At 02:30" firing at 03:00, and 01:00
    listed twice, read as mistakes unless the line says why (docs/CRON.md)."""
    gap = cron_report("30 2 * * *", tz="America/New_York", n=2, start="2026-03-07T12:00")
    assert gap[1:] == [
        "At 02:30",
        "next 2 fire times after 2026-03-07 12:00 EST:",
        "  Sun 2026-03-08 03:00 EDT  = 2026-03-08 07:00 UTC  (for a time the clock skipped: "
        "it went forward)",
        "  Mon 2026-03-09 02:30 EDT  = 2026-03-09 06:30 UTC",
    ]
    overlap = cron_report("0 1 * * *", tz="America/New_York", n=2, start="2026-10-31T12:00")
    assert overlap[3:] == [  # a wall-clock job runs once, in the first pass: no note
        "  Sun 2026-11-01 01:00 EDT  = 2026-11-01 05:00 UTC",
        "  Mon 2026-11-02 01:00 EST  = 2026-11-02 06:00 UTC",
    ]
    stepped = cron_report("*/30 1 * * *", tz="America/New_York", n=4, start="2026-11-01")
    assert stepped[3:] == [
        "  Sun 2026-11-01 01:00 EDT  = 2026-11-01 05:00 UTC",
        "  Sun 2026-11-01 01:30 EDT  = 2026-11-01 05:30 UTC",
        "  Sun 2026-11-01 01:00 EST  = 2026-11-01 06:00 UTC  (again: the clock went back)",
        "  Sun 2026-11-01 01:30 EST  = 2026-11-01 06:30 UTC  (again: the clock went back)",
    ]
    seconds = cron_report("15 30 2 * * *", tz="America/New_York", n=1, start="2026-03-08")
    assert seconds[3].endswith(
        "03:00:15 EDT  = 2026-03-08 07:00:15 UTC  (for a time the clock skipped: it went forward)"
    )


def test_a_fire_moved_onto_a_day_its_fields_do_not_name_says_why() -> None:
    """Apia skipped Friday 30 December 2011 (Thursday 23:59:59 -10:00, then Saturday
    00:00 +14:00): "At 00:00, on Friday" runs at Saturday's first minute, at a time its
    fields name but on a day they do not, and the line said nothing of the gap."""
    lines = cron_report("0 0 * * fri", tz="Pacific/Apia", n=2, start="2011-12-29")
    assert lines[3:] == [
        "  Sat 2011-12-31 00:00 +14  = 2011-12-30 10:00 UTC  (for a time the clock skipped: "
        "it went forward)",
        "  Fri 2012-01-06 00:00 +14  = 2012-01-05 10:00 UTC",
    ]


def test_the_header_shows_the_fields_parted_by_one_space() -> None:
    """A line copied from a crontab has tabs and blanks around its fields; the header
    printed them as given, a tab and a trailing blank before the zone."""
    lines = cron_report(" 0 9\t* * mon-fri/2 ", n=1, start="2026-03-01")
    assert lines[:2] == ["0 9 * * mon-fri/2  (UTC)", "At 09:00, on Monday, Wednesday and Friday"]
