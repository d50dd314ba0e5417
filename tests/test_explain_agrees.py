"""``explain()`` of a cron schedule and ``lldsched tasks`` say a schedule alike, its zone
named, UTC too: one rule, in ``CronSchedule.explain`` (docs/decisions/schedules.md, "A
cron schedule's words name its zone").  Before, ``explain()`` said "At 03:00" where the
listing said "At 03:00 (UTC)".
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from lldsched import CronSchedule, FixedRate
from lldsched.cli.storetasks import _Described
from lldsched.schedules.decorators import Jittered, Window, describe


@pytest.mark.parametrize(
    ("schedule", "said"),
    [
        (CronSchedule("0 3 * * *"), "At 03:00 (UTC)"),  # naming no zone: read in UTC
        (CronSchedule("0 3 * * *", tz="UTC"), "At 03:00 (UTC)"),
        (CronSchedule("0 3 * * *", tz="Etc/UTC"), "At 03:00 (UTC)"),
        (CronSchedule("0 3 * * *", tz="Europe/Paris"), "At 03:00 (Europe/Paris)"),
        (
            Jittered(CronSchedule("0 * * * *"), timedelta(minutes=5), seed=1),
            "Every hour (UTC), started up to 300 s late (jitter, seed 1)",
        ),
        (Window(FixedRate(60), max_runs=2), "Every 60 s, at most 2 runs"),
    ],
)
def test_explain_and_the_listing_say_a_schedule_alike(schedule: object, said: str) -> None:
    assert describe(schedule) == said  # type: ignore[arg-type]
    assert _Described()(schedule) == said  # type: ignore[arg-type]  # the listing's cell
