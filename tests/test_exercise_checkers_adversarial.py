"""The exercise checkers of notebook 07 under a learner's stress: wrong answers that
learners write fail with a message naming the input, the expected and the got (never a
traceback of the checker's own), right answers of other shapes pass, and an answer that
raises, loops for ever or returns the wrong type is reported within a bounded time."""

from __future__ import annotations

import bisect
import gc
import heapq
import inspect
import itertools
import math
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from fractions import Fraction
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import numpy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises import checks as checker
from exercises.checks import ANSWER_LIMIT, BUILD_STUCK, TAKEN_TWICE, Check, Result, run_checks
from exercises.pause_checks import runs_after_resume_checks
from exercises.retry_checks import _answer, retry_at_checks
from exercises.schedule_checks import next_slot_checks, parse_field_checks
from exercises.solutions import TaskQueue, next_slot, parse_field

from tests.timer_runs import timer_results_of

TimerResults = Callable[[Any], list[Result]]  # the timer_results fixture


@pytest.fixture(scope="module")
def timer_results(request: pytest.FixtureRequest) -> TimerResults:
    """Every timer check run once against an answer, as a learner's ``check_task_queue``
    runs them; the runs of every answer the selected tests of this file ask for are made
    at once (``tests/timer_runs.py``)."""
    return timer_results_of(request)


SHORT = 0.5  # the limit a test gives a check that must hit it


def failure(results: list[Result], check: str) -> str:
    """The message of the check whose description contains ``check``; it must have failed."""
    (result,) = [r for r in results if check in r.description]
    assert not result.passed, f"{check!r} passed a wrong answer"
    return result.message


def refused(results: list[Result]) -> list[Result]:
    return [r for r in results if not r.passed]


# -- an answer that never returns ---------------------------------------------------------------


def test_a_next_slot_that_loops_for_ever_is_reported_with_its_input_and_stopped() -> None:
    stopped = threading.Event()

    def forgets_the_step(slot: float, period: float, finished: float, policy: str) -> float:
        following = slot + period
        try:
            while policy == "skip" and following < finished:
                following + period  # the mistake under test: `+` where `+=` belongs
            return following
        finally:
            stopped.set()

    results = run_checks(next_slot_checks(forgets_the_step), limit=SHORT)
    message = failure(results, "skip after a 150 s run")
    assert message.startswith(f"next_slot(0, 60, 150, 'skip') did not return within {SHORT:g} s")
    assert "a loop that never ends" in message
    assert stopped.wait(timeout=5), "the looping answer was left running on its thread"
    assert results[0].passed, "a short run never enters the loop"


def test_an_answer_that_catches_the_stop_is_named_and_the_checks_after_it_are_not_run() -> None:
    """A bare ``except:`` (or ``except BaseException:``) around the loop catches the
    checker's stop: the answer ran on, on its thread, and each later check that looped
    left one more running, for as long as the kernel lived (a core each on Binder), under
    an ordinary "did not return" message."""
    done = threading.Event()  # ends the answer's threads at the end of the test
    threads: list[threading.Thread] = []

    def catches_everything(slot: float, period: float, finished: float, policy: str) -> float:
        threads.append(threading.current_thread())
        following = slot + period
        while not done.is_set():
            try:
                while policy == "skip" and following < finished and not done.is_set():
                    following + period  # the step that does not move
                return following
            except BaseException:  # the mistake under test: it takes the stop too
                pass
        return following

    try:
        results = run_checks(next_slot_checks(catches_everything), limit=SHORT)
        message = failure(results, "skip after a 150 s run")
        assert message.startswith("next_slot(0, 60, 150, 'skip') did not return within")
        assert checker.CAUGHT in message
        stuck = next(i for i, r in enumerate(results) if "skip after a 150 s run" in r.description)
        assert results[0].passed, "a short run never enters the loop"
        after = results[stuck + 1 :]
        assert after and [r.message for r in after] == [checker.NOT_RUN] * len(after)
        running = [thread for thread in threads if thread.is_alive()]
        assert len(running) == 1, "only the one stuck call is left running"
    finally:
        done.set()
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()


def test_a_stop_in_a_generators_finally_ends_the_check_and_prints_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A generator answer is closed inside its call: its ``finally`` is the answer's
    code.  Dropped instead, it was closed by the collector, which printed the stop that
    landed there ("Exception ignored in: <generator object ...>", the checker's own
    traceback in the learner's output) and lost it: the check went on."""
    ignored: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: ignored.append(raised.exc_value))
    threads: list[threading.Thread] = []
    done = threading.Event()

    def cleans_up_for_ever(
        first: float, period: float, paused: float, resumed: float, policy: str
    ) -> Any:  # a generator, which the checks take as a list of its first items
        threads.append(threading.current_thread())
        try:
            yield from itertools.count(first, period)
        finally:
            while not done.is_set():  # the mistake under test: a cleanup that never ends
                pass

    try:
        (first_check, *_) = runs_after_resume_checks(cleans_up_for_ever)
        results = run_checks([first_check], limit=SHORT)
        assert "did not return within" in results[0].message
        threads[0].join(timeout=5)
        assert not threads[0].is_alive(), "the stopped check went on"
    finally:
        done.set()
    gc.collect()
    assert ignored == []


def test_once_a_check_ran_out_of_time_the_checks_after_it_get_the_shorter_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer that loops on every input kept the learner's cell busy the whole limit a
    check (35 s for the seven overrun checks); after the first, each gets LIMIT_AGAIN."""

    def never_moves(slot: float, period: float, finished: float, policy: str) -> float:
        following = slot + period
        while following <= finished or policy:
            following += 0  # the mistake under test: a step that does not move
        return following

    monkeypatch.setattr(checker, "LIMIT_AGAIN", SHORT / 5, raising=False)
    results = run_checks(next_slot_checks(never_moves), limit=SHORT)
    assert "did not return within 0.5 s" in results[0].message
    assert all(
        "did not return within 0.1 s: a loop that never ends" in r.message for r in results[1:]
    )


# -- a check stopped at either end of its thread -----------------------------------------------
# The limit stops a check's thread with an exception raised in it (_Stopped). Raised as
# the thread was about to begin the check, or had just returned from it, it escaped the
# thread's handler: threading's excepthook printed it (a PytestUnhandledThreadExceptionWarning
# in a parallel run), in whichever test was running by then.


@contextmanager
def unhandled_in_threads() -> Iterator[list[type[BaseException]]]:
    """The type of every exception a thread leaves unhandled meanwhile (threading's
    excepthook, which prints them)."""
    unhandled: list[type[BaseException]] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: unhandled.append(args.exc_type)
    try:
        yield unhandled
    finally:
        threading.excepthook = previous


class StopsThenTells(dict[Any, Any]):
    """``_WATCHING`` in stand-in: the checker reads it once it has given up on a check,
    which is when ``told`` is set (a check's thread reading its own entry is not told)."""

    def __init__(self, told: threading.Event) -> None:
        super().__init__()
        self.told = told

    def get(self, key: Any, default: Any = None) -> Any:
        if key is not threading.current_thread():
            self.told.set()
        return super().get(key, default)


def test_a_check_that_returns_as_its_limit_runs_out_leaves_nothing_raised_on_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check's thread is held where it leaves the check (it clears its entry in
    ``_CALLING``) until the checker has given up on it."""
    leaving, told = threading.Event(), threading.Event()

    class Leaves(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:  # the checker, at its limit
            leaving.wait()
            return super().get(key, default)

        def pop(self, key: Any, default: Any = None) -> Any:  # the check's thread, leaving
            leaving.set()
            told.wait()
            return super().pop(key, default)

    monkeypatch.setattr(checker, "_CALLING", Leaves())
    monkeypatch.setattr(checker, "_WATCHING", StopsThenTells(told))
    ran: list[threading.Thread] = []
    with unhandled_in_threads() as unhandled:
        (result,) = run_checks([("returns", lambda: ran.append(threading.current_thread()))], 1e-9)
        left_running = ran[0].is_alive()
        ran[0].join()
    assert unhandled == []
    assert not left_running, "the checker returned before the thread it gave up on ended"
    assert "did not return within 1e-09 s" in result.message  # alive at its limit: out of time


def test_a_check_whose_thread_has_not_begun_it_at_its_limit_leaves_nothing_raised_on_it() -> None:
    """The check's thread is held before it runs a line of the checker (at its first
    profile event) until the checker has given up on it: it never begins the check."""
    told = threading.Event()
    held: list[threading.Thread] = []

    def holds(frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        held.append(threading.current_thread())
        told.wait()

    began: list[str] = []
    previous = threading.getprofile()
    threading.setprofile(holds)
    try:
        with unhandled_in_threads() as unhandled, pytest.MonkeyPatch.context() as patch:
            patch.setattr(checker, "_WATCHING", StopsThenTells(told))
            (result,) = run_checks([("begins", lambda: began.append("began"))], 1e-9)
            threading.setprofile(previous)
            left_running = held[0].is_alive()
            held[0].join()
    finally:
        threading.setprofile(previous)
    assert unhandled == []
    assert not left_running, "the checker returned before the thread it gave up on ended"
    assert began == [], "a check given up on before it began was run all the same"
    assert "did not return within 1e-09 s" in result.message


def test_a_stopped_answer_is_not_an_error_a_check_can_catch_and_go_on_calling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The retry checker asks the answer again for an explanation, taking an answer that
    raises as none (``retry_checks._answer``): the stop of a looping call became a
    ``Raised``, and the stopped thread went on to the next call, to loop for ever."""
    calls: list[int] = []
    ran: list[threading.Thread] = []

    def loops(attempt: int, *rest: float) -> float:
        calls.append(attempt)
        while attempt:
            attempt += 0  # the mistake under test: a step that does not move
        return 0.0

    def explains() -> None:
        ran.append(threading.current_thread())
        for attempt in (1, 2):
            _answer(loops, (attempt, 0.0, 3, 1.0, 2.0, 60.0))

    (result,) = run_checks([("explains", explains)], limit=SHORT)
    assert result.message.startswith("retry_at(1, 0, 3, 1, 2, 60) did not return within")
    ran[0].join(timeout=5)
    assert not ran[0].is_alive(), f"the stopped check went on calling the answer: {calls}"
    assert calls == [1]


