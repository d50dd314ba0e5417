"""A utilisation heat map of runs over more intervals than it has columns for.

A year of one-minute intervals is 525,600 columns on a heat map about 900 pixels wide:
drawn as asked, it took seconds and hundreds of megabytes, and each pixel showed one
minute's colour, not the mean of the minutes under it (a lane busy a fifth of the time
read as speckles, each pixel all busy or all idle).  Past ``max_columns`` intervals the
plot draws longer ones, round, a whole number of the asked each, and says so.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh

from lldsched import ExecutionRecord, Outcome, ValidationError
from lldsched.views import lanes
from lldsched.views import utilisation as utilisation_module
from lldsched.views.frames import mean_busy, to_frame, utilisation
from lldsched.views.plots import MAX_COLUMNS, utilisation_plot
from lldsched.views.plots.timing import share_text
from lldsched.views.summaries import check_spans, fitting_freq
from tests.conftest import T0

DAY = 86_400.0


def run(start: float, length: float, worker: int = 0) -> ExecutionRecord:
    return ExecutionRecord.of(
        task_id="a", name="a", attempt=1, due=start, slot=start, worker=worker,
        started=start, finished=start + length, ok=True,
    )  # fmt: skip


def a_year() -> pd.DataFrame:
    """Runs on two workers from the first to the last day of a year, one of them
    crossing midnight."""
    return to_frame([
        run(T0, 90), run(T0 + 3600, 1800, worker=1), run(T0 + 40 * DAY - 600, 1200),
        run(T0 + 200 * DAY, 7200, worker=1), run(T0 + 364 * DAY, 300),
    ])  # fmt: skip


def mesh_of(ax: Axes) -> Any:
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    return np.asarray(mesh.get_array())


def test_a_year_of_minutes_is_drawn_in_round_intervals_that_fit() -> None:
    frame = a_year()
    ax = utilisation_plot(frame, 2, "1min").axes[0]
    drawn = mesh_of(ax)
    assert drawn.shape == (2, 729)  # 12h intervals, not 524,165 minutes
    assert ax.get_title(loc="left").startswith("Worker utilisation per 12h: mean ")
    minutes = len(utilisation(frame, 2, "1min"))
    assert ax.get_xlabel() == (
        f"time (UTC)\nin intervals of 12h: freq='1min' would be {minutes:,} columns, "
        f"more than max_columns={MAX_COLUMNS}"
    )
    # the table drawn is utilisation's at that length: each cell the mean of its minutes
    assert np.array_equal(drawn, utilisation(frame, 2, "12h").to_numpy().T)
    fine = utilisation(frame, 2, "1min")
    merged = fine.groupby(pd.DatetimeIndex(fine.index).floor("12h")).sum() / 720
    cells = utilisation(frame, 2, "12h").loc[merged.index]
    assert np.allclose(cells.to_numpy(), merged.to_numpy())


def test_a_plot_that_fits_is_drawn_at_its_freq() -> None:
    frame = to_frame([run(T0, 90), run(T0 + DAY - 60, 30, worker=1)])  # a day: 1,440 minutes
    ax = utilisation_plot(frame, 2, "1min", max_columns=1440).axes[0]
    assert mesh_of(ax).shape == (2, 1440)
    assert ax.get_xlabel() == "time (UTC)"
    assert ax.get_title(loc="left").startswith("Worker utilisation per 1min: mean ")
    every = utilisation_plot(frame, 2, "1min", max_columns=None).axes[0]
    assert mesh_of(every).shape == (2, 1440)
    fewer = utilisation_plot(frame, 2, "1min", max_columns=100).axes[0]
    assert mesh_of(fewer).shape == (2, 96)  # 15 min: 10 would be 144
    assert "in intervals of 15min: freq='1min' would be 1,440 columns" in fewer.get_xlabel()


@pytest.mark.parametrize(
    ("freq", "most", "expected"),
    [
        ("1min", MAX_COLUMNS, ("12h", 524_165)),  # a year, as drawn
        ("1h", MAX_COLUMNS, ("12h", 8737)),
        ("1s", MAX_COLUMNS, ("12h", 31_449_900)),  # more than utilisation would cut
        ("7min", MAX_COLUMNS, ("588min", 74_881)),  # no round length is a multiple of 7 min
        ("1h", 300, ("2D", 8737)),  # past a day: whole days
        ("1h", 10_000, ("1h", 8737)),  # fits: as asked
        ("1min", 1, ("386D", 524_165)),  # one interval: whole days, aligned on the epoch
    ],
)
def test_the_interval_drawn_is_the_shortest_round_multiple_that_fits(
    freq: str, most: int, expected: tuple[str, int]
) -> None:
    frame = a_year()
    shown, asked = fitting_freq(frame, freq, most)
    assert (shown, asked) == expected
    assert len(utilisation(frame, 2, shown)) <= most
    if asked <= 10_000_000:  # utilisation's own bound
        assert len(utilisation(frame, 2, freq)) == asked
    assert pd.Timedelta(shown) % pd.Timedelta(freq) == pd.Timedelta(0)


def test_an_empty_frame_keeps_its_freq() -> None:
    assert fitting_freq(to_frame([]), "1min", MAX_COLUMNS) == ("1min", 0)
    ax = utilisation_plot(to_frame([]), 2, "1min").axes[0]
    assert ax.get_title(loc="left") == "Worker utilisation per 1min"


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "900"])
def test_a_bad_max_columns_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(
        ValidationError, match=re.escape(f"max_columns must be an int >= 1 or None, got {bad!r}")
    ):
        utilisation_plot(a_year(), 2, "1min", max_columns=bad)  # type: ignore[arg-type]


def test_a_bad_freq_is_still_refused_naming_it() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("freq must be a fixed length such as '1h', got 'often'")
    ):
        utilisation_plot(a_year(), 2, "often")


def mixed() -> pd.DataFrame:
    """A year's runs of two processes, with a slot a policy decided without a run (no
    worker ran it: it is no row of the heat map) and its two columns read by no chart."""
    skipped = ExecutionRecord.of(
        task_id="a", name="a", attempt=1, due=T0 + 50 * DAY, slot=T0 + 50 * DAY, worker=0,
        started=T0 + 50 * DAY, finished=T0 + 50 * DAY, ok=True, misfire=Outcome.SKIPPED,
    )  # fmt: skip
    on = [run(T0 + n * 7 * DAY, 3600 * (1 + n % 5), worker=n % 2) for n in range(52)]
    nodes = [r._replace(node=("alpha:1:aa" if n % 3 else "beta:2:bb")) for n, r in enumerate(on)]
    return to_frame([*nodes, skipped])


@pytest.mark.parametrize("most", [MAX_COLUMNS, 100, None])
@pytest.mark.parametrize("frame", [a_year, mixed], ids=["a year", "two nodes, a slot skipped"])
def test_the_plot_is_fitting_freq_utilisation_and_mean_busy_of_its_frame(
    frame: Any, most: int | None
) -> None:
    """The plot picks its runs out of the frame once for the three: what it draws is still
    what each of them says of the whole frame."""
    runs = frame()
    ax = utilisation_plot(runs, 2, "1h", max_columns=most).axes[0]
    shown = "1h" if most is None else fitting_freq(runs, "1h", most)[0]
    assert np.array_equal(mesh_of(ax), utilisation(runs, 2, shown).to_numpy().T)
    mean = mean_busy(runs, 2, shown)
    assert ax.get_title(loc="left") == f"Worker utilisation per {shown}: mean {share_text(mean)}"


def test_the_runs_are_checked_once_for_the_fit_the_table_and_the_mean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fitting_freq, utilisation and mean_busy each copied the frame's runs (every
    column) and checked their spans: three times for one plot."""
    checked: list[int] = []

    def counted(runs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        checked.append(len(runs))
        return check_spans(runs)

    for module in (lanes, utilisation_module):  # where the runs are checked
        monkeypatch.setattr(module, "check_spans", counted)
    utilisation_plot(mixed(), 2, "1h")
    assert checked == [52]  # once, the runs only (not the skipped slot)
