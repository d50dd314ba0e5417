"""A claim is trusted from no later than the clock reading its store's expiry counts from
(``Coordinator.looked`` in lldsched/threaded/shared/leases.py).

A shared SQLite store writes a claim's expiry as ``now + lease``, ``now`` being the timer's
reading at the top of its wake; the renewal and the change feed run between that reading
and the claim.  Trusting the claim from an instant taken after them let a process whose
feed was slow (here: held by the test for more than ``lease / 6``) keep its run's flag
down past the store's expiry, while another process could take the run over.  Both
clocks are fakes: the scheduler's (the store's expiry) and the one leases are trusted by
(``time.monotonic`` in production), moved by the test.

Also here: a step of the scheduler's wall clock (``JumpingClock``), forward with the
renewals failing (the flag goes up ``lease / 6`` before the expiry by the moved clock)
and back (renewed at once, no flag), a forward jump cut from the trust by no more than
the jump (the wall clock having moved more since the last wake than the lease clock
counted), a claim the worker refuses for want of trust
(released, and claimed again before its expiry), and a process holding leases it does not
trust (no claim until a renewal succeeds, or fails and counts them lost).
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, OneTime, Scheduler, SqliteTaskStore
from lldsched.coordination import Claim
from lldsched.core.context import RunContext
from lldsched.core.task import Isolation
from lldsched.errors import StoreError
from lldsched.threaded.shared import coordinator
from lldsched.threaded.shared.leasewatch import renewal_every, trusted_for
from tests import cluster_jobs
from tests.cluster import hold_child_starts
from tests.store_doubles import HookedStore, StoreCall
from tests.test_recovery import HOUR, JumpingClock
from tests.waits import wait_until

LEASE = 30.0
START = 1000.0
FEED_TOOK = renewal_every(LEASE) / 2 + 1.0  # more than lease / 6 between reading and claim
JUMP = 20.0  # a forward step of the wall clock: more than lease / 6, less than the trust


class HeldFeed(HookedStore):
    """A shared store whose first look at the change feed from another thread than the
    test's (the timer's, at its first wake) waits for the test."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, lease=LEASE)
        self.entered = threading.Event()  # set when the first look began
        self.go_on = threading.Event()  # set by the test: the look ends
        self._held = False  # the timer's first look was held (only the timer's thread sets it)

    def before(self, call: StoreCall) -> None:
        if call == "changed" and not self._held and not self.by_the_test():
            self._held = True
            self.entered.set()
            if not self.go_on.wait(10):
                raise AssertionError("the test never let the change feed go on")


@pytest.fixture
def trust(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock leases are trusted by, a fake the test moves."""
    clock = FakeClock(START)
    monkeypatch.setattr(coordinator, "LEASE_CLOCK", clock)
    return clock


@pytest.fixture(autouse=True)
def seen_afresh() -> None:
    """cluster_jobs.seen emptied of what an earlier test's runs told it."""
    while not cluster_jobs.seen.empty():
        cluster_jobs.seen.get_nowait()


@pytest.fixture
def gate() -> Iterator[None]:
    """cluster_jobs.held_past_its_lease's gate, closed, and opened at the end."""
    cluster_jobs.gate.clear()
    yield
    cluster_jobs.gate.set()


@contextlib.contextmanager
def held_run(
    store: SqliteTaskStore, wall: FakeClock, task_id: str, action: Callable[[RunContext], None]
) -> Iterator[tuple[SqliteTaskStore, int | None]]:
    """``task_id``'s one run of ``action`` (a :mod:`tests.cluster_jobs` job), begun by a
    scheduler on ``store`` and ``wall``: inside, another store on its file and the run's
    token.  At the end the run is let go (the gate, ``released``) and the scheduler shut
    down, then both stores closed."""
    with store, SqliteTaskStore(store.path, shared=True, lease=LEASE) as other:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule(task_id, action, OneTime(START), id=task_id)
        scheduler.start()
        try:
            _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
            yield other, token
        finally:
            cluster_jobs.gate.set()
            cluster_jobs.released.set()
            scheduler.shutdown()


def flagged_then_taken_over(
    other: SqliteTaskStore,
    store: Any,
    task_id: str,
    token: int | None,
    *,
    at: float,
    else_say: str,
) -> None:
    """The run of ``task_id`` held with ``token`` sees its flag go up for its lease
    (within 10 s, else the test fails saying ``else_say``); then another process
    (``other``) takes it over at ``at``, and once the run is let go
    (:data:`cluster_jobs.gate`) its late settle is refused by ``store``."""
    try:
        seen = cluster_jobs.seen.get(timeout=10)
    except queue.Empty:
        pytest.fail(else_say)
    assert seen == (task_id, token, True, "lease")
    (takeover,) = other.claim(now=at, limit=1)
    assert (takeover.task_id, takeover.taken_over) == (task_id, True)
    assert token is not None and takeover.token > token
    cluster_jobs.gate.set()
    wait_until(lambda: store.rejected == 1, timeout=10, what="the late settle refused")


def test_a_claim_is_trusted_from_the_reading_its_expiry_counts_from_not_after_the_feed(
    tmp_path: Path, trust: FakeClock, gate: None
) -> None:
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)  # the scheduler's: the store's expiry is on it
    task_id = "held-past-a-slow-feed"  # held_past_its_lease holds a task's first run only
    store = HeldFeed(path)
    with store, SqliteTaskStore(path, shared=True, lease=LEASE) as other:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule(task_id, cluster_jobs.held_past_its_lease, OneTime(START), id=task_id)
        scheduler.start()
        try:
            assert store.entered.wait(10), "the timer never looked at the change feed"
            trust.advance(FEED_TOOK)  # the timer read its clock, then the feed took this long
            store.go_on.set()
            name, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the claimed run started
            assert (name, token) == (task_id, other.leases()[0].token)
            assert token is not None
            (lease,) = other.leases()
            assert lease.expires_at == START + LEASE  # from the timer's reading, before the feed

            # No renewal (the scheduler's clock stands still: its timer renews nothing), and
            # the trust clock reaches lease / 6 before the store's expiry: the flag goes up.
            trust.set(START + trusted_for(LEASE))
            # At the store's expiry another process takes the run over; the late settle of
            # the flagged run is refused.
            flagged_then_taken_over(
                other, store, task_id, token, at=lease.expires_at,
                else_say=f"no flag at {trust.now()}, lease / 6 before the store's expiry "
                f"{lease.expires_at}: the claim was trusted from after the change feed",
            )  # fmt: skip
            assert other.records(task_id) == []
        finally:
            cluster_jobs.gate.set()
            scheduler.shutdown()


