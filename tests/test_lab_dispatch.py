"""The lab's listener decision stays honest: a listener under the lock holds every run while
it blocks; off the lock, runs go on (lldsched.lab.dispatch)."""

from __future__ import annotations

from lldsched.lab.dispatch import InlineListenerScheduler, runs_while_a_listener_blocks
from lldsched.threaded.scheduler import Scheduler


def test_a_listener_under_the_lock_holds_every_run_while_it_blocks() -> None:
    assert not runs_while_a_listener_blocks(InlineListenerScheduler, patience=0.3)


def test_a_listener_off_the_lock_blocks_no_run() -> None:
    assert runs_while_a_listener_blocks(Scheduler, patience=5.0)
