"""The WARNING of leases counted lost says how long no renewal succeeded.

A user trial SIGSTOPped a gunicorn worker mid-run for 16 s (lease 9 s): once continued it
logged "no renewal of the leases succeeded for 7.5 s", the trust's length (``lease -
lease / 6``), not the 18 s since its last renewal: read as a short hiccup, where another
process had taken the run over already.  The line now gives the lapse, measured on the
watch's clock from the renewal that last vouched, and the trust's length beside it.  A
fake clock moved in one step stands for the stall.
"""

from __future__ import annotations

import logging

import pytest

from lldsched import FakeClock
from lldsched.core.context import RunContext
from lldsched.threaded.shared.leasewatch import LeaseWatch
from tests.waits import wait_until

LEASE = 9.0


def test_the_warning_gives_the_time_since_the_last_renewal_not_the_trusts_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(1000.0)
    watch = LeaseWatch(clock, lease=LEASE, name="test-lease-watch-lapse")
    run = RunContext("slow", "slow", 1, 0.0, 0, fencing_token=399)
    watch.renewed(1000.0)
    with caplog.at_level(logging.WARNING, logger="lldsched.cluster"):
        watch.add(399, run)
        clock.advance(18.0)  # stopped: no renewal, the watch wakes after it all at once
        wait_until(lambda: run.lease_lost, timeout=5, what="the flag of the stalled run")
        wait_until(
            lambda: any("counted their" in r.getMessage() for r in caplog.records),
            timeout=5,
            what="the watch's WARNING",
        )
    (line,) = [r.getMessage() for r in caplog.records if "counted their" in r.getMessage()]
    assert line.startswith(
        "no renewal of the leases succeeded for 18.0 s (one vouches for 7.5 s): 1 run in "
        "flight counted their leases lost (flag raised; tokens 399)"
    ), line
