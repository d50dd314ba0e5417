"""Every instant printed for people writes its year in four digits (``clock.dated``):
glibc's ``%Y`` wrote year 5 as ``5``, and ``5-01-02 03:04 UTC`` read as no date."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from lldsched import OneTime
from lldsched.cli.storetasks import _when
from lldsched.clock import dated, to_timestamp
from lldsched.views.widgetkit import when

EARLY = to_timestamp(datetime(5, 1, 2, 3, 4, 5, tzinfo=UTC))


@pytest.mark.parametrize(
    ("year", "text"), [(5, "0005-01-02"), (999, "0999-01-02"), (2026, "2026-01-02")]
)
def test_dated_pads_the_year_and_keeps_the_rest_of_the_layout(year: int, text: str) -> None:
    moment = datetime(year, 1, 2, 3, 4, tzinfo=UTC)
    assert dated(moment, "%a %Y-%m-%d %H:%M %Z") == f"{moment:%a} {text} 03:04 UTC"


def test_a_schedules_explanation_writes_an_early_year_in_four_digits() -> None:
    at = datetime(5, 1, 2, 3, 4, tzinfo=UTC)
    assert OneTime(at=at).explain() == "Once, at 0005-01-02 03:04 UTC"


def test_the_tasks_command_and_the_widgets_write_an_early_year_in_four_digits() -> None:
    assert _when(EARLY) == "0005-01-02 03:04:05"
    assert when(EARLY, ZoneInfo("UTC")) == "0005-01-02 03:04:05"