# -- a stop that lands in the checker's own work around a call ---------------------------------
# call_answer puts its watch on before it calls the answer (its thread's profile function,
# threading's for the threads the answer starts, a gc callback) and takes it off after; the
# stop lands wherever the interpreter next looks for one, in the checker's own lines too.
# Landed in that taking off, it left threading's profile function on: every thread the
# learner's kernel started after it ran the checker's hook, and later checks' watch of the
# threads an answer starts was off. The interpreter looks as it enters a function (and after
# a call, at a loop's jump back): these tests make the stop land as each function is entered
# that the checker calls in a call, one at a time.

Point = tuple[str, int]  # a function entered in a call to the answer, the nth time


def checkers_own(frame: FrameType) -> bool:
    """Whether ``frame`` is the checker's own code run by ``call_answer`` (its frame or one
    it called), not the answer's nor the collector's."""
    code = frame.f_code
    if code.co_filename != checker.__file__ or code is checker._collecting.__code__:
        return False
    caller: FrameType | None = frame
    while caller is not None and caller.f_code is not checker.call_answer.__code__:
        caller = caller.f_back
    return caller is not None


def at_each_entry(point: Callable[[Point], None]) -> Callable[[FrameType, str, Any], None]:
    """A trace function calling ``point`` as each function is entered that is the
    checker's own in a call to the answer, or that its code calls (the answer included)."""
    counted: dict[str, int] = {}

    def entered(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and (
            checkers_own(frame) or (frame.f_back is not None and checkers_own(frame.f_back))
        ):
            name = f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_qualname}"
            counted[name] = counted.get(name, 0) + 1
            point((name, counted[name]))

    return entered


def entries_of_a_call(call: Callable[[], object]) -> list[Point]:
    """Each function entered that :func:`at_each_entry` sees in ``call`` (a call_answer)."""
    points: list[Point] = []
    previous = sys.gettrace()
    sys.settrace(at_each_entry(points.append))
    try:
        call()
    except AssertionError:  # a Raised: the answer's error, as the checker names it
        pass
    finally:
        sys.settrace(previous)
    return points


def stopped_at(point: Point, call: Callable[[], object]) -> list[str]:
    """Run ``call`` as a check and stop it at ``point``: its thread is held there until the
    checker, its limit run out, has raised its stop, which lands as that function is
    entered.  What the call left on once its thread ended, each named (and then taken off,
    so that each point starts from nothing on)."""
    reached, told = threading.Event(), threading.Event()
    ran: list[threading.Thread] = []

    def holds(at: Point) -> None:
        if at == point:
            reached.set()
            told.wait()  # the stop lands here

    class WaitsForThePoint(dict[Any, Any]):
        def get(self, key: Any, default: Any = None) -> Any:  # the checker, at its limit
            reached.wait()
            return super().get(key, default)

    def check() -> None:
        ran.append(threading.current_thread())
        call()

    profile, trace = threading.getprofile(), threading.gettrace()
    watching = StopsThenTells(told)
    with pytest.MonkeyPatch.context() as patch, unhandled_in_threads() as unhandled:
        patch.setattr(checker, "_CALLING", WaitsForThePoint())
        patch.setattr(checker, "_WATCHING", watching)
        patch.setattr(checker, "_THREADS_WATCHED", list(checker._THREADS_WATCHED))
        threading.settrace(at_each_entry(holds))
        try:
            (result,) = run_checks([("stopped", check)], 1e-9)
        finally:
            threading.settrace(trace)
        ran[0].join()
        left = [
            name
            for name, on in [
                ("threading's profile function", threading.getprofile() is not profile),
                ("the collector's callback", checker._collecting in gc.callbacks),
                ("the call's watch", ran[0] in watching),
            ]
            if on
        ]
        threading.setprofile(profile)
        if checker._collecting in gc.callbacks:
            gc.callbacks.remove(checker._collecting)
    assert "did not return within 1e-09 s" in result.message, result
    assert unhandled == [], unhandled
    return left


def answer_returns() -> float:
    return 1.0


def answer_raises() -> float:
    raise ValueError("a mistake")


def answer_yields() -> Iterator[float]:
    yield 1.0  # two, all taken: ended, it is not closed later, from wherever the thread is
    yield 2.0


@pytest.mark.parametrize(
    "call",
    [
        partial(checker.call_answer, "answer_returns()", answer_returns),
        partial(checker.call_answer, "answer_raises()", answer_raises),
        partial(checker.call_answer, "answer_yields()", answer_yields, take=2),
    ],
    ids=["returns", "raises", "yields"],
)
def test_a_stop_that_lands_in_the_checkers_own_work_around_a_call_leaves_no_watch_on(
    call: Callable[[], object],
) -> None:
    """The stop lands as each function is entered that the checker calls in a call to the
    answer, one at a time (before the answer is called, and as its watch is taken off):
    none leaves threading's profile function, the collector's callback or the call's
    watch on once the check's thread has ended."""
    points = entries_of_a_call(call)
    assert any(name.startswith("threading.") for name, _ in points), points  # seen
    left = {f"{name} (time {nth})": stopped_at((name, nth), call) for name, nth in points}
    assert {entered: on for entered, on in left.items() if on} == {}


def test_a_retry_loop_that_never_reaches_the_cap_is_reported_with_its_input() -> None:
    def grows_until_the_cap(
        attempt: int,
        finished: float,
        max_attempts: int = 3,
        initial: float = 1.0,
        multiplier: float = 2.0,
        cap: float = 60.0,
    ) -> float | None:
        """Counts the steps to the cap first, to never overflow: right for every multiplier
        above 1 and every initial above 0, and a loop for ever on multiplier 1 or initial 0,
        which the random cases hold."""
        if attempt >= max_attempts:
            return None
        steps, wait = 0, initial
        while wait < cap:  # the mistake under test: with no growth, the cap is never reached
            wait *= multiplier
            steps += 1
        return finished + min(cap, initial * multiplier ** min(attempt - 1, steps))

    results = run_checks(retry_at_checks(grows_until_the_cap), limit=SHORT)
    assert [r.description for r in refused(results)] == [
        "agrees with RetryPolicy on 300 random cases"
    ]
    message = results[-1].message
    assert message.startswith("retry_at(") and f"did not return within {SHORT:g} s" in message