# -- a forward (or backward) step of the wall clock -------------------------------------


class Unrenewable(HookedStore):
    """A shared store whose renewals fail while ``down`` is set (the file busy, a disk
    gone): the claims it made stand in the file until their expiry."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, lease=LEASE)
        self.down = threading.Event()

    def before(self, call: StoreCall) -> None:
        if call == "renew" and self.down.is_set():
            raise StoreError("renewal refused by the test")


def test_a_forward_jump_of_the_wall_clock_shortens_the_trust_by_the_jump(
    tmp_path: Path, trust: FakeClock, gate: None
) -> None:
    """SQLite's expiry is a wall-clock instant: a step of the host's clock forward by
    ``JUMP`` brings it ``JUMP`` closer in real time, for every process on the host, while
    the holder's trust counts ``time.monotonic``.  The renewals failing, the flag must go
    up ``lease / 6`` before the store's expiry by the moved clock: ``JUMP`` sooner."""
    path = tmp_path / "tasks.db"
    wall = JumpingClock(START)  # the scheduler's, with a monotonic side: a jump is seen
    task_id = "held-across-a-jump"
    store = Unrenewable(path)
    with held_run(store, wall, task_id, cluster_jobs.held_past_its_lease) as (other, token):
        (lease,) = other.leases()
        assert (lease.token, lease.expires_at) == (token, START + LEASE)
        store.down.set()  # no renewal succeeds from now on
        wall.parked.clear()
        wall.jump(JUMP)  # the store's expiry is LEASE - JUMP away now, real time
        assert wall.parked.wait(10), "the timer never looked at the clock after the jump"
        trust.set(START + trusted_for(LEASE) - JUMP)  # lease / 6 before that expiry
        # At the expiry by the moved clock another process takes the run over; the late
        # settle of the flagged run is refused.
        flagged_then_taken_over(
            other, store, task_id, token, at=lease.expires_at,
            else_say=f"no flag {renewal_every(LEASE) / 2} s before the store's expiry: the "
            f"trust was not shortened by the wall clock's jump of {JUMP} s",
        )  # fmt: skip


def test_a_backward_jump_of_the_wall_clock_renews_the_leases_at_once(
    tmp_path: Path, trust: FakeClock
) -> None:
    """The renewal is due on the scheduler's clock (the one SQLite's expiry is on): set
    back an hour, it waited an hour while the trust (monotonic) ran out after
    ``trusted_for(lease)``, and every run in flight had its flag raised on a lease no one
    could take.  A jump either way renews at once, from the moved clock."""
    path = tmp_path / "tasks.db"
    wall = JumpingClock(START + HOUR)
    task_id = "held-across-a-jump-back"
    cluster_jobs.released.clear()
    with (
        SqliteTaskStore(path, shared=True, lease=LEASE) as store,
        SqliteTaskStore(path, shared=True, lease=LEASE) as other,
    ):
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule(
            task_id, cluster_jobs.held_until_released, OneTime(START + HOUR), id=task_id
        )
        scheduler.start()
        try:
            _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
            assert other.leases()[0].expires_at == START + HOUR + LEASE
            trust.set(START + renewal_every(LEASE) * 2)  # the wall clock stood: no renewal
            wall.parked.clear()
            wall.jump(-HOUR)
            assert wall.parked.wait(10), "the timer never looked at the clock after the jump"
            assert other.leases()[0].expires_at == START + LEASE  # renewed from the moved clock
            trust.set(START + trusted_for(LEASE))  # the renewal at the jump vouches on
            cluster_jobs.released.set()
            assert cluster_jobs.seen.get(timeout=10) == (task_id, token, False, None)  # no flag
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown()


