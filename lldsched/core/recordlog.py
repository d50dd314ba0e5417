"""RecordLog: execution records kept as columns of plain numbers, read back on demand.

A simulation keeps every record it makes: millions of them in a month of a
thousand tasks.  As :class:`~lldsched.model.ExecutionRecord` objects (a 13-field
tuple and its floats) each costs about 200 bytes, and each stays tracked by the
cyclic garbage collector (a ``NamedTuple`` is never untracked), which then spends
a growing share of the run walking them.  A ``RecordLog`` keeps the same values
in a handful of flat columns instead:

==========  ==============  ===============================================
column      type            per record
==========  ==============  ===============================================
keys        ``array('i')``  4 bytes: which (task id, name) pair, see below
times       ``array('d')``  32 bytes: due, slot, started, finished
counts      ``array('i')``  8 bytes: attempt, worker
codes       ``bytearray``   1 byte: ok, timed_out and misfire
errors      ``dict``        only for records with an error text (interned)
results     ``dict``        only for records with a result text (interned)
==========  ==============  ===============================================

About 45 bytes a record, and no object per record for the collector to visit.
Task ids and names are kept once per (id, name) pair (a task renamed by
``replace_existing`` gets a second pair); error and result texts are interned,
so ten thousand ``"SimulatedFailure: attempt 1"`` are one string.

Reading gives the records back as they were appended: ``log[i]``, iteration
and :meth:`RecordLog.records` build ``ExecutionRecord`` values on demand, equal
to the ones appended; :meth:`RecordLog.columns` hands the columns themselves to
a view (:func:`lldsched.views.frames.to_frame` builds a frame from them without
a record object).  Standard library only; not thread-safe (its owner serialises
appends, as the simulation's single thread does).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from lldsched.model import ExecutionRecord, Outcome

__all__ = ["RecordColumns", "RecordLog", "outcome_of_code"]

_MISFIRES: tuple[Outcome | None, ...] = (None, *Outcome)
"""Misfire values by code: 0 is an ordinary run (``misfire is None``)."""
_MISFIRE_CODE: dict[Outcome | None, int] = {v: index << 2 for index, v in enumerate(_MISFIRES)}
_OK, _TIMED_OUT = 1, 2  # the low bits of a code: ok + 2 * timed_out + misfire code


def outcome_of_code(code: int) -> Outcome:
    """The :attr:`ExecutionRecord.outcome` of a record whose code is ``code`` (the
    model's rule, asked of a record with those three fields)."""
    return _decode("", "", code, 0.0, 0.0, 0.0, 0.0, 0, 0, None, None).outcome


class RecordColumns(NamedTuple):
    """A :class:`RecordLog`'s columns, as it holds them (read them, never write them).

    Row ``i`` is task ``key_ids[keys[i]]`` named ``key_names[keys[i]]``; its times are
    ``times[4*i : 4*i + 4]`` (due, slot, started, finished), its attempt and worker
    ``counts[2*i]`` and ``counts[2*i + 1]``, its ``ok``, ``timed_out`` and ``misfire``
    packed in ``codes[i]`` (:func:`outcome_of_code` reads one); ``errors`` and ``results`` map row
    numbers to texts, for the rows that have one.
    """

    keys: array[int]
    key_ids: list[str]
    key_names: list[str]
    times: array[float]
    counts: array[int]
    codes: bytearray
    errors: dict[int, str]
    results: dict[int, str]


class RecordLog:
    """An append-only log of :class:`~lldsched.model.ExecutionRecord` values, held as
    columns (see the module docstring)."""

    __slots__ = (
        "_codes",
        "_counts",
        "_errors",
        "_ids",
        "_key_of",
        "_keys",
        "_names",
        "_results",
        "_texts",
        "_times",
    )

    def __init__(self, records: Iterable[ExecutionRecord] = ()) -> None:
        self._keys: array[int] = array("i")
        self._ids: list[str] = []  # by key
        self._names: list[str] = []  # by key
        self._key_of: dict[str, int] = {}  # task id -> its newest key
        self._times: array[float] = array("d")
        self._counts: array[int] = array("i")
        self._codes = bytearray()
        self._errors: dict[int, str] = {}
        self._results: dict[int, str] = {}
        self._texts: dict[str, str] = {}  # interned error and result texts
        for record in records:
            self.append(record)

    def append(self, record: ExecutionRecord) -> None:
        """Keep ``record`` as the newest row."""
        (task_id, name, attempt, due, slot, worker, started, finished, ok, error) = record[:10]
        timed_out, misfire, result = record[10:]
        key = self._key_of.get(task_id)
        if key is None or self._names[key] != name:
            key = self._new_key(task_id, name)
        row = len(self._codes)
        self._keys.append(key)
        self._times.extend((due, slot, started, finished))
        self._counts.extend((attempt, worker))
        self._codes.append(ok + _TIMED_OUT * timed_out + _MISFIRE_CODE[misfire])  # see _decode
        if error is not None:
            self._errors[row] = self._texts.setdefault(error, error)
        if result is not None:
            self._results[row] = self._texts.setdefault(result, result)

    def _new_key(self, task_id: str, name: str) -> int:
        key = self._key_of[task_id] = len(self._ids)
        self._ids.append(task_id)
        self._names.append(name)
        return key

    def __len__(self) -> int:
        return len(self._codes)

    def __getitem__(self, row: int) -> ExecutionRecord:
        """The record in ``row`` (negative rows count from the end)."""
        count = len(self._codes)
        if not -count <= row < count:
            raise IndexError(f"record {row} of a log of {count}")
        row %= count
        key = self._keys[row]
        due, slot, started, finished = self._times[4 * row : 4 * row + 4]
        return _decode(
            self._ids[key],
            self._names[key],
            self._codes[row],
            due,
            slot,
            started,
            finished,
            self._counts[2 * row],
            self._counts[2 * row + 1],
            self._errors.get(row),
            self._results.get(row),
        )

    def __iter__(self) -> Iterator[ExecutionRecord]:
        times, counts = self._times, self._counts
        ids, names, errors, results = self._ids, self._names, self._errors, self._results
        rows = zip(
            self._keys,
            self._codes,
            times[0::4],
            times[1::4],
            times[2::4],
            times[3::4],
            counts[0::2],
            counts[1::2],
            strict=True,
        )
        for row, (key, code, due, slot, started, finished, attempt, worker) in enumerate(rows):
            yield _decode(
                ids[key],
                names[key],
                code,
                due,
                slot,
                started,
                finished,
                attempt,
                worker,
                errors.get(row),
                results.get(row),
            )

    def records(self) -> list[ExecutionRecord]:
        """Every record, oldest first, as ``ExecutionRecord`` values built now."""
        return list(self)

    def columns(self) -> RecordColumns:
        """The columns themselves (no copy): read them before the next append."""
        return RecordColumns(
            self._keys,
            self._ids,
            self._names,
            self._times,
            self._counts,
            self._codes,
            self._errors,
            self._results,
        )

    def __repr__(self) -> str:
        return f"<RecordLog of {len(self)} records, {len(self._ids)} tasks>"


_new_tuple = tuple.__new__


def _decode(
    task_id: str,
    name: str,
    code: int,
    due: float,
    slot: float,
    started: float,
    finished: float,
    attempt: int,
    worker: int,
    error: str | None,
    result: str | None,
) -> ExecutionRecord:
    """The record of one row, from its columns (positional: one per record read)."""
    ok, timed_out, misfire = bool(code & _OK), bool(code & _TIMED_OUT), _MISFIRES[code >> 2]
    fields = (task_id, name, attempt, due, slot, worker, started, finished, ok, error)
    return _new_tuple(ExecutionRecord, (*fields, timed_out, misfire, result))
