"""The interpreter's exit hook that shuts down the schedulers left with writes
(``lldsched/threaded/lastwrites.py``, ``_shut_unwatched``) says a shutdown that raised on
``lldsched.scheduler``, with the scheduler's other shutdown lines, and still shuts down
the next one (docs/OPERATIONS.md, "Logging").  Before, the line went to
``lldsched.store``: a scheduler's shutdown that raised is no store's failure, and an
operator who routes the store's lines to whoever runs the database got it there."""

from __future__ import annotations

import logging

import pytest

from lldsched import FakeClock, Scheduler, threadstarts
from lldsched.logs import SCHEDULER
from lldsched.threaded import lastwrites
from lldsched.threaded.parts import STOPPED
from tests.conftest import T0


def test_a_shutdown_at_exit_that_raised_is_said_on_the_schedulers_logger(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lastwrites, "_unwatched", set())
    monkeypatch.setattr(threadstarts, "_exiting", False)  # restored: at_exit() sets it
    failing, next_one = (
        Scheduler(name="failing", clock=FakeClock(T0)),
        Scheduler(name="next", clock=FakeClock(T0)),
    )

    def raising(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("a shutdown's bug")

    monkeypatch.setattr(failing, "shutdown", raising)
    lastwrites.left_stale(failing)
    lastwrites.left_stale(next_one)
    caplog.set_level(logging.ERROR, logger="lldsched")
    lastwrites._shut_unwatched()
    said = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.getMessage()) for r in said] == [
        (SCHEDULER, "the shutdown at exit of scheduler 'failing' raised")
    ]
    assert said[0].exc_info is not None
    assert next_one._state is STOPPED
