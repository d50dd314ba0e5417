"""PackedRunStats: a task's run statistics whose history keeps its older records packed.

The threaded scheduler keeps each task's recent runs in memory (``history_limit``,
100 by default), with a store or without: a store keeps every record besides, but
``task.history``, ``records()`` and the frames read the histories in memory (without a
store they are all it keeps).  For ten thousand recurring tasks that is a million
:class:`~lldsched.model.ExecutionRecord` tuples, about 200 bytes each (the tuple and
its four floats) and every one tracked by the cyclic collector.
:class:`PackedRunStats` keeps the same history in two parts, a store or none:

* the newest records, fewer than :data:`BATCH`, as the tuples the core made;
* the older ones in blocks of :data:`BATCH` (:class:`Block`), packed when a batch
  fills: the numbers of the records (attempt, due, slot, worker, started, finished,
  ok, timed_out) as columns in one ``bytes``, 42 bytes a record, and each other
  field (task id, name, error, misfire, result, token) once for the block when
  every record of it has the same value (the common case), else as a tuple.

About 54 bytes a packed record instead of about 200, and no object a block for the
collector to visit instead of one a record: a task keeps its blocks as plain tuples,
which the collector stops tracking unless one holds a misfire's ``Outcome`` (and
hands them out as :class:`Block`).  A scheduler of 1,000 ``FixedRate`` tasks with
full histories held 104 traced bytes per history record, the tasks included,
against 202 (``bench_growth.scheduler_history``).

The price is on the run path: packing is done a batch at a time, field by field in
C (``zip``, one ``struct.pack``), and still costs about 3,000 machine instructions
a record (callgrind): +8.5 % a run of a recurring task on the threaded scheduler
(41,040 instructions against 37,823), nothing for a one-off task (its history is
one record, never packed).  The simulation keeps plain
:class:`~lldsched.core.task.RunStats`: it keeps every record in its columnar
:class:`~lldsched.core.recordlog.RecordLog` anyway, its histories are bounded per
task, and it would pay the same +9 % a simulated run (docs/DECISIONS.md).

:meth:`PackedRunStats.records` gives the history back as ``ExecutionRecord``
values equal to the ones added, oldest first, at most ``history_limit`` of them
(built on demand: about 2 µs a record); :func:`packed_history` hands the packed
form to a view (:func:`lldsched.views.frames.to_frame` of a scheduler reads it
with numpy, without a record object for the packed part).  Standard library only.
The core mutates it under its runtime's lock; :meth:`PackedRunStats.records` (what
``task.history`` answers any thread, without that lock) reads a history the task had
at one instant: the blocks and the tail are each copied in one C call, and a batch
packed between the two copies (``_packing``, moved before and after each pack) makes
the read take them again.  What it costs the run path: two increments a batch.
"""

from __future__ import annotations

import math
import struct
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, NamedTuple

from lldsched.core.task import RunStats
from lldsched.model import ExecutionRecord

__all__ = [
    "BATCH",
    "CODES",
    "NUMBERS",
    "REST",
    "Block",
    "PackedRunStats",
    "Rows",
    "block_format",
    "pack",
    "pack_all",
    "packed_history",
    "run_stats_maker",
    "unpack",
]

BATCH = 16
"""Records packed together: the newest fewer than this stay tuples.  Sixteen keeps
the tuples held a task under a sixth of the default history (100), and the cost of
a block (its objects, its Python calls) under a sixteenth a record."""

NUMBERS = ("attempt", "due", "slot", "worker", "started", "finished", "ok", "timed_out")
"""The fields packed as numbers, a column of :data:`BATCH` values each, in this order."""
CODES = dict(zip(NUMBERS, "iddidd??", strict=True))
"""Each of :data:`NUMBERS`' struct code (standard sizes: numpy reads them the same)."""
REST = ("task_id", "name", "error", "misfire", "result", "token", "node")
"""The fields kept as objects: one value when every record of a block has it."""
_FIELD = {field: index for index, field in enumerate(ExecutionRecord._fields)}
_numbers = itemgetter(*(_FIELD[field] for field in NUMBERS))  # a record's columns: numbers
_rest = itemgetter(*(_FIELD[field] for field in REST))  # and the others


