"""Fuzz target: a store's rows read back (``lldsched/stores/codec.py``, ``rowvalues.py``).

``python tools/fuzz/fuzz_codec.py [atheris flags, e.g. -max_total_time=300]``

A row is what a store hands the codec: a definition's JSON text, a status text, the
state values, the values kept beside them and a record's row.  The inputs start from
rows lldsched writes (definitions of every built-in schedule, policies, arguments)
and damage them: a value anywhere in the JSON replaced by a hostile one (wrong type,
NaN, infinities, ``1e400``, a 5,000-digit int, deep nesting, an unknown schedule
type, a key no release writes), the text truncated or raw bytes; the state and record
values replaced the same way.

The rule (docs/decisions/persistence.md, "A row holding a value no write of lldsched makes is
refused by itself"): a row is read, or refused with a ``StoreError`` whose message
names the task (``task <id>``); nothing else escapes.  A definition that is read must
be usable: its schedule answers ``first_run``, it encodes again, and its repr reads.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path
from typing import Any

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports(include=["lldsched"]):
    from lldsched import (
        CronSchedule,
        FixedDelay,
        FixedRate,
        Jittered,
        Misfire,
        MisfirePolicy,
        OneTime,
        Overlap,
        Priority,
        RetryPolicy,
        Window,
    )
    from lldsched.errors import LldschedError, StoreError
    from lldsched.persistence import Task
    from lldsched.schedules.base import Schedule
    from lldsched.stores.codec import decode_task, encode_task
    from lldsched.stores.rowvalues import Undecodable, record_from, snapshot_from

from _rule import run, timed

from tests import jobs

TASK_ID = "t\u00e9-1"


def _seeds() -> list[Any]:
    retry = RetryPolicy(max_attempts=3, initial_backoff=2.0)
    schedules: list[Schedule] = [
        OneTime(1.7e9),
        OneTime(delay=5),
        FixedDelay(30, start_delay=1),
        FixedRate(60),
        CronSchedule("0 3 * * 1-5", tz="Europe/Berlin"),
        CronSchedule("*/15 * * * * *"),
        Jittered(FixedRate(3600), 30, seed=7),
        Window(CronSchedule("@hourly"), start=1.7e9, end=1.8e9, max_runs=3),
        Window(Jittered(FixedDelay(5), 1, seed=3), max_runs=2),
    ]
    tasks = [
        Task(TASK_ID, "seed", jobs.noop, schedule, Priority.NORMAL, retry, None)
        for schedule in schedules
    ]
    tasks.append(
        Task(
            TASK_ID, "full", jobs.note, FixedRate(5), Priority.HIGH, retry, 9.5, ("x",), {"k": 1},
            MisfirePolicy(Misfire.RUN_ALL, grace=5, max_catch_up=3), "thread", ("a", "b"),
            Overlap.ALLOW, 2,
        )
    )  # fmt: skip
    return [json.loads(encode_task(task)) for task in tasks]


SEEDS = _seeds()
HOSTILE: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2, 7, 1.5, -0.0, math.nan, math.inf, -math.inf, 1e308,
    1e-320, 10**30, -(10**30), "", " ", "x", "0 3 * * *", "nope:nothing", "tests.jobs:noop",
    "os:system", "thread", "process", "allow", "run_all", "Europe/Nowhere", "\x00", "\udcff",
    [], [1], ["a", 1], {}, {"type": "Nope"}, {"type": "CronSchedule"}, {"type": None},
    {"type": "OneTime", "at": None, "delay": None}, {"type": "Window", "schedule": None},
    {"type": "Jittered", "schedule": {"type": "Jittered"}},
)  # fmt: skip
STATE = (1.7e9, 0, 3, 1, None, 0, None, None, None, None)
RECORD = (
    TASK_ID, "seed", 1, 1.7e9, 1.7e9, 0, 1.7e9, 1.7e9 + 1, 1, None, 0, None, None, None, None, 7,
)  # fmt: skip
STATUSES = ("scheduled", "retrying", "running", "paused", "done", "failed", "cancelled", "x")


def hostile(fdp: atheris.FuzzedDataProvider) -> Any:
    pick = fdp.ConsumeIntInRange(0, len(HOSTILE) + 3)
    if pick < len(HOSTILE):
        return copy.deepcopy(HOSTILE[pick])
    if pick == len(HOSTILE):
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 20))
    if pick == len(HOSTILE) + 1:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 12))
    if pick == len(HOSTILE) + 2:
        return fdp.ConsumeFloat()
    nested: Any = hostile(fdp)
    for _ in range(fdp.ConsumeIntInRange(1, 3000)):
        nested = [nested]
    return nested


def mutate(fdp: atheris.FuzzedDataProvider, document: Any) -> Any:
    """Replace, delete or add one value at a random depth of ``document``."""
    if not isinstance(document, (dict, list)) or not document or fdp.ConsumeIntInRange(0, 3) == 0:
        return hostile(fdp)
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[fdp.ConsumeIntInRange(0, len(keys) - 1)]
    action = fdp.ConsumeIntInRange(0, 5)
    if action == 0 and isinstance(document, dict):
        del document[key]
    elif action == 1 and isinstance(document, dict):
        document[fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 8))] = hostile(fdp)
    else:
        document[key] = mutate(fdp, document[key])
    return document


def definition(fdp: atheris.FuzzedDataProvider) -> str:
    pick = fdp.ConsumeIntInRange(0, 9)
    if pick == 0:
        return str(fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 200)))
    document = copy.deepcopy(SEEDS[fdp.ConsumeIntInRange(0, len(SEEDS) - 1)])
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        document = mutate(fdp, document)
    try:
        text = json.dumps(document)
    except (ValueError, RecursionError):  # deeper than json.dumps writes
        text = "[" * 100_000
    if pick == 1:
        text = text[: fdp.ConsumeIntInRange(0, len(text))]
    return text


SCALARS: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 2, 2**63 - 1, -(2**63), 0.0, -0.0, 1.5, -1.0, 1e15, 1e16,
    math.nan, math.inf, -math.inf, "", "x", "1", "scheduled", "a\x00b", b"", b"\xff",
    Undecodable(b"a\xffb"), "z" * 100_000,
)  # fmt: skip


def scalar(fdp: atheris.FuzzedDataProvider) -> Any:
    """A value a database column gives back: no list or dict comes out of a row."""
    pick = fdp.ConsumeIntInRange(0, len(SCALARS) + 2)
    if pick < len(SCALARS):
        return SCALARS[pick]
    if pick == len(SCALARS):
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 20))
    if pick == len(SCALARS) + 1:
        return fdp.ConsumeIntInRange(-(2**63), 2**63 - 1)
    return fdp.ConsumeFloat()


def values(fdp: atheris.FuzzedDataProvider, row: tuple[Any, ...], keys: int = 0) -> tuple[Any, ...]:
    """``row`` with up to three values replaced, past its first ``keys`` and its last
    ``keys`` (a record's task id and sequence number: the rows' keys, which the tables'
    constraints keep)."""
    out = list(row)
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        out[fdp.ConsumeIntInRange(keys, len(out) - 1 - keys)] = scalar(fdp)
    return tuple(out)


def usable(task: Task) -> None:
    """What every later read of a loaded task does with it."""
    repr(task)
    task.schedule.first_run(1.7e9)
    if task.action is not None:
        encode_task(task)


def test_one(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = definition(fdp)
    where = f"task {TASK_ID}"
    with timed():
        try:
            if fdp.ConsumeBool():
                runs, imports = fdp.ConsumeIntInRange(0, 5), fdp.ConsumeBool()
                task = decode_task(TASK_ID, text, runs=runs, imports=imports)
                if imports:  # else the action is its path as text, a NotImported
                    usable(task)
            else:
                status = STATUSES[fdp.ConsumeIntInRange(0, len(STATUSES) - 1)]
                snapshot_from(TASK_ID, text, status, values(fdp, STATE))
                record_from(values(fdp, RECORD, keys=1))
        except StoreError as exc:
            message = str(exc)
            assert where in message or "task_id=" in message, message[:2000]
            assert len(message) < 20_000, f"a message of {len(message):,} characters"
        except LldschedError as exc:  # from usable(): the loaded task's own refusal
            raise AssertionError(f"{text!r} loaded, then {exc!r}") from exc


if __name__ == "__main__":
    run(test_one, sys.argv)
