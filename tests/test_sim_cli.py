"""``python -m lldsched simulate`` and the plain-text summary behind it."""

from __future__ import annotations

import errno
import io
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import pytest

from lldsched import ExecutionRecord, FixedRate, Simulation
from lldsched.cli import main as cli_main
from lldsched.cli import simulate as simulate_cli
from lldsched.errors import ValidationError
from lldsched.sim import scenario
from lldsched.sim.models import fixed
from lldsched.sim.scenario import build_scenario
from lldsched.views.report import format_summary, overran, percentile, summarize


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lldsched", "simulate", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def without_wall_time(text: str) -> str:
    return re.sub(r"in [0-9.]+ s of wall time", "in … s of wall time", text)


def test_simulate_prints_a_summary_row_per_task_and_is_reproducible() -> None:
    first = simulate("--days", "2", "--workers", "3", "--seed", "5")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("simulated 2 days on 3 workers (seed 5):")
    assert lines[1].split()[:3] == ["task", "runs", "ok"]
    names = {line.split()[0] for line in lines[2:-1]}
    assert {"heartbeat", "compaction", "import", "nightly-backup", "report-emea"} <= names
    assert lines[-1].startswith("dead letter:")
    again = simulate("--days", "2", "--workers", "3", "--seed", "5")
    assert without_wall_time(again.stdout) == without_wall_time(first.stdout)
    other = simulate("--days", "2", "--workers", "3", "--seed", "6")
    assert without_wall_time(other.stdout) != without_wall_time(first.stdout)


def test_simulate_prints_a_row_for_every_task_also_one_that_has_not_run_yet() -> None:
    # "print a summary row per task", says --help: under an hour (0.04 days), the six
    # reports (due at 01:00) and the backup (02:00) had no record and no row, and the
    # table read as a service of three tasks.
    out = simulate("--days", "0.04", "--workers", "4", "--seed", "0")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[2:-1]}
    assert set(rows) == {task.name for task in build_scenario().tasks()}
    assert rows["nightly-backup"] == ["0"] * 10 + ["-"] * 6
    assert rows["heartbeat"][0] != "0"


def test_the_summary_names_the_days_simulated_as_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Was "simulated 1 days" (six digits, :g) for a day and a hundredth of a second."""
    assert cli_main(["simulate", "--days", "1.0000001", "--workers", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("simulated 1.0000001 days on 1 worker (seed 0): "), first


def test_a_chart_asked_for_is_drawn_when_the_reader_of_the_summary_left() -> None:
    """``simulate --gantt day.png | head -1``: the summary's second line met a closed
    pipe, and the command ended there, status 0 and no chart.  The reader leaving ends
    the output, not the work asked for: the chart is drawn, status 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader that left before the first line (``| head -0``)
    with tempfile.TemporaryDirectory() as folder:
        chart = Path(folder) / "day.png"
        try:
            result = subprocess.run(
                [sys.executable, "-m", "lldsched", "simulate", "--days", "0.05",
                 "--gantt", str(chart)],
                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
            )  # fmt: skip
        finally:
            os.close(write_end)
        assert (result.returncode, result.stderr) == (0, "")
        assert chart.read_bytes().startswith(b"\x89PNG")
        assert [path.name for path in Path(folder).iterdir()] == ["day.png"]  # no partial