def block_format(size: int = BATCH) -> str:
    """The struct format of a block's numbers: :data:`NUMBERS`, a column of ``size``
    values each, standard sizes, no padding (``"=16i16d16d16i16d16d16?16?"``)."""
    return "=" + "".join(f"{size}{CODES[field]}" for field in NUMBERS)


_BLOCK = struct.Struct(block_format())
_PADDING = {field: (0.0 if code == "d" else 0) for field, code in CODES.items()}


class Block(NamedTuple):
    """Records packed together (up to :data:`BATCH`, oldest first).

    ``numbers`` holds :data:`NUMBERS` as columns of :data:`BATCH` values, struct
    format :func:`block_format` (a block of fewer records is padded with zeros);
    ``size`` is how many records it holds; ``rest`` gives each field of :data:`REST`
    as the value every record of the block has, or as a tuple of ``size`` values (no
    field's value is ever a tuple)."""

    numbers: bytes
    size: int
    rest: tuple[Any, ...]


_as_block = Block._make  # a kept plain tuple as the Block it is


def pack(records: Sequence[ExecutionRecord]) -> Block:
    """The block holding ``records`` (at most :data:`BATCH`)."""
    return _as_block(_packed(records))


def _packed(records: Sequence[ExecutionRecord]) -> tuple[bytes, int, tuple[Any, ...]]:
    """:func:`pack`'s block as a plain tuple: what a task keeps (the collector stops
    tracking a tuple of untracked values at its first pass, never a ``NamedTuple``).

    Field by field, in C: ``zip`` turns the records into columns and one
    ``struct.pack`` packs them (an ``itemgetter`` a record cost nearly four times more)."""
    size = len(records)
    if not 0 < size <= BATCH:
        raise ValueError(f"a block holds 1 to {BATCH} records, not {size}")
    fields = list(zip(*records, strict=True))
    padded: list[Any] = []
    for field, values in zip(NUMBERS, _numbers(fields), strict=True):
        padded += values
        padded += [_PADDING[field]] * (BATCH - size)  # none in a full block
    numbers = _BLOCK.pack(*padded)
    rest = tuple(map(_shared_or_all, _rest(fields)))
    return numbers, size, rest


def _shared_or_all(values: tuple[Any, ...]) -> Any:
    """``values``' one value when they are all equal, else ``values`` themselves."""
    first = values[0]
    return first if values.count(first) == len(values) else values


def unpack(block: Block | tuple[bytes, int, tuple[Any, ...]]) -> Iterator[ExecutionRecord]:
    """The records of ``block`` (or of its plain tuple), oldest first, equal to the ones
    packed."""
    numbers, size, kept = block
    flat = _BLOCK.unpack(numbers)
    starts = range(0, len(flat), BATCH)  # a column of BATCH values a field
    columns = dict(zip(NUMBERS, (flat[start : start + size] for start in starts), strict=True))
    rest = {
        field: value if isinstance(value, tuple) else repeat(value, size)
        for field, value in zip(REST, kept, strict=True)
    }
    every = {**columns, **rest}
    fields = [every[field] for field in ExecutionRecord._fields]
    return map(ExecutionRecord._make, zip(*fields, strict=False))