def test_a_resume_answer_that_loops_for_ever_is_reported_with_its_input_and_stopped() -> None:
    stopped = threading.Event()

    def forgets_the_step(
        first: float, period: float, paused: float, resumed: float, policy: str
    ) -> list[float]:
        slot = first
        try:
            while slot <= paused:
                slot + period  # the mistake under test: `+` where `+=` belongs
            slot = max(slot, resumed)
            return [slot, slot + period, slot + 2 * period]
        finally:
            stopped.set()

    results = run_checks(runs_after_resume_checks(forgets_the_step), limit=SHORT)
    message = failure(results, "between two slots")
    assert message.startswith(
        f"runs_after_resume(0, 60, 10, 50, 'run_once') did not return within {SHORT:g} s"
    )
    assert stopped.wait(timeout=5), "the looping answer was left running on its thread"
    (before_the_first,) = [r for r in results if "before its first run" in r.description]
    assert before_the_first.passed, "paused before the grid starts, it never enters the loop"


def test_a_parse_field_that_loops_for_ever_is_reported_with_its_input() -> None:
    def steps_by_zero(text: str, low: int, high: int) -> set[int]:
        step = text.partition("/")[2]
        if step == "0":
            value = low
            while value <= high:  # the mistake under test: a step of 0 never moves
                value += 0
        return parse_field(text, low, high)

    message = failure(
        run_checks(parse_field_checks(steps_by_zero), limit=SHORT), "rejects what cron"
    )
    assert message.startswith(f"parse_field('*/0', 0, 59) did not return within {SHORT:g} s")


def test_the_notebook_limit_passes_every_reference_answer() -> None:
    from exercises.solutions import retry_at

    for checks in (
        next_slot_checks(next_slot),
        retry_at_checks(retry_at),
        parse_field_checks(parse_field),
    ):
        assert refused(run_checks(checks, limit=ANSWER_LIMIT)) == []


# -- an answer that raises, or returns the wrong type -------------------------------------------


def test_an_exception_from_next_slot_names_the_call() -> None:
    def divides_by_the_overrun(slot: float, period: float, finished: float, policy: str) -> float:
        return slot + period * math.ceil(1 / (finished - slot - period) + 1)

    message = failure(run_checks(next_slot_checks(divides_by_the_overrun)), "exactly on the next")
    assert message == "next_slot(0, 60, 60, 'skip') raised ZeroDivisionError: division by zero"


def test_an_exception_from_retry_at_names_the_call() -> None:
    def closed_form_with_a_log(
        attempt: int,
        finished: float,
        max_attempts: int = 3,
        initial: float = 1.0,
        multiplier: float = 2.0,
        cap: float = 60.0,
    ) -> float | None:
        """Caps the exponent with a log: right, until the multiplier is 1 (log base 1)."""
        if attempt >= max_attempts:
            return None
        steps = math.ceil(math.log(cap / initial, multiplier)) + 1
        return finished + min(cap, initial * multiplier ** min(attempt - 1, steps))

    message = failure(run_checks(retry_at_checks(closed_form_with_a_log)), "300 random")
    assert message.startswith("retry_at(")
    assert "raised ZeroDivisionError" in message or "raised ValueError" in message


def test_a_parse_field_that_raises_something_else_than_value_error_names_the_field() -> None:
    def raises_key_error(text: str, low: int, high: int) -> set[int]:
        try:
            return parse_field(text, low, high)
        except ValueError:
            raise KeyError(text) from None

    message = failure(run_checks(parse_field_checks(raises_key_error)), "range ends")
    assert message == (
        "parse_field('50-70', 0, 59) raised KeyError: '50-70': cron rejects '50-70', and a "
        "field cron rejects raises ValueError (not KeyError)"
    )


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (lambda text, low, high: None, "parse_field('*', 0, 59) returned None: return the set"),
        (
            lambda text, low, high: {str(v) for v in parse_field(text, low, high)},
            "the values are ints",
        ),
    ],
    ids=["none", "strings"],
)
def test_a_parse_field_of_the_wrong_type_is_told_what_to_return(
    answer: Callable[[str, int, int], set[int]], told: str
) -> None:
    message = failure(run_checks(parse_field_checks(answer)), "minute fields")
    assert told in message
    assert "NoneType" not in message


def test_a_parse_field_that_returns_a_list_or_a_range_passes() -> None:
    def as_a_sorted_list(text: str, low: int, high: int) -> list[int]:
        return sorted(parse_field(text, low, high))

    assert refused(run_checks(parse_field_checks(as_a_sorted_list))) == []  # type: ignore[arg-type]


# -- the retry rule: wrong answers learners write -----------------------------------------------


def exponent_one_too_low(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier ** min(attempt - 2, 100))


