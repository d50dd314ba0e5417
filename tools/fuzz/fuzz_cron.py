"""Fuzz target: cron text, its explanation and its fires across years and zones.

``python tools/fuzz/fuzz_cron.py [atheris flags, e.g. -max_total_time=300]``

Half the inputs are raw text; the other half are five or six fields built from cron's
own tokens (numbers, names, ``* / - , L W #``, macros, the tokens of other crons), so
the mutations reach past the first check.  Each expression is built in a zone (a set
of awkward ones: half-hour DST, negative DST, a skipped day, 14 hours ahead; or
fuzzed text), explained, and searched both ways from a fuzzed instant between year 1
and 9999 (and from NaN, infinities, huge ints).  Besides the house rule
(``_rule.py``), the answers must agree: fires strictly increase, the fire before the
next fire after ``t`` is not after ``t``, and no query takes :data:`_rule.SLOW`
seconds.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports(include=["lldsched"]):
    from lldsched import CronSchedule
    from lldsched.errors import shown

from _rule import refused, run, timed

ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # a 30-minute DST shift
    "Europe/Dublin",  # negative DST in the database
    "Africa/Casablanca",  # DST suspended each Ramadan
    "Pacific/Apia",  # skipped 2011-12-30 whole
    "Pacific/Kiritimati",  # UTC+14
    "America/St_Johns",
    "Asia/Kathmandu",  # +05:45
    "Antarctica/Troll",  # a 2-hour DST shift
    "America/Santiago",  # DST change at midnight
    "Asia/Gaza",
    "Europe/Moscow",
    "Etc/GMT+12",
)
TOKENS = (
    "*", "/", "-", ",", "L", "W", "#", "?", "~", "0", "1", "7", "12", "23", "29", "30", "31",
    "59", "60", "5", "15", "JAN", "FEB", "dec", "SUN", "sat", "Mon", "MONDAY", "LW", "5L",
    "5#3", "0#5", "*/15", "1-5", "@daily", "@reboot", "CRON_TZ=UTC", "\t", " ", "\n",
    "99999999999999999999", "-1", "0x1", "1_0", "\u0661", "\x00", "# comment", "%",
)  # fmt: skip
INSTANTS = (
    0.0, -62135596800.0, 253402300799.0, 253402300800.0, 1e15, -1e15, 1e300, math.inf,
    -math.inf, math.nan, 10**400, -(10**400), 1711846800.0, 1300000000.0, 1325203200.0,
    -0.0, 5e-324,
)  # fmt: skip


def expression(fdp: atheris.FuzzedDataProvider) -> str:
    if fdp.ConsumeBool():
        return str(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 80)))
    fields = []
    for _ in range(fdp.ConsumeIntInRange(1, 7)):
        parts = [
            TOKENS[fdp.ConsumeIntInRange(0, len(TOKENS) - 1)]
            if fdp.ConsumeBool()
            else str(fdp.ConsumeIntInRange(0, 70))
            for _ in range(fdp.ConsumeIntInRange(1, 5))
        ]
        fields.append("".join(parts))
    return " ".join(fields)


def zone(fdp: atheris.FuzzedDataProvider) -> str | None:
    pick = fdp.ConsumeIntInRange(0, len(ZONES) + 1)
    if pick == len(ZONES):
        return None
    if pick == len(ZONES) + 1:
        return str(fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 30)))
    return ZONES[pick]


def instant(fdp: atheris.FuzzedDataProvider) -> float:
    pick = fdp.ConsumeIntInRange(0, 3)
    if pick == 0:
        return INSTANTS[fdp.ConsumeIntInRange(0, len(INSTANTS) - 1)]
    if pick == 1:
        return float(fdp.ConsumeRegularFloat())
    return float(fdp.ConsumeIntInRange(-62135596800, 253402300800))


def test_one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = expression(fdp)
    tz = zone(fdp)
    with timed(), refused(shown(text)[:40], shown(tz)[:40]):
        cron = CronSchedule(text, tz)
    if "cron" not in locals():
        return
    with timed():
        assert isinstance(cron.explain(), str)
        repr(cron)
    for _ in range(3):
        t = instant(fdp)
        with timed(), refused(shown(t), "NaN"):
            after = cron.next_after(t)
            before = cron.prev_before(t)
            if after is not None:
                assert math.isfinite(after) and after > t, (text, tz, t, after)
                back = cron.prev_before(after)
                assert back is None or back <= t, (text, tz, t, after, back)
            if before is not None:
                assert math.isfinite(before) and before < t, (text, tz, t, before)
                forward = cron.next_after(before)
                assert forward is None or forward >= t, (text, tz, t, before, forward)
            fires = list(cron.fire_times(t, fdp.ConsumeIntInRange(0, 50)))
            assert fires == sorted(set(fires)), (text, tz, t)
            cron.preview(3, t)


if __name__ == "__main__":
    run(test_one, sys.argv)
