"""What separates a cron expression's fields (docs/decisions/schedules.md, "A cron
expression is one line: its fields are separated by blanks").

A tab and Unicode's spaces (``Zs``: the no-break space a web page pastes, an em space, an
ideographic space) separate fields, as docs/CRON.md promises and as cronsim, croniter
and APScheduler read them.  ``str.split`` also split on line breaks and control
characters (``\\n``, ``\\r``, ``\\x1c``-``\\x1f``, ``\\x85``, ``\\u2028``), so ``'0\\n3 * * *'``
was a schedule at 03:00; such a character is refused now, named, and a store an earlier
release wrote with one still opens.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lldsched import CronSchedule, ScheduleError, Simulation, SqliteTaskStore
from lldsched.logs import STORE
from lldsched.stores.codec import decode_schedule

T0 = datetime(2026, 1, 5, tzinfo=UTC).timestamp()

NOT_BLANKS = {
    "\n": "U+000A",
    "\r": "U+000D",
    "\x0b": "U+000B",
    "\x0c": "U+000C",
    "\x1c": "U+001C",
    "\x1f": "U+001F",
    "\x85": "U+0085",
    "\u2028": "U+2028",
    "\u2029": "U+2029",
}


@pytest.mark.parametrize(("char", "code"), NOT_BLANKS.items(), ids=NOT_BLANKS.values())
def test_a_line_break_or_control_character_between_fields_is_refused_by_name(
    char: str, code: str
) -> None:
    # Before: '0\n3 * * *' was CronSchedule('0\n3 * * *'), at 03:00 every day.
    expr = f"0{char}3 * * *"
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert str(caught.value).startswith(
        f"cron expression {expr!r}: {char!r} ({code}) between its fields is a line break "
        "or a control character, not a blank; a cron expression is one line, its fields "
        "separated by spaces or tabs"
    )


def test_two_lines_pasted_as_one_expression_are_refused_as_more_than_one_line() -> None:
    # Before: "has 10 fields", the line break among them unsaid.
    with pytest.raises(ScheduleError, match=r"'\\n' \(U\+000A\) between its fields"):
        CronSchedule("0 3 * * *\n0 4 * * *")


def test_cron_text_as_a_tasks_schedule_is_refused_and_nothing_registered_is_lost() -> None:
    simulation = Simulation(start=T0)
    kept = simulation.schedule("kept", "0 3 * * *")
    with pytest.raises(ScheduleError, match=r"U\+2028"):
        simulation.schedule("pasted", "0\u20283 * * *")
    assert [task.id for task in simulation.tasks()] == [kept.id]


@pytest.mark.parametrize("char", ["\t", "\xa0", "\u2003", "\u202f", "\u3000"])
def test_a_tab_or_a_unicode_space_separates_fields_and_keeps_the_text_as_written(
    char: str,
) -> None:
    expr = f"0{char}3 * * *"
    schedule = CronSchedule(expr)
    assert schedule.fields.text == "0 3 * * *"
    assert schedule.expr == expr
    # Equal text is an equal value; another text that fires alike is another value, as
    # '0 0 * * *' and '0 0 * * 0-6' are (docs/decisions/schedules.md).
    assert schedule == CronSchedule(expr) and hash(schedule) == hash(CronSchedule(expr))
    assert schedule != CronSchedule("0 3 * * *")
    assert list(schedule.fire_times(T0, 3)) == list(CronSchedule("0 3 * * *").fire_times(T0, 3))


@pytest.mark.parametrize("expr", ["0 3 * * *\n", "\r\n0 3 * * *\r\n", "\x0c0 3 * * *"])
def test_a_line_break_at_either_end_separates_nothing_and_is_read_as_before(expr: str) -> None:
    """``CronSchedule(line)`` of a line read from a file keeps its newline; the blanks at
    the ends were always left out, as the text's own."""
    assert CronSchedule(expr).fields.text == "0 3 * * *"


def test_a_store_an_earlier_release_wrote_with_a_line_break_between_fields_still_opens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Refused, the stored schedule would have made the whole store fail to open.  It is
    # read with a space for the character, said at WARNING, and runs as it ran before.
    path = tmp_path / "tasks.db"
    with SqliteTaskStore(path) as store:
        Simulation(start=T0, store=store).schedule("nightly", "0 3 * * *", id="nightly")
    with closing(sqlite3.connect(path)) as connection, connection:
        changed = connection.execute(
            "UPDATE tasks SET definition = replace(definition, '\"0 3 * * *\"', '\"0\\n3 * * *\"')"
        ).rowcount
    assert changed == 1
    with caplog.at_level(logging.WARNING, logger=STORE), SqliteTaskStore(path) as store:
        simulation = Simulation(start=T0, store=store)
        task = simulation.task("nightly")
        assert task.schedule == CronSchedule("0 3 * * *", tz="UTC")
        simulation.run_for(86_400)
        assert [record.slot for record in simulation.records()] == [T0 + 3 * 3600]
    assert (
        "a stored CronSchedule('0\\n3 * * *', tz='UTC') is read as "
        "CronSchedule('0 3 * * *', tz='UTC')"
    ) in caplog.text


def test_a_stored_expression_bad_for_another_reason_is_still_refused() -> None:
    stored = {"type": "CronSchedule", "expr": "0\n61 * * *", "tz": "UTC"}
    with pytest.raises(ScheduleError, match=r"61 is out of range"):
        decode_schedule(stored)
