"""A Ctrl-C in a registration's read of the change feed on a shared store lets the
store's call go (lldsched/threaded/registering.py, ``Registering.schedule``).

A registration of a new task on a shared store runs its calls as one call of the
store's (``storecalls.verb_call``: on PostgreSQL, under the store's lock, within one
``timeout``), and first reads what other processes wrote (``_follow_others``). The
read catches the store's errors, so what can come out of it is an interrupt: Jupyter's
"interrupt kernel" raises ``KeyboardInterrupt`` in the main thread, where a notebook
cell registers. Before, the call was entered outside the ``try`` that ends it, so such
an interrupt left the store's lock held by the cell's thread for as long as the
traceback lived (a notebook keeps the last one): the scheduler's timer, its workers
and every other thread waited on the store. SQLite's store makes no such call (its
calls run as ever), so the check is PostgreSQL's.
"""

from __future__ import annotations

import threading

import pytest

from lldsched import FixedRate, Scheduler
from tests import jobs
from tests.cluster import StoreSpec, opened

ENGINES = ("postgres",)  # the one engine whose store has a verb's call (tests/cluster.py)
WAIT = 30.0  # a bound on the wait, never reached when the store's lock is free


def test_a_ctrl_c_in_a_registrations_read_of_the_feed_lets_the_stores_call_go(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened(store_spec, 1) as (store,):
        scheduler = Scheduler(workers=1, store=store)
        coordinator = scheduler._coordinator
        assert coordinator is not None  # shared mode

        def interrupted() -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(coordinator, "sync", interrupted)
        with pytest.raises(KeyboardInterrupt) as caught:
            scheduler.schedule("job", jobs.noop, FixedRate(3600), id="job")
        kept = caught.value  # its traceback kept, as a notebook keeps the last one
        monkeypatch.undo()

        read = threading.Event()

        def read_the_store() -> None:
            store.load_all()
            read.set()

        other = threading.Thread(target=read_the_store, daemon=True)
        other.start()
        assert read.wait(WAIT), "another thread's call waited on the store's lock"
        assert kept.__traceback__ is not None
        scheduler.shutdown(timeout=WAIT)
