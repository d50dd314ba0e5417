"""What a view copies of its frame: the columns it reads, never every column.

A million records' frame holds 116 MB in its 17 columns; a view that picked its runs
out with ``ran(frame)`` copied all of them (the lateness charts read 6).  Each view here
is drawn of a frame and of the same frame with columns no view reads: the memory
``tracemalloc`` traces at its peak may grow by at most a tenth of those columns' size
(a ratio of the frame's own memory, never a time).  docs/PERFORMANCE.md, "Views at a
million records", has the figures.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from lldsched import ExecutionRecord, FixedRate, Outcome
from lldsched.views.frames import mean_busy, task_summary, to_frame, utilisation
from lldsched.views.plots import (
    gantt,
    lateness_distribution,
    lateness_over_time,
    utilisation_plot,
)
from lldsched.views.summaries import fitting_freq
from tests.conftest import T0

RECORDS = 40_000
UNREAD = 16  # columns of float64 no view reads: 5 MB at RECORDS rows


def records() -> list[ExecutionRecord]:
    """Six tasks on four workers, a run every 30 s, some late, every ninth failed and
    every eleventh slot skipped (decided without a run: no view's run)."""
    made = []
    for i in range(RECORDS):
        due = T0 + i * 30.0
        started = due + (i % 13) * 2.0
        made.append(
            ExecutionRecord.of(
                task_id=f"task-{i % 6}", name=f"task {i % 6}", attempt=1, due=due, slot=due,
                worker=i % 4, started=started, finished=started + 20.0, ok=i % 9 != 0,
                error=None if i % 9 else "RuntimeError: boom",
                misfire=Outcome.SKIPPED if i % 11 == 0 else None,
            )
        )  # fmt: skip
    return made


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A frame, and the same frame with :data:`UNREAD` more columns."""
    frame = to_frame(records())
    wider = frame.assign(
        **{f"unread_{n}": np.arange(len(frame), dtype=float) for n in range(UNREAD)}
    )
    return frame, wider


@pytest.fixture(scope="module")
def collected_once() -> Iterator[None]:
    """The objects alive as this module's tests begin (the test session's),
    collected once and frozen out of every later ``gc.collect()``: :func:`traced_peak`'s
    collection then walks only what the views made since (some 0.14 s less per
    collection, two a test). A frozen object is never freed till ``gc.unfreeze()``
    below; none of the views' allocations is frozen, and ``tracemalloc`` counts only
    those."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def traced_peak(view: Callable[[pd.DataFrame], Any], frame: pd.DataFrame) -> int:
    """The bytes ``tracemalloc`` traces at the peak of ``view(frame)``."""
    gc.collect()
    tracemalloc.start()
    try:
        view(frame)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


SCHEDULES = {f"task-{n}": FixedRate(180) for n in range(6)}

VIEWS: dict[str, Callable[[pd.DataFrame], Any]] = {
    "gantt": gantt,
    "gantt by task": lambda frame: gantt(frame, by="task"),
    "gantt, workers=4": lambda frame: gantt(frame, workers=4),
    "gantt, two lanes": lambda frame: gantt(frame, max_lanes=2),
    "lateness_over_time": lateness_over_time,
    "lateness_distribution": lateness_distribution,
    "utilisation": lambda frame: utilisation(frame, 4),
    "mean_busy": lambda frame: mean_busy(frame, 4),
    "fitting_freq": lambda frame: fitting_freq(frame, "1min", 900),
    "utilisation_plot": lambda frame: utilisation_plot(frame, 4),
    "task_summary": task_summary,
    "task_summary with schedules": lambda frame: task_summary(frame, SCHEDULES),
}


@pytest.mark.usefixtures("collected_once")
@pytest.mark.parametrize("view", list(VIEWS.values()), ids=list(VIEWS))
def test_a_view_copies_no_column_it_does_not_read(
    view: Callable[[pd.DataFrame], Any], frames: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    frame, wider = frames
    unread = wider.memory_usage(deep=False).sum() - frame.memory_usage(deep=False).sum()
    kept = wider.copy()
    view(frame)  # matplotlib's caches (fonts, markers) filled before either is traced
    grown = traced_peak(view, wider) - traced_peak(view, frame)
    # Copied with the runs, the unread columns grew the peak by about nine tenths of
    # their size (every eleventh row is a skipped slot, no run).
    assert grown < unread / 10, f"the peak grew by {grown / unread:.0%} of the unread columns"
    # And the frame is left as it was (compared exactly: pandas' default compares the
    # categorical column value by value, ten times slower).
    pd.testing.assert_frame_equal(wider, kept, check_exact=True)
