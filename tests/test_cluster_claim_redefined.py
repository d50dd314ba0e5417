"""A new definition committed by another process between this process's read of the
change feed and its claim (both engines): the claim is decided and run with the
definition it saw (``Claim.stale``: the feed is read before the claim's entry is made).

Before, the entry was made from the copy this process had.  Its run was safe (the timer
reads the feed again before any worker can begin it, and the replaced task's entry is
refused and claimed again), but a misfire decided at the claim was not: the old policy
and schedule decided the slot and wrote the row (here: SKIP recorded it missed, where
the new RUN_ONCE runs it).

The race is forced, not waited for: the store's ``claim`` is wrapped so that the other
process's ``replace_existing=True`` registration commits right before the claim runs,
after the wake's read of the feed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, OneTime, Scheduler
from lldsched.coordination import Claim, CoordinatedStore
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

LATER = 3600.0  # a one-off due in an hour: it never runs within a test


@pytest.fixture
def stores(store_spec: StoreSpec) -> Iterator[list[CoordinatedStore]]:
    """Two stores on one shared store (once per engine), closed after the test."""
    with opened(store_spec, 2, poll=0.05) as stores:
        yield stores


def test_a_definition_written_after_the_feeds_read_and_before_the_claim_is_the_one_run(
    stores: list[CoordinatedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = stores
    # Never started: its verbs write rows.  Its clock an hour back: what it registers is
    # due then, a slot passed before the runner was built (a misfire, decided at claim).
    elsewhere = Scheduler(workers=1, store=there, clock=FakeClock(time.time() - 3600))
    elsewhere.schedule("count", len, FixedRate(60), args=["a"], id="count",
                       misfire=MisfirePolicy(Misfire.SKIP, grace=0))  # fmt: skip
    runner = Scheduler(workers=1, store=here)  # loads the old definition
    claim = here.claim
    redefined: list[bool] = []

    def claim_after_a_redefinition(**kwargs: Any) -> list[Claim]:
        if not redefined:  # after this wake's read of the feed, before its claim
            redefined.append(True)
            elsewhere.schedule("count", len, OneTime(delay=0), args=["abc"], id="count",
                               misfire=MisfirePolicy(Misfire.RUN_ONCE, grace=0),
                               replace_existing=True)  # fmt: skip
        claims: list[Claim] = claim(**kwargs)
        return claims

    monkeypatch.setattr(here, "claim", claim_after_a_redefinition)
    try:
        runner.start()

        def ran() -> bool:
            return any(r.result == "3" for r in there.records("count"))

        # Before: the old SKIP recorded the slot missed and nothing ran.
        wait_until(ran, timeout=20, what="the run of the redefined task")
    finally:
        runner.shutdown()
        elsewhere.shutdown()
    records = there.records("count")
    assert [(r.result, r.misfire) for r in records] == [("3", None)]


def test_a_claim_of_a_row_loaded_at_start_and_not_written_since_is_not_stale(
    store_spec: StoreSpec,
) -> None:
    """A row another process wrote before this one started was read at the start (the
    store opened past it, and loaded it): its claim needs no read of the feed first.
    One rewritten since does.  Before, on SQLite every first claim of a task after a
    start was stale: its versions seen were only those written or read through the feed
    (``SharedState.knows``, the settle's test, counts the start's)."""
    with opened(store_spec, 1, poll=0.05) as (there,):
        elsewhere = Scheduler(workers=1, store=there, clock=FakeClock(time.time() - 3600))
        try:
            for task_id in ("kept", "redefined"):
                elsewhere.schedule(task_id, len, OneTime(delay=0), args=["a"], id=task_id)
            with opened(store_spec, 1, poll=0.05) as (here,):
                here.load_all()  # as a scheduler starting on the store does
                elsewhere.schedule("redefined", len, OneTime(delay=1), args=["ab"],
                                   id="redefined", replace_existing=True)  # fmt: skip
                claims = here.claim(now=time.time(), limit=10)
                assert {claim.task_id: claim.stale for claim in claims} == {
                    "kept": False,
                    "redefined": True,
                }
        finally:
            elsewhere.shutdown()