# -- a suspend ------------------------------------------------------------------------
#
# A suspend moves the wall clock (the store's expiries with it) and not ``time.monotonic``:
# to the timer it is a forward jump (``wall.jump``, waking nobody).  The lease clock (the
# ``trust`` fake) stands for one that counts it, Linux's CLOCK_BOOTTIME: it moves too.


def test_a_suspend_past_the_lease_raises_the_flags_as_the_machine_resumes(
    tmp_path: Path, trust: FakeClock, gate: None
) -> None:
    """The run's lease expired while the machine slept; another process may take the run
    over as soon as it resumes.  The flag goes up then, from the lease clock, without
    waiting for the timer's next wake (``poll`` later, or ``lease / 3``)."""
    path = tmp_path / "tasks.db"
    wall = JumpingClock(START)
    task_id = "held-across-a-suspend"
    store = SqliteTaskStore(path, shared=True, lease=LEASE)
    with held_run(store, wall, task_id, cluster_jobs.held_past_its_lease) as (other, token):
        wall.jump(2 * LEASE, wake=False)  # the lid closes and opens: nobody is woken
        trust.advance(2 * LEASE)  # ...but the lease clock counted the suspend
        flagged_then_taken_over(
            other, store, task_id, token, at=START + 2 * LEASE,  # the others' first wake
            else_say="no flag as the machine resumed past the lease's expiry",
        )  # fmt: skip


SUSPEND = 10.0  # less than the trust left: the leases are still good at the resume


