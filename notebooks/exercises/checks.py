"""The checks behind notebook 07's exercises, run against the learner's functions.

Where the library has the real thing, the checks compare against it: the cron field
parser against lldsched's own parser, the overrun rule against ``FixedRate.next_run``.
"""

from __future__ import annotations

import heapq
import inspect
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lldsched import ExecutionRecord, FixedRate, OverrunPolicy
from lldsched.schedules.cron.parse import parse

Entry = tuple[float, int, int, int, str]
SOLUTIONS = Path(__file__).resolve().parent / "solutions"


def _run(checks: list[tuple[str, Callable[[], None]]]) -> None:
    passed = 0
    for description, check in checks:
        try:
            check()
        except AssertionError as failure:
            print(f"✗ {description}: {failure}")
        except Exception as error:  # the learner's code raised: report it, carry on
            print(f"✗ {description}: raised {type(error).__name__}: {error}")
        else:
            passed += 1
            print(f"✓ {description}")
    print(f"{passed} of {len(checks)} checks pass")


def show_solution(name: str) -> None:
    """Print the reference answer for ``name``: "pop_due", "parse_field" or "next_slot"."""
    print((SOLUTIONS / f"{name}.py").read_text())


# -- exercise 1: pop_due ----------------------------------------------------------------


def _heap(entries: list[Entry]) -> list[Entry]:
    heap = list(entries)
    heapq.heapify(heap)
    return heap


def check_pop_due(pop_due: Callable[[list[Entry], float, dict[str, int]], list[Entry]]) -> None:
    """``pop_due(heap, now, generations)``: pop and return the live entries due at or before
    ``now`` in heap order; an entry is live when ``generations[name]`` equals its generation."""

    def order() -> None:
        heap = _heap(
            [(10.0, 1, 1, 0, "report"), (10.0, 0, 2, 0, "alert"), (5.0, 2, 3, 0, "cleanup")]
        )
        got = [e[4] for e in pop_due(heap, 10.0, {"report": 0, "alert": 0, "cleanup": 0})]
        assert got == ["cleanup", "alert", "report"], f"expected cleanup, alert, report; got {got}"

    def arrival() -> None:
        heap = _heap([(7.0, 1, 2, 0, "second"), (7.0, 1, 1, 0, "first"), (7.0, 1, 3, 0, "third")])
        got = [e[4] for e in pop_due(heap, 7.0, {"first": 0, "second": 0, "third": 0})]
        assert got == ["first", "second", "third"], (
            f"equal due and priority keep arrival; got {got}"
        )

    def later_stay() -> None:
        heap = _heap([(1.0, 1, 1, 0, "now"), (9.0, 1, 2, 0, "later")])
        got = [e[4] for e in pop_due(heap, 5.0, {"now": 0, "later": 0})]
        assert got == ["now"], f"only entries due at or before now; got {got}"
        assert heap == [(9.0, 1, 2, 0, "later")], (
            f"the later entry stays in the heap; heap is {heap}"
        )

    def tombstones() -> None:
        heap = _heap([(1.0, 1, 1, 0, "cancelled"), (2.0, 1, 2, 3, "live"), (3.0, 1, 3, 2, "stale")])
        got = [e[4] for e in pop_due(heap, 5.0, {"cancelled": 1, "live": 3, "stale": 3})]
        assert got == ["live"], f"entries whose generation is not current are dropped; got {got}"
        assert heap == [], f"dropped tombstones leave the heap too; heap is {heap}"

    def empty() -> None:
        assert pop_due([], 5.0, {}) == [], "an empty heap gives nothing"

    def random_heaps() -> None:
        rng = random.Random(7)
        for _ in range(200):
            names = [f"t{n}" for n in range(rng.randint(0, 30))]
            generations = {name: rng.randint(0, 2) for name in names}
            entries = [(float(rng.randint(0, 20)), rng.randint(0, 2), n, rng.randint(0, 2), name)
                       for n, name in enumerate(names)]  # fmt: skip
            now = float(rng.randint(0, 20))
            heap = _heap(entries)
            got = pop_due(heap, now, generations)
            expected = sorted(e for e in entries if e[0] <= now and e[3] == generations[e[4]])
            assert got == expected, (
                f"heap {sorted(entries)} at now={now}: expected {expected}, got {got}"
            )
            assert all(e[0] > now or e[3] != generations[e[4]] for e in heap), "due entries remain"
            assert all(heap[i] <= heap[c] for i in range(len(heap)) for c in (2 * i + 1, 2 * i + 2)
                       if c < len(heap)), "what remains is no longer a valid heap"  # fmt: skip

    _run([
        ("pops in (due, priority, sequence) order", order),
        ("equal due and priority keep arrival order", arrival),
        ("leaves entries that are not due yet", later_stay),
        ("drops tombstones", tombstones),
        ("handles an empty heap", empty),
        ("agrees with the rules on 200 random heaps", random_heaps),
    ])  # fmt: skip


