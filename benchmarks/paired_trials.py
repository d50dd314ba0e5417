"""Interleaved trials and per-round ratios: how a benchmark times lldsched against a peer.

A ratio read from one timing of each side, or from the best of each side's own
series, moves with whatever else the shared machine does in between: the simulation's
ratio to SimPy once read 1.44x and 2.32x a minute apart.  The benchmarks that state a
goal as a ratio therefore

* run every side once, discarded, as a warm-up (imports, caches, the allocator's
  arenas, the peer's lazily built parts);
* then run the sides in rounds, one of each per round, reversing the order every
  other round (A B, B A, A B, ...), so the two sides of a ratio are timed seconds
  apart and neither always runs first (after the other's garbage, on a warmer or a
  colder cache);
* collect the garbage before each timed trial, on every side alike;
* take one ratio per round and report the median of those ratios with their
  spread (lowest, highest, and the quartiles);
* time each trial twice over (:class:`Stopwatch`): in wall time, which the goals
  are judged on, and in CPU time of the whole process, every thread.  The first
  counts the time the host gave to other processes; the second does not, so on a
  busy host it is the better guide to what a quiet one would show (it still moves
  with the caches other processes share, and it leaves out the waits that make part
  of a threaded scheduler's wall time).

:class:`Spread` turns the per-round ratios into a printed line and into the figures
``main()`` returns: the headline (the median, which the goal is judged on) and, under
the same label with :data:`LOW` and :data:`HIGH` appended, the lowest and highest
round.  ``run_all.py`` folds those two into the headline's row and says whether the
goal is met (or missed) in every round or only at the median, within the noise.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

LOW = " [lowest round]"
HIGH = " [highest round]"


def in_cpu_time(label: str) -> str:
    """``"a / b (x)"`` -> ``"a / b in CPU time (x)"``: the label of a figure's CPU-time twin."""
    head, paren, unit = label.rpartition(" (")
    return f"{head} in CPU time{paren}{unit}" if paren else f"{label} in CPU time"


class Lap(NamedTuple):
    """Wall seconds and CPU seconds (every thread of the process) of a stretch of work."""

    wall: float
    cpu: float


class Stopwatch:
    """Started when made; :meth:`lap` reads both clocks since then."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self) -> Lap:
        return Lap(wall=time.perf_counter() - self._wall, cpu=time.process_time() - self._cpu)


def interleaved(
    sides: Mapping[str, Callable[[], Any]],
    *,
    rounds: int,
    warmup: Mapping[str, Callable[[], object]] | None = None,
) -> dict[str, list[Any]]:
    """Each side's results, one per round, in round order (index i of every list is round i);
    the caller names their types (the sides of one benchmark return different things).

    ``warmup`` (default: ``sides`` themselves; ``{}`` for none, when the caller warmed
    up already) runs once, in order, and is discarded.
    Before every call the garbage is collected, so no side pays for the previous one's.
    """
    for warm in (sides if warmup is None else warmup).values():
        gc.collect()
        warm()
    results: dict[str, list[Any]] = {name: [] for name in sides}
    names = list(sides)
    for index in range(rounds):
        for name in names if index % 2 == 0 else reversed(names):
            gc.collect()
            results[name].append(sides[name]())
    return results


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Round by round, ``numerators[i] / denominators[i]``."""
    return [a / b for a, b in zip(numerators, denominators, strict=True)]


def lap_ratios(numerators: Sequence[Lap], denominators: Sequence[Lap]) -> tuple[Spread, Spread]:
    """The per-round ratios of two sides' laps, in wall time and in CPU time."""
    wall = ratios([lap.wall for lap in numerators], [lap.wall for lap in denominators])
    cpu = ratios([lap.cpu for lap in numerators], [lap.cpu for lap in denominators])
    return Spread.of(wall), Spread.of(cpu)


@dataclass(frozen=True)
class Spread:
    """The median of some values (per-round ratios, or seconds) and how far they spread."""

    median: float
    low: float
    high: float
    q1: float
    q3: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("Spread.of needs at least one value, got none")
        ordered = sorted(values)
        if len(ordered) == 1:
            q1 = q3 = ordered[0]
        else:
            q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        return cls(
            median=statistics.median(ordered),
            low=ordered[0],
            high=ordered[-1],
            q1=q1,
            q3=q3,
            count=len(ordered),
        )

    def text(self, unit: str = "x", digits: int = 2) -> str:
        """``3.10x (2.60..3.50, middle half 2.90..3.30, 7 rounds)``."""
        d = digits
        return (
            f"{self.median:.{d}f}{unit} ({self.low:.{d}f}..{self.high:.{d}f}, "
            f"middle half {self.q1:.{d}f}..{self.q3:.{d}f}, {self.count} rounds)"
        )

    @staticmethod
    def both(label: str, wall: Spread, cpu: Spread) -> dict[str, float]:
        """The figures of a wall-time headline and of its CPU-time twin."""
        return {**wall.figures(label), **cpu.figures(in_cpu_time(label))}

    def figures(self, label: str) -> dict[str, float]:
        """The headline and its lowest and highest round, as ``main()`` returns them."""
        return {label: self.median, label + LOW: self.low, label + HIGH: self.high}