def test_a_short_suspend_the_lease_clock_counted_is_not_cut_from_the_trust_again(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The timer sees a suspend as a forward jump of the wall clock and cut the trust by
    it; but the lease clock counted the suspend already.  Cut twice, a renewal failing at
    the wake after a 10 s suspend (the network not back yet) counted the leases lost
    with 5 s of trust left: a flag raised on a lease no one could take."""
    path = tmp_path / "tasks.db"
    wall = JumpingClock(START)
    task_id = "held-across-a-short-suspend"
    store = Unrenewable(path)
    cluster_jobs.released.clear()
    with held_run(store, wall, task_id, cluster_jobs.held_until_released) as (other, token):
        assert other.leases()[0].expires_at == START + LEASE
        store.down.set()  # no renewal succeeds from now on
        wall.jump(SUSPEND, wake=False)  # the suspend
        trust.advance(SUSPEND + 10.0)  # counted, and 10 s awake after it
        wall.parked.clear()
        wall.advance(10.0)  # the timer wakes: the jump seen, the renewal fails
        assert wall.parked.wait(10), "the timer never looked at the clock after the suspend"
        assert other.leases()[0].expires_at == START + LEASE  # the renewal did fail
        assert (
            "the wall clock jumped by +10.000 s (set ahead, or the machine was "
            "suspended): the slots it passed are decided as they are claimed"
        ) in caplog.messages
        cluster_jobs.released.set()  # 20 s of the 25 trusted: the run ends unflagged
        assert cluster_jobs.seen.get(timeout=10) == (task_id, token, False, None)


BEFORE_JUMP = 4.0  # the wall clock's move with the monotonic one, before it jumps


def test_a_forward_jump_cuts_the_trust_by_the_jump_at_most(
    tmp_path: Path, trust: FakeClock
) -> None:
    """The cut is the part of the jump the lease clock did not count since the last wake;
    never more than the jump itself.  Here the wall (and monotonic) clock moves
    ``BEFORE_JUMP`` seconds the lease clock does not count, then jumps ``JUMP``: the wall
    moved ``BEFORE_JUMP + JUMP`` since the last wake, the lease clock nothing, and the
    trust is cut by ``JUMP`` alone, not by that whole move.  Cut by the whole move, the
    trust ran out ``BEFORE_JUMP`` seconds early: the run's flag went up, and a task due
    then was never claimed (claims held back for want of trust)."""
    path = tmp_path / "tasks.db"
    wall = JumpingClock(START)
    cluster_jobs.released.clear()
    while not began.empty():  # what an earlier test's runs told it
        began.get_nowait()
    store = Unrenewable(path)
    with store, SqliteTaskStore(path, shared=True, lease=LEASE) as other:
        scheduler = Scheduler(workers=2, store=store, clock=wall)
        scheduler.schedule("held", cluster_jobs.held_until_released, OneTime(START), id="held")
        scheduler.start()
        try:
            _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
            assert other.leases()[0].expires_at == START + LEASE
            store.down.set()  # no renewal succeeds from now on
            wall.elapse(BEFORE_JUMP)  # counted by the monotonic clock, not the lease clock
            wall.parked.clear()
            wall.jump(JUMP)  # the timer wakes: the jump seen, the renewal fails
            assert wall.parked.wait(10), "the timer never looked at the clock after the jump"
            assert other.leases()[0].expires_at == START + LEASE  # the renewal did fail
            # Trusted until START + trusted_for(LEASE) - JUMP; cut by the wall's whole
            # move, until BEFORE_JUMP seconds before that.
            trust.set(START + trusted_for(LEASE) - JUMP - BEFORE_JUMP / 2)
            scheduler.schedule("after", note_token, OneTime(wall.now()), id="after")
            assert began.get(timeout=10)[0] == "after"  # claimed: the leases still trusted
            cluster_jobs.released.set()
            assert cluster_jobs.seen.get(timeout=10) == ("held", token, False, None)  # no flag
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown()


# -- a claim not begun ------------------------------------------------------------------

began: queue.Queue[tuple[str, int | None]] = queue.Queue()
"""What :func:`note_token` saw: (task id, token), one per run."""


def note_token(ctx: RunContext) -> None:
    began.put((ctx.task_id, ctx.fencing_token))


def test_a_claim_not_begun_for_want_of_trust_is_handed_back_at_once(
    tmp_path: Path, trust: FakeClock
) -> None:
    """A claim waits in the hand-off queue behind a run that outlives the trust (claimed in
    the same batch, while the one worker was idle); the worker then refuses to begin it.
    It is released at once, not left to block its task until its lease expires (the
    scheduler's clock never reaches that expiry here)."""
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)
    cluster_jobs.released.clear()
    with (
        SqliteTaskStore(path, shared=True, lease=LEASE) as store,
        SqliteTaskStore(path, shared=True, lease=LEASE) as other,
    ):
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule("busy", cluster_jobs.held_until_released, OneTime(START), id="busy")
        scheduler.schedule("queued", note_token, OneTime(START), id="queued")
        try:
            scheduler.start()  # both claimed in one batch; "queued" waits for the worker
            assert cluster_jobs.seen.get(timeout=10)[0] == "busy"  # the one worker is held
            wait_until(
                lambda: "queued" in {lease.task_id for lease in other.leases()},
                timeout=10,
                what="the claim of 'queued'",
            )
            (first,) = [lease.token for lease in other.leases() if lease.task_id == "queued"]
            trust.set(START + trusted_for(LEASE))  # no renewal (the wall stands): trust out
            cluster_jobs.released.set()  # the worker is free: it does not begin "queued"
            assert cluster_jobs.seen.get(timeout=10)[0] == "busy"  # it ended
            wait_until(
                lambda: "queued" not in {lease.task_id for lease in other.leases()},
                timeout=10,
                what="the claim of 'queued', not begun, released before its expiry "
                f"{START + 1 + LEASE}",
            )
            wall.advance(1.0)  # the timer's next wake (every `poll` on a real clock)
            task_id, token = began.get(timeout=10)  # claimed again here, and begun
            assert task_id == "queued"
            assert token is not None and token > first  # claimed again, after the release
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown()


# -- leases held and not trusted: no claims ---------------------------------------------


class Flaky(Unrenewable):
    """An :class:`Unrenewable` store whose claims still succeed, and which tells the test
    what the scheduler asked of it: ``looks`` counts the timer's looks at the change feed
    (one at every wake, before that wake's claim), ``claimed`` and ``released`` the task
    ids claimed and given back."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.looks = 0
        self.claimed: list[str] = []
        self.released: list[str] = []

    def before(self, call: StoreCall) -> None:
        super().before(call)
        if call == "changed" and not self.by_the_test():  # the test's own are not counted
            self.looks += 1

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        claims = super().claim(now=now, limit=limit, among=among, leaving=leaving)
        self.claimed.extend(claim.task_id for claim in claims)
        return claims

    def release(self, *, task_id: str, token: int) -> None:
        self.released.append(task_id)
        super().release(task_id=task_id, token=token)


def woken(wall: FakeClock, store: Flaky, *, times: int) -> None:
    """Move the scheduler's clock a second at a time (the store's ``poll``: one wake of
    the timer each), ``times`` times, and return once the timer's wake after the last
    looked at the feed: every claim those wakes made is made."""
    for _ in range(times + 1):
        woke = functools.partial(looked_past, store, store.looks)  # read before the move
        wall.advance(1.0)
        wait_until(woke, timeout=10, what="the timer's next wake")


def looked_past(store: Flaky, looks: int) -> bool:
    """Whether the timer looked at ``store``'s change feed more than ``looks`` times."""
    return store.looks > looks


HELD_BACK = "claiming nothing"


@pytest.mark.parametrize("renewal", ["succeeds", "fails"])
def test_a_process_that_does_not_trust_the_leases_it_holds_claims_nothing(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture, renewal: str
) -> None:
    """Renewals failing, claims succeeding: once the trust in the leases held ran out, a
    claim was still made at every wake, refused by the worker for want of trust and
    released (two writes a wake, the task kept from the other processes meanwhile).
    Now nothing is claimed until a renewal succeeds (it vouches again) or, failing, counts
    the leases held lost (nothing held: a claim starts its own trust), and the log says so
    once."""
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)
    cluster_jobs.released.clear()
    caplog.set_level("INFO", logger="lldsched")
    store = Flaky(path)
    with store:
        scheduler = Scheduler(workers=2, store=store, clock=wall)
        scheduler.schedule("busy", cluster_jobs.held_until_released, OneTime(START), id="busy")
        scheduler.schedule("queued", note_token, OneTime(START + 1), id="queued")
        try:
            scheduler.start()
            assert cluster_jobs.seen.get(timeout=10)[0] == "busy"  # held, whatever its flag
            store.down.set()  # no renewal succeeds from now on
            trust.set(START + trusted_for(LEASE))  # the trust in busy's lease ran out
            woken(wall, store, times=3)  # "queued" due, the renewal (START + 10) not yet
            assert store.claimed == ["busy"], "claimed with the leases held not trusted"
            assert store.released == []
            held_back = [r for r in caplog.records if HELD_BACK in r.getMessage()]
            assert len(held_back) == 1, [r.getMessage() for r in held_back]
            assert began.empty()

            if renewal == "succeeds":
                store.down.clear()
            wall.set(START + renewal_every(LEASE))  # the renewal's wake, then the claim's
            task_id, token = began.get(timeout=10)
            assert task_id == "queued" and token is not None
            assert store.claimed == ["busy", "queued"]
            lost = renewal == "fails"  # else the renewal vouched for busy's lease again
            said = [r.getMessage() for r in caplog.records]
            assert any("lost the lease of task busy" in line for line in said) is lost
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown()


