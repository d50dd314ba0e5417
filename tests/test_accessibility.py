"""What a colour-blind reader, a greyscale print and a screen reader get from the views.

* Colours that carry meaning (:mod:`lldsched.views.plots.palette`) are told apart as
  seen with normal vision and as simulated for protanopia, deuteranopia and tritanopia
  (Machado, Oliveira and Fernandes 2009, full severity, applied in linear RGB; the
  matrices are the paper's), and in greyscale (CIELAB L*), or by a hatch or a marker.
* Tasks of a small chart never share a hue.
* Every chart has a title and labelled axes, and says so in words (its text form).
* Every control of the panel and the player has a visible label and a tooltip.
* The notebooks' headings go down one level at a time, their pictures have alt text,
  and a colour they name comes with a shape.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pytest
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.figure import Figure
from PIL import Image

from lldsched.sim.overrun import ALL_POLICIES, simulate_overrun
from lldsched.sim.scenario import build_scenario
from lldsched.views.frames import to_frame
from lldsched.views.plots import (
    PlotFigure,
    cluster_timeline,
    fencing_comparison,
    gantt,
    lateness_distribution,
    lateness_over_time,
    overrun_comparison,
    task_colours,
    utilisation_plot,
)
from lldsched.views.plots.lab import (
    cancel_cost,
    listener_latency,
    overrun_pileup,
    polling_tradeoff,
    wheel_costs,
)
from lldsched.views.plots.palette import (
    ACCENT,
    LEASE,
    LINES,
    MIN_DISTANCE,
    MIN_LIGHTNESS,
    SERIES,
    STATE_ALPHA,
    STATES,
    WRITES,
    Cue,
    contrast,
    text_on,
)
from tests.test_cluster_views import FENCED, UNFENCED
from tests.test_plots import TEN_RUNS

ROOT = Path(__file__).resolve().parent.parent

# -- colour vision ---------------------------------------------------------------------

_VISIONS = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}  # fmt: skip
_SRGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375],
     [0.2126729, 0.7151522, 0.0721750],
     [0.0193339, 0.1191920, 0.9503041]]
)  # fmt: skip
_WHITE = np.array([0.95047, 1.0, 1.08883])  # D65


def _linear(colour: Any, alpha: float = 1.0) -> np.ndarray[Any, Any]:
    """``colour`` in linear RGB, laid at ``alpha`` over a white page."""
    rgb = np.array(to_rgb(colour))
    rgb = alpha * rgb + (1 - alpha)  # compositing as the Agg canvas does, in sRGB
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    xyz = (_SRGB_TO_XYZ @ np.clip(linear, 0.0, 1.0)) / _WHITE
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (841 / 108) * xyz + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(colour: Any, vision: str, alpha: float = 1.0) -> np.ndarray[Any, Any]:
    """``colour`` in CIELAB as a reader with ``vision`` sees it."""
    return _lab(_VISIONS[vision] @ _linear(colour, alpha))


def distance(a: Any, b: Any, vision: str, alpha: float = 1.0) -> float:
    return float(np.linalg.norm(seen(a, vision, alpha) - seen(b, vision, alpha)))


def lightness(colour: Any, alpha: float = 1.0) -> float:
    """CIELAB L* of ``colour`` printed in greyscale (its luminance kept)."""
    return float(seen(colour, "normal", alpha)[0])


def too_close(a: Any, b: Any, alpha: float = 1.0) -> list[str]:
    """The visions (and "greyscale") in which ``a`` and ``b`` are too close to tell apart."""
    close = [v for v in _VISIONS if distance(a, b, v, alpha) < MIN_DISTANCE]
    if abs(lightness(a, alpha) - lightness(b, alpha)) < MIN_LIGHTNESS:
        close.append("greyscale")
    return close


def test_the_simulation_confuses_what_a_deuteranope_confuses() -> None:
    # matplotlib's red and green: far apart to a normal eye, close to a deuteranope's,
    # and one grey in print (the old cluster palette had such a pair: duplicate/lease).
    red, green = "#d62728", "#2ca02c"
    assert distance(red, green, "normal") > 4 * MIN_DISTANCE
    assert distance(red, green, "deuteranopia") < MIN_DISTANCE
    assert too_close(red, green) == ["deuteranopia", "greyscale"]
    # Grey stays grey in every vision (each matrix's rows sum to 1).
    for vision in _VISIONS:
        assert seen("0.5", vision) == pytest.approx(seen("0.5", "normal"), abs=0.05)


def _told_apart(cues: dict[str, Cue], alpha: float = 1.0) -> list[str]:
    """The pairs of ``cues`` that only colour tells apart, with the visions where it fails."""
    failing = []
    for (one, a), (other, b) in itertools.combinations(cues.items(), 2):
        if (a.hatch, a.marker) != (b.hatch, b.marker):
            continue  # a hatch or a marker says it without colour
        close = too_close(a.colour, b.colour, alpha)
        if close:
            failing.append(f"{one}/{other}: {close}")
    return failing


def test_a_cluster_runs_writes_are_told_apart_in_any_vision_and_in_print() -> None:
    assert _told_apart(WRITES) == []


def test_a_cluster_nodes_states_are_told_apart_in_any_vision_and_in_print() -> None:
    assert _told_apart(STATES, alpha=STATE_ALPHA) == []
    # The lease is a thin bar under a run: apart from the run's colours in any vision.
    for write in WRITES.values():
        assert [v for v in _VISIONS if distance(LEASE.colour, write.colour, v)
                < MIN_DISTANCE] == [], write  # fmt: skip


def test_compared_series_are_apart_in_any_vision_and_each_has_a_hatch_for_print() -> None:
    for a, b in itertools.combinations(SERIES, 2):
        assert [v for v in _VISIONS if distance(a.colour, b.colour, v) < MIN_DISTANCE] == []
    assert len({cue.hatch for cue in SERIES}) == len(SERIES)
    assert too_close(SERIES[0].colour, SERIES[1].colour) == []  # two: even in print
    assert len(set(LINES)) == len(LINES)  # each compared line its own style and marker


def test_the_accent_stands_apart_from_black_and_the_greys_in_any_vision() -> None:
    for grey in ("black", "0.15", "0.5", "0.75", "white"):
        assert too_close(ACCENT, grey) in ([], ["greyscale"]), grey
    assert too_close(ACCENT, "black") == []
    assert contrast(ACCENT, "white") < 4.5  # hence never the colour of text


# -- a task's colour -------------------------------------------------------------------


def _hue(colour: tuple[float, ...]) -> int:
    cmap = mpl.colormaps["tab20"]
    return next(i for i in range(20) if tuple(cmap(i)) == pytest.approx(colour)) // 2


def test_the_tasks_of_a_small_chart_never_share_a_hue() -> None:
    # backup and heartbeat hash to the dark and the light cyan: one hue, told apart by
    # a shade only, in the plots' own test chart.
    names = ["backup", "report", "import", "heartbeat"]
    colours = task_colours(names)
    assert len({_hue(colours[name]) for name in names}) == 4
    for size in range(2, 11):
        some = [f"task-{n}" for n in range(size)]
        chosen = task_colours(some)
        assert len({_hue(chosen[name]) for name in some}) == size, size
    # Past ten the shades are used too, every colour still its own.
    twenty = [f"task-{n}" for n in range(20)]
    assert len(set(task_colours(twenty).values())) == 20


def test_a_tasks_colour_is_its_names_unless_a_task_before_it_took_its_hue() -> None:
    alone = task_colours(["heartbeat"])["heartbeat"]
    assert task_colours(["zeta", "heartbeat", "import"])["heartbeat"] == alone
    # backup (sorted first) keeps its light cyan; heartbeat, whose name wants the dark
    # one, takes the next hue nobody took: a hue of its own beats a colour of its own.
    beside = task_colours(["backup", "heartbeat"])
    assert beside["backup"] == task_colours(["backup"])["backup"]
    assert beside["heartbeat"] != alone and _hue(alone) == _hue(beside["backup"])


# -- figures in words ------------------------------------------------------------------


def _ten() -> Any:
    return to_frame(TEN_RUNS)


FIGURES: dict[str, Callable[[], Figure]] = {
    "gantt": lambda: gantt(_ten()),
    "gantt by task": lambda: gantt(_ten(), by="task"),
    "lateness over time": lambda: lateness_over_time(_ten()),
    "lateness distribution": lambda: lateness_distribution(_ten()),
    "utilisation": lambda: utilisation_plot(_ten(), 3, freq="5min"),
    "overrun": lambda: overrun_comparison(simulate_overrun()),
    "every overrun policy": lambda: overrun_comparison(
        simulate_overrun(period=60, duration=150, policies=ALL_POLICIES)
    ),
    "cluster timeline": lambda: cluster_timeline(UNFENCED),
    "fencing": lambda: fencing_comparison([UNFENCED, FENCED]),
    "polling": lambda: polling_tradeoff([("Condition.wait", 0.0, 0.2), ("poll", 90.0, 4.0)]),
    "cancel cost": lambda: cancel_cost([1_000, 10_000], [0.5, 0.6], [80.0, 1_500.0]),
    "pile-up": lambda: overrun_pileup({"SKIP": ([(0.0, 0.0)], [(0.0, 0.0)])}),
    "listener": lambda: listener_latency([0, 1], [1.0, 1.0], [2.0, 50.0]),
    "wheel": lambda: wheel_costs([1, 10], {"heap": [1, 2]}, {"heap": [1, 2]}),
}


def _panels(figure: Figure) -> list[Any]:
    """The axes that show data (not a colour bar, not a cell kept for a legend)."""
    return [ax for ax in figure.axes if ax.axison and not hasattr(ax, "_colorbar")]


@pytest.fixture(scope="module")
def drawn() -> Iterator[Callable[[str], Figure]]:
    """``drawn(name)``: the chart ``name`` of :data:`FIGURES`, built and drawn once for
    the module's checks that only read it (titles and labels, font sizes, contrast).
    Building and drawing a chart is nearly all of this file's time (an overrun
    comparison about a second); the three checks read the same drawn figure, as each
    drew its own copy before.  The check of what a notebook shows (its text and PNG)
    builds a chart of its own: a notebook formats a figure just made."""
    made: dict[str, Figure] = {}

    def get(name: str) -> Figure:
        if name not in made:
            made[name] = FIGURES[name]()
            made[name].draw_without_rendering()
        return made[name]

    yield get
    made.clear()


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_chart_has_a_title_and_labelled_axes(
    name: str, drawn: Callable[[str], Figure]
) -> None:
    figure = drawn(name)
    panels = _panels(figure)
    assert panels
    for ax in panels:
        titled = any(ax.get_title(loc=loc) for loc in ("left", "center", "right"))
        assert titled or figure.get_suptitle(), f"{name}: a panel without a title"
        assert ax.get_xlabel() and ax.get_ylabel(), f"{name}: {ax.get_title(loc='left')!r}"


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_chart_says_in_words_what_it_shows(name: str) -> None:
    figure = FIGURES[name]()
    assert isinstance(figure, PlotFigure)
    words = figure.description
    for ax in _panels(figure):
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert " ".join(label.split()) in words
        legend = ax.get_legend()
        for text in legend.get_texts() if legend is not None else []:
            assert " ".join(text.get_text().split()) in words
    # What a notebook shows beside the picture, and what a screen reader reads.
    formatted = _formatted(figure)
    assert formatted["text/plain"] == words
    png: Any = Image.open(BytesIO(formatted["image/png"]))
    assert png.text["Description"] == words


def _formatted(figure: Figure) -> dict[str, Any]:
    from IPython.core.formatters import DisplayFormatter

    formatter: Any = DisplayFormatter()
    data: dict[str, Any] = formatter.format(figure)[0]
    return data


def test_a_gantt_chart_in_words() -> None:
    assert gantt(_ten()).description == (  # type: ignore[attr-defined]
        "Chart: 10 runs on 3 workers: 1 failed, 1 timed out\n"
        "x axis: time (UTC); y axis: worker; key: backup, report, import, heartbeat, "
        "failed, timed out, due, then the wait to start (task's colour)"
    )


def test_a_utilisation_map_names_its_colour_scale() -> None:
    assert "colour scale: busy fraction" in FIGURES["utilisation"]().description  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_no_text_in_a_chart_is_smaller_than_seven_points(
    name: str, drawn: Callable[[str], Figure]
) -> None:
    figure = drawn(name)
    sizes = {
        text.get_text(): float(text.get_fontsize())
        for text in figure.findobj(mpl.text.Text)
        if text.get_text() and text.get_visible()
    }
    small = {text: size for text, size in sizes.items() if size < 7}
    assert small == {}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_text_in_a_chart_contrasts_with_what_it_is_written_on(
    name: str, drawn: Callable[[str], Figure]
) -> None:
    figure = drawn(name)
    faint = []
    for text in figure.findobj(mpl.text.Text):
        if not (text.get_text().strip() and text.get_visible()):
            continue
        box = text.get_bbox_patch()
        ground = box.get_facecolor() if box is not None else "white"
        if contrast(text.get_color(), ground) < 4.5:
            faint.append(text.get_text())
    assert faint == []


def test_a_duplicate_writes_bar_is_hatched_in_the_palettes_colour() -> None:
    (ax,) = [ax for ax in cluster_timeline(UNFENCED).axes]
    duplicate = WRITES["duplicate"]
    bars = [
        bar for bar in ax.collections
        if bar.get_hatch() == duplicate.hatch
        and tuple(np.asarray(bar.get_facecolor())[0]) == pytest.approx(to_rgba(duplicate.colour))
    ]  # fmt: skip
    landed = UNFENCED.landed()
    twice = [r for r in UNFENCED.runs if r.write == "landed" and landed[(r.task_id, r.slot)] > 1]
    assert len(bars) == len(twice) > 0


def test_a_bar_on_a_lane_per_worker_says_its_task_in_readable_text() -> None:
    ax = gantt(_ten()).axes[0]
    names = [text for text in ax.texts if text.get_gid() == "bar_names"]
    # The wide bars (backup twice, import, report twice); not the 5 s heartbeats.
    assert sorted(text.get_text() for text in names) == [
        "backup", "backup", "import", "report", "report",
    ]  # fmt: skip
    for text in names:
        box = text.get_bbox_patch()
        assert box is not None
        assert contrast(text.get_color(), box.get_facecolor()) >= 4.5, text.get_text()
    assert not [t for t in gantt(_ten(), by="task").axes[0].texts if t.get_gid() == "bar_names"]


def test_the_tasks_of_a_lateness_chart_differ_in_shape_not_only_in_colour() -> None:
    points = lateness_over_time(_ten()).axes[0]
    shapes = {
        c.get_label(): np.asarray(c.get_paths()[0].vertices).tobytes()
        for c in points.collections
        if c.get_label() in {"backup", "report", "import", "heartbeat"}
    }
    assert len(set(shapes.values())) == 4
    handles = points.get_legend().legend_handles  # type: ignore[union-attr]
    assert len({handle.get_marker() for handle in handles}) == 4  # type: ignore[union-attr]
    curves = lateness_distribution(_ten()).axes[0]
    styles = {str(line.get_label()): line.get_linestyle() for line in curves.get_lines()}
    named = {label: style for label, style in styles.items() if not label.startswith("_")}
    assert len(named) == 4 and len(set(named.values())) == 4


def test_text_on_any_task_colour_passes_wcag_for_small_text() -> None:
    cmap = mpl.colormaps["tab20"]
    for fill in [cmap(i) for i in range(20)]:
        assert contrast(text_on(fill), fill) >= 4.5, fill
    assert contrast("black", "white") == pytest.approx(21.0)


# -- widgets ---------------------------------------------------------------------------


def _controls(widget: Any) -> list[Any]:
    """Every widget under ``widget`` a user can act on (a button, a text box)."""
    import ipywidgets

    found = []
    stack = [widget]
    while stack:
        item = stack.pop()
        if isinstance(item, ipywidgets.Box):
            stack.extend(item.children)
        elif isinstance(item, ipywidgets.Button | ipywidgets.Text):
            found.append(item)
    return found


def test_every_control_of_the_panel_and_the_player_has_a_label_and_a_tooltip() -> None:
    ipywidgets = pytest.importorskip("ipywidgets")
    from lldsched.views.widgets import SimulationPlayer

    sim = build_scenario(workers=2)
    player = SimulationPlayer(sim, chart=False)
    try:
        controls = _controls(player.widget)
        assert len(controls) >= 5 + 4 * len(sim.tasks())  # the player's, and each row's
        for control in controls:
            assert control.description.strip(), control
            assert control.tooltip and control.tooltip.strip(), control.description
            if isinstance(control, ipywidgets.Text):  # its tooltip is not rendered (#3964):
                assert "Enter" in control.placeholder, control  # the page shows this
        # A row's buttons name their task: a column of "pause" buttons says which.
        task = sim.tasks()[0]
        assert player.table.button(task.id, "pause").tooltip == f"pause {task.name}"
    finally:
        player.close()


def test_the_players_chart_is_named_by_what_it_shows() -> None:
    pytest.importorskip("ipywidgets")
    from lldsched.views.widgets import SimulationPlayer

    player = SimulationPlayer(build_scenario(workers=2))
    try:
        player.advance(3600)
        assert player.chart is not None
        assert player.chart.tooltip.startswith("Chart: ")
        assert "x axis: time (UTC); y axis: task" in player.chart.tooltip
    finally:
        player.close()


# -- notebooks -------------------------------------------------------------------------

SOURCES = sorted((ROOT / "notebooks" / "src").glob("*.py"))
_HEADING = re.compile(r"^(#{1,6}) \S")
_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\([^)]*\)")
_COLOUR = re.compile(r"\b(red|green|blue|orange|purple|yellow|cyan|pink)\b", re.IGNORECASE)
_CUE = re.compile(  # a shape, or lightness (which greyscale and every vision keep)
    r"\b(cross(es)?|stars?|lines?|bars?|dots?|diamonds?|hatch(ed)?|dashed|dotted|"
    r"ticks?|band|shaded|outlined|x|dark|light|pale)\b|[★✖✗\u00d7]",
    re.IGNORECASE,
)


def _markdown(source: Path) -> list[str]:
    """The Markdown lines of a notebook's source (its ``# %% [markdown]`` cells)."""
    lines, inside = [], False
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %%"):
            inside = "[markdown]" in line
        elif inside:
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return lines


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.stem)
def test_a_notebooks_headings_go_down_one_level_at_a_time(source: Path) -> None:
    levels = [len(m[1]) for line in _markdown(source) if (m := _HEADING.match(line))]
    assert levels and levels[0] == 1 and levels.count(1) == 1
    for before, after in itertools.pairwise(levels):
        assert after <= before + 1, (source.name, levels)


@pytest.mark.parametrize(
    "path", [*SOURCES, ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))],
    ids=lambda path: path.name,
)  # fmt: skip
def test_every_picture_has_alt_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert [m["alt"] for m in _IMAGE.finditer(text) if not m["alt"].strip()] == []


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.stem)
def test_a_colour_a_notebook_names_comes_with_a_shape(source: Path) -> None:
    # "the red crosses", "a red star": a reader who cannot tell red finds the crosses.
    text = " ".join(_markdown(source))
    sentences = re.split(r"(?<=[.!?])\s+", text)
    bare = [s for s in sentences if _COLOUR.search(s) and not _CUE.search(s)]
    assert bare == []
