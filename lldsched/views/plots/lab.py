"""The design lab's plots (:mod:`lldsched.lab`): each takes the plain numbers an
experiment measured (never a lab or runtime object) and returns a Figure.

* :func:`polling_tradeoff`: idle wake-ups against wake lateness, one point per timer;
* :func:`cancel_cost`: microseconds per cancel against heap size, tombstone and removal;
* :func:`overrun_pileup`: the job's and the heartbeat's lateness over a simulated day;
* :func:`listener_latency`: how late runs start against a listener's delay;
* :func:`wheel_costs`: insert and pop cost per timer, heap and timing wheel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.ticker import LogFormatter

from lldsched.views.plots._base import (
    Axes,
    Figure,
    PlotFigure,
    write_figure_title,
    write_title,
)
from lldsched.views.plots.palette import series

__all__ = ["cancel_cost", "listener_latency", "overrun_pileup", "polling_tradeoff", "wheel_costs"]


class _PlainLog(LogFormatter):
    """Labels the ticks matplotlib's log formatter would label, as plain numbers: a cost
    axis spanning less than a decade labels its minor ticks too, and 0.6 reads at a
    glance where 6x10^-1 does not."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


_SAID = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 6))
"""The multiples of a power of ten :class:`_PlainLog` labels, by how many decades an axis
spans: every one under a decade, these five up to two (past that, the powers alone)."""


def _on_ticks(ax: Axes, values: Sequence[float]) -> None:
    """End a log cost axis on labelled ticks at or past the lowest and the highest of
    ``values`` (the positive ones): the first of :data:`_SAID`'s multiples whose ends
    the axis's formatters label once the axis spans them.  Matplotlib's margin ended the
    insert axis at 1.74 over a wheel at 1.05 to 1.6 µs, the tick past 1 (2) out of view:
    the line lay above the last number said.  Where neither does (0.37 to 66 µs: 0.3 to
    70 labels no 70, 0.3 to 100 only the powers), matplotlib's limits are kept, and its
    labels between the powers (the 2 where the pop costs meet) with them."""
    costs = [value for value in values if value > 0 and math.isfinite(value)]
    if not costs:
        return
    drawn = ax.get_ylim()
    for said in _SAID:
        ends = (_said_under(min(costs), said), _said_over(max(costs), said))
        ax.set_ylim(*ends)
        formatters = (ax.yaxis.get_major_formatter(), ax.yaxis.get_minor_formatter())
        for formatter in formatters:
            formatter.set_locs([])  # which multiples it labels, by the span (the locs unread)
        if all(any(formatter(end) for formatter in formatters) for end in ends):
            return
    ax.set_ylim(*drawn)