# -- leases counted lost: checked again once the store answers --------------------------

COUNTED_LOST = "lost the lease of task"


def count_lost(
    wall: FakeClock,
    trust: FakeClock,
    store: Unrenewable,
    caplog: pytest.LogCaptureFixture,
    task_id: str,
) -> None:
    """Make the scheduler count ``task_id``'s lease lost: the renewals fail (``down``) and
    the trust in the claim (made at ``START``) runs out before the renewal at
    ``START + lease / 3``, which then fails; returns once the log said so."""
    store.down.set()
    trust.set(START + trusted_for(LEASE))  # the watch raises the run's flag
    wall.set(START + renewal_every(LEASE))  # the renewal fails: the lease counted lost
    wait_until(
        lambda: f"{COUNTED_LOST} {task_id}" in caplog.text,
        timeout=10,
        what="the failed renewal to count the lease lost",
    )


@contextlib.contextmanager
def running(
    path: Path,
    wall: FakeClock,
    task_id: str,
    action: Callable[..., object] | str,
    *,
    store: Unrenewable | None = None,
    workers: int = 1,
    **options: Any,
) -> Iterator[tuple[Scheduler, Unrenewable, SqliteTaskStore]]:
    """A started scheduler with ``workers`` on an :class:`Unrenewable` store at ``path``
    (its clock ``wall``; ``store``: one opened on ``path`` already), ``task_id``
    registered to run ``action`` at ``START`` (``options``: the registration's), and
    another process's store on the file; the runs let go, the scheduler shut down and the
    stores closed after."""
    store = Unrenewable(path) if store is None else store
    with store, SqliteTaskStore(path, shared=True, lease=LEASE) as other:
        scheduler = Scheduler(workers=workers, store=store, clock=wall)
        scheduler.schedule(task_id, action, OneTime(START), id=task_id, **options)
        scheduler.start()
        try:
            yield scheduler, store, other
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown(drain=False, timeout=10)