def counted_from_now(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    if attempt >= max_attempts:
        return None
    return time.time() + min(cap, initial * multiplier ** min(attempt - 1, 100))


def cap_before_growth(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """min(cap, initial), then grown: the cap bounds the start, not the wait."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial) * multiplier ** min(attempt - 1, 100)


def just_under_the_cap_at_attempt_5000(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """Wrong by a second on a late attempt: the checker's own hints must not overflow."""
    if attempt >= max_attempts:
        return None
    if attempt > 100:
        return finished + cap - 1
    return finished + min(cap, initial * multiplier ** (attempt - 1))


@pytest.mark.parametrize(
    ("answer", "check", "told"),
    [
        (exponent_one_too_low, "the first retry waits initial", "the exponent is one too low"),
        (exponent_one_too_low, "grows until the cap", "the exponent is one too low"),
        (counted_from_now, "counted from the finish", "counted from the time now"),
        (
            cap_before_growth,
            "the wait is capped",
            "the wait is capped at 60 s once it has grown, min(cap, initial * multiplier ** "
            "(n - 1)); min(cap, initial) * multiplier ** (n - 1) caps the first wait only",
        ),
        (
            just_under_the_cap_at_attempt_5000,
            "no overflow",
            "retry_at(5000, 100, 1000000, 1, 2, 60): expected 160, got 159",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_retry_mistake_is_named(
    answer: Callable[..., float | None], check: str, told: str
) -> None:
    message = failure(run_checks(retry_at_checks(answer)), check)
    assert told in message
    assert "raised" not in message


def caps_the_instant(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The cap put on the due instant, not on the wait."""
    if attempt >= max_attempts:
        return None
    return min(finished + initial * multiplier ** min(attempt - 1, 100), cap)


def caps_with_max(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """max where min belongs: every wait is at least the cap."""
    if attempt >= max_attempts:
        return None
    return finished + max(cap, initial * multiplier ** min(attempt - 1, 100))


def adds_up_the_waits(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """Every wait since the first failure added up, as if ``finished`` were its instant."""
    if attempt >= max_attempts:
        return None
    return finished + sum(min(cap, initial * multiplier ** min(n, 100)) for n in range(attempt))


@pytest.mark.parametrize(
    ("answer", "check", "told"),
    [
        (
            caps_the_instant,
            "the first retry waits initial",
            "retry_at(1, 100, 3, 1, 2, 60): expected 101, got 60: the instant was capped, "
            "min(finished + wait, cap) = 60; the cap is on the wait",
        ),
        (caps_the_instant, "the wait is capped", "or the instant capped"),
        (
            caps_with_max,
            "the first retry waits initial",
            "expected 101, got 160: that waits the cap, 60 s, where initial * multiplier ** "
            "(n - 1) is 1 s; the wait is at most the cap, min(cap, ...)",
        ),
        (caps_with_max, "a slow wait grows too", "is 1862.18 s; the wait is at most the cap"),
        (
            adds_up_the_waits,
            "the wait doubles",
            "retry_at(2, 100, 5, 1, 2, 60): expected 102, got 103: that adds up every wait "
            "since the first failure",
        ),
        (adds_up_the_waits, "the wait is capped", "that adds up every wait"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_retry_cap_on_the_wrong_value_or_a_sum_of_waits_is_named(
    answer: Callable[..., float | None], check: str, told: str
) -> None:
    """Each was shown only "expected 101, got 60" (or 160, or 103): no word of what the
    cap bounds, or where the wait counts from."""
    assert told in failure(run_checks(retry_at_checks(answer)), check)


def test_a_retry_answer_with_the_exponent_too_low_is_not_told_it_stopped_at_the_cap() -> None:
    message = failure(run_checks(retry_at_checks(exponent_one_too_low)), "grows until the cap")
    assert "stopped growing below the cap" not in message


# -- a cron field cron rejects: why, named ------------------------------------------------------


def wraps_reversed_ranges(text: str, low: int, high: int) -> set[int]:
    """Reads a reversed range as one that wraps past the field's end: 5-1 is 5-59 and 0-1."""
    items = []
    for item in text.split(","):
        first, dash, last = item.partition("-")
        if dash and first.isdigit() and last.isdigit() and int(first) > int(last):
            items += [f"{first}-{high}", f"{low}-{last}"]
        else:
            items.append(item)
    return parse_field(",".join(items), low, high)


def skips_empty_items(text: str, low: int, high: int) -> set[int]:
    return parse_field(",".join(item for item in text.split(",") if item) or "*", low, high)


def never_bounds_checks(text: str, low: int, high: int) -> set[int]:
    """The reference with the field's range widened: 70 is a minute."""
    return parse_field(text, 0, 10 * high)


@pytest.mark.parametrize(
    ("answer", "check", "told"),
    [
        (
            wraps_reversed_ranges,
            "rejects what cron rejects",
            ": 5-1 is a reversed range, which cron rejects (it does not wrap around past 59",
        ),
        (skips_empty_items, "rejects what cron rejects", "'1,,2' has an empty list item"),
        (
            never_bounds_checks,
            "range ends are bounds-checked",
            "'50-70' in 0-59 should raise ValueError (cron rejects it), got [50, 51, 52, 53, "
            "54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70]: 70 is "
            "outside the field's range 0-59; bounds-check every number, both ends",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_parser_that_takes_a_field_cron_rejects_is_told_which_part_and_why(
    answer: Callable[[str, int, int], set[int]], check: str, told: str
) -> None:
    """Each was shown the values it returned and "cron rejects it", not what about the
    field cron rejects."""
    assert told in failure(run_checks(parse_field_checks(answer)), check)


# -- the overrun rule: right answers of other shapes --------------------------------------------


def by_a_loop(slot: float, period: float, finished: float, policy: str) -> float:
    following = slot + period
    while policy == "skip" and following < finished:
        following += period
    return following


def by_floor_division(slot, period, finished, policy):  # type: ignore[no-untyped-def]
    """No type hints, and -(-a // b) for the ceiling."""
    if policy == "catch_up":
        return slot + period
    return slot + max(1, -(-(finished - slot) // period)) * period


def by_max_of_two(slot: float, period: float, finished: float, policy: str) -> float:
    following = slot + period
    if policy == "skip":
        return max(following, slot + math.ceil((finished - slot) / period) * period)
    return following


@pytest.mark.parametrize("answer", [by_a_loop, by_floor_division, by_max_of_two])
def test_the_overrun_checker_passes_right_answers_of_other_shapes(
    answer: Callable[[float, float, float, str], float],
) -> None:
    assert refused(run_checks(next_slot_checks(answer), limit=ANSWER_LIMIT)) == []


def test_an_overrun_answer_that_answers_only_the_notebooks_examples_fails() -> None:
    def the_examples(slot: float, period: float, finished: float, policy: str) -> float:
        known: dict[tuple[float, float, str], float] = {(0, 5, "skip"): 60}
        known |= {(0, 150, "skip"): 180, (0, 150, "catch_up"): 60}
        known |= {(0, 60, "skip"): 60, (0, 120, "skip"): 120}
        return known.get((slot, finished, policy), slot + period)

    results = run_checks(next_slot_checks(the_examples))
    assert [r.description for r in refused(results)] == [
        "agrees with FixedRate.next_run on 500 runs, boundaries included"
    ]
    assert "expected" in results[-1].message and "got" in results[-1].message


def test_a_skip_that_rounds_up_a_run_of_no_time_to_its_own_slot_fails() -> None:
    def ceiling_always(slot: float, period: float, finished: float, policy: str) -> float:
        if policy == "catch_up":
            return slot + period
        return slot + math.ceil((finished - slot) / period) * period  # 0 for a run of no time

    message = failure(run_checks(next_slot_checks(ceiling_always)), "500 runs")
    assert "expected" in message and "got" in message


# -- the timer queue ----------------------------------------------------------------------------


class PushThatWaits(TaskQueue):
    """A push that waits on the condition (for "room", say): it never returns."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            self._cond.wait()


class ReadsTheWallClock(TaskQueue):
    """Right, but for ``time.time()`` where ``self._clock()`` belongs."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - time.time()  # the mistake under test
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(delay)


class ReadsMonotonic(TaskQueue):
    """``time.monotonic()``, the constructor's default, read directly: the checker's clock
    is not it."""

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - time.monotonic()  # the mistake under test
                if delay <= 0:
                    heapq.heappop(self._heap)
                    del self._live[task]
                    return task
                self._cond.wait(min(delay, 3600.0))


@pytest.mark.parametrize("answer", [ReadsTheWallClock, ReadsMonotonic])
def test_a_queue_that_reads_another_clock_is_told_so(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    message = failure(timer_results(answer), "the clock it was given")
    assert message.startswith("pop_due never called self._clock()")
    assert "time.time(), time.monotonic()" in message


@pytest.mark.parametrize("answer", [PushThatWaits])
def test_a_push_that_never_returns_fails_every_check_without_hanging(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    results = timer_results(answer)
    assert all(not r.passed and "push waits or loops" in r.message for r in results)
    assert "did not return within 0.1 s" in results[-1].message  # cut after the first


class SortedListWithBisect:
    """Another shape: a sorted list kept with bisect.insort, its own sequence counter, a
    push that always notifies, and no type hints inside."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: list[tuple[float, int, str]] = []
        self._count = 0
        self._live: dict[str, int] = {}

    def push(self, task: str, due: float) -> None:
        with self._cond:
            self._count += 1
            self._live[task] = self._count
            bisect.insort(self._entries, (due, self._count, task))
            self._cond.notify_all()

    def cancel(self, task: str) -> None:
        with self._cond:
            self._live.pop(task, None)

    def _drop_dead(self) -> None:
        while self._entries and self._live.get(self._entries[0][2]) != self._entries[0][1]:
            self._entries.pop(0)

    def pop_due(self) -> str:
        with self._cond:
            while True:
                self._drop_dead()
                if not self._entries:
                    self._cond.wait()
                    continue
                due, _, task = self._entries[0]
                delay = due - self._clock()
                if delay <= 0:
                    self._entries.pop(0)
                    del self._live[task]
                    return task
                self._cond.wait(delay)


class WithSlots:
    """The same, its attributes in ``__slots__`` (no ``__dict__`` to find the Condition in)."""

    __slots__ = ("_clock", "_cond", "_count", "_entries", "_live")
    __init__ = SortedListWithBisect.__init__
    push = SortedListWithBisect.push
    cancel = SortedListWithBisect.cancel
    _drop_dead = SortedListWithBisect._drop_dead
    pop_due = SortedListWithBisect.pop_due


class ConditionOnTheClass(SortedListWithBisect):
    """The Condition a class attribute, shared by every queue: crude, and still right."""

    _cond = threading.Condition()

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        del self._cond  # the class's, from here on


class TwoConditionsOnOneLock(TaskQueue):
    """Another shape, as lldsched's own runtime has it: one lock, and a Condition on it
    for each thing a consumer waits for (something queued, the head falling due)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # the head changed
        self._not_empty = threading.Condition(lock)

    def push(self, task: str, due: float) -> None:
        with self._cond:
            super().push(task, due)
            self._not_empty.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while not self._heap:
                self._not_empty.wait()
            return super().pop_due()


class SortedDescending:
    """Right, in another shape: a list kept in descending order of (-due, -sequence), so
    the earliest entry is at its end and comes out by list.pop()."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: list[tuple[float, int, str]] = []
        self._sequence = itertools.count()
        self._live: dict[str, int] = {}

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            entry = (-due, -sequence, task)
            bisect.insort(self._entries, entry)
            if self._entries[-1] is entry:
                self._cond.notify_all()

    def cancel(self, task: str) -> None:
        with self._cond:
            self._live.pop(task, None)

    def pop_due(self) -> str:
        with self._cond:
            while True:
                entries = self._entries
                while entries and self._live.get(entries[-1][2]) != -entries[-1][1]:
                    entries.pop()
                if not entries:
                    self._cond.wait()
                    continue
                delay = -entries[-1][0] - self._clock()
                if delay <= 0:
                    task = entries.pop()[2]
                    del self._live[task]
                    return task
                self._cond.wait(delay)


@pytest.mark.parametrize(
    "answer",
    [SortedListWithBisect, ConditionOnTheClass, TwoConditionsOnOneLock, SortedDescending],
)
def test_the_timer_checker_passes_right_queues_of_other_shapes(
    answer: type, timer_results: TimerResults
) -> None:
    assert refused(timer_results(answer)) == []


@pytest.mark.parametrize("answer", [WithSlots])
def test_the_timer_checker_finds_the_condition_of_a_queue_with_slots(
    answer: type, timer_results: TimerResults
) -> None:
    assert not hasattr(answer(), "__dict__")
    assert refused(timer_results(answer)) == []


class PopsOutsideTheLock(TaskQueue):
    """Tests the head under the lock, and pops it after letting the lock go: two consumers
    woken together both take the same head (the barrier holds the window open while
    another consumer of the queue is inside pop_due; one alone pops at once, so the checks
    of one consumer do not wait out the barrier)."""

    window = threading.Barrier(2)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.inside = 0  # consumers inside pop_due, counted under the Condition

    def pop_due(self) -> str:
        with self._cond:
            self.inside += 1
        try:
            return self._pop_due()
        finally:
            with self._cond:
                self.inside -= 1

    def _pop_due(self) -> str:
        while True:
            with self._cond:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - self._clock()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                paired = self.inside > 1
            # the mistake under test: the lock is let go between the test and the pop
            if paired:
                try:
                    self.window.wait(timeout=0.5)
                except threading.BrokenBarrierError:  # the other did not come: ready again
                    self.window.reset()
            with self._cond:
                heapq.heappop(self._heap)
                self._live.pop(task, None)
            return task


@pytest.mark.parametrize("answer", [PopsOutsideTheLock])
def test_two_consumers_given_the_same_head_are_told_to_test_and_pop_under_one_lock(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    results = timer_results(answer)
    message = failure(results, "both of two waiters")
    assert "'first' came out twice" in message
    assert "test the head and pop it in one `with self._cond`" in message
    # a consumer alone pops at once: only the checks of two consumers meet the race
    assert [r.description for r in results if not r.passed] == [
        "a new head wakes both of two waiters (notify_all)",
        "one new head, two waiters: one takes it, the other waits on",
    ]


# -- cheats: an answer that does not compute the rule must not pass ----------------------------


def reads_the_checkers_expectation(*args: object) -> object:
    """Returns the checker's ``expected`` from a calling frame, whatever the call."""
    frame = inspect.currentframe()
    while frame is not None:
        if "expected" in frame.f_locals:
            return frame.f_locals["expected"]
        frame = frame.f_back
    return 0.0


def field_from_the_checkers_expectation(text: str, low: int, high: int) -> object:
    found = reads_the_checkers_expectation()
    if found is None:  # the checker expects a refusal
        raise ValueError(text)
    return found


PURE_CHECKS: list[tuple[str, Callable[[Any], list[Check]]]] = [
    ("next_slot", next_slot_checks),
    ("retry_at", retry_at_checks),
    ("runs_after_resume", runs_after_resume_checks),
    ("parse_field", parse_field_checks),
]


@pytest.mark.parametrize(("name", "checks_of"), PURE_CHECKS, ids=[n for n, _ in PURE_CHECKS])
def test_an_answer_that_reads_the_expected_value_off_the_checkers_frame_fails(
    name: str, checks_of: Callable[[Any], list[Check]]
) -> None:
    cheat = field_from_the_checkers_expectation if name == "parse_field" else None
    results = run_checks(checks_of(cheat or reads_the_checkers_expectation), limit=ANSWER_LIMIT)
    assert not results[0].passed and not results[-1].passed, results


def next_slot_by_fixed_rate(slot: float, period: float, finished: float, policy: str) -> float:
    from lldsched import ExecutionRecord, FixedRate, OverrunPolicy

    overrun = OverrunPolicy.SKIP if policy == "skip" else OverrunPolicy.CATCH_UP
    record = ExecutionRecord("t", "t", 1, slot, slot, 0, slot, finished, True)
    return FixedRate(period, overrun).next_run(record, finished)


def retry_at_by_retry_policy(
    attempt: int, finished: float, max_attempts: int, *rule: float
) -> float | None:
    from lldsched import RetryPolicy

    initial, multiplier, cap = rule
    policy = RetryPolicy(
        max_attempts, initial_backoff=initial, multiplier=multiplier, max_backoff=cap
    )
    return finished + policy.backoff(attempt) if policy.allows_retry(attempt) else None


def parse_field_by_the_checkers_reference(text: str, low: int, high: int) -> set[int]:
    from exercises.schedule_checks import reference_field

    found = reference_field(text, low, high)
    if found is None:
        raise ValueError(text)
    return found


def resume_by_the_checkers_reference(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> list[float]:
    from exercises.pause_checks import reference_runs_after_resume

    return reference_runs_after_resume(first, period, paused, resumed, policy)


@pytest.mark.parametrize(
    ("checks_of", "answer", "asked"),
    [
        (next_slot_checks, next_slot_by_fixed_rate, "called into lldsched."),
        (retry_at_checks, retry_at_by_retry_policy, "called into lldsched."),
        (parse_field_checks, parse_field_by_the_checkers_reference, "called into exercises."),
        (runs_after_resume_checks, resume_by_the_checkers_reference, "called into exercises."),
    ],
    ids=["next_slot", "retry_at", "parse_field", "runs_after_resume"],
)
def test_an_answer_that_asks_lldsched_or_the_checker_fails_every_check_and_is_told_why(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any], asked: str
) -> None:
    results = run_checks(checks_of(answer), limit=ANSWER_LIMIT)
    assert refused(results) == results
    for result in results:
        assert asked in result.message and "write the rule yourself" in result.message, result


class EqualToAnything(float):
    """A number whose difference from anything is 0: ``abs(got - expected) < tolerance``
    holds whatever ``expected`` is."""

    def __sub__(self, other: object) -> float:
        return 0.0

    def __rsub__(self, other: object) -> float:
        return 0.0


@pytest.mark.parametrize(
    ("checks_of", "expected"),
    [(next_slot_checks, "expected 60, got 0"), (retry_at_checks, "expected 101, got 0")],
    ids=["next_slot", "retry_at"],
)
def test_a_number_that_subtracts_to_zero_from_anything_fails(
    checks_of: Callable[[Any], list[Check]], expected: str
) -> None:
    results = run_checks(checks_of(lambda *args: EqualToAnything(0)), limit=ANSWER_LIMIT)
    assert expected in failure(results, results[0].description)
    assert not results[-1].passed


# -- right answers in exact arithmetic, or numpy's ----------------------------------------------


def next_slot_in_fractions(slot: float, period: float, finished: float, policy: str) -> Fraction:
    """Right, with every instant a Fraction (no float rounding on the grid)."""
    return Fraction(next_slot(slot, period, finished, policy))


def retry_at_in_fractions(
    attempt: int, finished: float, max_attempts: int, *rule: float
) -> Fraction | None:
    from exercises.solutions import retry_at

    due = retry_at(attempt, finished, max_attempts, *rule)
    return None if due is None else Fraction(due)


def runs_after_resume_in_fractions(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> tuple[Fraction, ...]:
    from exercises.solutions import runs_after_resume

    return tuple(map(Fraction, runs_after_resume(first, period, paused, resumed, policy)))


def runs_after_resume_in_an_array(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> Any:
    """Right: ``start + period * numpy.arange(3)``, as a numpy user writes it."""
    from exercises.solutions import runs_after_resume

    return numpy.array(runs_after_resume(first, period, paused, resumed, policy))


def parse_field_of_numpy_ints(text: str, low: int, high: int) -> Any:
    """Right: a set of numpy integers (``set(numpy.arange(start, stop + 1, step))``)."""
    return set(numpy.array(sorted(parse_field(text, low, high)), dtype=numpy.int64))


def parse_field_in_an_array(text: str, low: int, high: int) -> Any:
    return numpy.array(sorted(parse_field(text, low, high)), dtype=numpy.int64)


@pytest.mark.parametrize(
    ("checks_of", "answer"),
    [
        (next_slot_checks, next_slot_in_fractions),
        (retry_at_checks, retry_at_in_fractions),
        (runs_after_resume_checks, runs_after_resume_in_fractions),
        (runs_after_resume_checks, runs_after_resume_in_an_array),
        (parse_field_checks, parse_field_of_numpy_ints),
        (parse_field_checks, parse_field_in_an_array),
    ],
    ids=[
        "next_slot",
        "retry_at",
        "runs_after_resume",
        "runs_after_resume-numpy-array",
        "parse_field-numpy-set",
        "parse_field-numpy-array",
    ],
)
def test_a_right_answer_in_fractions_or_numpy_passes(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any]
) -> None:
    assert refused(run_checks(checks_of(answer), limit=ANSWER_LIMIT)) == []


# -- an answer that sleeps ----------------------------------------------------------------------


def sleeps_its_backoff(attempt: int, finished: float, max_attempts: int, *rule: float) -> Any:
    """Right, but it "waits the backoff" (a millionth of it here, to keep the test short):
    every check took as long as its sleeps, and passed."""
    from exercises.solutions import retry_at

    due = retry_at(attempt, finished, max_attempts, *rule)
    if due is not None:
        time.sleep((due - finished) / 1e6)
    return due


def test_an_answer_that_sleeps_fails_every_check_and_is_told_it_waits_for_nothing() -> None:
    results = run_checks(retry_at_checks(sleeps_its_backoff), limit=ANSWER_LIMIT)
    told = failure(results, "the first retry waits initial")
    assert told.startswith("retry_at(1, 100, 3, 1, 2, 60) called time.sleep"), told
    assert "waits for nothing" in told
    # only the checks whose every answer is None, which it returns without a sleep
    assert [r.description for r in results if r.passed] == [
        "attempt 3 of max_attempts=3 is the last -> None",
        "max_attempts=1 never retries -> None",
    ]


def test_an_answer_asleep_at_the_limit_is_told_it_sleeps_not_that_it_loops() -> None:
    def sleeps_a_period(slot: float, period: float, finished: float, policy: str) -> float:
        time.sleep(period / 60)  # a second a minute: past the test's limit
        return next_slot(slot, period, finished, policy)

    first = next_slot_checks(sleeps_a_period)[:1]
    before = set(threading.enumerate())
    told = failure(run_checks(first, limit=SHORT), "a short run")
    assert told.startswith(f"next_slot(0, 60, 5, 'skip') did not return within {SHORT:g} s"), told
    assert "time.sleep" in told and "a loop that never ends" not in told
    # The checker leaves a thread asleep behind (it cannot stop a sleep), its watch of the
    # threads started meanwhile on until the sleep ends: waited for here, so that the
    # tests after it (the watch turned off, above) find threading's profile function None.
    for asleep in set(threading.enumerate()) - before:
        asleep.join(timeout=5)
        assert not asleep.is_alive(), asleep


# -- a queue that hides its cost ----------------------------------------------------------------


class SortsCopiesOfTheDues(TaskQueue):
    """A list sorted again on every push, O(n log n) a push, its due instants stored as
    ``float(due)``: copies, whose comparisons no counter given to the queue can see."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            self._heap.append((float(due), sequence, task))
            self._heap.sort()
            self._cond.notify_all()


@pytest.mark.parametrize("answer", [SortsCopiesOfTheDues])
def test_a_sort_on_every_push_of_copied_due_times_is_not_taken_for_a_heap(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    told = failure(timer_results(answer), "push and pop cost O(log n)")
    assert "float(due)" in told and "as it is given" in told, told


class OrdersByArrival(TaskQueue):
    """Entries ``(sequence, due, task)``: the sequence put first, so the heap orders by
    arrival and never compares a due instant (a FIFO, not a timer)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._arrivals: list[tuple[int, float, str]] = []

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            heapq.heappush(self._arrivals, (sequence, due, task))
            self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                heap = self._arrivals
                while heap and self._live.get(heap[0][2]) != heap[0][0]:
                    heapq.heappop(heap)
                if not heap:
                    self._cond.wait()
                    continue
                _, due, task = heap[0]
                delay = due - self._clock()
                if delay <= 0:
                    heapq.heappop(heap)
                    del self._live[task]
                    return task
                self._cond.wait(delay)


@pytest.mark.parametrize("answer", [OrdersByArrival])
def test_a_queue_that_never_compares_dues_for_its_order_is_not_told_it_copies_them(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    # It was told "1000 tasks came out in order, and your queue never compared the due
    # instants pushed: it keeps copies of them (float(due) in push?)": the order was never
    # read, and the queue stores the dues as given.
    told = failure(timer_results(answer), "push and pop cost O(log n)")
    assert told.startswith(
        "1000 tasks, all due already, did not come out earliest first, and your queue never "
        "compared the due instants pushed: pop 1 returned 'job-0' (due 1 s ago) while "
        "'job-321', due 1.999 s ago, was still queued"
    ), told
    assert "float(due)" not in told and "came out in order" not in told


def test_an_answer_that_exits_fails_each_check_naming_the_call_and_the_checker_goes_on() -> None:
    def exits(slot: float, period: float, finished: float, policy: str) -> float:
        sys.exit("no idea")

    for limit in (None, ANSWER_LIMIT):
        results = run_checks(next_slot_checks(exits), limit=limit)
        assert refused(results) == results
        assert results[0].message == "next_slot(0, 60, 5, 'skip') raised SystemExit: no idea"


class PopExits(TaskQueue):
    def pop_due(self) -> str:
        sys.exit("giving up")


@pytest.mark.parametrize("answer", [PopExits])
def test_a_pop_due_that_exits_is_told_so_not_that_its_task_came_late(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    told = failure(timer_results(answer), "returns what is due at once")
    assert told == "pop_due raised SystemExit: giving up", told


class NotifiesTheOtherCondition(TwoConditionsOnOneLock):
    """Two Conditions, and a push that notifies only "something queued": a consumer
    waiting toward a later head, on the other one, sleeps through a new head."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            self._live[task] = sequence = next(self._sequence)
            heapq.heappush(self._heap, (due, sequence, task))
            self._not_empty.notify_all()  # the mistake under test: not `_cond`


@pytest.mark.parametrize("answer", [NotifiesTheOtherCondition])
@pytest.mark.parametrize(
    "check", ["re-arms a timer waiting on a later head", "a new head wakes both of two waiters"]
)
def test_a_push_that_notifies_a_condition_nobody_waits_on_is_told_so(
    answer: type[TaskQueue], check: str, timer_results: TimerResults
) -> None:
    told = failure(timer_results(answer), check)
    assert "no consumer was waiting on" in told and "went back to the timeout" not in told, told


# -- what runs on the answer's thread but is not the answer's, and what escapes the watch -------


def leave_a_function_lldsched_watches_for_the_collector() -> None:
    """A task's action that lldsched read the signature of (a weak reference to its code,
    whose callback, in lldsched, drops the entry), in a reference cycle: only the garbage
    collector frees it, on whichever thread it runs next (a Scheduler of an earlier cell,
    dropped, leaves the same)."""
    from lldsched.core.calls import call_shape

    space: dict[str, Any] = {}
    exec("def action(): pass", space)
    space["itself"] = space
    call_shape(space["action"])


def collects_then_answers(slot: float, period: float, finished: float, policy: str) -> float:
    """Right; a collection runs during the call (as the answer's allocations may start)."""
    gc.collect()
    return next_slot(slot, period, finished, policy)


def test_a_collection_during_a_right_answer_that_frees_lldsched_objects_is_not_its_call() -> None:
    leave_a_function_lldsched_watches_for_the_collector()
    results = run_checks(next_slot_checks(collects_then_answers)[:1], limit=ANSWER_LIMIT)
    assert refused(results) == []


def next_slot_by_fixed_rate_on_a_thread(
    slot: float, period: float, finished: float, policy: str
) -> float:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(next_slot_by_fixed_rate, slot, period, finished, policy).result()


def test_an_answer_that_asks_lldsched_on_a_thread_it_starts_fails_and_is_told_why() -> None:
    results = run_checks(next_slot_checks(next_slot_by_fixed_rate_on_a_thread), limit=ANSWER_LIMIT)
    assert refused(results) == results
    assert "called into lldsched." in results[0].message, results[0]


def next_slot_on_a_thread(slot: float, period: float, finished: float, policy: str) -> float:
    """Right, computed on a thread the answer starts and joins."""
    got: list[float] = []
    thread = threading.Thread(target=lambda: got.append(next_slot(slot, period, finished, policy)))
    thread.start()
    thread.join()
    return got[0]


def test_a_right_answer_computed_on_a_thread_of_its_own_passes() -> None:
    assert refused(run_checks(next_slot_checks(next_slot_on_a_thread), limit=ANSWER_LIMIT)) == []


def test_a_thread_someone_else_starts_during_the_answer_is_not_the_answers() -> None:
    """A Scheduler of an earlier cell goes on running: its threads, started while a check
    runs, run lldsched's code, and none of it is the answer's call."""
    go, done = threading.Event(), threading.Event()

    def background() -> None:  # started before the check: not the answer's
        while go.wait(timeout=10):
            go.clear()
            worker = threading.Thread(target=next_slot_by_fixed_rate, args=(0, 60, 5, "skip"))
            worker.start()
            worker.join()
            done.set()

    threading.Thread(target=background, daemon=True).start()

    def answer(slot: float, period: float, finished: float, policy: str) -> float:
        go.set()  # a thread starts elsewhere, now, and asks lldsched
        done.wait(timeout=5)
        done.clear()
        return next_slot(slot, period, finished, policy)

    try:
        assert refused(run_checks(next_slot_checks(answer)[:2], limit=ANSWER_LIMIT)) == []
    finally:
        go.set()  # one more round, then the loop ends 10 s later (a daemon either way)


def turns_the_watch_off(slot: float, period: float, finished: float, policy: str) -> float:
    sys.setprofile(None)
    return next_slot_by_fixed_rate(slot, period, finished, policy)


def turns_the_watch_of_threads_off(
    slot: float, period: float, finished: float, policy: str
) -> float:
    threading.setprofile(None)
    return next_slot_by_fixed_rate_on_a_thread(slot, period, finished, policy)


def puts_another_profile_function_on(
    slot: float, period: float, finished: float, policy: str
) -> float:
    sys.setprofile(lambda frame, event, arg: None)
    found = next_slot_by_fixed_rate(slot, period, finished, policy)
    sys.setprofile(None)
    return found


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (turns_the_watch_off, "called sys.setprofile"),
        (puts_another_profile_function_on, "called sys.setprofile"),
        (turns_the_watch_of_threads_off, "called threading.setprofile"),
    ],
    ids=["sys-none", "sys-another", "threading"],
)
def test_an_answer_that_turns_the_checkers_watch_off_fails_and_is_told_so(
    answer: Callable[..., float], told: str
) -> None:
    results = run_checks(next_slot_checks(answer), limit=ANSWER_LIMIT)
    assert refused(results) == results
    assert results[0].message.startswith(f"next_slot(0, 60, 5, 'skip') {told}"), results[0]
    assert "cannot be checked" in results[0].message
    assert threading.getprofile() is None


def test_a_sleep_is_seen_though_time_sleep_was_replaced_before_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An earlier cell wrapped time.sleep (to log each sleep, say): the real one is
    still what sleeps."""
    real = time.sleep

    def logged_sleep(seconds: float) -> None:
        real(seconds)

    monkeypatch.setattr(time, "sleep", logged_sleep)
    told = failure(run_checks(retry_at_checks(sleeps_its_backoff), limit=ANSWER_LIMIT), "first")
    assert "called time.sleep" in told, told


def replaces_the_checkers_expectation(
    slot: float, period: float, finished: float, policy: str
) -> float:
    import exercises.schedule_checks

    exercises.schedule_checks.reference_next_slot = lambda *args: 0.0
    return 0.0


def replaces_the_librarys_rule(slot: float, period: float, finished: float, policy: str) -> float:
    from lldsched import FixedRate

    FixedRate.next_run = lambda self, record, now: 0.0  # type: ignore[method-assign]
    return 0.0


def shadows_abs_in_the_checker(slot: float, period: float, finished: float, policy: str) -> float:
    import exercises.schedule_checks

    exercises.schedule_checks.abs = lambda number: 0  # type: ignore[attr-defined]
    return 0.0


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (replaces_the_checkers_expectation, "exercises.schedule_checks.reference_next_slot"),
        (replaces_the_librarys_rule, "lldsched.schedules.simple.FixedRate.next_run"),
        (shadows_abs_in_the_checker, "exercises.schedule_checks.abs"),
    ],
    ids=["reference", "library", "builtin"],
)
def test_an_answer_that_replaces_what_the_checker_relies_on_fails_and_it_is_put_back(
    answer: Callable[..., float], named: str
) -> None:
    import exercises.schedule_checks

    from lldsched import FixedRate

    before = dict(vars(exercises.schedule_checks)), dict(vars(FixedRate))
    results = run_checks(next_slot_checks(answer), limit=ANSWER_LIMIT)
    assert refused(results) == results
    assert named in results[0].message and "put back" in results[0].message, results[0]
    assert (dict(vars(exercises.schedule_checks)), dict(vars(FixedRate))) == before


class NotifiesInCamelCase(TaskQueue):
    """Right, and it wakes every waiter on every push (allowed) in the older spelling
    (deprecated, and still a Condition's method)."""

    def push(self, task: str, due: float) -> None:
        with self._cond:
            super().push(task, due)
            self._cond.notifyAll()


@pytest.mark.parametrize("answer", [NotifiesInCamelCase])
def test_a_right_queue_that_calls_notify_all_in_its_old_spelling_passes(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    with warnings.catch_warnings():  # where the run is made here (no other test asked)
        warnings.simplefilter("ignore", DeprecationWarning)
        assert refused(timer_results(answer)) == []


# -- the timer queue: a heap written by hand, and the deadlocks of two locks ---------------------


class HeapByHand(TaskQueue):
    """Right, with the heap's sift-up and sift-down written out instead of heapq's."""

    def parent(self, index: int) -> int:
        return (index - 1) // 2

    def children_below(self, size: int) -> int:
        return size

    def sift_up(self, index: int) -> None:
        heap = self._heap
        while index > 0 and heap[index] < heap[self.parent(index)]:
            parent = self.parent(index)
            heap[index], heap[parent] = heap[parent], heap[index]
            index = parent

    def sift_down(self, index: int) -> None:
        heap, below = self._heap, self.children_below(len(self._heap))
        while True:
            least = index
            for child in (2 * index + 1, 2 * index + 2):
                if child < below and heap[child] < heap[least]:
                    least = child
            if least == index:
                return
            heap[index], heap[least] = heap[least], heap[index]
            index = least

    def take_head(self) -> tuple[float, int, str]:
        last = self._heap.pop()
        if not self._heap:
            return last
        head, self._heap[0] = self._heap[0], last
        self.sift_down(0)
        return head

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            entry = (due, sequence, task)
            self._heap.append(entry)
            self.sift_up(len(self._heap) - 1)
            if self._heap[0] is entry:
                self._cond.notify_all()

    def pop_due(self) -> str:
        with self._cond:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    self.take_head()
                if not self._heap:
                    self._cond.wait()
                    continue
                due, _, task = self._heap[0]
                delay = due - self._clock()
                if delay <= 0:
                    self.take_head()
                    del self._live[task]
                    return task
                self._cond.wait(delay)


class ParentAtHalf(HeapByHand):
    """The parent of i taken as i // 2 (a 1-based heap's rule, in a 0-based list)."""

    def parent(self, index: int) -> int:
        return index // 2


class LastChildLeftOut(HeapByHand):
    """A sift-down that never compares the list's last entry with its parent."""

    def children_below(self, size: int) -> int:
        return size - 1


@pytest.mark.parametrize("answer", [HeapByHand])
def test_the_timer_checker_passes_a_right_heap_written_by_hand(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    assert refused(timer_results(answer)) == []


@pytest.mark.parametrize("answer", [ParentAtHalf, LastChildLeftOut])
def test_a_heap_by_hand_that_loses_the_order_fails_naming_the_pop_and_the_index_rule(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """ParentAtHalf passed all 18 checks: three or five tasks come out in order, and the
    1,000 the cost check takes were counted, not read in order."""
    message = failure(timer_results(answer), "earliest first")
    assert re.search(r"pop \d+ returned 'job-\d+' \(due \d+ s ago\) while 'job-\d+'", message)
    assert "the parent of i is (i - 1) // 2" in message


@pytest.mark.parametrize("answer", [LastChildLeftOut])
def test_a_heap_out_of_order_with_no_cancel_is_not_told_its_cancel_broke_it(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """Its cancel leaves a tombstone: the cancel check was told "the cancel broke the
    heap's order; a list with an entry taken out (list.remove ...)"."""
    message = failure(timer_results(answer), "cancelling the head keeps the others in order")
    assert "with no cancel, the same five came out as" in message
    assert "list.remove" not in message


class BuiltUnderItsOwnLock(TaskQueue):
    """A constructor that takes its Lock twice: a `with` on the Condition built on it,
    inside a `with` on the lock.  It never returns."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        with self._lock, self._cond:
            self._heap = []


@pytest.mark.parametrize("answer", [BuiltUnderItsOwnLock])
def test_a_constructor_that_deadlocks_fails_every_check_the_same_way_without_hanging(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """The checker built the queue unbounded: the learner's cell hung for ever."""
    results = timer_results(answer)
    assert {r.passed for r in results} == {False}
    assert {r.message for r in results} == {
        f"BuiltUnderItsOwnLock(clock) did not return: {BUILD_STUCK}"
    }


class HoldsItsLockWhileWaiting(TaskQueue):
    """A Lock of its own for the heap, held while pop_due waits on the Condition (a
    separate one): a push, which takes that Lock first, waits for ever."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._lock = threading.Lock()

    def push(self, task: str, due: float) -> None:
        with self._lock:
            sequence = next(self._sequence)
            self._live[task] = sequence
            entry = (due, sequence, task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                with self._cond:
                    self._cond.notify_all()

    def cancel(self, task: str) -> None:
        with self._lock:
            self._live.pop(task, None)

    def pop_due(self) -> str:
        with self._lock:
            while True:
                while self._heap and self._live.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)
                with self._cond:
                    delay = self._heap[0][0] - self._clock() if self._heap else None
                    if delay is not None and delay <= 0:
                        task = heapq.heappop(self._heap)[2]
                        del self._live[task]
                        return task
                    self._cond.wait(delay)  # the mistake under test: self._lock stays held


class HoldsItsLockWhileWaitingAndLetsACancelIn(HoldsItsLockWhileWaiting):
    """The same mistake, with the lock handed to a cancel that waits for it as pop_due
    returns a task (as the operating system may hand it, and did under load: a lock is
    not fair, but need not favour the thread that let it go either).  The checker's
    cancel of a head due within its bound then returned as the head was due, in every
    try: "too slow to tell", not the mistake."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._cancels_waiting = 0
        self._cancelled = threading.Condition(threading.Lock())

    def cancel(self, task: str) -> None:
        with self._cancelled:
            self._cancels_waiting += 1
        try:
            super().cancel(task)
        finally:
            with self._cancelled:
                self._cancels_waiting -= 1
                self._cancelled.notify_all()

    def pop_due(self) -> str:
        with self._cancelled:  # a cancel waiting for the lock takes it first
            self._cancelled.wait_for(lambda: not self._cancels_waiting, timeout=1.0)
        return super().pop_due()


@pytest.mark.parametrize(
    "answer", [HoldsItsLockWhileWaiting, HoldsItsLockWhileWaitingAndLetsACancelIn]
)
def test_a_pop_due_that_holds_another_lock_while_it_waits_is_told_which(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    """It was told "pop_due holds the lock while it waits (a time.sleep or a loop inside
    `with self._cond`)", and, waiting on an empty queue, that the wait lets the lock go."""
    results = timer_results(answer)
    for check in ("parked 12 h", "into an empty queue", "cancelled entry never runs"):
        message = failure(results, check)
        assert "pop_due waits on the condition while it holds self._lock" in message
        assert "nested-monitor deadlock" in message
    assert all("a time.sleep or a loop" not in r.message for r in results)


WAIT = 10.0
"""Seconds a thread of the test below is waited for at most (it takes microseconds)."""


class _OpensTheGate(threading.Condition):
    """The watched Condition's ``changed``: its first ``wait_for`` (the diagnosis waiting
    for a consumer to enter ``wait``) lets the consumer in."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        self.gate.set()
        return super().wait_for(predicate, timeout)


def test_a_consumer_between_two_waits_as_the_call_s_bound_ends_is_still_told_which_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The diagnosis of a push or cancel that did not return is asked as the consumer's
    timed wait ends (a loaded machine: the run on Python 3.12.1 under load): the consumer
    holds the queue's other lock, out of ``wait`` for a moment.  It looks again as the
    consumer next waits, and names the lock.  Before, it said nothing, and the learner was
    given the generic "a time.sleep or a loop inside `with self._cond`"."""
    gate, holding = threading.Event(), threading.Event()
    queue = HoldsItsLockWhileWaiting(time.monotonic)
    watched = checker.WatchedCondition(queue._cond)
    queue._cond = watched  # type: ignore[assignment]
    watched.changed = _OpensTheGate(gate)
    rig = checker.Rig(queue, checker.ExerciseClock(), watched)

    def consumer() -> None:  # between two waits: holding self._lock, not in wait()
        with queue._lock:
            holding.set()
            gate.wait()
            with watched:
                watched.wait()  # until the end of the test

    thread = threading.Thread(target=consumer, daemon=True)
    thread.start()
    assert holding.wait(WAIT)
    monkeypatch.setattr(checker, "HELD_AGAIN", WAIT)  # the look again: ended by the wait
    said = checker._held_while_waiting(rig)
    with watched:
        watched.notify_all()
    thread.join(WAIT)
    assert said is not None
    assert "pop_due waits on the condition while it holds self._lock" in said


class NotifiesUnderItsLockAgain(TaskQueue):
    """A Condition on a plain Lock, and a push that calls a helper taking it again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._cond = threading.Condition(threading.Lock())

    def wake(self) -> None:
        with self._cond:  # the mistake under test: push holds it already
            self._cond.notify_all()

    def push(self, task: str, due: float) -> None:
        with self._cond:
            sequence = next(self._sequence)
            self._live[task] = sequence
            entry = (due, sequence, task)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self.wake()


@pytest.mark.parametrize("answer", [NotifiesUnderItsLockAgain])
def test_a_push_that_takes_its_plain_lock_twice_is_told_a_lock_is_not_taken_twice(
    answer: type[TaskQueue], timer_results: TimerResults
) -> None:
    results = timer_results(answer)
    assert {r.passed for r in results} == {False}
    for result in results:
        assert result.message.endswith(TAKEN_TWICE), result
    assert "the only consumer was waiting" in failure(results, "into an empty queue")
