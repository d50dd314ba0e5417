"""A durable store's row read back (lldsched/stores/rowvalues.py), value by value.

The stores' own tests write bad rows through SQL and check the error names the bad
value; these call the one reader directly, for what those cannot tell apart: a good
lease reads as itself (a task's row holding one, and the leases table's row), and a
row refused names the values that are wrong and no other.
"""

from __future__ import annotations

import pytest

from lldsched.coordination import Lease
from lldsched.stores.rowvalues import check_kept, lease_from, record_from, snapshot_from
from lldsched.stores.unreadable import BadValue

# next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot,
# resume_at, grid, blocked_due, blocked_slot
STATE = (5.0, 0, 3, 1, None, 0, None, None, None, None, None, None)
LEASE = (5.0, 1, 7, "node-a", 35.0)  # slot, attempt, token, holder, expires_at


def test_a_lease_row_reads_back_as_its_lease() -> None:
    assert lease_from(("t1", *LEASE)) == Lease("t1", 5.0, 1, 7, "node-a", 35.0)


def test_a_task_row_holding_a_good_lease_is_taken() -> None:
    check_kept("t1", (None, 1, 4, 5.0, *LEASE))  # failed_seq, priority, version, slot_due
    check_kept("t1", (None, 1, 4, None, None, None, None, None, None))  # no lease


def test_a_lease_holding_a_nan_expiry_is_refused_naming_that_value_alone() -> None:
    with pytest.raises(BadValue) as caught:
        lease_from(("t1", 5.0, 1, 7, "node-a", float("nan")))
    (said,) = caught.value.said
    assert "table leases, row task_id='t1', column expires_at holds the real nan" in said


def test_a_scheduled_row_with_attempts_behind_it_is_refused_naming_the_attempt_alone() -> None:
    """Its due instant is there: only the attempt does not go with its status."""
    with pytest.raises(BadValue) as caught:
        snapshot_from("b", "{}", "scheduled", (5.0, 2, *STATE[2:]))
    (said,) = caught.value.said
    assert said.startswith("table tasks, row id='b', column attempt holds the integer 2, ")


def test_a_retrying_row_with_no_due_instant_is_refused_naming_the_due_instant_alone() -> None:
    with pytest.raises(BadValue) as caught:
        snapshot_from("b", "{}", "retrying", (None, 1, *STATE[2:]))
    (said,) = caught.value.said
    assert said.startswith("table tasks, row id='b', column next_run_at holds the null None, ")


def test_a_task_row_keeping_a_negative_version_is_refused_naming_the_version_alone() -> None:
    """Its priority, failed_seq, slot_due and lease are good: none of them is named."""
    with pytest.raises(BadValue) as caught:
        check_kept("t1", (3, 2, -1, 5.0, *LEASE))
    (said,) = caught.value.said
    assert said.startswith("table tasks, row id='t1', column version holds the integer -1, ")


def test_a_task_row_keeping_a_dead_letter_place_of_minus_one_is_refused_naming_it() -> None:
    """-1, the first value out of range: the error names it (it named nothing)."""
    with pytest.raises(BadValue) as caught:
        check_kept("t1", (-1, 1, 4, None, None, None, None, None, None))
    (said,) = caught.value.said
    assert said.startswith("table tasks, row id='t1', column failed_seq holds the integer -1, ")


def test_a_record_of_a_slot_decided_without_a_run_names_only_its_bad_value() -> None:
    """Worker -1 (a slot decided without a run) is a value the store writes: a record
    refused for its NaN due instant names that alone."""
    row = ["t1", "job", 0, 5.0, 5.0, -1, 5.0, 5.0, 0, None, 0, "skipped", None, None, None, 9]
    assert record_from(row).worker == -1
    row[3] = float("nan")
    with pytest.raises(BadValue) as caught:
        record_from(row)
    (said,) = caught.value.said
    assert said.startswith("table records, row task_id='t1' seq=9, column due holds the real nan")