@pytest.mark.parametrize(
    ("action", "isolation"),
    [(cluster_jobs.until_cancelled, "thread"), ("tests.jobs:hang_first_time", "process")],
    ids=["coroutine", "isolated"],
)
def test_a_lease_counted_lost_and_taken_over_in_an_outage_stops_its_run_once_the_store_answers(
    tmp_path: Path,
    trust: FakeClock,
    caplog: pytest.LogCaptureFixture,
    action: Callable[..., object] | str,
    isolation: Isolation,
) -> None:
    """No renewal succeeded for a whole lease: the lease was counted lost (the flag raised,
    nothing stopped: nobody may have taken the run over).  Another process took the slot
    over meanwhile.  A coroutine or a process-isolated run cannot look at its flag: once
    the store answers again, the renewal must find the lease gone and stop the run, as it
    stops one whose takeover it sees directly.  It used to drop the lease from its
    renewals when it counted it lost, and never learnt of the takeover: the run went on to
    its end (here, for ever) beside the process that took the slot over.  The loss is
    one WARNING, when it was counted; the takeover found later is said at INFO (it was
    a second "lost the lease" WARNING)."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = f"counted-lost-{isolation}"
    args = (str(tmp_path / "marker"),) if isolation == "process" else ()
    with running(tmp_path / "tasks.db", wall, task_id, action, isolation=isolation,
                 args=args) as (scheduler, store, other):  # fmt: skip
        wait_until(
            lambda: scheduler.task(task_id).running and bool(other.leases()),
            timeout=30,
            what="the run to start",
        )
        (lease,) = other.leases()
        count_lost(wall, trust, store, caplog, task_id)
        (takeover,) = other.claim(now=lease.expires_at, limit=1)  # expired, unrenewed
        assert (takeover.task_id, takeover.taken_over) == (task_id, True)
        assert scheduler.task(task_id).running  # nothing told it yet

        store.down.clear()  # the store answers again
        wall.set(START + 2 * renewal_every(LEASE))  # the next renewal
        wait_until(
            lambda: not scheduler.task(task_id).running,
            timeout=10,
            what="the run of the lease taken over to stop once the store answered",
        )
        (record,) = scheduler.task(task_id).history
        assert record.error is not None and "no longer holds its lease" in record.error
        wait_until(lambda: store.rejected == 1, timeout=5, what="the stale settle refused")
        assert other.records(task_id) == []
        said = [(r.levelname, r.getMessage()) for r in caplog.records]
        lost = [level for level, line in said if f"{COUNTED_LOST} {task_id}" in line]
        assert lost == ["WARNING"]
        taken = f"the lease of task {task_id} (token {lease.token}), counted lost"
        assert [level for level, line in said if line.startswith(taken)] == ["INFO"]


def test_a_claim_not_begun_is_dropped_when_the_leases_are_counted_lost(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Two runs claimed in one batch by a process with one worker: one runs, the other
    waits for the worker.  Counted lost, the claim not begun leaves the hand-off queue
    (no run waits here for a slot nobody vouches for: ``metrics()`` counts none) and its
    loss is said with the run's."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    cluster_jobs.released.clear()
    store = Unrenewable(tmp_path / "tasks.db")
    with store:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        for task_id in ("a", "b"):
            scheduler.schedule(
                task_id, cluster_jobs.held_until_released, OneTime(START), id=task_id
            )
        scheduler.start()
        try:
            running, _, _, _ = cluster_jobs.seen.get(timeout=10)
            assert scheduler.metrics(timeout=10).handoff == 1  # the other, claimed too
            (waiting,) = [lease.token for lease in store.leases() if lease.task_id != running]
            count_lost(wall, trust, store, caplog, running)
            assert scheduler.metrics(timeout=10).handoff == 0
            warned = [r for r in caplog.records if r.levelname == "WARNING"]
            said = [r.getMessage() for r in warned]
            assert said.count(f"{COUNTED_LOST} ? (token {waiting})") == 1
            tagged = {getattr(r, "task_id", "-") for r in warned if COUNTED_LOST in r.getMessage()}
            assert tagged == {running, None}  # the run's line names its task, for a log's fields
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown(drain=False, timeout=10)


def test_an_outage_of_the_renewals_ends_with_the_first_renewal_that_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The one worker busy, the process claims nothing: its renewals are its only calls
    to the store but the feed's.  A renewal that failed began an outage (``store_ok``
    False, the readiness probe failing); the next one that succeeds ends it."""
    wall = FakeClock(START)
    cluster_jobs.released.clear()
    store = Unrenewable(tmp_path / "tasks.db")
    with store:
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule("busy", cluster_jobs.held_until_released, OneTime(START), id="busy")
        scheduler.start()
        try:
            assert cluster_jobs.seen.get(timeout=10)[0] == "busy"
            store.down.set()
            wall.set(START + renewal_every(LEASE))  # the renewal fails
            wait_until(
                lambda: not scheduler.metrics(timeout=10).store_ok,
                timeout=10,
                what="the failed renewal to begin an outage",
            )
            store.down.clear()
            wall.set(START + 2 * renewal_every(LEASE))  # the renewal succeeds
            wait_until(
                lambda: scheduler.metrics(timeout=10).store_ok,
                timeout=10,
                what="the renewal that succeeded to end the outage",
            )
            assert scheduler.task("busy").running
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown(drain=False, timeout=10)


def test_shutdown_renews_the_lease_of_the_run_it_waits_for(
    tmp_path: Path, trust: FakeClock
) -> None:
    """``shutdown()`` stops the timer, then waits for the run in flight: meanwhile a
    thread of its own renews the run's lease (``leases_kept``), so that no other process
    takes over a run finishing here, and the run's settle is written under its token.
    A lease of 0.3 s: that thread renews every 0.1 s of real time."""
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)
    cluster_jobs.released.clear()
    lease = 0.3
    with (
        SqliteTaskStore(path, shared=True, lease=lease) as store,
        SqliteTaskStore(path, shared=True, lease=lease) as other,
    ):
        scheduler = Scheduler(workers=1, store=store, clock=wall)
        scheduler.schedule("long", cluster_jobs.held_until_released, OneTime(START), id="long")
        scheduler.start()
        _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
        stopping = threading.Thread(target=scheduler.shutdown, name="test-shutdown")
        stopping.start()
        try:
            wait_until(
                lambda: any(t.name.endswith("lease-keeper") for t in threading.enumerate()),
                timeout=10,
                what="the shutdown to wait for the run, its leases kept",
            )
            later = START + 100 * lease  # long past the lease's expiry as claimed
            wall.set(later)
            wait_until(
                lambda: [lease.expires_at for lease in other.leases()] == [later + lease],
                timeout=10,
                what="shutdown's keeper to renew the lease",
            )
            assert other.claim(now=later, limit=1) == []  # nobody takes it over
        finally:
            cluster_jobs.released.set()
            stopping.join(20)
        assert not stopping.is_alive()
        (record,) = other.records("long")
        assert record.ok and record.token == token
        assert store.rejected == 0