class PackedRunStats(RunStats):
    """:class:`~lldsched.core.task.RunStats` whose history packs its older records
    (see the module docstring); the same counts, the same history.  For a
    ``history_limit`` above :data:`BATCH`, or None: :func:`run_stats_maker` gives
    plain ``RunStats`` below (nothing to pack)."""

    # _blocks is set with the tail, at the second record (never, for a one-off task):
    # the packed blocks, oldest first, enough of them for the whole limit whatever
    # the tail holds; the oldest falls off as a new one is packed.  Plain tuples, not
    # Blocks: the collector stops tracking them (a task of a full default history
    # keeps seven), and blocks() makes them Blocks.
    # _packing counts the halves of the packs made: odd while a batch moves from the
    # tail into a block, so that a read without the lock can tell a torn copy.
    __slots__ = ("_blocks", "_packing")
    _blocks: deque[tuple[bytes, int, tuple[Any, ...]]]
    _packing: int

    def add(self, record: ExecutionRecord) -> None:
        """Keep ``record`` as the newest of the history; a full batch is packed."""
        recent = self._recent
        if recent is not None:
            recent.append(record)
            if len(recent) == BATCH:
                self._packing += 1  # odd: a read that overlaps the next two lines retries
                self._blocks.append(_packed(recent))
                recent.clear()
                self._packing += 1
        elif self._first is None:
            self._first = record
        else:  # the second record: the tail (no bound of its own, it is packed at BATCH)
            # The blocks and the count first: a read that finds the tail finds them too.
            limit = self._limit
            self._blocks = deque(maxlen=None if limit is None else math.ceil(limit / BATCH))
            self._packing = 0
            self._recent = deque((self._first, record))
            self._first = None

    def records(self) -> tuple[ExecutionRecord, ...]:
        """The history, oldest first (the newest ``history_limit`` records): one the task
        had at one instant, also when read by a thread that does not hold the runtime's
        lock while the core adds records (see the module docstring)."""
        first = self._first  # before the tail: the second add sets the tail, then clears this
        recent = self._recent
        if recent is None:
            return (first,) if first is not None else ()
        while True:
            packing = self._packing
            blocks = tuple(self._blocks)  # one C call each: no add runs inside either
            tail = tuple(recent)
            if packing == self._packing and not packing & 1:  # no pack began or was under way
                break
        older = chain.from_iterable(map(unpack, blocks))
        history = (*older, *tail)
        limit = self._limit
        return history if limit is None else history[-limit:] if limit else ()

    def blocks(self) -> list[Block]:
        """The history packed, oldest first: the packed blocks, then the tail packed
        now.  The first block may hold records older than the history (read
        :meth:`held`: the newest that many records are the history)."""
        if self._recent is None:
            return [pack([self._first])] if self._first is not None else []
        tail = [pack(self._recent)] if self._recent else []
        return [*map(_as_block, self._blocks), *tail]

    def held(self) -> int:
        """How many records the history holds (the last that many of :meth:`blocks`)."""
        if self._recent is None:
            return int(self._first is not None)
        count = BATCH * len(self._blocks) + len(self._recent)  # every stored block is full
        return count if self._limit is None else min(count, self._limit)


def run_stats_maker(history_limit: int | None, *, packed: bool) -> Callable[[], RunStats]:
    """What makes a task's statistics at its first run: :class:`PackedRunStats` when
    ``packed`` and the limit leaves something to pack (more than :data:`BATCH`
    records, or no limit), else plain :class:`~lldsched.core.task.RunStats`."""
    if packed and (history_limit is None or history_limit > BATCH):
        return partial(PackedRunStats, history_limit)
    return partial(RunStats, history_limit)


class Rows(NamedTuple):
    """A block's records from ``start`` on (the older ones are not in the history)."""

    block: Block
    start: int


def packed_history(stats: RunStats) -> list[Rows]:
    """The history of ``stats`` (oldest first) as blocks; a plain ``RunStats``'s records
    are packed now."""
    if isinstance(stats, PackedRunStats):
        blocks, held = stats.blocks(), stats.held()
    else:
        blocks, held = pack_all(stats.records()), len(stats.records())
    skip = sum(block.size for block in blocks) - held  # records older than the history
    rows = []
    for block in blocks:
        if skip < block.size:
            rows.append(Rows(block, skip))
        skip = max(0, skip - block.size)
    return rows


def pack_all(records: Sequence[ExecutionRecord]) -> list[Block]:
    """``records`` packed, :data:`BATCH` to a block."""
    return [pack(records[start : start + BATCH]) for start in range(0, len(records), BATCH)]
