"""A frame's columns: their dtypes, and the arrays built for them from each kind of source.

:data:`DTYPES` is the column name to dtype of every frame :func:`~lldsched.views.frames.to_frame`
returns (:data:`COLUMNS` their order, :data:`OUTCOMES` the outcome categories; the
columns' meaning is in :mod:`lldsched.views.frames`).  The arrays are built column-wise,
one pass per field and no per-row object, from a list of
:class:`~lldsched.model.ExecutionRecord` (:func:`from_records`), a simulation's
columnar :class:`~lldsched.core.recordlog.RecordLog` (:func:`from_log`, no record object
at all) or a threaded scheduler's packed histories (:func:`from_packed`); instants are
integer microseconds until :func:`utc_column` makes them UTC timestamps, and
:func:`priority_column` fills the priorities a source knows.  No state, no lock.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from lldsched.views import missing_extra

try:
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - exercised by a test that hides pandas
    raise missing_extra(__name__, "pandas and numpy", exc) from exc

from lldsched.core.packedstats import BATCH, CODES, NUMBERS, REST, Rows
from lldsched.core.recordlog import MISFIRES as LOG_MISFIRES
from lldsched.core.recordlog import RecordColumns
from lldsched.model import ExecutionRecord, Outcome

__all__ = [
    "COLUMNS",
    "DTYPES",
    "OUTCOMES",
    "from_log",
    "from_packed",
    "from_records",
    "priority_column",
    "utc_column",
]

OUTCOMES = tuple(outcome.value for outcome in Outcome)
"""The outcome categories, in this order (:class:`~lldsched.model.Outcome`'s); an
outcome a record reports beyond these is appended after them."""


DTYPES: dict[str, Any] = {
    "task_id": pd.StringDtype(),
    "name": pd.StringDtype(),
    "attempt": np.dtype("int64"),
    "worker": np.dtype("int64"),
    "due": pd.DatetimeTZDtype("us", "UTC"),
    "slot": pd.DatetimeTZDtype("us", "UTC"),
    "start": pd.DatetimeTZDtype("us", "UTC"),
    "finish": pd.DatetimeTZDtype("us", "UTC"),
    "duration": np.dtype("timedelta64[us]"),
    "lateness": np.dtype("timedelta64[us]"),
    "ok": np.dtype("bool"),
    "error": pd.StringDtype(),
    "result": pd.StringDtype(),
    "timed_out": np.dtype("bool"),
    "outcome": pd.CategoricalDtype(list(OUTCOMES)),
    "priority": pd.Int64Dtype(),
    "node": pd.StringDtype(),
}
"""Column name to dtype, in column order."""

COLUMNS = tuple(DTYPES)

# Positions of the fields in an ExecutionRecord, read with itemgetter (no attribute lookups).
_FIELD = {name: index for index, name in enumerate(ExecutionRecord._fields)}


def from_records(records: list[ExecutionRecord]) -> dict[str, Any]:
    """The frame's columns from record objects, one pass per field."""
    count = len(records)

    def column(field: str) -> list[Any]:
        return list(map(operator.itemgetter(_FIELD[field]), records))

    def numbers(field: str, dtype: type) -> np.ndarray[Any, Any]:
        values = map(operator.itemgetter(_FIELD[field]), records)
        return np.fromiter(values, dtype=dtype, count=count)

    task_id = pd.array(column("task_id"), dtype=DTYPES["task_id"])
    return {
        "task_id": task_id,
        "task_keys": pd.factorize(task_id) if count else (np.zeros(0, np.intp), []),
        "name": pd.array(column("name"), dtype=DTYPES["name"]),
        "attempt": numbers("attempt", np.int64),
        "worker": numbers("worker", np.int64),
        **{field: _microseconds(numbers(field, float)) for field in _TIMES_OF_RECORD},
        "ok": numbers("ok", bool),
        "timed_out": numbers("timed_out", bool),
        "error": pd.array(column("error"), dtype=DTYPES["error"]),
        "result": pd.array(column("result"), dtype=DTYPES["result"]),
        "outcome": _outcomes(*_coded([record.outcome for record in records])),
        "node": pd.array(column("node"), dtype=DTYPES["node"]),
    }


def from_log(log: RecordColumns) -> dict[str, Any]:
    """The frame's columns from a :class:`~lldsched.core.recordlog.RecordLog`'s: numpy
    reads its arrays in place, and each row's outcome is the model's rule applied once
    per combination of (ok, timed_out, misfire) present."""
    numbers = log.numbers
    count = len(log.keys)
    keys = np.frombuffer(log.keys, dtype=np.int32) if count else np.zeros(0, np.int32)

    def array_of(field: str, dtype: Any) -> np.ndarray[Any, Any]:
        column = numbers[field]
        return np.frombuffer(column, dtype=dtype) if count else np.zeros(0, dtype)

    def texts(sparse: Mapping[int, str]) -> Any:
        """Rows without a text are ``<NA>``: a take from the distinct texts."""
        distinct = {text: index for index, text in enumerate(dict.fromkeys(sparse.values()))}
        codes = np.full(count, -1, dtype=np.intp)
        codes[list(sparse)] = [distinct[text] for text in sparse.values()]
        return pd.array(list(distinct), dtype=pd.StringDtype()).take(codes, allow_fill=True)

    ok, timed_out = array_of("ok", np.uint8), array_of("timed_out", np.uint8)
    misfire = array_of("misfire", np.uint8)
    return {
        "task_id": pd.array(log.key_ids, dtype=DTYPES["task_id"]).take(keys),
        "task_keys": (keys, log.key_ids),
        "name": pd.array(log.key_names, dtype=DTYPES["name"]).take(keys),
        "attempt": array_of("attempt", np.int32).astype(np.int64),
        "worker": array_of("worker", np.int32).astype(np.int64),
        **{field: _microseconds(array_of(field, np.float64)) for field in _TIMES_OF_RECORD},
        "ok": ok.astype(bool),
        "timed_out": timed_out.astype(bool),
        "error": texts(log.errors),
        "result": texts(log.results),
        "outcome": _outcomes_of(ok, timed_out, misfire),
        "node": texts(log.nodes),
    }


def from_packed(rows: list[Rows]) -> dict[str, Any]:
    """The frame's columns from a scheduler's packed histories
    (:meth:`~lldsched.core.machine.SchedulerCore.packed_records`), in the order of
    its ``records()``: sorted by ``finished``, ties in the order given."""
    blocks = np.frombuffer(b"".join(row.block.numbers for row in rows), dtype=_BLOCK_DTYPE)
    sizes = np.array([row.block.size for row in rows], dtype=np.intp).reshape(-1, 1)
    starts = np.array([row.start for row in rows], dtype=np.intp).reshape(-1, 1)
    held = (starts <= _IN_BLOCK) & (sizes > _IN_BLOCK)  # the records of each block
    counts = (sizes - starts).reshape(-1)
    finished = blocks["finished"][held]
    order = np.argsort(finished, kind="stable")

    def number(field: str) -> np.ndarray[Any, Any]:
        return blocks[field][held][order]

    def coded(field: str) -> tuple[np.ndarray[Any, Any], list[Any]]:
        """One field kept as objects: each row's code into the distinct values (None
        is -1), in finish order.  A block's shared value is coded once."""
        index = REST.index(field)
        distinct: dict[Any, int] = {None: -1}
        code = distinct.setdefault
        values = [block.rest[index] for block, _ in rows]
        if not any(isinstance(value, tuple) for value in values):  # one value a block
            shared = [code(value, len(distinct) - 1) for value in values]
            codes: Any = np.repeat(np.array(shared, dtype=np.intp), counts)
        else:
            codes = []
            for (block, start), value in zip(rows, values, strict=True):
                if isinstance(value, tuple):
                    codes += [code(each, len(distinct) - 1) for each in value[start:]]
                else:
                    codes += [code(value, len(distinct) - 1)] * (block.size - start)
            codes = np.array(codes, dtype=np.intp)
        del distinct[None]
        return codes[order], list(distinct)

    def texts(field: str) -> Any:
        codes, distinct = coded(field)
        return pd.array(distinct, dtype=DTYPES[field]).take(codes, allow_fill=True)

    keys, task_ids = coded("task_id")
    misfire_codes, misfires = coded("misfire")
    # Each distinct misfire's index in MISFIRES, and a 0 last: the code -1 (None) reads it.
    misfire = np.array([_MISFIRE_INDEX[value] for value in misfires] + [0], dtype=np.uint8)
    ok, timed_out = number("ok"), number("timed_out")
    return {
        "task_id": pd.array(task_ids, dtype=DTYPES["task_id"]).take(keys),
        "task_keys": (keys, task_ids),
        "name": texts("name"),
        "attempt": number("attempt").astype(np.int64),
        "worker": number("worker").astype(np.int64),
        **{field: _microseconds(number(field)) for field in _TIMES_OF_RECORD},
        "ok": ok,
        "timed_out": timed_out,
        "error": texts("error"),
        "result": texts("result"),
        "outcome": _outcomes_of(
            ok.astype(np.uint8), timed_out.astype(np.uint8), misfire[misfire_codes]
        ),
        "node": texts("node"),
    }


_BLOCK_DTYPE = np.dtype([(field, "=" + CODES[field], (BATCH,)) for field in NUMBERS])
"""A packed block's numbers (:func:`lldsched.core.packedstats.block_format`)."""
_IN_BLOCK = np.arange(BATCH).reshape(1, -1)  # a record's place in its block
_MISFIRE_INDEX = {misfire: index for index, misfire in enumerate(LOG_MISFIRES)}


def _outcomes_of(ok: Any, timed_out: Any, misfire: Any) -> Any:
    """The outcome column from the (uint8) ok, timed_out and misfire-index columns: the
    model's rule applied once per combination present."""
    combination = misfire.astype(np.int64) * 4 + timed_out * 2 + ok
    present, where = np.unique(combination, return_inverse=True)
    outcomes = [_outcome_of(int(code)) for code in present]
    return _outcomes(outcomes, where.reshape(-1))


_TIMES_OF_RECORD = ("due", "slot", "started", "finished")


_NAT_INTEGER = float(np.iinfo(np.int64).min)  # NaT as an integer: -2**63, exact in a float


def _microseconds(seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Seconds as whole microseconds, a NaN (an instant not known) as NaT's integer: said
    outright, as the cast of a NaN is undefined (-2**63 on x86, 0 on ARM) and warns."""
    microseconds = np.rint(seconds * 1e6)
    microseconds[np.isnan(microseconds)] = _NAT_INTEGER
    return microseconds.astype(np.int64)


def _outcome_of(combination: int) -> Outcome:
    """The outcome of a record whose (misfire index, timed_out, ok) is ``combination``
    (``misfire * 4 + timed_out * 2 + ok``): the record's own rule, asked once."""
    misfire, timed_out, ok = combination >> 2, combination >> 1 & 1, combination & 1
    probe = ExecutionRecord.of(
        task_id="", name="", attempt=0, due=0.0, slot=0.0, worker=0, started=0.0,
        finished=0.0, ok=bool(ok), timed_out=bool(timed_out), misfire=LOG_MISFIRES[misfire],
    )  # fmt: skip
    return probe.outcome


def utc_column(microseconds: np.ndarray[Any, np.dtype[np.int64]]) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(microseconds.view("M8[us]")).tz_localize("UTC")


def _coded(values: list[Outcome]) -> tuple[list[Outcome], np.ndarray[Any, Any]]:
    """The distinct ``values``, and for each value its index among them."""
    index: dict[Outcome, int] = {}
    codes = [index.setdefault(value, len(index)) for value in values]
    return list(index), np.array(codes, dtype=np.intp)


def _outcomes(distinct: list[Outcome], codes: np.ndarray[Any, Any]) -> Any:
    """The outcome column: row ``i`` is ``distinct[codes[i]]`` (each record's own
    ``outcome``: one rule, in the model); the categories are :data:`OUTCOMES` plus
    any outcome a record reports beyond them."""
    categories = list(OUTCOMES)
    categories += sorted(set(distinct).difference(categories))
    position = np.array([categories.index(value) for value in distinct], dtype=np.intp)
    return pd.Categorical.from_codes(position[codes], dtype=pd.CategoricalDtype(categories))


def priority_column(codes: Any, task_ids: Any, known: Mapping[str, int]) -> Any:
    """Row ``i``'s priority is task ``task_ids[codes[i]]``'s in ``known`` (<NA> if unknown)."""
    per_task = pd.array([known.get(str(task_id)) for task_id in task_ids], dtype=DTYPES["priority"])
    if len(codes) == 0 or not known:
        return pd.array([None] * len(codes), dtype=DTYPES["priority"])
    return per_task.take(codes)