def test_a_thread_run_whose_task_another_process_removed_is_flagged_by_the_renewal(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A removal elsewhere takes the run's lease with the task: the next renewal finds it
    gone and raises the run's flag (a thread's action stops on it: nothing else can stop
    it), and says at INFO why, once the feed told it the task is gone."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = "removed-elsewhere"
    cluster_jobs.released.clear()
    with running(tmp_path / "tasks.db", wall, task_id, cluster_jobs.held_until_released) as (
        _,
        _,
        other,
    ):
        _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
        other.delete(task_id)
        wall.set(START + renewal_every(LEASE))  # the renewal finds the lease gone
        said = f"task {task_id} was removed in another process: its lease (token {token})"
        wait_until(lambda: said in caplog.text, timeout=10, what="the renewal to say it")
        cluster_jobs.released.set()
        assert cluster_jobs.seen.get(timeout=10) == (task_id, token, True, "lease")


@contextlib.contextmanager
def on_its_way(
    tmp_path: Path, wall: FakeClock, task_id: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Scheduler, Unrenewable, SqliteTaskStore, threading.Event]]:
    """:func:`running` with ``task_id`` a process-isolated run of
    ``tests.jobs:hang_first_time`` (its marker ``tmp_path / "marker"``), held on its way to
    its child until the test sets the event given (``let_start``)."""
    starting, let_start = hold_child_starts(monkeypatch)
    marker = tmp_path / "marker"
    action = "tests.jobs:hang_first_time"
    options: dict[str, Any] = {"isolation": "process", "args": (str(marker),)}
    with running(tmp_path / "tasks.db", wall, task_id, action, **options) as (
        scheduler,
        store,
        other,
    ):
        assert starting.wait(30)
        yield scheduler, store, other, let_start


