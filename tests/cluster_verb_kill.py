"""Three processes on one shared store (SQLite and PostgreSQL), the one running a task
killed (SIGKILL) in the middle of a verb on it: inside the verb, at its first write of
the task (the row held for it, nothing committed), or once the verb returned (its write
committed, its run not settled).  The task ends in a state the two others honour:

* killed inside, the verb left no trace (the transaction rolled back, its locks
  released): the slot is taken over once the lease expires and run again elsewhere;
* killed after, the verb's write stands: a pause holds the task (a resume from another
  process then runs the slot), a cancel or a remove ends it, and a resume, a modify, a
  reschedule or a run_now leave it to be taken over and run, as a crash during any
  run does, under the definition a modify or a reschedule gave.  A resume made so used
  to write nothing (the RUNNING state of a run is its lease's): the row stayed PAUSED
  for good, and no process ran the task again; a modify or a reschedule was written by
  the run's settle, and lost with it.

Shown with marker files, no sleeps: the killed run creates its marker as it hangs, and a
probe task due after the dead lease's expiry proves, once a survivor ran it, that the
survivors claimed past that expiry and left a paused, cancelled or removed task alone.

The test is here, and runs in a file per engine, each naming its engine in ``ENGINES``
(``tests/test_cluster_verb_kill_sqlite.py``, ``tests/test_cluster_verb_kill_postgres.py``):
its 28 cases took about 65 s in one file, and ``make test`` runs a file at a time per
worker, so the two halves can run at once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lldsched import FixedRate, OneTime, Priority, Scheduler, TaskStatus
from lldsched.coordination import CoordinatedStore
from tests import cluster_jobs, jobs
from tests.cluster import Child, Cluster, StoreSpec, open_store
from tests.waits import wait_until

LEASE = 1.0
POLL = 0.1
HOUR = 3600.0

HOLDS = {"pause"}  # killed after: the task waits for a resume
ENDS = {"cancel", "remove"}  # killed after: the task never runs again


def _row(store: CoordinatedStore, task_id: str) -> TaskStatus | None:
    rows = [s.status for s in store.load_all() if s.task.id == task_id]
    return rows[0] if rows else None


def _runs(children: list[Child], task_id: str) -> list[dict[str, object]]:
    return [run for child in children for run in child.runs() if run["task"] == task_id]


@pytest.mark.parametrize("inside", [True, False], ids=["inside", "after"])
@pytest.mark.parametrize("verb", sorted(cluster_jobs.VERBS))
def test_a_process_killed_in_the_middle_of_a_verb_leaves_a_task_the_others_honour(
    store_spec: StoreSpec, cluster: Cluster, tmp_path: Path, verb: str, inside: bool
) -> None:
    children = cluster.start(store_spec, [tmp_path / f"runs-{n}.jsonl" for n in range(3)],
                             lease=LEASE, poll=POLL)  # fmt: skip
    marker = tmp_path / "hanging"
    store = open_store(store_spec, lease=LEASE, poll=POLL)
    parent = Scheduler(store=store)  # never started: it registers and gives orders
    try:
        parent.schedule("hourly", cluster_jobs.verb_then_hang, FixedRate(HOUR), id="hourly",
                        kwargs={"verb": verb, "marker": str(marker), "inside": inside})  # fmt: skip
        wait_until(marker.exists, timeout=30, what=f"a run to hang in its {verb}")
        (first,) = _runs(children, "hourly")
        (victim,) = (child for child in children if child.pid == first["pid"])
        survivors = [child for child in children if child is not victim]
        victim.kill()  # SIGKILL
        answer = marker.read_text(encoding="utf-8")
        held = inside and answer == "inside"  # run_now on a running task writes nothing
        lapse = time.time() + LEASE  # the dead lease has expired by then (store clocks: this host)
        if held or verb not in HOLDS | ENDS:  # no trace, or a state the others run from
            if not held and verb == "resume":
                assert answer == "True"
            wait_until(lambda: len(_runs(survivors, "hourly")) >= 1, timeout=30,
                       what=f"the slot taken over after the {verb}")  # fmt: skip
            (rerun,) = _runs(survivors, "hourly")
            assert (rerun["slot"], rerun["attempt"]) == (first["slot"], first["attempt"])
            assert int(str(rerun["token"])) > int(str(first["token"]))
            wait_until(lambda: not store.leases() and bool(store.records("hourly")),
                       timeout=30, what="the rerun settled")  # fmt: skip
            (settled,) = [s for s in store.load_all() if s.task.id == "hourly"]
            assert settled.status is TaskStatus.SCHEDULED
            # a new definition stands (it was written by the run's settle, and lost with it)
            if verb == "modify" and not held:
                assert settled.task.priority is Priority.HIGH
            if verb == "reschedule" and not held:
                assert settled.task.schedule == FixedRate(7200)
            assert settled.next_run_at is not None and settled.next_run_at > float(
                str(first["slot"])
            )
            return
        # paused, cancelled or removed: a probe due past the dead lease's expiry, run by a
        # survivor, shows they claimed past it and left this task alone
        parent.schedule("probe", jobs.noop, OneTime(at=lapse + POLL), id="probe")
        wait_until(lambda: _row(store, "probe") is TaskStatus.SUCCEEDED, timeout=30,
                   what="a survivor to run the probe")  # fmt: skip
        assert _runs(survivors, "hourly") == []
        expected = {"pause": TaskStatus.PAUSED, "cancel": TaskStatus.CANCELLED, "remove": None}
        assert _row(store, "hourly") is expected[verb]
        if verb != "remove":  # (remove answers the task it forgot)
            assert answer == "True"
        if verb == "pause":  # a resume from elsewhere: the slot the dead run held runs
            assert parent.resume("hourly")
            wait_until(lambda: len(_runs(survivors, "hourly")) >= 1, timeout=30,
                       what="the resumed task run by a survivor")  # fmt: skip
            (rerun,) = _runs(survivors, "hourly")  # at once: a fixed-rate grid re-anchors
            assert float(str(rerun["slot"])) > float(str(first["slot"]))
    finally:
        parent.shutdown()
        store.close()