class _LeftReader(io.StringIO):
    """A stdout whose reader left: every write is a ``BrokenPipeError``."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_chart_that_fails_after_the_reader_left_is_still_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The work failed after it began: the reader's leaving does not make that 0."""
    from matplotlib.figure import Figure

    def full(self: Figure, *args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    monkeypatch.setattr(sys, "stdout", _LeftReader())
    path = tmp_path / "chart.png"
    assert cli_main(["simulate", "--days", "0.01", "--gantt", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"error: --gantt {str(path)!r}: cannot write it: [Errno 28] No space left on device\n"
    )
    assert cli_main(["simulate", "--days", "0.01"]) == 0  # no chart asked for: the end


def test_one_day_on_one_worker_is_said_in_the_singular() -> None:
    out = simulate("--days", "1", "--workers", "1", "--seed", "5")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("simulated 1 day on 1 worker (seed 5): "), first
    assert re.search(r": [0-9,]+ runs in [0-9.]+ s of wall time$", first), first


def test_more_workers_mean_less_lateness_for_the_heartbeat() -> None:
    def heartbeat_late_max(workers: int) -> str:
        out = simulate("--days", "1", "--workers", str(workers)).stdout
        row = next(line for line in out.splitlines() if line.startswith("heartbeat"))
        return row.split()[-4]  # "late max", before "dur p50", "dur p95" and "dur max"

    assert heartbeat_late_max(12) == "0s"
    assert heartbeat_late_max(2) != "0s"


def test_simulate_rejects_a_non_positive_number_of_days() -> None:
    result = simulate("--days", "0")
    assert (result.returncode, result.stderr) == (
        2,
        "error: --days must be finite and > 0, got 0\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--days", "nan"], "--days must be finite and > 0, got nan"),
        (["--days", "inf"], "--days must be finite and > 0, got inf"),
        (["--days=-inf"], "--days must be finite and > 0, got -inf"),
        (["--days", "-inf"], "--days must be finite and > 0, got -inf"),  # as with '='
        (["--days", "-3"], "--days must be finite and > 0, got -3"),
        (
            ["--days", "1e9"],
            "--days must be at most 366 (a year: the simulation keeps every record), "
            "got 1000000000",
        ),
        # Was "got 366" (six digits, :g): the bound itself, refused.
        (
            ["--days", "366.0000001"],
            "--days must be at most 366 (a year: the simulation keeps every record), "
            "got 366.0000001",
        ),
        (["--days", "-0.0000001"], "--days must be finite and > 0, got -1e-07"),
        (
            ["--days", "366.5"],
            "--days must be at most 366 (a year: the simulation keeps every record), got 366.5",
        ),
        (["--workers", "0"], "--workers must be at least 1, got 0"),
        (["--workers", "-2"], "--workers must be at least 1, got -2"),
        (["--workers", "1000000000"], "--workers must be at most 100,000, got 1,000,000,000"),
        (["--max-coroutines", "0"], "--max-coroutines must be an int >= 1, got 0"),
        (["--max-coroutines", "-5"], "--max-coroutines must be an int >= 1, got -5"),
        (["--gantt", "week.txt"], "--gantt 'week.txt': the chart is written as .png, .svg or .pdf"),
        # A folder is said as one before its name's format (was: "written as .png, ...").
        (["--gantt", "."], "--gantt '.': that is a folder; name the file to write"),
        (
            ["--gantt", "missing/week.png"],
            "--gantt 'missing/week.png': there is no folder 'missing' to write it in",
        ),
        # Was "that is a folder" (Path('') is '.').
        (["--gantt", ""], "--gantt '': the path is empty; name the file to write"),
        # Was the week, then matplotlib's "Format '' is not supported" traceback.
        (
            ["--gantt", "week.png/"],
            "--gantt 'week.png/': a path ending in '/', '.' or '..' names a folder; "
            "name the file to write",
        ),
        (
            ["--gantt", "week.png/."],
            "--gantt 'week.png/.': a path ending in '/', '.' or '..' names a folder; "
            "name the file to write",
        ),
        (
            ["--gantt", ".png"],
            "--gantt '.png': the chart is written as .png, .svg or .pdf, by the name's suffix, "
            "and '.png' has none: a name that starts with a dot is a hidden file's",
        ),
        (
            ["--gantt", "week"],
            "--gantt 'week': the chart is written as .png, .svg or .pdf, by the name's suffix, "
            "and 'week' has none",
        ),
    ],
)
def test_simulate_refuses_bad_arguments_before_simulating(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """A bad value is one line on stderr and status 2, as `cron` does: no traceback, and no
    week simulated before a chart path it cannot write is noticed."""
    result = subprocess.run(
        [sys.executable, "-m", "lldsched", "simulate", "--days", "0.1", *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_max_coroutines_bounds_the_coroutine_lane_of_the_simulation_it_builds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-coroutines`` reaches the ``Simulation``: with two ``async def`` tasks added
    to the scenario, due together, a limit of 1 runs them one after the other on the
    coroutine lane, and the default runs them side by side."""
    built: list[Simulation] = []

    def with_coroutines(**options: Any) -> Simulation:
        sim = build_scenario(**options)
        for name in ("poll-a", "poll-b"):
            sim.schedule(name, FixedRate(600), action=idle, duration=fixed(100))
        built.append(sim)
        return sim

    monkeypatch.setattr(scenario, "build_scenario", with_coroutines)

    def starts(*args: str) -> list[float]:
        assert cli_main(["simulate", "--days", "0.005", *args]) == 0
        capsys.readouterr()
        sim = built.pop()
        lane = [r for r in sim.records() if r.worker == sim.workers]
        assert {r.task_id for r in lane} == {t.id for t in sim.tasks() if t.name.startswith("poll")}
        return sorted(r.started - r.due for r in lane)

    assert starts() == [0, 0]
    assert starts("--max-coroutines", "1") == [0, 100]


async def idle() -> None:
    return None


def record(name: str, slot: float, started: float, finished: float, ok: bool = True,
           attempt: int = 1) -> ExecutionRecord:  # fmt: skip
    return ExecutionRecord(name, name, attempt, slot, slot, 0, started, finished, ok)


def test_summaries_count_outcomes_retries_and_overruns_by_hand() -> None:
    runs = [
        record("a", 0, 0, 70),  # 70 s on a 60 s period: an overrun
        record("a", 60, 70, 80, ok=False),  # 10 s late, failed
        record("a", 60, 90, 95, attempt=2),  # its retry
    ]
    (row,) = summarize(runs, {"a": FixedRate(60)})
    assert (row.runs, row.ok, row.failed, row.retries, row.overruns) == (3, 2, 1, 1, 1)
    assert (row.lateness_max, row.duration_max, row.duration_p50) == (30, 70, 10)
    assert "a" in format_summary([row]).splitlines()[1]


def test_only_a_first_attempt_counts_as_an_overrun() -> None:
    runs = [
        record("a", 0, 0, 10, ok=False),
        record("a", 0, 20, 100, attempt=2),  # a retry of 80 s on a 60 s period
    ]
    (row,) = summarize(runs, {"a": FixedRate(60)})
    assert (row.runs, row.retries, row.overruns) == (2, 1, 0)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0s"), (1, "1.0s"), (9.5, "9.5s"), (10, "10s"), (59, "59s"), (60, "1.0m"),
     (3599, "1.0h"), (3600, "1.0h")],
)  # fmt: skip
def test_the_table_shows_a_time_in_seconds_minutes_or_hours(seconds: float, shown: str) -> None:
    (row,) = summarize([record("a", 0, 0, seconds)])
    assert format_summary([row]).splitlines()[1].split()[-1] == shown  # the longest run


def test_the_table_shows_every_percentile_task_summary_has() -> None:
    # The table showed lateness at p50, p95 and max but duration at p50 and max only:
    # a task whose runs take 1 s, and 40 s one run in ten, read "1.0s 40s" there and
    # a p95 of 40 s in task_summary, the same rule, a column the table had left out.
    records = [record("a", 0, 60 * k, 60 * k + (40 if k >= 18 else 1)) for k in range(20)]
    (row,) = summarize(records)
    assert (row.duration_p50, row.duration_p95, row.duration_max) == (1.0, 40.0, 40.0)
    header, line = format_summary([row]).splitlines()
    assert header.split("  ")[-6:] == ["late p50", "late p95", "late max", "dur p50", "dur p95",
                                       "dur max"]  # fmt: skip
    assert line.split()[-3:] == ["1.0s", "40s", "40s"]


@pytest.mark.parametrize(("q", "expected"), [(50, 2.0), (95, 4.0), (100, 4.0), (1, 1.0)])
def test_percentiles_use_the_nearest_rank(q: float, expected: float) -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], q) == expected
    assert (
        percentile([], q) is None
    )  # no value: no percentile (it was 0.0, a time that never happened)


@pytest.mark.parametrize(("q", "expected"), [(50, 100.0), (95, 190.0), (99, 198.0), (100, 200.0)])
def test_a_percentile_of_many_values_is_the_value_at_q_percent_of_the_count(
    q: float, expected: float
) -> None:
    assert percentile([float(v) for v in range(1, 201)], q) == expected  # ranks 1 to 200


@pytest.mark.parametrize(
    ("count", "q", "expected"),
    [(100, 7, 7.0), (100, 14, 14.0), (100, 56, 56.0), (1000, 99.9, 999.0), (1000, 0.7, 7.0)],
)
def test_a_percentile_ranks_q_percent_of_the_count_exactly(
    count: int, q: float, expected: float
) -> None:
    # The rank was ceil(q / 100 * count), in floats: 7 / 100 * 100 is 7.000000000000001,
    # so the 7th percentile of 1..100 read 8, and p99.9 of a thousand runs was their
    # maximum (99.9 / 100 * 1000 = 999.0000000000001), one rank too high.  A float q is
    # read as the decimal it is written as: 99.9, not the binary number just above it.
    assert percentile([float(v) for v in range(1, count + 1)], q) == expected


def test_a_percentile_of_values_in_any_order_is_the_percentile_and_a_nan_is_refused() -> None:
    # A planner's p99 written [r.lateness for r in runs], without sorted(), read the value
    # at rank 99 of the records' order: a wait, but not the 99th percentile, and no word.
    waits = [0.0, 250.0, 3.0, 0.0]
    assert percentile(waits, 99) == 250.0
    assert percentile(waits, 50) == 0.0
    assert percentile(waits, 75) == 3.0
    assert waits == [0.0, 250.0, 3.0, 0.0]  # the caller's list left as it was
    assert percentile((2.0, 1.0), 50) == 1.0  # a tuple too
    with pytest.raises(ValidationError, match=r"NaN.*nan"):  # a NaN has no place in an order
        percentile([1.0, math.nan, 3.0], 50)
    with pytest.raises(ValidationError, match="None"):  # not a TypeError out of the comparison
        percentile([1.0, None], 50)  # type: ignore[list-item]


def test_waiting_for_a_worker_is_lateness_not_an_overrun() -> None:
    assert not overran(FixedRate(60), record("a", 0, 300, 301))
    assert overran(FixedRate(60), record("a", 0, 0, 61))


def test_simulate_draws_a_gantt_chart_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "day.png"
    result = simulate("--days", "1", "--workers", "3", "--gantt", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"gantt chart: {out}"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_without_matplotlib_says_which_extra_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None\n"
        "from lldsched.cli import main\n"
        "raise SystemExit(main(['simulate', '--days', '0.1', '--gantt', 'out.png']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode != 0
    assert "--gantt: " in result.stderr and "pip install 'lldsched[views]'" in result.stderr
    assert not (tmp_path / "out.png").exists()


def test_simulate_without_a_chart_loads_no_third_party_module() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from lldsched.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['simulate', '--days', '0.1'])\n"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'numpy') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_simulates_gantt_chart_has_a_lane_for_every_worker_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `simulate --workers 12 --gantt day.png` drew "1,942 runs on 9 workers" and nine
    # lanes: the workers that ran nothing (the built-in day never needs more than nine)
    # had none, and the chart read as a pool of nine.
    from matplotlib.figure import Figure

    from lldsched.views import plots

    drawn: list[Figure] = []
    gantt = plots.gantt

    def kept(*args: Any, **kwargs: Any) -> Figure:
        figure = gantt(*args, **kwargs)
        drawn.append(figure)
        return figure

    monkeypatch.setattr(plots, "gantt", kept)
    sim = build_scenario(workers=12, seed=0)
    sim.run_for(86400)
    assert len({record.worker for record in sim.records() if record.outcome.ran}) < 12
    assert simulate_cli.write_gantt(sim, str(tmp_path / "day.png")) is None
    (ax,) = drawn[0].axes[:1]
    assert [label.get_text() for label in ax.get_yticklabels()] == [
        f"worker {w}" for w in range(12)
    ]
    assert " runs on 12 workers: " in ax.get_title(loc="left") + ax.get_title()
