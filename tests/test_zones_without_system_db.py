"""Time zones where the system has no zone database (Windows, slim containers): with
``PYTHONTZPATH`` pointed at an empty folder, zoneinfo finds every zone in the
``tzdata`` package, and every zone lldsched reads (cron's, a scheduler's default, the
command line's, the views') works there as it does with a system database.

lldsched never asks for the machine's local zone (the default is UTC), so a local
zone that cannot be determined (``TZ`` naming nothing, no ``/etc/localtime``) changes
nothing: the same script prints the same text under any ``TZ``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import ScheduleError, ValidationError
from lldsched.schedules.cron.zone import zone_info

ROOT = Path(__file__).resolve().parent.parent

_SCRIPT = r"""
import json, subprocess, sys, zoneinfo
from datetime import datetime, UTC
from lldsched import CronSchedule, FakeClock, Scheduler, Simulation, FixedRate
from lldsched.views.frames import to_frame
from lldsched.views.tables import readable

start = datetime(2026, 3, 28, tzinfo=UTC)  # Berlin's spring-forward night follows
out = {"tzpath": list(zoneinfo.TZPATH)}
berlin = CronSchedule("30 2 * * *", tz="Europe/Berlin")
out["berlin"] = [d.isoformat() for d in berlin.preview(3, start)]
out["kolkata"] = [
    d.isoformat()
    for d in CronSchedule("0 9 * * *", tz=zoneinfo.ZoneInfo("Asia/Kolkata")).preview(2, start)
]
scheduler = Scheduler(tz="America/New_York", clock=FakeClock(start))
task = scheduler.schedule("report", lambda: None, "0 3 * * 1-5")
out["new_york"] = task.next_run_at
scheduler.shutdown()
simulation = Simulation(start=start.timestamp(), tz="Australia/Lord_Howe")
simulation.schedule("tick", FixedRate(3600), id="tick")
simulation.run_for(3 * 3600)
out["table"] = readable(to_frame(simulation), tz="Europe/Berlin").astype(str).values.tolist()
cli = subprocess.run(
    [sys.executable, "-m", "lldsched", "cron", "30 2 * * *", "--tz", "Europe/Berlin", "-n", "2",
     "--start", "2026-03-28T00:00:00+00:00"],
    capture_output=True, check=True, encoding="utf-8",
)
out["cli"] = cli.stdout
print(json.dumps(out))
"""


def _run(tmp_path: Path, **env: str) -> dict[str, object]:
    empty = tmp_path / "no zones here"
    empty.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONTZPATH": str(empty), **env},
        capture_output=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    assert result.pop("tzpath") == [str(empty)]  # the system database is out of reach
    return result


@pytest.fixture(scope="module")
def in_utc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What the script prints with the local zone UTC (once: a run imports pandas)."""
    return _run(tmp_path_factory.mktemp("utc"), TZ="UTC")


def test_every_zone_use_works_from_the_tzdata_package_alone(in_utc: dict[str, object]) -> None:
    result = in_utc
    assert result["berlin"] == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",  # 02:30 does not exist that night: run at the shift
        "2026-03-30T02:30:00+02:00",
    ]
    assert result["kolkata"] == ["2026-03-28T09:00:00+05:30", "2026-03-29T09:00:00+05:30"]
    assert result["new_york"] == 1774854000.0  # Mon 30 Mar 2026 03:00 EDT = 07:00 UTC
    assert "2026-03-29 03:00" in str(result["cli"]) and "02:30" in str(result["cli"])
    table = result["table"]
    assert isinstance(table, list) and len(table) == 4  # runs at 00:00 to 03:00 UTC
    assert "Sat 01:00:00 CET" in table[0]  # 00:00 UTC read in Berlin (CET)


@pytest.mark.parametrize("local", ["Pacific/Kiritimati", "Nowhere/Atlantis", ""])
def test_the_local_zone_changes_nothing_even_when_it_cannot_be_determined(
    tmp_path: Path, local: str, in_utc: dict[str, object]
) -> None:
    assert _run(tmp_path, TZ=local) == in_utc


@pytest.mark.parametrize("name", ["Europe", "America/Argentina", "Mars/Olympus_Mons", "", "../x"])
def test_a_name_that_is_no_zone_is_one_error_for_cron_and_views(name: str) -> None:
    """A folder of the database ("Europe") made ZoneInfo raise IsADirectoryError (and
    PermissionError on Windows) out of the views; now a ScheduleError quoting it."""
    with pytest.raises(ScheduleError, match=f"unknown time zone {name!r}"):
        zone_info(name)
    pandas = pytest.importorskip("pandas")
    from lldsched.views.tables import readable

    with pytest.raises(ValidationError, match="unknown time zone"):
        readable(pandas.DataFrame(), tz=name)


_NO_DATABASE = r"""
import sys
from lldsched import CronSchedule, ScheduleError, Scheduler
for build in (lambda: CronSchedule("0 3 * * *", tz="Europe/Berlin"),
              lambda: Scheduler(tz="Europe/Berlin")):
    try:
        build()
    except ScheduleError as exc:
        print(exc)
print(CronSchedule("0 3 * * *", tz="UTC").explain())  # UTC needs no database
"""


def test_a_python_with_no_zone_database_at_all_says_so_and_names_tzdata(tmp_path: Path) -> None:
    """A slim image without /usr/share/zoneinfo, and lldsched installed without its
    ``tzdata`` dependency (``pip install --no-deps``, a vendored copy): every named zone
    is unknown there, and the error said "use an IANA name such as 'Europe/Berlin'" of
    'Europe/Berlin'.  ``python -S`` leaves site-packages (and tzdata) off the path."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", _NO_DATABASE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONTZPATH": str(tmp_path), "TZ": ""},
        capture_output=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and lines[2] == "At 03:00 (UTC)", done.stdout
    for line in lines[:2]:
        assert "unknown time zone 'Europe/Berlin': this Python has no time zone database" in line
        assert "pip install tzdata" in line and "apt-get install tzdata" in line
        assert "such as 'Europe/Berlin'" not in line


def test_an_unknown_name_where_the_database_is_there_keeps_its_message() -> None:
    with pytest.raises(ScheduleError, match=r"'Europe/Berlim': use an IANA name such as"):
        zone_info("Europe/Berlim")