# -- exercise 2: a cron field --------------------------------------------------------------


def _reference_minutes(text: str) -> set[int]:
    return set(parse(f"{text} * * * *").minutes)


def _reference_hours(text: str) -> set[int]:
    return set(parse(f"0 {text} * * *").hours)


def check_parse_field(parse_field: Callable[[str, int, int], set[int]]) -> None:
    """``parse_field(text, low, high)``: the set of values one numeric cron field allows, or
    ``ValueError`` for text cron rejects.  Compared against lldsched's own parser."""
    minute_cases = ["*", "0", "59", "5-10", "7-7", "*/15", "10-50/20", "50/3", "1,5,9",
                    "1-3,20-22/2,40", "0-59/59"]  # fmt: skip
    hour_cases = ["*", "9-17", "*/6", "12", "9-17/2,22"]

    def compare(
        cases: list[str], low: int, high: int, reference: Callable[[str], set[int]]
    ) -> None:
        for text in cases:
            got = parse_field(text, low, high)
            expected = reference(text)
            assert set(got) == expected, (
                f"{text!r} in {low}-{high}: expected {sorted(expected)}, got {sorted(got)}"
            )

    def rejects() -> None:
        for text in ["60", "5-1", "*/0", "1,,2", "", "a", "-1", "1-", "*/"]:
            try:
                parse_field(text, 0, 59)
            except ValueError:
                continue
            raise AssertionError(f"{text!r} should raise ValueError")

    _run([
        ("minute fields: values, ranges, steps, lists",
         lambda: compare(minute_cases, 0, 59, _reference_minutes)),
        ("hour fields", lambda: compare(hour_cases, 0, 23, _reference_hours)),
        ("rejects bad text with ValueError", rejects),
    ])  # fmt: skip


# -- exercise 3: the overrun rule ------------------------------------------------------------


def check_next_slot(next_slot: Callable[[float, float, float, str], float]) -> None:
    """``next_slot(slot, period, finished, policy)``: the next due instant of a fixed-rate task
    whose run for ``slot`` finished at ``finished``; ``policy`` is "skip" or "catch_up".
    Compared against ``FixedRate.next_run``."""

    def reference(slot: float, period: float, finished: float, policy: str) -> float:
        schedule = FixedRate(
            period, OverrunPolicy.SKIP if policy == "skip" else OverrunPolicy.CATCH_UP
        )
        record = ExecutionRecord("t", "t", 1, slot, slot, 0, slot, finished, True)
        return schedule.next_run(record, finished)

    def named(
        slot: float, period: float, finished: float, policy: str, expected: float
    ) -> Callable[[], None]:
        def check() -> None:
            got = next_slot(slot, period, finished, policy)
            call = f"next_slot({slot}, {period}, {finished}, {policy!r})"
            assert got == expected, f"{call}: expected {expected}, got {got}"

        return check

    def random_cases() -> None:
        rng = random.Random(3)
        for _ in range(500):
            slot, period = float(rng.randint(0, 1000)), float(rng.randint(1, 120))
            finished = slot + rng.choice(
                [0.0, period / 2, period, period * rng.randint(1, 5) + 0.5]
            )
            policy = rng.choice(["skip", "catch_up"])
            expected = reference(slot, period, finished, policy)
            got = next_slot(slot, period, finished, policy)
            call = f"next_slot({slot}, {period}, {finished}, {policy!r})"
            assert abs(got - expected) < 1e-9, f"{call}: expected {expected}, got {got}"

    _run([
        ("a short run: the next slot on the grid", named(0, 60, 5, "skip", 60)),
        ("skip after a 150 s run on a 60 s period -> 180", named(0, 60, 150, "skip", 180)),
        ("catch-up after the same run -> 60, due at once", named(0, 60, 150, "catch_up", 60)),
        ("a slot exactly at the finish is not missed", named(0, 60, 120, "skip", 120)),
        ("agrees with FixedRate.next_run on 500 random runs", random_cases),
    ])  # fmt: skip


def source_of(function: Callable[..., Any]) -> str:
    """The source of a function (for printing an answer next to the reference)."""
    return inspect.getsource(function)