def test_an_isolated_run_whose_lease_is_counted_lost_before_a_child_took_it_is_still_sent(
    tmp_path: Path,
    trust: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted lost is not gone: nobody may have taken the lease over.  A run on its way
    to its child when its lease was counted lost is sent, its flag up, as a run already in
    its child runs on (the renewals settle it once the store answers).  It was recorded
    "CancelledError: the store no longer holds its lease ... before its worker process
    started it": a network blip made a failed attempt, whose settle let the lease go."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = "counted-lost-unsent"
    marker = tmp_path / "marker"
    with on_its_way(tmp_path, wall, task_id, monkeypatch) as (scheduler, store, other, let_start):
        count_lost(wall, trust, store, caplog, task_id)
        let_start.set()
        wait_until(marker.exists, timeout=30, what="the child to begin the action")
        task = scheduler.task(task_id)
        assert task.running and not task.history
        (lease,) = other.leases()  # still this process's: nothing let it go
        assert lease.task_id == task_id


def test_an_isolated_run_whose_lease_was_taken_over_before_a_child_took_it_is_never_sent(
    tmp_path: Path,
    trust: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gone is not counted lost: the same run on its way to its child, its lease counted
    lost, then found taken over by the renewal once the store answers.  The renewal found
    no child to stop; the worker, asking before it sends the run (``Coordinator.gone``),
    sends nothing: another process runs the slot, and this one's action never starts."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = "taken-over-unsent"
    marker = tmp_path / "marker"
    with on_its_way(tmp_path, wall, task_id, monkeypatch) as (scheduler, store, other, let_start):
        (lease,) = other.leases()
        count_lost(wall, trust, store, caplog, task_id)
        (takeover,) = other.claim(now=lease.expires_at, limit=1)  # expired, unrenewed
        assert (takeover.task_id, takeover.taken_over) == (task_id, True)
        store.down.clear()  # the store answers again
        wall.set(START + 2 * renewal_every(LEASE))  # the renewal finds the lease gone
        wait_until(
            lambda: f"the lease of task {task_id} (token {lease.token}), counted" in caplog.text,
            timeout=10,
            what="the renewal to find the lease taken over",
        )
        let_start.set()
        wait_until(
            lambda: not scheduler.task(task_id).running,
            timeout=30,
            what="the run to end unsent",
        )
        (record,) = scheduler.task(task_id).history
        assert record.error is not None
        assert "no longer holds its lease" in record.error
        assert record.error.endswith("(before its worker process started it)")
        assert not marker.exists()  # the action never began here
        wait_until(lambda: store.rejected == 1, timeout=5, what="the stale settle refused")
        assert other.records(task_id) == []


def test_a_lease_counted_lost_in_an_outage_that_nobody_took_is_renewed_and_settled(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The same outage, and nobody took the slot over: the store still holds the lease
    for this process (an expired lease nobody took is still its holder's).  Once the store
    answers, the renewal renews it again, so it no longer expires under a run still going
    here, and the run's settle is written under its token."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = "counted-lost-kept"
    cluster_jobs.released.clear()
    with running(tmp_path / "tasks.db", wall, task_id, cluster_jobs.held_until_released) as (
        _,
        store,
        other,
    ):
        _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
        count_lost(wall, trust, store, caplog, task_id)

        store.down.clear()  # the store answers again; nobody took the slot
        renewed_at = START + 2 * renewal_every(LEASE)
        wall.set(renewed_at)
        # Said once the renewal returned (the store's row is renewed a moment before).
        wait_until(
            lambda: "still holds the lease of task counted-lost-kept" in caplog.text,
            timeout=10,
            what="the lease counted lost renewed once the store answered",
        )
        (lease,) = other.leases()
        assert (lease.token, lease.expires_at) == (token, renewed_at + LEASE)
        assert other.claim(now=START + LEASE, limit=1) == []  # not to be taken: renewed
        # Held again: every later renewal renews it too, so it never expires under the run.
        again = renewed_at + renewal_every(LEASE)
        wall.set(again)
        wait_until(
            lambda: [lease.expires_at for lease in other.leases()] == [again + LEASE],
            timeout=10,
            what="the next renewal to renew the lease trusted again",
        )
        cluster_jobs.released.set()
        assert cluster_jobs.seen.get(timeout=10) == (task_id, token, True, "lease")
        wait_until(lambda: bool(other.records(task_id)), timeout=10, what="the settle")
        (record,) = other.records(task_id)
        assert record.ok and record.token == token
        assert store.rejected == 0


class ClaimSeen(Unrenewable):
    """:class:`Unrenewable`, telling the test (``claiming``) when the timer claims at an
    instant at or after ``at``, and counting the renewals tried."""

    def __init__(self, path: Path, at: float) -> None:
        super().__init__(path)
        self.at = at
        self.claiming = threading.Event()
        self.renewals = 0  # the timer's renewals tried

    def before(self, call: StoreCall) -> None:
        try:
            super().before(call)
        finally:  # counted once it failed or went on: the test then knows which
            if call == "renew":
                self.renewals += 1

    def claim(
        self,
        *,
        now: float,
        limit: int,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Claim]:
        if now >= self.at and not self.by_the_test():  # the wake's own instant, not the wall's
            self.claiming.set()
        return super().claim(now=now, limit=limit, among=among, leaving=leaving)


def test_a_lease_counted_lost_is_not_taken_over_by_its_own_process_when_the_store_answers(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the store answers after an outage, the first wake's claim came before any
    renewal not yet due: it found this process's own lease expired (nobody took it) and
    took it over, then gave the claim back (its task runs here), and the renewal then
    found the run's lease gone and stopped it, while any process could claim the slot
    again: a run nobody took over, run twice.  The leases counted lost are checked first,
    at every wake, so the renewal finds the lease still this process's and renews it."""
    wall = FakeClock(START)
    caplog.set_level("INFO", logger="lldsched")
    task_id = "counted-lost-not-self-taken"
    cluster_jobs.released.clear()
    path = tmp_path / "tasks.db"
    after_expiry = START + LEASE + 1  # the claim's lease expired; a renewal not due yet
    seen = ClaimSeen(path, after_expiry)
    action = cluster_jobs.held_until_released
    # A second worker, idle: a process claims only while one is (the timer's _claim_room)
    with running(path, wall, task_id, action, store=seen, workers=2) as (scheduler, _, other):
        _, token, _, _ = cluster_jobs.seen.get(timeout=10)  # the run started
        count_lost(wall, trust, seen, caplog, task_id)
        wall.set(START + LEASE - 5)  # a renewal fails again: the next is due after expiry
        wait_until(lambda: seen.renewals >= 2, timeout=10, what="a second failed renewal")
        seen.down.clear()  # the store answers again; nobody took the slot
        wall.set(after_expiry)
        assert seen.claiming.wait(10), "the timer never claimed after the expiry"
        scheduler.task(task_id)  # the scheduler's lock: that wake's calls are done
        assert [lease.token for lease in other.leases()] == [token]
        assert "took over task" not in caplog.text
        cluster_jobs.released.set()
        assert cluster_jobs.seen.get(timeout=10) == (task_id, token, True, "lease")
        wait_until(lambda: bool(other.records(task_id)), timeout=10, what="the settle")
        assert [r.token for r in other.records(task_id)] == [token]


def test_a_run_claimed_while_leases_counted_lost_are_checked_is_flagged_when_its_trust_runs_out(
    tmp_path: Path, trust: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Leases counted lost keep the renewals going, yet vouch for nothing: a claim made
    meanwhile (the process holding no lease it trusts) starts the trust's count from its
    own reading, and its run's flag goes up when that runs out with no renewal."""
    path = tmp_path / "tasks.db"
    wall = FakeClock(START)
    caplog.set_level("WARNING", logger="lldsched")
    cluster_jobs.released.clear()
    store = Unrenewable(path)
    with store:
        scheduler = Scheduler(workers=2, store=store, clock=wall)
        scheduler.schedule("busy", cluster_jobs.held_until_released, OneTime(START), id="busy")
        later = START + renewal_every(LEASE) + 1
        scheduler.schedule("later", cluster_jobs.until_flag, OneTime(later), id="later")
        scheduler.start()
        try:
            assert cluster_jobs.seen.get(timeout=10)[0] == "busy"
            count_lost(wall, trust, store, caplog, "busy")
            wall.set(later)  # claimed: nothing trusted held, the claim vouches for itself
            task_id, token, _, _ = cluster_jobs.seen.get(timeout=10)
            assert task_id == "later" and token is not None
            trust.advance(trusted_for(LEASE))  # the renewals still fail
            try:
                seen = cluster_jobs.seen.get(timeout=10)
            except queue.Empty:
                pytest.fail("the run claimed after leases were counted lost was never flagged")
            assert seen == ("later", token, True, "lease")
        finally:
            cluster_jobs.released.set()
            scheduler.shutdown()
