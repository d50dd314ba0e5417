"""The line that begins a shared store's outage says what a process on it does meanwhile.

A scheduler of one process goes on in memory through an outage: its runs start from its
own queue.  A process on a shared store starts a run only from a claim the store grants
(threaded/timer.py), so while its claims fail it starts none, and the line said so
wrongly: "the scheduler goes on in memory and its registry stays authoritative", seen
with three processes on PostgreSQL through a server restart, in which no process ran
anything (docs/CLUSTER.md, "Failure matrix"; lldsched/core/outage.py, ``SHARED_OUTAGE``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Any

import pytest

from lldsched import FixedRate, Scheduler, StoreError
from lldsched.persistence import Claim
from tests import jobs
from tests.cluster import StoreSpec, opened
from tests.waits import wait_until

HOUR = 3600.0


def test_a_shared_store_s_outage_says_no_run_starts_here_while_its_claims_fail(
    store_spec: StoreSpec, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lldsched")
    down = threading.Event()
    down.set()
    with opened(store_spec, 1, poll=0.05) as (store,):
        claim = store.claim

        def failing(*, now: float, limit: int, among: Collection[str] | None = None,
                    leaving: Collection[str] = ()) -> list[Claim]:  # fmt: skip
            if down.is_set():
                raise StoreError("the server is restarting")
            return claim(now=now, limit=limit, among=among, leaving=leaving)

        store.claim = failing  # type: ignore[method-assign]
        scheduler = Scheduler(store=store)
        try:
            task = scheduler.schedule("beat", jobs.noop, FixedRate(HOUR), id="beat")  # due now
            scheduler.start()

            def said(level: int, text: str) -> list[Any]:
                return [r for r in caplog.records if r.levelno == level and text in r.message]

            wait_until(lambda: bool(said(logging.DEBUG, "still failing")), timeout=30,
                       what="a second claim failing")  # fmt: skip
            (began,) = said(logging.ERROR, "failed (a claim)")
            assert "starts no run while the store fails its claims" in began.message
            assert "goes on in memory" not in began.message
            assert task.run_count == 0  # true: nothing ran while the claims failed
            down.clear()
            assert scheduler.wait_idle(timeout=30)
            wait_until(lambda: task.run_count == 1, timeout=30, what="the run once claimed")
        finally:
            scheduler.shutdown()
