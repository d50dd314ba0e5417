"""The benchmarks' method: interleaved rounds, per-round spreads, and run_all's verdicts.

``benchmarks/paired_trials.py`` decides the order trials run in and how a ratio's
rounds are summed up; ``run_all.py`` turns a median and its lowest and highest round
into one row and a verdict that says whether every round agreed with it.  Nothing here
times anything.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def modules() -> Iterator[tuple[ModuleType, ModuleType]]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import paired_trials
        import run_all

        yield paired_trials, run_all
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_rounds_alternate_the_order_after_one_discarded_warm_up(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    paired_trials, _ = modules
    calls: list[str] = []

    def side(name: str) -> object:
        def run() -> str:
            calls.append(name)
            return f"{name}{len(calls)}"

        return run

    results = paired_trials.interleaved({"a": side("a"), "b": side("b")}, rounds=3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert results == {"a": ["a3", "a6", "a7"], "b": ["b4", "b5", "b8"]}


def test_an_empty_warm_up_runs_nothing_before_the_rounds(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    paired_trials, _ = modules
    calls: list[str] = []

    def run() -> float:
        calls.append("a")
        return 1.0

    results = paired_trials.interleaved({"a": run}, rounds=2, warmup={})
    assert calls == ["a", "a"]
    assert results == {"a": [1.0, 1.0]}


def test_a_spread_gives_the_median_the_extremes_and_the_middle_half(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    paired_trials, _ = modules
    spread = paired_trials.Spread.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (spread.median, spread.low, spread.high) == (3.0, 1.0, 5.0)
    assert (spread.q1, spread.q3, spread.count) == (2.0, 4.0, 5)
    assert spread.text() == "3.00x (1.00..5.00, middle half 2.00..4.00, 5 rounds)"
    assert paired_trials.ratios([6.0, 2.0], [3.0, 4.0]) == [2.0, 0.5]


def test_a_spread_of_nothing_is_refused(modules: tuple[ModuleType, ModuleType]) -> None:
    paired_trials, _ = modules
    with pytest.raises(ValueError, match="none"):
        paired_trials.Spread.of([])


def _payload(
    paired_trials: ModuleType, median: float, low: float, high: float
) -> dict[str, object]:
    label = "x / peer (x)"
    figures = paired_trials.Spread(median, low, high, low, high, 5).figures(label)
    return {"results": figures, "goals": {label: [">=", 3.0]}}


@pytest.mark.parametrize(
    ("median", "low", "high", "verdict"),
    [
        (3.5, 3.1, 4.0, "PASS (every round)"),
        (3.2, 2.5, 4.0, "PASS (within noise: some rounds each way)"),
        (2.8, 2.5, 3.4, "FAIL (within noise: some rounds each way)"),
        (2.0, 1.5, 2.5, "FAIL (no round)"),
    ],
)
def test_run_all_folds_the_rounds_into_the_row_and_qualifies_the_verdict(
    modules: tuple[ModuleType, ModuleType], median: float, low: float, high: float, verdict: str
) -> None:
    paired_trials, run_all = modules
    rows = run_all.rows_for("bench", _payload(paired_trials, median, low, high))
    assert [(row.headline, row.verdict) for row in rows] == [("x / peer (x)", verdict)]
    assert rows[0].measured == f"{median:.3g} ({low:.3g}..{high:.3g})"


def test_a_figure_without_rounds_keeps_its_plain_verdict(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    _, run_all = modules
    payload = {"results": {"year (s)": 1.5}, "goals": {"year (s)": ["<", 2.0]}}
    rows = run_all.rows_for("sim", payload)
    assert [(row.measured, row.verdict) for row in rows] == [("1.5", "PASS")]


def test_the_cpu_time_twin_of_a_label_keeps_its_unit(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    paired_trials, _ = modules
    assert paired_trials.in_cpu_time("sim vs SimPy (x)") == "sim vs SimPy in CPU time (x)"
    assert paired_trials.in_cpu_time("rounds") == "rounds in CPU time"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda p: p.stem)
def test_every_benchmark_module_has_the_main_run_all_calls(path: Path) -> None:
    """``run_all.py`` runs every ``bench_*.py`` through ``main() -> dict[str, float]``: a
    module without it crashed ``make bench`` (``bench_store_memory`` did), and one that
    returned nested figures had them flattened into labels without units (``bench_cron``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mains = [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"
    ]
    assert mains, f"{path.name} has no top-level main()"
    assert mains[0].returns is not None
    assert ast.unparse(mains[0].returns) == "dict[str, float]", path.name
