"""The colours and cues that carry meaning in the plots (outcomes, states, compared
series), chosen so a reader with a colour-vision deficiency, or a greyscale print,
still tells them apart.

One rule, held here and asserted by ``tests/test_accessibility.py``: two things a
chart tells apart by colour alone differ by at least :data:`MIN_DISTANCE` (CIELAB
ΔE) as seen with normal vision and as simulated for protanopia, deuteranopia and
tritanopia (Machado, Oliveira and Fernandes, 2009, full severity), and by at least
:data:`MIN_LIGHTNESS` (CIELAB L*) in greyscale; where they do not, a hatch or a
marker tells them apart as well.  The colours are the Okabe-Ito palette's, made for
colour-blind readers.

A task's colour is another rule (:func:`~lldsched.views.plots.task_colours`): it names
a task, always with a legend, a lane label or the name written on its bar beside it.
Text written on a fill is black or white, whichever contrasts more (:func:`text_on`:
at least 4.8 to 1 on every ``tab20`` colour, past WCAG's 4.5 for small text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACCENT",
    "LEASE",
    "LINES",
    "MIN_DISTANCE",
    "MIN_LIGHTNESS",
    "SERIES",
    "STATES",
    "STATE_ALPHA",
    "TASK_LINES",
    "TASK_MARKERS",
    "WRITES",
    "Cue",
    "contrast",
    "series",
    "text_on",
]

MIN_DISTANCE = 15.0
"""Least CIELAB ΔE (1976) between two colours that alone tell two things apart, in
every simulated vision (about six times a just-noticeable difference)."""

MIN_LIGHTNESS = 15.0
"""Least difference of CIELAB L* between two colours that alone tell two things apart
in a greyscale print."""

_BLUE, _ORANGE, _GREEN, _PURPLE, _SKY = "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9"
_VERMILLION = "#D55E00"


@dataclass(frozen=True)
class Cue:
    """How a chart shows one kind of thing: a fill colour, and the hatch and marker
    (matplotlib's names; empty for none) that say it without colour."""

    colour: str
    hatch: str = ""
    marker: str = ""


ACCENT = _VERMILLION
"""The one colour that draws the eye to a mark already told by its shape (the crosses of
dropped slots, the player's dashed "now" line): apart from black and the greys in any
vision.  Not for text: on white it is 3.9 to 1, under WCAG's 4.5."""

WRITES = {
    "landed": Cue(_BLUE),
    "duplicate": Cue(_VERMILLION, hatch="xx", marker="*"),
    "rejected": Cue("#FFFFFF", marker="X"),
    "lost": Cue("#DDDDDD", hatch="////"),
}
"""A cluster run's bar by what became of its write (:func:`cluster_timeline`)."""

LEASE = Cue(_GREEN)
"""A cluster run's lease: a thin bar under its run's bar (told by its shape, and apart
from every :data:`WRITES` colour in any vision)."""

STATES = {
    "pause": Cue(_ORANGE),
    "down": Cue("#555555", hatch=".."),
}
"""A cluster node's paused and down spans, which shade its whole lane (drawn at
:data:`STATE_ALPHA`)."""

STATE_ALPHA = 0.45

SERIES = (
    Cue(_BLUE),
    Cue(_ORANGE, hatch="//"),
    Cue(_GREEN, hatch=".."),
    Cue(_PURPLE, hatch="xx"),
    Cue(_SKY, hatch="\\\\"),
)
"""Compared series in order (the bars of :func:`fencing_comparison`): colours apart in
every vision, and each a hatch of its own for a greyscale print, where the first two
are also apart in lightness."""

LINES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"))
"""Compared lines in order, each a line style and a marker of its own beside its
:data:`SERIES` colour: a greyscale print, or a reader who confuses the colours, still
tells the lines apart and matches them to the key."""


def series(index: int) -> dict[str, Any]:
    """The keyword arguments of ``Axes.plot`` that draw the ``index``-th compared line
    (colour, line style, marker), repeating past the last."""
    linestyle, marker = LINES[index % len(LINES)]
    return {"color": SERIES[index % len(SERIES)].colour, "linestyle": linestyle, "marker": marker}


TASK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")
"""The markers of the tasks a point chart names (as many as it names at most)."""

TASK_LINES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
"""The line styles of the tasks a line chart names, in turn."""


def _luminance(colour: Any) -> float:
    """WCAG 2's relative luminance of a matplotlib colour."""
    from matplotlib.colors import to_rgb

    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast(one: Any, other: Any) -> float:
    """WCAG 2's contrast ratio of two colours, 1 to 21 (4.5 is its floor for small text)."""
    light, dark = sorted((_luminance(one), _luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_on(fill: Any) -> str:
    """Black or white, whichever contrasts more with ``fill``: the colour of text
    written on a bar."""
    return "black" if contrast("black", fill) >= contrast("white", fill) else "white"
