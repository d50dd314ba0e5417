"""Every kind of store call that can fail has a success that ends the outage it began
(core/store/outage.py, ``ENDED_BY``): before, a failed write of a misfire's decision
(kind ``"misfire"``) was ended by nothing, nothing ever reporting one as succeeded, and
``metrics().store_ok`` (the readiness probe, docs/OPERATIONS.md) stayed False after the
store was back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, get_args

import pytest

from lldsched import FakeClock, FixedRate, Scheduler, SqliteTaskStore, StoreError
from lldsched.core.store.outage import ENDED_BY, Kind
from lldsched.core.store.writes import StoreWrites
from lldsched.policies import Misfire, MisfirePolicy
from lldsched.stores.memory import InMemoryTaskStore
from tests import jobs
from tests.waits import wait_until

EXPECTED: dict[str, set[str]] = {
    # a task's row and its records: written by a save (a settle), and by a misfire's
    # decision in one fenced transaction; a misfire is not written again on its own
    "save": {"save", "misfire"},
    "misfire": {"misfire", "save"},
    "delete": {"delete"},  # its row is left stale: written again, as a delete
    "read of the change feed": {"read of the change feed"},  # at every wake
    # the leases: a claim is made at every wake, a release never again (the claim
    # expires on its own), a renewal only while leases are held
    "claim": {"claim"},
    "renewal": {"renewal", "claim"},
    "release": {"release", "claim"},
    "flush": {"flush", "save"},  # the settles held back for a batch: saves
    # the PostgreSQL store's own account of its batches (not store_ok's)
    "settle batch": {"settle batch"},
    "records trim": {"records trim"},
}
"""Each kind of call that can fail, and the kinds whose success ends its outage."""


def _failed(writes: StoreWrites, kind: str) -> None:
    error = StoreError("the store went away")
    if kind in ("save", "delete"):
        writes.failed(error, kind, "job")  # type: ignore[arg-type]
    else:
        writes.call_failed(error, kind, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_every_kind_that_fails_is_ended_by_its_enders_and_by_nothing_else(kind: str) -> None:
    for succeeded in sorted(EXPECTED):
        writes = StoreWrites(InMemoryTaskStore())
        _failed(writes, kind)
        assert not writes.ok
        writes.succeeded(succeeded)  # type: ignore[arg-type]
        assert writes.ok is (succeeded in EXPECTED[kind]), (kind, succeeded)


def test_the_table_names_every_kind_and_only_those() -> None:
    assert set(get_args(Kind)) == set(EXPECTED)
    assert {kind: set(ends) for kind, ends in ENDED_BY.items()} == EXPECTED


def test_a_kind_not_in_the_table_is_refused_naming_it() -> None:
    writes = StoreWrites(InMemoryTaskStore())
    with pytest.raises(ValueError, match="'claims'"):
        writes.call_failed(StoreError("down"), "claims", "claim")  # type: ignore[arg-type]
    assert writes.ok  # nothing counted


PERIOD = 600.0


def test_a_misfire_write_that_failed_once_ends_its_outage_once_the_store_works(
    tmp_path: Path,
) -> None:
    """A shared store fails the one write of a misfire's decision (SKIP of the slots that
    passed while no process ran), then works.  The lease of the claim expires, the slot is
    taken over here and run: its settle is a save that succeeds, which ends the outage.
    Before, nothing ended an outage of kind "misfire": store_ok stayed False for good."""
    path = tmp_path / "shared.sqlite"
    seeding = SqliteTaskStore(path, shared=True, lease=1.0, poll=0.05)
    seeder = Scheduler(store=seeding, clock=FakeClock(time.time() - 5.5 * PERIOD))
    seeder.schedule("nightly", jobs.noop, FixedRate(PERIOD), id="nightly",
                    misfire=MisfirePolicy(Misfire.SKIP))  # fmt: skip
    store = SqliteTaskStore(path, shared=True, lease=1.0, poll=0.05)
    decided = store.misfired
    refused: list[int] = []

    def fails_once(*args: Any, **kwargs: Any) -> None:
        if not refused:
            refused.append(1)
            raise StoreError("the store went away for a moment")
        decided(*args, **kwargs)

    store.misfired = fails_once  # type: ignore[method-assign]
    scheduler = Scheduler(store=store).start()
    try:
        wait_until(lambda: bool(refused), timeout=10, what="the misfire's write refused")
        wait_until(lambda: scheduler.metrics().store_ok, timeout=10, what="the outage's end")
    finally:
        scheduler.shutdown()
        seeding.close()
        store.close()
