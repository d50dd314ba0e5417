"""Many processes, one set of tasks: real child schedulers on one shared store, one of them
killed with SIGKILL at a random moment and one stopped with SIGSTOP past its lease.

Over 1,000 slots (one-off tasks, each one slot), three children: every slot is
claimed at most once per fencing token, none is lost, and every write that came
after its lease was taken over is refused by the store (and counted).  Runs per
engine in ``tests.cluster.FACTORIES``.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lldsched import FixedRate, OneTime, Scheduler, TaskStatus
from tests import cluster_jobs
from tests.cluster import POOLED, Child, Cluster, StoreSpec, open_store, start_child, stop_all
from tests.waits import wait_until

ENGINES = POOLED  # through PgBouncer too (tests/cluster.py)

SLOTS = 1200
SPAN = 3.0  # seconds over which the slots fall due
LEASE = 1.0
POLL = 0.1
SETTLE = 60.0  # the longest the test waits: for every slot to succeed
SEEDERS = 8  # registering processes the seed plays on PostgreSQL (_seed); one on SQLite


def _more_runs(child: Child, than: int) -> Callable[[], bool]:
    return lambda: len(child.runs()) > than


def _seed(spec: StoreSpec, *, start: float, marker: Path) -> None:
    """Register the :data:`SLOTS` slots, due from ``start`` over :data:`SPAN`, as
    :data:`SEEDERS` processes would on PostgreSQL: each seeder a store and a
    never-started ``Scheduler`` of its own, registering every ``SEEDERS``-th slot on a
    thread of its own, all at once.  A registration there is five round trips in a row
    (the feed's read, BEGIN, the insert, the notify, COMMIT; six through PgBouncer, which
    adds the transaction's settings), each a wait for the server's (and PgBouncer's)
    process to be given a core: made one after another by one seeder, at a load of 16
    to 19, they took 139 s through PgBouncer (116 ms each), and the test ran past
    pytest's 120 s timeout.  Eight seeders overlap their waits: 18 s.  SQLite makes no
    round trip, and its writers take turns on the file's lock: one seeder there (eight
    took twice as long).  What each slot is, and that the children run every one once,
    are as before."""
    seeders = 1 if spec.engine == "sqlite" else SEEDERS

    def register(first: int) -> None:
        # timeout: see the test.  A seeder claims nothing, so its lease bounds only how
        # long the server lets its session sit inside a transaction (a registration's):
        # with the children's 1 s, eight seeders on one GIL under a load of 15 once had a
        # session ended mid-registration ("server closed the connection unexpectedly").
        store = open_store(spec, lease=SETTLE, poll=POLL, timeout=SETTLE)
        seeder = Scheduler(store=store)  # never started: it registers, the children run
        try:
            for n in range(first, SLOTS, seeders):
                seeder.schedule(
                    f"slot-{n}",
                    cluster_jobs.claimed_run,
                    OneTime(start + n * SPAN / SLOTS),
                    id=f"slot-{n}",
                    kwargs={"stop": str(marker)},
                )
        finally:
            seeder.shutdown()
            store.close()

    with ThreadPoolExecutor(seeders) as pool:
        for registered in [pool.submit(register, first) for first in range(seeders)]:
            registered.result()  # a seeder's error raised here


def _stop_inside_a_run(
    children: list[Child], marker: Path, *, more_work: Callable[[], None], context: str
) -> tuple[Child, list[int]]:
    """Have one of ``children`` stop itself inside a run, under a lease and outside any
    write (the others go on), and return it with the tokens of its runs stopped in.

    Every slot's action is given ``stop=marker``: the first run to start its action once
    the marker exists takes it away and SIGSTOPs its own process, holding its store's
    lock (:func:`tests.cluster_jobs.claimed_run`).  ``more_work`` then registers fresh
    slots, so some run starts after the marker even when the others ran every slot left.
    Such a run is logged and not ended: its action has not returned, so its settle is not
    written (a run already ended may hold its lease in the store still, while its settle,
    sent just before the stop, commits on the server and never lets it be taken over)."""
    marker.touch()
    more_work()
    wait_until(
        lambda: any(child.stopping() for child in children),
        timeout=30,
        what=f"a child to stop itself inside a run {context}",
    )
    (victim,) = (child for child in children if child.stopping())
    victim.wait_stopped()
    running = victim.running()
    stopping = victim.stopping()
    assert set(stopping) <= set(running), (stopping, running, victim.about(stopping), context)
    return victim, running


def test_a_thousand_slots_over_three_processes_one_killed_one_stalled_run_once_each(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    context = f"(seed {seed})"
    logs = [tmp_path / f"runs-{n}.jsonl" for n in range(3)]
    children = cluster.start(store_spec, logs, lease=LEASE, poll=POLL)
    killed, first, second = children  # which of the last two stalls: the one that stops

    # The store's timeout bounds its wait for SQLite's write lock, which the children,
    # running due slots one short transaction after another, can keep from it for longer
    # than the default 5 s under load: SQLite's busy wait sleeps between tries and queues
    # no one (a registration failed "database is locked" under a load of 12).  The test's
    # own longest wait bounds it instead.
    store = open_store(store_spec, lease=LEASE, poll=POLL, timeout=SETTLE)
    seeder = Scheduler(store=store)  # never started: it registers, the children run
    marker = tmp_path / "stop"  # its path given to every slot: see _stop_inside_a_run
    _seed(store_spec, start=time.time() + 0.5, marker=marker)
    slots = SLOTS

    def more_work() -> None:  # 20 more slots, due now
        nonlocal slots
        for n in range(slots, slots + 20):
            seeder.schedule(f"slot-{n}", cluster_jobs.claimed_run, OneTime(delay=0),
                            id=f"slot-{n}", kwargs={"stop": str(marker)})  # fmt: skip
        slots += 20

    def runs() -> int:
        return sum(len(child.runs()) for child in children)

    kill_at = rng.randrange(150, 450)
    wait_until(lambda: runs() >= kill_at, timeout=30, what=f"{kill_at} runs {context}")
    killed.signal(signal.SIGKILL)
    killed.process.wait(10)

    stall_at = rng.randrange(kill_at + 100, 800)
    wait_until(lambda: runs() >= stall_at, timeout=30, what=f"{stall_at} runs {context}")
    stalled, stopped_in = _stop_inside_a_run(
        [first, second], marker, more_work=more_work, context=context
    )
    steady = second if stalled is first else first
    wait_until(
        lambda: all(lease.holder != stalled.node for lease in store.leases()),
        timeout=20,
        what=f"the stalled child's leases (runs {stopped_in}) to be taken over {context}",
    )
    stalled.signal(signal.SIGCONT)

    def finished() -> bool:
        return all(snap.status is TaskStatus.SUCCEEDED for snap in store.load_all())

    wait_until(finished, timeout=SETTLE, what=f"every slot to succeed {context}")
    summaries = dict(zip([stalled.node, steady.node], stop_all([stalled, steady]), strict=True))

    claims = [run for child in children for run in child.runs()]
    tokens = [claim["token"] for claim in claims]
    assert None not in tokens
    assert len(tokens) == len(set(tokens)), f"a token was claimed twice {context}"
    last: dict[str, int] = defaultdict(int)
    for claim in claims:
        last[claim["task"]] = max(last[claim["task"]], claim["token"])

    records = store.records()
    kept = defaultdict(list)
    for record in records:
        kept[record.task_id].append(record)
    assert len(kept) == slots, f"slots lost {context}"
    for task_id, task_records in kept.items():
        assert [record.ok for record in task_records] == [True], (task_id, context)
        assert task_records[0].token == last[task_id], f"{task_id}: a stale write won {context}"

    survivors = {stalled.pid, steady.pid}
    stale = [c for c in claims if c["pid"] in survivors and c["token"] < last[c["task"]]]
    rejected = sum(summary["rejected"] for summary in summaries.values())
    assert rejected == len(stale), f"{rejected} refused, {len(stale)} stale {context}"
    stale_tokens = {claim["token"] for claim in stale if claim["pid"] == stalled.pid}
    assert set(stopped_in) <= stale_tokens, (
        f"no stale write from the runs stopped in, {stopped_in} {context}"
    )
    seeder.shutdown()
    store.close()


def test_pause_resume_and_cancel_from_the_parent_process_reach_a_child_scheduler(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path
) -> None:
    child = start_child(store_spec, tmp_path / "runs.jsonl", lease=LEASE, poll=POLL)
    cluster.children.append(child)
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    parent = Scheduler(store=store)  # never started: it only gives orders
    parent.schedule("tick", cluster_jobs.claimed_run, FixedRate(0.05), id="tick",
                    kwargs={"work": 0.0})  # fmt: skip
    wait_until(_more_runs(child, 2), timeout=20, what="the child to run the task")

    parent.pause("tick")
    wait_until(lambda: not store.leases(), timeout=10, what="the run in flight to settle")
    held = len(child.runs())
    threading.Event().wait(0.5)  # a short bounded wait to prove a negative: nothing runs
    assert len(child.runs()) == held

    parent.resume("tick")
    wait_until(_more_runs(child, held + 2), timeout=20, what="the child to run it again")
    parent.cancel("tick")
    wait_until(lambda: not store.leases(), timeout=10, what="the run in flight to settle")
    stopped = len(child.runs())
    threading.Event().wait(0.5)  # again: nothing runs after the cancel
    assert len(child.runs()) == stopped
    assert [snapshot.status for snapshot in store.load_all()] == [TaskStatus.CANCELLED]
    assert child.stop()["rejected"] == 0
    parent.shutdown()
    store.close()
