"""A chart's tasks: each task's colour, by its name, the same in every chart (two tasks
of one chart never in one hue, up to ten), its label, the tasks a legend names (past
:data:`MAX_LEGEND_TASKS`, those that weigh most in the chart, the rest in one grey,
:data:`OTHER_TASKS`), and their legend entries and marks.  What every plot shares
besides is :mod:`lldsched.views.plots._base`'s.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from lldsched.errors import ValidationError, shown
from lldsched.printable import one_line
from lldsched.views.plots._base import Array, Line2D, Patch, colormaps
from lldsched.views.plots.palette import TASK_LINES, TASK_MARKERS
from lldsched.views.report import nearest_rank

__all__ = [
    "MAX_LEGEND_TASKS",
    "OTHER_TASKS",
    "Colour",
    "task_codes",
    "task_colours",
    "task_handles",
    "task_label",
    "task_mark",
]

MAX_LEGEND_TASKS = 12
"""Tasks named in a legend and drawn in their colour.  A chart of more tasks names the
ones that weigh most in it (the Gantt chart: the most run time; lateness: the latest),
draws the rest in one grey (:data:`OTHER_TASKS`), and sums them up as "+ n more tasks
(grey)": past twenty names ``tab20``'s colours would repeat, so a colour could not say
which task a run was."""

OTHER_TASKS = (0.72, 0.72, 0.72, 1.0)
"""The colour of the tasks a legend does not name (past :data:`MAX_LEGEND_TASKS`)."""


def _p95(codes: Array, values: Array) -> pd.Series[float]:
    """Each code's 95th percentile of ``values`` by nearest rank, the summaries' rule
    (:func:`~lldsched.views.report.nearest_rank`: the value a task's curve of the lateness
    distribution reaches the 95 % line at, and :func:`task_summary`'s ``lateness_p95``).
    pandas' ``quantile`` interpolates: a task on time 19 runs in 20 and 100 s late once
    ranked at 5 s, above tasks whose p95 is 2 s, and was named in their place."""
    order = np.lexsort((values, codes))  # by code, then by value
    present, first, counts = np.unique(codes[order], return_index=True, return_counts=True)
    ranks = [nearest_rank(count, 95) for count in counts.tolist()]
    return pd.Series(values[order][first + np.array(ranks, dtype=np.intp)], index=present)


def task_codes(
    frame: pd.DataFrame,
    weight: Array | None = None,
    *,
    how: str = "sum",
    within: tuple[pd.DataFrame, Array] | None = None,
) -> tuple[Array, list[str], Array, list[int]]:
    """Each row's task code (order of first appearance), each code's legend label, each
    code's colour (by task name: see :func:`task_colours`), and the codes a legend
    names.  Up to :data:`MAX_LEGEND_TASKS` tasks, every one, in code order; past it,
    the :data:`MAX_LEGEND_TASKS` whose ``weight`` (one number per row, taken together
    per task by ``how``: ``"sum"``, ``"max"`` or ``"p95"``) is greatest, greatest first,
    and every other task's colour is :data:`OTHER_TASKS`.

    ``within`` (the frame ``frame`` is a window of, and its rows' weights): a task the
    chart of that whole frame colours keeps its colour here, and a task it greyed
    that this chart names takes a hue none of those took while there is one, so a
    zoomed chart's colours are the whole chart's."""
    codes, ids, plain, named = _named_tasks(frame, weight, how)
    repeated = {label for label in plain if plain.count(label) > 1}
    labels = _shortened([  # a name stored with a newline: on one line (printable.one_line)
        one_line(f"{label} ({task_id})" if label in repeated else label)
        for label, task_id in zip(plain, ids, strict=True)
    ])  # fmt: skip
    kept = {} if within is None else _chart_slots(*within, how=how)
    slots = _slots(
        [plain[code] for code in named],
        taken=set() if len(named) == len(plain) else _GREYS,
        kept=kept,
    )  # fmt: skip
    palette = np.tile(np.array(OTHER_TASKS, dtype=float), (len(plain), 1))
    for code in named:
        palette[code] = _colour(slots[plain[code]])
    return codes, labels, palette, named


def _named_tasks(
    frame: pd.DataFrame, weight: Array | None, how: str
) -> tuple[Array, pd.Index, list[str], list[int]]:
    """Each row's task code, the codes' task ids and names, and the codes a legend names
    (:func:`task_codes`)."""
    codes, ids = pd.factorize(frame["task_id"])
    latest = frame.drop_duplicates("task_id", keep="last")  # a task renamed: as it is now
    names = dict(zip(latest["task_id"].tolist(), latest["name"].tolist(), strict=True))
    plain = [str(names[task_id]) for task_id in ids]
    if len(plain) <= MAX_LEGEND_TASKS:
        return codes, ids, plain, list(range(len(plain)))
    values = pd.Series(np.ones(len(codes)) if weight is None else weight)
    score = _p95(codes, values.to_numpy()) if how == "p95" else values.groupby(codes).agg(how)
    # A stable sort of the negated scores: ties keep the order of first appearance.
    ranked = np.argsort(-score.reindex(range(len(plain))).to_numpy(), kind="stable")
    return codes, ids, plain, [int(code) for code in ranked[:MAX_LEGEND_TASKS]]


def _chart_slots(frame: pd.DataFrame, weight: Array, *, how: str) -> dict[str, int]:
    """The ``tab20`` slot of each task name a chart of ``frame`` colours
    (:func:`task_codes`)."""
    _, _, plain, named = _named_tasks(frame, weight, how)
    shown_names = [plain[code] for code in named]
    return _slots(shown_names, taken=set() if len(named) == len(plain) else _GREYS)


LABEL_LETTERS = 32
"""The longest task name a lane label or a legend writes in full; a longer one keeps its
head and its tail (where names of a family differ: ``report-...-region-4``) around an
ellipsis.  Two names of 62 letters as lane labels and legend entries left the plot of an
eleven-inch figure two inches wide, its time labels printed over one another."""


def task_label(name: str) -> str:
    """``name`` as a chart writes it: whole up to :data:`LABEL_LETTERS`, else its head,
    "…" and its tail (:func:`mark_wait` finds a lane by it)."""
    if len(name) <= LABEL_LETTERS:
        return name
    tail = (LABEL_LETTERS - 1) // 2
    return f"{name[: LABEL_LETTERS - 1 - tail]}…{name[-tail:]}"


def _shortened(labels: Sequence[str]) -> list[str]:
    """Each label as :func:`task_label` writes it, but for labels that would come out
    alike (names that differ only in the middle): those stay whole."""
    short = [task_label(label) for label in labels]
    taken = Counter(short)
    return [s if taken[s] == 1 else whole for s, whole in zip(short, labels, strict=True)]


Colour = tuple[float, float, float, float]

# tab20's ten dark shades, then its ten light ones: neighbouring slots differ in hue.
_SLOTS = [*range(0, 20, 2), *range(1, 20, 2)]
# Prefixed to a name before hashing.  Any constant gives a stable mapping; this one was
# picked (by trying salts) so the built-in scenario's ten tasks get ten different hues,
# nine of them dark: the kit's charts never show two of its tasks in one hue.
_SALT = "187249:"


def task_colours(names: Iterable[str]) -> dict[str, Colour]:
    """One colour per task name: a slot of matplotlib's ``tab20`` picked by a CRC-32 of
    the (salted) name, so it does not depend on the order tasks ran in, nor, but for
    a clash of hues, on which other tasks a chart shows.  Two names of one
    chart that hash to the same hue (``tab20`` has a dark and a light shade of ten hues,
    which a reader, colour-blind or not, tells apart poorly) are told apart: the first
    in sorted order keeps its slot and the later takes the next slot of a hue no name
    took, while there is one (up to ten names, every name has a hue of its own), and
    past that the next free slot (beyond 20 names, colours repeat).  A name keeps its
    own colour in every chart where no name sorted before it hashes to its hue.  A
    chart of more than :data:`MAX_LEGEND_TASKS` tasks colours only the ones it names,
    told apart among themselves, and never in ``tab20``'s greys, which would pass for
    :data:`OTHER_TASKS`."""
    if isinstance(names, str) or not isinstance(names, Iterable):  # "abc": three tasks
        raise ValidationError(
            f"task_colours() takes task names (a list of str), got {shown(names)}"
        )
    given = list(names)
    for name in given:
        if not isinstance(name, str):
            raise ValidationError(f"task_colours() takes task names (str), got {shown(name)}")
    return _colours(given, taken=set())


# The places in _SLOTS of tab20's two greys.
_GREYS = {_SLOTS.index(14), _SLOTS.index(15)}
_HUES = 10  # a place in _SLOTS is a hue's dark shade, or (plus ten) its light one


def _colours(names: Iterable[str], *, taken: set[int]) -> dict[str, Colour]:
    """:func:`task_colours`, with the slots of ``taken`` never given."""
    return {name: _colour(slot) for name, slot in _slots(names, taken=taken).items()}


def _colour(slot: int) -> Colour:
    """The colour of a place in :data:`_SLOTS`."""
    red, green, blue, alpha = colormaps["tab20"](_SLOTS[slot])
    return (float(red), float(green), float(blue), float(alpha))


def _slots(
    names: Iterable[str], *, taken: set[int], kept: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Each name's place in :data:`_SLOTS` (:func:`task_colours`), the slots of ``taken``
    never given; a name ``kept`` gives a slot has it, and the others avoid its hue."""
    size = len(_SLOTS)
    wanted = {name: zlib.crc32(f"{_SALT}{name}".encode()) % size for name in sorted(set(names))}
    slots = {name: kept[name] for name in wanted if kept and name in kept}
    taken = set(taken) | set(slots.values())
    hues = {slot % _HUES for slot in taken}  # a hue whose shades are taken, or grey
    # First every name whose hue no name before it took keeps its own slot; then the
    # others, in order, probe from theirs: one clash moves one name, never a cascade.
    for name, slot in wanted.items():
        if name not in slots and slot % _HUES not in hues:
            slots[name] = slot
            taken.add(slot)
            hues.add(slot % _HUES)
    for name, slot in wanted.items():
        if name in slots:
            continue
        probes = [(slot + probe) % size for probe in range(size)]
        slots[name] = next(
            (s for s in probes if s % _HUES not in hues),  # a hue of its own
            next((s for s in probes if s not in taken), slot),  # past ten, a free shade
        )
        taken.add(slots[name])
        hues.add(slots[name] % _HUES)
    return {name: slots[name] for name in wanted}


def task_handles(
    labels: Sequence[str], colours: Array, named: Sequence[int], *, drawn: str = "bar"
) -> list[Any]:
    """A legend entry per named task and, for the rest, one "+ n more tasks (grey)".
    ``drawn``: how the chart draws a task, ``"bar"`` (a patch of its colour),
    ``"point"`` or ``"line"`` (its colour and its :func:`task_mark`)."""
    rank = {code: n for n, code in enumerate(sorted(named))}  # as task_mark counts
    handles: list[Any] = [
        Patch(facecolor=colours[i], label=labels[i])
        if drawn == "bar"
        else Line2D([], [], color=colours[i], label=labels[i], **task_mark(rank[i], drawn=drawn))
        for i in named
    ]
    if len(labels) > len(named):
        rest = len(labels) - len(named)
        label = f"+ {rest:,} more task{'' if rest == 1 else 's'} (grey)"
        # Keyed as they are drawn: grey bars, grey dots, thin grey lines.
        handles.append(
            Patch(facecolor=OTHER_TASKS, edgecolor="none", label=label) if drawn == "bar"
            else Line2D([], [], color=OTHER_TASKS, marker="o", markersize=4, linestyle="none",
                        label=label) if drawn == "point"
            else Line2D([], [], color=OTHER_TASKS, linewidth=0.8, label=label)
        )  # fmt: skip
    return handles


def task_mark(rank: int, *, drawn: str) -> dict[str, Any]:
    """The marker (``drawn="point"``) or line style (``"line"``) of the ``rank``-th task
    a chart names, in the order of :func:`task_codes`' codes: with its colour, a second cue
    for a reader who confuses two task colours (``tab20``'s are not all apart in every
    colour vision), and what tells them apart in print."""
    if drawn == "point":
        return {"marker": TASK_MARKERS[rank % len(TASK_MARKERS)], "linestyle": "none"}
    return {"linestyle": TASK_LINES[rank % len(TASK_LINES)]}
