"""RecordLog: records kept as columns give back equal records, in order, on demand."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lldsched import ExecutionRecord, FixedRate, Outcome
from lldsched.core.recordlog import BATCH, RecordLog
from lldsched.sim import Simulation, fixed
from lldsched.views.columns import from_log, from_records

T0 = 1_767_571_200.0

times = st.floats(min_value=0.0, max_value=4e9, allow_nan=False)
texts = st.none() | st.sampled_from(["ValueError: boom", "TimeoutError: late", "'done'", ""])
records = st.builds(
    ExecutionRecord,
    task_id=st.sampled_from(["task-1", "task-2", "b"]),
    name=st.sampled_from(["nightly", "hourly", "renamed"]),
    attempt=st.integers(min_value=0, max_value=1_000),
    due=times,
    slot=times,
    worker=st.integers(min_value=-1, max_value=64),
    started=times,
    finished=times,
    ok=st.booleans(),
    error=texts,
    timed_out=st.booleans(),
    misfire=st.none() | st.sampled_from(list(Outcome)),
    result=texts,
    token=st.none() | st.integers(min_value=0, max_value=2**62),
    node=st.none() | st.sampled_from(["web-1:12:a1b2c3", "web-2:40:d4e5f6"]),
)


@given(st.lists(records, max_size=30))
@settings(max_examples=50)
def test_a_log_gives_back_the_records_appended_in_order(appended: list[ExecutionRecord]) -> None:
    log = RecordLog(appended)
    assert len(log) == len(appended)
    assert log.records() == appended
    assert list(log) == appended
    assert [log[row] for row in range(len(appended))] == appended


@given(st.lists(records, min_size=1, max_size=10))
def test_negative_rows_count_from_the_end(appended: list[ExecutionRecord]) -> None:
    log = RecordLog(appended)
    assert log[-1] == appended[-1]
    assert log[-len(appended)] == appended[0]


def test_a_row_past_either_end_is_an_index_error_naming_it() -> None:
    log = RecordLog([_record("a", "x")])
    with pytest.raises(IndexError, match="record 1 of a log of 1"):
        log[1]
    with pytest.raises(IndexError, match="record -2 of a log of 1"):
        log[-2]


def test_a_renamed_task_keeps_each_record_under_the_name_it_had() -> None:
    log = RecordLog([_record("a", "old"), _record("a", "new"), _record("a", "new")])
    assert [record.name for record in log] == ["old", "new", "new"]
    columns = log.columns()
    assert columns.key_ids == ["a", "a"] and columns.key_names == ["old", "new"]
    assert list(columns.keys) == [0, 1, 1]


def test_equal_error_texts_are_kept_once() -> None:
    first, second = (f"SimulatedFailure: attempt {attempt}" for attempt in (1, 1))  # at run time
    assert first is not second
    log = RecordLog([_record("a", "x", error=first), _record("a", "x", error=second)])
    assert log[0].error is log[1].error


def test_each_outcome_survives_the_columns() -> None:
    for misfire in (None, *Outcome):
        for ok in (False, True):
            for timed_out in (False, True):
                record = _record("a", "x", ok=ok, timed_out=timed_out, misfire=misfire)
                (kept,) = RecordLog([record])
                assert kept.outcome is record.outcome


def _records_alive() -> int:
    gc.collect()
    return sum(isinstance(obj, ExecutionRecord) for obj in gc.get_objects())


def test_a_simulation_keeps_its_records_in_its_log_and_at_most_a_batch_as_objects() -> None:
    # Counted against what the process held before: an earlier test in this process (a
    # pytest-xdist worker runs many files) may keep records of its own alive.
    before = _records_alive()
    sim = Simulation(workers=2, start=T0, history_limit=0)
    sim.schedule("rate", FixedRate(60), duration=fixed(90))  # overruns: skipped slots too
    sim.run_for(86400)
    alive = _records_alive() - before
    log = sim.record_log()
    assert len(log) == 1440 > BATCH > alive
    assert len(sim.records()) == 1440
    assert log.records() == sim.records()
    assert {record.outcome for record in sim.records()} == {Outcome.OK, Outcome.SKIPPED}


def _record(
    task_id: str,
    name: str,
    *,
    ok: bool = True,
    error: str | None = None,
    timed_out: bool = False,
    misfire: Outcome | None = None,
) -> ExecutionRecord:
    return ExecutionRecord(
        task_id=task_id,
        name=name,
        attempt=1,
        due=T0,
        slot=T0,
        worker=0,
        started=T0,
        finished=T0 + 1,
        ok=ok,
        error=error,
        timed_out=timed_out,
        misfire=misfire,
    )


def test_records_past_a_batch_come_back_equal_and_in_order() -> None:
    appended = [
        _record(f"task-{row % 7}", "renamed" if row > 1500 else "x", ok=row % 3 > 0)._replace(
            attempt=row, error=None if row % 3 else f"E: {row % 2}", result=str(row % 5)
        )
        for row in range(2 * BATCH + 5)
    ]
    log = RecordLog()
    for record in appended:
        log.append(record)
    assert len(log) == len(appended)
    assert log[1500] == appended[1500]
    assert log.records() == appended
    assert len(log.columns().key_ids) == 14  # seven tasks, each renamed once


@given(st.lists(records, max_size=30))
@settings(max_examples=30)
def test_a_logs_columns_give_the_frame_columns_of_its_records(
    appended: list[ExecutionRecord],
) -> None:
    logged, listed = from_log(RecordLog(appended).columns()), from_records(appended)
    for field in ("node", "error", "result", "worker", "outcome"):
        assert list(logged[field]) == list(listed[field]), field