def _said_under(value: float, said: Sequence[int]) -> float:
    """The largest of ``said`` times a power of ten at most ``value`` (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    return max(m for m in said if m <= value / power * (1 + 1e-9)) * power


def _said_over(value: float, said: Sequence[int]) -> float:
    """The smallest of ``said`` times a power of ten (or the next power) at least
    ``value`` (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    return min(m for m in (*said, 10) if m >= value / power * (1 - 1e-9)) * power


_MARK_EVERY = 0.08
"""How far apart a step curve of many runs is marked, as a fraction of its length:
about a dozen marks (its line style tells it too), not one a run."""


def _sparse(index: int) -> tuple[float, float]:
    """The marks of the ``index``-th series: every :data:`_MARK_EVERY`, each series
    starting a third of a step after the one before, so two series drawn along the
    same values (the heartbeat on time under SKIP and CATCH_UP) both show their marks
    instead of the later one's covering the earlier one's."""
    return (index * _MARK_EVERY / 3 % _MARK_EVERY, _MARK_EVERY)


def _figure(width: float = 6.4, height: float = 3.6, *, columns: int = 1) -> PlotFigure:
    figure = PlotFigure(figsize=(width, height), layout="constrained")
    figure.subplots(1, columns)
    return figure


def polling_tradeoff(
    points: Sequence[tuple[str, float, float]],
    spread: Sequence[tuple[float, float]] | None = None,
) -> Figure:
    """``(label, wake-ups per idle second, lateness in ms)`` per timer strategy, and, in
    ``spread``, each one's ``(low, high)`` lateness (the middle half of its runs),
    drawn as a bar: on a busy machine the real timer's and a 1 ms poll's medians can
    come out either way round (docs/decisions/teaching-kit.md, "The lab states only what holds
    under load"), so the title claims only the wake-ups."""
    figure = _figure()
    (ax,) = figure.axes
    for index, (label, wakeups, lateness) in enumerate(points):
        marker = "*" if wakeups == 0 else "o"
        colour = f"C{index}"  # the colour scatter would take by itself
        ax.scatter(
            [wakeups], [lateness], s=120 if marker == "*" else 50, marker=marker, color=colour
        )
        if spread is not None:
            low, high = spread[index]
            ax.errorbar(
                [wakeups],
                [lateness],
                yerr=[[lateness - low], [high - lateness]],
                fmt="none",
                ecolor=colour,
                capsize=3,
            )
        ax.annotate(label, (wakeups, lateness), textcoords="offset points", xytext=(6, 6))
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("log")
    ax.set_xlim(-0.5, max(w for _, w, _ in points) * 3)
    low, high = ax.get_ylim()
    ax.set_ylim(low, high * 3)  # room for the labels under the title
    ax.set_xlabel("timer wake-ups per idle second")
    bars = "; bar: middle half" if spread is not None else ""
    ax.set_ylabel(f"median run due in 20-120 ms\nstarts late by (ms{bars})")
    write_title(
        ax, "Polling trades idle wake-ups for lateness;\nCondition.wait wakes only when due"
    )
    ax.grid(True, which="major", alpha=0.3)
    return figure


def cancel_cost(
    sizes: Sequence[int], tombstone_us: Sequence[float], remove_us: Sequence[float]
) -> Figure:
    """Microseconds per cancel against heap size, both ways (log-log)."""
    figure = _figure()
    (ax,) = figure.axes
    ax.plot(sizes, remove_us, label="list.remove + heapify: O(n)", **series(0))
    ax.plot(sizes, tombstone_us, label="tombstone: O(1)", **series(1))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("entries in the heap")
    ax.set_ylabel("CPU per cancel (µs)")
    write_title(ax, "Cancel cost against heap size")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    return figure


def overrun_pileup(
    days: Mapping[str, tuple[Sequence[tuple[float, float]], Sequence[tuple[float, float]]]],
) -> Figure:
    """Per strategy: the job's and the heartbeat's ``(started, lateness)`` runs, seconds
    from the start of the day; drawn in hours."""
    figure = _figure(9.6, 3.6, columns=2)
    job_ax, beat_ax = figure.axes
    for index, (strategy, (job, heartbeat)) in enumerate(days.items()):
        for ax, runs in ((job_ax, job), (beat_ax, heartbeat)):
            ax.plot(
                [start / 3600 for start, _ in runs],
                [late / 3600 for _, late in runs],
                label=strategy,
                drawstyle="steps-post",
                markevery=_sparse(index),
                **series(index),
            )
    write_title(job_ax, "the job (every 60 s, runs 150 s)", panel=True)
    write_title(beat_ax, "the heartbeat beside it (every 10 s)", panel=True)
    for ax in (job_ax, beat_ax):
        ax.set_xlabel("hours into the simulated day")
        ax.set_ylabel("a run starts late by (h)")
        ax.grid(True, alpha=0.3)
    job_ax.legend()
    write_figure_title(figure, "An overrunning fixed-rate job on two workers, one simulated day")
    return figure


def listener_latency(
    delays_ms: Sequence[float], off_lock_ms: Sequence[float], under_lock_ms: Sequence[float]
) -> Figure:
    """Median lateness of a burst of runs against the listener's delay per event."""
    figure = _figure()
    (ax,) = figure.axes
    ax.plot(delays_ms, under_lock_ms, label="listener called under the lock", **series(0))
    ax.plot(delays_ms, off_lock_ms, label="listener on the dispatcher's thread", **series(1))
    ax.set_xlabel("the listener's delay per event (ms)")
    ax.set_ylabel("median run starts late by (ms)")
    write_title(ax, "Dispatch latency against listener delay\n(20 runs due together)")
    ax.legend()
    ax.grid(True, alpha=0.3)
    return figure


def wheel_costs(
    sizes: Sequence[int],
    insert: Mapping[str, Sequence[float]],
    pop: Mapping[str, Sequence[float]],
) -> Figure:
    """CPU per timer to insert and to pop, per structure (``{"heap": [...], ...}``),
    log-log, each cost axis ending on a labelled tick past its lines (:func:`_on_ticks`)."""
    figure = _figure(9.6, 3.6, columns=2)
    insert_ax, pop_ax = figure.axes
    for ax, costs, what in ((insert_ax, insert, "insert"), (pop_ax, pop, "pop every timer")):
        for index, (name, values) in enumerate(costs.items()):
            ax.plot(sizes, values, label=name, **series(index))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_PlainLog())
        ax.yaxis.set_minor_formatter(_PlainLog(labelOnlyBase=False, minor_thresholds=(2, 1)))
        _on_ticks(ax, [value for values in costs.values() for value in values])
        ax.set_xlabel("timers (due over the next 60 s)")
        ax.set_ylabel("CPU per timer (µs)")
        write_title(ax, what, panel=True)
        ax.grid(True, alpha=0.3)
        ax.legend()
    write_figure_title(figure, "The real heap against a hierarchical timing wheel (1 ms ticks)")
    return figure
