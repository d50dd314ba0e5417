"""Frames and plots: ``to_frame`` on a million records, ``gantt`` on 100,000 runs.

* ``to_frame``: a million synthetic records (ten tasks on four workers, every
  seventh attempt failed, every eleventh timed out, with error text) turned into
  the typed frame; best of :data:`REPEATS`.  Building the records is not timed.
* ``gantt``: the first 100,000 runs of the built-in scenario
  (``python -m lldsched simulate``) over 61 simulated days on four workers, drawn
  by worker; timed to the finished ``Figure`` and again including rendering it to
  a 1100 x 340 PNG on the Agg canvas; best of :data:`REPEATS`.

Run: ``.venv/bin/python benchmarks/bench_views.py``.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable

from lldsched import ExecutionRecord
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import to_frame
from lldsched.views.plots import gantt

RECORDS = 1_000_000
RUNS = 100_000
REPEATS = 3
START = 1_767_571_200.0  # 2026-01-05 00:00 UTC

GOALS: dict[str, tuple[str, float]] = {
    "to_frame, 1M records (s)": ("<", 3.0),
    "gantt, 100k runs, rendered (s)": ("<", 5.0),
}


def synthetic_records(count: int) -> list[ExecutionRecord]:
    records = []
    for i in range(count):
        due = START + i * 0.5
        failed = i % 7 == 0
        records.append(
            ExecutionRecord(
                f"task-{i % 10}", f"name-{i % 10}", 2 if i % 13 == 0 else 1, due, due, i % 4,
                due + 0.1, due + 2.3, not failed, "RuntimeError: boom" if failed else None,
                i % 11 == 0,
            )
        )  # fmt: skip
    return records


def best(measure: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        measure()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> dict[str, float]:
    records = synthetic_records(RECORDS)
    frame_seconds = best(lambda: to_frame(records))
    records.clear()

    sim = build_scenario(workers=4)
    sim.run_for(61 * 86400)
    runs = to_frame(sim).iloc[:RUNS]
    assert len(runs) == RUNS, len(runs)
    figure_seconds = best(lambda: gantt(runs))
    rendered_seconds = best(lambda: gantt(runs).savefig(io.BytesIO(), format="png", dpi=100))

    print(f"to_frame: {RECORDS:,} records in {frame_seconds:.2f} s")
    print(f"gantt: {RUNS:,} runs, figure in {figure_seconds:.2f} s, "
          f"rendered to PNG in {rendered_seconds:.2f} s")  # fmt: skip
    return {
        "to_frame, 1M records (s)": frame_seconds,
        "gantt, 100k runs, figure (s)": figure_seconds,
        "gantt, 100k runs, rendered (s)": rendered_seconds,
    }


if __name__ == "__main__":
    main()
