"""RecordLog: execution records kept as columns of plain numbers, read back on demand.

A simulation keeps every record it makes: millions of them in a month of a
thousand tasks.  As :class:`~lldsched.model.ExecutionRecord` objects (a 13-field
tuple and its floats) each costs about 200 bytes, and each stays tracked by the
cyclic garbage collector (a ``NamedTuple`` is never untracked), which then spends
a growing share of the run walking them.  A ``RecordLog`` keeps the same values
in a few flat columns instead:

==========  ==============  ===============================================
column      type            per record
==========  ==============  ===============================================
floats      ``array('d')``  due, slot, started, finished: 8 bytes each
ints        ``array('i')``  attempt, worker and key: 4 bytes each (the key
                            says which (task id, name) pair, see below)
flags       ``bytearray``   ok, timed_out, and the misfire's index in
                            :data:`MISFIRES`: 1 byte each
errors      ``dict``        only for records with an error text (interned)
results     ``dict``        only for records with a result text (interned)
tokens      ``dict``        only for records with a fencing token
nodes       ``dict``        only for records naming the process that ran them
==========  ==============  ===============================================

47 bytes a record, and no object per record for the collector to visit.
Task ids and names are kept once per (id, name) pair (a task renamed by
``replace_existing`` gets a second pair); error and result texts are interned,
so ten thousand ``"SimulatedFailure: attempt 1"`` are one string.

Reading gives the records back as they were appended: ``log[i]``, iteration
and :meth:`RecordLog.records` build ``ExecutionRecord`` values on demand, equal
to the ones appended; :meth:`RecordLog.columns` hands the columns themselves to
a view (:func:`lldsched.views.frames.to_frame` reads each as a numpy array,
without a record object).  Standard library only; not thread-safe (its
owner serialises appends, as the simulation's single thread does).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from itertools import compress, count, repeat
from operator import is_not
from typing import Any, NamedTuple, cast

from lldsched.model import ExecutionRecord, Outcome

__all__ = ["BATCH", "MISFIRES", "RecordColumns", "RecordLog"]

MISFIRES: tuple[Outcome | None, ...] = (None, *Outcome)
"""Misfire values by their index in the ``misfire`` column: 0 is an ordinary run."""
_MISFIRE_INDEX = {misfire: index for index, misfire in enumerate(MISFIRES)}

BATCH = 1024
"""Records a log holds as objects before it moves them into its columns."""

_FLOATS = ("due", "slot", "started", "finished")
_INTS = ("attempt", "worker")
_FLAGS = ("ok", "timed_out")
_FIELD = {field: index for index, field in enumerate(ExecutionRecord._fields)}


class RecordColumns(NamedTuple):
    """A :class:`RecordLog`'s columns, as it holds them (read them, never write them).

    ``numbers`` maps the fields ``due``, ``slot``, ``started``, ``finished`` (``array('d')``),
    ``attempt``, ``worker`` (``array('i')``), ``ok``, ``timed_out`` (``bytearray`` of 0
    and 1) and ``misfire`` (``bytearray`` of indexes in :data:`MISFIRES`) to a column
    with one value per row.  Row ``i`` is task ``key_ids[keys[i]]`` named
    ``key_names[keys[i]]``; ``errors`` and ``results`` map row numbers to texts,
    ``tokens`` to fencing tokens and ``nodes`` to the process that ran the row, for the
    rows that have one.
    """

    numbers: dict[str, array[float] | array[int] | bytearray]
    keys: array[int]
    key_ids: list[str]
    key_names: list[str]
    errors: dict[int, str]
    results: dict[int, str]
    tokens: dict[int, int]
    nodes: dict[int, str]


class RecordLog:
    """An append-only log of :class:`~lldsched.model.ExecutionRecord` values, held as
    columns (see the module docstring)."""

    __slots__ = (
        "_columns",
        "_errors",
        "_ids",
        "_key_of",
        "_keys",
        "_names",
        "_nodes",
        "_pending",
        "_results",
        "_texts",
        "_tokens",
    )

    def __init__(self, records: Iterable[ExecutionRecord] = ()) -> None:
        self._columns: dict[str, array[float] | array[int] | bytearray] = {}
        self._columns.update((field, array("d")) for field in _FLOATS)
        self._columns.update((field, array("i")) for field in _INTS)
        self._columns.update((field, bytearray()) for field in (*_FLAGS, "misfire"))
        self._keys: array[int] = array("i")
        self._ids: list[str] = []  # by key
        self._names: list[str] = []  # by key
        self._key_of: dict[str, int] = {}  # task id -> its newest key
        self._errors: dict[int, str] = {}
        self._results: dict[int, str] = {}
        self._texts: dict[str, str] = {}  # interned error and result texts
        self._tokens: dict[int, int] = {}
        self._nodes: dict[int, str] = {}  # interned, as the texts are
        self._pending: list[ExecutionRecord] = []  # appended, not yet in the columns
        for record in records:
            self.append(record)

    def append(self, record: ExecutionRecord) -> None:
        """Keep ``record`` as the newest row.

        Records wait in a short list and move into the columns :data:`BATCH` at a
        time, a column at a time (:meth:`_settle`): the work per record then runs in
        C loops.  Decomposed one by one in Python here, a record cost 10,000
        machine instructions, a sixth of a simulated run (callgrind,
        ``benchmarks/bench_sim.py``'s workload; docs/PERFORMANCE.md, "Records")."""
        pending = self._pending
        pending.append(record)
        if len(pending) >= BATCH:
            self._settle()

    def _settle(self) -> None:
        """Move the pending records into the columns."""
        batch = self._pending
        if not batch:
            return
        self._pending = []
        first = len(self._keys)  # the row of batch[0]
        fields = list(zip(*batch, strict=True))  # one tuple per field
        ids, names = fields[_FIELD["task_id"]], fields[_FIELD["name"]]
        found = list(map(self._key_of.get, ids))
        if None in found or list(names) != [self._names[key] for key in cast(list[int], found)]:
            keys = list(map(self._key, ids, names))  # a new task, or a renamed one
        else:
            keys = cast(list[int], found)
        size = len(batch)
        self._keys.extend(keys)
        columns = self._columns
        for field in _FLOATS + _INTS:
            columns[field].extend(fields[_FIELD[field]])
        for field in _FLAGS:
            columns[field].extend(fields[_FIELD[field]])
        columns["misfire"].extend(map(_MISFIRE_INDEX.__getitem__, fields[_FIELD["misfire"]]))
        for texts, field in ((self._errors, "error"), (self._results, "result")):
            values = fields[_FIELD[field]]
            if values.count(None) == size:  # the common batch: no text at all
                continue
            for row in compress(count(first), map(is_not, values, repeat(None))):
                text = values[row - first]
                texts[row] = self._texts.setdefault(text, text)
        tokens = fields[_FIELD["token"]]
        if tokens.count(None) != size:  # only a shared store's runs carry one
            for row in compress(count(first), map(is_not, tokens, repeat(None))):
                self._tokens[row] = tokens[row - first]
        nodes = fields[_FIELD["node"]]
        if nodes.count(None) != size:  # and name the process that ran them
            for row in compress(count(first), map(is_not, nodes, repeat(None))):
                node = nodes[row - first]
                self._nodes[row] = self._texts.setdefault(node, node)

    def _key(self, task_id: str, name: str) -> int:
        """The key of the pair (``task_id``, ``name``), a new one if it is new."""
        key = self._key_of.get(task_id)
        if key is None or self._names[key] != name:
            key = self._key_of[task_id] = len(self._ids)
            self._ids.append(task_id)
            self._names.append(name)
        return key

    def __len__(self) -> int:
        return len(self._keys) + len(self._pending)

    def __getitem__(self, row: int) -> ExecutionRecord:
        """The record in ``row`` (negative rows count from the end)."""
        self._settle()
        count = len(self._keys)
        if not -count <= row < count:
            raise IndexError(f"record {row} of a log of {count}")
        row %= count
        key = self._keys[row]
        values = tuple(self._columns[field][row] for field in _ORDER)
        texts = (
            self._errors.get(row), self._results.get(row), self._tokens.get(row),
            self._nodes.get(row),
        )  # fmt: skip
        return _decode(self._ids[key], self._names[key], values, texts)

    def __iter__(self) -> Iterator[ExecutionRecord]:
        self._settle()
        ids, names, errors, results = self._ids, self._names, self._errors, self._results
        tokens, nodes = self._tokens, self._nodes
        values = zip(*(self._columns[field] for field in _ORDER), strict=True)
        for row, (key, numbers) in enumerate(zip(self._keys, values, strict=True)):
            sparse = (errors.get(row), results.get(row), tokens.get(row), nodes.get(row))
            yield _decode(ids[key], names[key], numbers, sparse)

    def records(self) -> list[ExecutionRecord]:
        """Every record, oldest first, as ``ExecutionRecord`` values built now."""
        return list(self)

    def columns(self) -> RecordColumns:
        """The columns themselves (no copy): read them before the next append."""
        self._settle()
        return RecordColumns(
            numbers=self._columns,
            keys=self._keys,
            key_ids=self._ids,
            key_names=self._names,
            errors=self._errors,
            results=self._results,
            tokens=self._tokens,
            nodes=self._nodes,
        )

    def __repr__(self) -> str:
        return f"<RecordLog of {len(self)} records, {len(self._ids)} tasks>"


_ORDER = ("attempt", "due", "slot", "worker", "started", "finished", "ok", "timed_out", "misfire")
"""The columns :func:`_decode` takes, in ExecutionRecord's order."""


def _decode(
    task_id: str,
    name: str,
    numbers: tuple[Any, ...],
    sparse: tuple[str | None, str | None, int | None, str | None],
) -> ExecutionRecord:
    """The record of one row, from its columns (``numbers`` in :data:`_ORDER`; the
    row's error, result, token and node, or None)."""
    attempt, due, slot, worker, started, finished, ok, timed_out, misfire = numbers
    error, result, token, node = sparse
    fields = (task_id, name, attempt, due, slot, worker, started, finished, ok == 1, error)
    rest = (timed_out == 1, MISFIRES[misfire], result, token, node)
    return ExecutionRecord(*fields, *rest)
