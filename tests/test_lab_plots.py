"""The lab's plots draw what they are given: a point or a line per series, counted from
the figure's artists, on log axes where the data spans decades."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection

from lldsched.views.plots.lab import (
    cancel_cost,
    listener_latency,
    overrun_pileup,
    polling_tradeoff,
    wheel_costs,
)


def test_the_polling_trade_off_has_a_labelled_point_per_timer() -> None:
    figure = polling_tradeoff([("Condition.wait", 0.0, 0.2), ("poll 10 ms", 90.0, 4.0)])
    (ax,) = figure.axes
    assert len(ax.collections) == 2
    assert [text.get_text() for text in ax.texts] == ["Condition.wait", "poll 10 ms"]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel().startswith("median run")  # one figure per timer: the median


def test_the_cancel_cost_curve_has_both_ways_on_log_log_axes() -> None:
    figure = cancel_cost([1_000, 10_000], [0.5, 0.6], [80.0, 1_500.0])
    (ax,) = figure.axes
    assert [np.asarray(line.get_ydata()).tolist() for line in ax.lines] == [
        [80.0, 1_500.0],
        [0.5, 0.6],
    ]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


def test_the_overrun_pile_up_draws_each_strategy_in_both_panels_in_hours() -> None:
    runs = {"SKIP": ([(0.0, 0.0), (7200.0, 0.0)], [(0.0, 0.0)]), "keep": ([(0.0, 3600.0)], [])}
    job, beat = overrun_pileup(runs).axes
    assert [line.get_label() for line in job.lines] == ["SKIP", "keep"]
    assert np.asarray(job.lines[0].get_xdata()).tolist() == [0.0, 2.0]
    assert np.asarray(job.lines[1].get_ydata()).tolist() == [1.0]
    assert len(beat.lines) == 2


def test_the_overrun_pile_up_marks_two_series_along_the_same_values_at_different_places() -> None:
    """SKIP and CATCH_UP leave the heartbeat on time: both curves lie along 0, and with
    their marks at the same places CATCH_UP's squares hid SKIP's circles."""
    on_time = [(float(start), 0.0) for start in range(0, 86_400, 10)]
    days = {name: (on_time, on_time) for name in ("SKIP", "CATCH_UP", "keep queueing")}
    _, beat = overrun_pileup(days).axes
    marks = [tuple(line.get_markevery()) for line in beat.lines]  # type: ignore[arg-type]
    assert len(set(marks)) == 3


def test_listener_latency_and_wheel_costs_draw_a_line_per_series() -> None:
    (ax,) = listener_latency([0, 1], [1.0, 1.0], [2.0, 50.0]).axes
    assert len(ax.lines) == 2
    insert, pop = wheel_costs([1, 10], {"heap": [1, 1], "wheel": [2, 2]}, {"heap": [1, 2]}).axes
    assert (len(insert.lines), len(pop.lines)) == (2, 1)


def test_wheel_costs_label_a_cost_axis_under_a_decade_in_plain_numbers() -> None:
    """Every tenth is labelled on an axis under a decade: with 0.2, 0.3, 0.4 and 0.6
    only, the wheel's insert line (0.72 to 0.78 µs in a run) lay between 0.6 and 1,
    unlabelled.  Over one to two decades (the pop axis), 2, 3, 4 and 6 as well: the
    heap's and the wheel's pop costs meet between 1 and 10."""
    figure = wheel_costs(
        [1_000, 10_000, 100_000],
        {"heap": [0.21, 0.26, 0.23], "wheel": [0.72, 0.75, 0.78]},
        {"heap": [0.28, 0.42, 1.4], "wheel": [8.2, 2.7, 1.95]},
    )
    figure.canvas.draw()
    insert, pop = figure.axes
    labels = [label.get_text() for label in insert.get_yticklabels(minor=True)]
    assert [text for text in labels if text][:7] == [
        "0.2",
        "0.3",
        "0.4",
        "0.5",
        "0.6",
        "0.7",
        "0.8",
    ]
    pop_labels = [label.get_text() for label in pop.get_yticklabels(minor=True)]
    assert {"2", "3", "4", "6"} <= set(pop_labels)  # not 2x10^0
    assert "1" in [label.get_text() for label in pop.get_yticklabels()]


def test_wheel_costs_end_each_cost_axis_on_labelled_ticks_past_its_lines() -> None:
    """The wheel's inserts at 1.05 to 1.6 µs (a busier machine) drew the insert axis up
    to 1.74, past 1 with no tick labelled (the next, 2, out of view): the wheel's line
    lay above the last number said.  It now runs from the labelled tick at or under its
    lowest cost to the one at or over its highest.  The pop axis, 0.37 to 66.4, cannot
    (0.3 to 70 labels no 70, 0.3 to 100 only the powers): it keeps matplotlib's limits
    and the 2 where the two lines meet."""
    figure = wheel_costs(
        [100, 1_000, 10_000, 100_000],
        {"heap": [0.31, 0.29, 0.36, 0.45], "wheel": [1.15, 1.05, 1.2, 1.6]},
        {"heap": [0.37, 0.41, 0.55, 2.3], "wheel": [66.4, 8.3, 2.1, 1.98]},
    )
    figure.canvas.draw()
    insert, pop = figure.axes
    bottom, top = insert.get_ylim()
    said = [
        tick
        for tick, label in zip(
            [*insert.get_yticks(), *insert.get_yticks(minor=True)],
            [*insert.get_yticklabels(), *insert.get_yticklabels(minor=True)],
            strict=True,
        )
        if label.get_text() and bottom * 0.999 <= tick <= top * 1.001
    ]
    assert min(said) <= 0.29 and max(said) >= 1.6, (insert.get_ylim(), said)
    assert "2" in [label.get_text() for label in pop.get_yticklabels(minor=True)]


def test_the_polling_trade_off_draws_each_timer_s_spread_and_claims_only_the_wake_ups() -> None:
    """Its title said "Condition.wait pays neither": on a busy machine the real timer's
    median lateness came out above a 1 ms poll's in two runs of nine.  The bars show
    the middle half of each timer's runs; the title claims what is a count."""
    figure = polling_tradeoff(
        [("Condition.wait", 0.0, 1.7), ("poll 1 ms", 880.0, 1.2)], [(0.3, 3.4), (0.7, 2.9)]
    )
    (ax,) = figure.axes
    bars = [
        np.asarray(c.get_segments()).tolist()
        for c in ax.collections
        if isinstance(c, LineCollection)  # an error bar; a scatter's is a PathCollection
    ]
    assert np.allclose(bars, [[[[0.0, 0.3], [0.0, 3.4]]], [[[880.0, 0.7], [880.0, 2.9]]]])
    title = ax.get_title(loc="left")
    assert "wakes only when due" in title and "neither" not in title
    assert ax.get_ylabel().endswith("(ms; bar: middle half)")
