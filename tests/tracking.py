"""What the cyclic collector tracks of an object: for tests that keep a structure's
tracked objects few (each is visited by every full pass of the collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterable


def tracked_from(root: object, leave_out: Iterable[object] = ()) -> list[object]:
    """The objects reachable from ``root`` (itself included; classes, and ``leave_out``
    and what only they reach, left out) that the cyclic collector tracks, found after
    three collections (a pass may untrack only one level of tuples in tuples: a packed
    block holds a tuple that holds the tuples of a field)."""
    for _ in range(3):
        gc.collect()
    seen = {id(thing) for thing in leave_out}
    found, todo = [], [root]
    while todo:
        thing = todo.pop()
        if id(thing) in seen or isinstance(thing, type):
            continue
        seen.add(id(thing))
        if gc.is_tracked(thing):
            found.append(thing)
        todo += gc.get_referents(thing)
    return found
