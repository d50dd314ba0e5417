"""Durations for people (lldsched/views/durations.py): one rule, rounded to what the text
shows before the unit is chosen, so no value reads as the next unit's threshold in the
smaller unit; the command line's table, ``readable`` and the charts' words all use it."""

from __future__ import annotations

import math

import pytest

from lldsched import ExecutionRecord
from lldsched.policies import OverrunPolicy
from lldsched.views.durations import seconds_text, short_text
from lldsched.views.report import format_summary, summarize

# Each boundary, just under it and on it: the text never says 60 of a unit that has a
# next one, nor 10.0 where the table writes whole seconds from 10 s.
SHORT = [
    (0, "0s"), (0.04, "0.0s"), (1, "1.0s"), (9.94, "9.9s"), (9.96, "10s"), (10, "10s"),
    (59.4, "59s"), (59.5, "1.0m"), (59.99, "1.0m"), (60, "1.0m"), (351, "5.8m"),
    (3596, "59.9m"), (3597, "1.0h"), (3599, "1.0h"), (3600, "1.0h"), (86399, "24.0h"),
    (86400, "24.0h"), (-5, "-5.0s"), (-100, "-1.7m"), (-3599, "-1.0h"), (-0.04, "0.0s"),
    (None, "-"), (math.nan, "-"),
]  # fmt: skip


@pytest.mark.parametrize(("seconds", "text"), SHORT)
def test_the_tables_cell_rounds_before_it_picks_a_unit(seconds: float | None, text: str) -> None:
    assert short_text(seconds) == text


READABLE = [
    (0, "0 s"), (1e-6, "1 µs"), (4.3e-5, "43 µs"), (0.0009994, "999 µs"),
    (0.0009996, "0.001 s"), (0.25, "0.25 s"), (9.9996, "10 s"), (59.49, "59 s"),
    (59.99, "1 min"), (351, "5 min 51 s"), (3599, "59 min 59 s"), (3599.5, "1 h 00 min"),
    (7170, "2 h 00 min"), (7500, "2 h 05 min"), (86399, "24 h 00 min"),
    (-90, "-1 min 30 s"), (-0.04, "-0.04 s"), (math.nan, "—"),
]  # fmt: skip


@pytest.mark.parametrize(("seconds", "text"), READABLE)
def test_the_readable_text_rounds_before_it_picks_a_unit(seconds: float, text: str) -> None:
    assert seconds_text(seconds) == text


def test_no_text_says_sixty_of_a_unit_that_has_a_next_one() -> None:
    for hundredths in range(0, 100_000, 37):
        seconds = hundredths / 100
        for value in (seconds, -seconds, seconds * 7.3, seconds / 1000):
            assert not short_text(value).lstrip("-").startswith(("60", "10.0s")), value
            words = seconds_text(value).lstrip("-")
            assert not words.startswith("60 ") and " 60 " not in words, value
            assert "1000 µs" not in words and "e" not in words, value


def test_the_command_lines_table_shows_3599_s_as_an_hour() -> None:
    records = [ExecutionRecord("a", "a", 1, 0, 0, 0, 0, 3599, True)]
    line = format_summary(summarize(records)).splitlines()[1]
    assert line.split()[-3:] == ["1.0h", "1.0h", "1.0h"]  # was 60.0m


def test_the_overrun_charts_worst_lateness_reads_by_the_one_rule() -> None:
    pytest.importorskip("matplotlib")
    from lldsched.views.plots import overrun_comparison

    late = [  # a worst lateness of 10,799 s: was "180 min", three hours in minutes
        ExecutionRecord("t", "t", 1, 60.0 * k, 60.0 * k, 0, 60.0 * k + w, 60.0 * k + w + 1, True)
        for k, w in enumerate((0, 179.7, 10_799))
    ]
    figure = overrun_comparison({OverrunPolicy.CATCH_UP: late})
    assert figure.axes[0].get_title(loc="left").endswith("worst lateness 3 h 00 min")
    figure = overrun_comparison({OverrunPolicy.CATCH_UP: late[:2]})  # was "180 s"
    assert figure.axes[0].get_title(loc="left").endswith("worst lateness 3 min")
