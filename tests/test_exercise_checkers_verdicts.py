"""The exercise checkers of notebook 07 give honest verdicts whatever a learner's notebook
did before, and whatever type a right answer's number has: a ``time.monotonic`` an earlier
cell froze stops neither the limit of a call nor the timer checks' clock; the numbers a
learner reasonably returns (a ``Decimal``, a numpy 0-d array, a generator of the runs)
pass when right, and a value no instant can be (a float32, a datetime, NaN, a generator
where one number is due) fails saying why, as does a ``retry_at`` or ``parse_field`` that
raises or returns None where the other is asked for."""

from __future__ import annotations

import collections
import datetime
import gc
import math
import os
import random
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
from exercises.checks import ANSWER_LIMIT, Check, run_checks, timer_checks
from exercises.pause_checks import runs_after_resume_checks
from exercises.retry_checks import retry_at_checks
from exercises.schedule_checks import next_slot_checks, parse_field_checks
from exercises.solutions import TaskQueue, next_slot, parse_field, retry_at, runs_after_resume

from tests.test_exercise_checkers import first_retry_doubled
from tests.test_exercise_checkers_adversarial import SHORT, failure, refused

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


# -- a time.monotonic a learner's cell replaced -------------------------------------------------


def loops_for_ever(*args: object) -> float:
    while True:
        pass


def frozen() -> float:
    return 0.0


def test_a_frozen_time_monotonic_does_not_keep_a_looping_answer_from_being_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(time, "monotonic", frozen)  # an earlier cell: time.monotonic = ...
    (result,) = run_checks(retry_at_checks(loops_for_ever)[:1], limit=SHORT)
    assert result.message.startswith(
        "retry_at(1, 100, 3, 1, 2, 60) did not return within 0.5 s: a loop that never ends"
    ), result


@pytest.mark.parametrize(
    "check",
    ["waits exactly the delay", "re-arms a timer waiting on a later head", "notify_all"],
)
def test_a_frozen_time_monotonic_does_not_stop_the_timer_checks_clock(
    monkeypatch: pytest.MonkeyPatch, check: str
) -> None:
    monkeypatch.setattr(time, "monotonic", frozen)
    checks = [c for c in timer_checks(TaskQueue) if check in c[0]]
    assert len(checks) == 1
    assert refused(run_checks(checks)) == []


def test_the_checker_never_reads_the_time_monotonic_a_cell_put_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[None] = []

    def counted() -> float:
        reads.append(None)
        return 0.0

    monkeypatch.setattr(time, "monotonic", counted)
    checks: list[Check] = next_slot_checks(next_slot)[:2]
    checks += [c for c in timer_checks(TaskQueue) if "waits exactly the delay" in c[0]]
    assert refused(run_checks(checks[:2], limit=ANSWER_LIMIT) + run_checks(checks[2:])) == []
    assert reads == []


def test_a_time_monotonic_frozen_before_the_checker_is_imported_is_not_its_clock() -> None:
    """The cell that froze the clock ran before the first ``from exercises import ...``."""
    program = (
        "import time\n"
        "time.monotonic = lambda: 0.0\n"
        "from exercises.checks import run_checks\n"
        "from exercises.retry_checks import retry_at_checks\n"
        "def loops(*args):\n"
        "    while True:\n"
        "        pass\n"
        "print(run_checks(retry_at_checks(loops)[:1], limit=0.5)[0].message)\n"
    )
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(NOTEBOOKS), str(NOTEBOOKS.parent), environment.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,  # the bug under test hangs: fail, not wait for pytest's own timeout
    )
    assert done.returncode == 0, done.stderr
    assert "did not return within 0.5 s" in done.stdout, done.stdout


# -- numbers a right answer may return ----------------------------------------------------------


def retry_at_as(convert: Callable[[float], Any]) -> Callable[..., Any]:
    def answer(*args: Any) -> Any:
        due = retry_at(*args)
        return None if due is None else convert(due)

    return answer


def next_slot_as(convert: Callable[[float], Any]) -> Callable[..., Any]:
    return lambda *args: convert(next_slot(*args))


class Seconds(int):
    """An int of a learner's own (an int subclass)."""


def whole_when_whole(due: float) -> Any:
    return Seconds(due) if due == int(due) else due


def as_decimal(due: float) -> Decimal:
    return Decimal(repr(due))


@pytest.mark.parametrize(
    ("checks_of", "answer"),
    [
        (retry_at_checks, retry_at_as(as_decimal)),
        (retry_at_checks, retry_at_as(numpy.asarray)),
        (retry_at_checks, retry_at_as(numpy.float64)),
        (retry_at_checks, retry_at_as(whole_when_whole)),
        (next_slot_checks, next_slot_as(as_decimal)),
        (next_slot_checks, next_slot_as(numpy.asarray)),
        (next_slot_checks, next_slot_as(whole_when_whole)),
        (runs_after_resume_checks, lambda *args: [as_decimal(v) for v in runs_after_resume(*args)]),
    ],
    ids=[
        "retry_at-Decimal",
        "retry_at-numpy-0d-array",
        "retry_at-numpy-float64",
        "retry_at-int-subclass",
        "next_slot-Decimal",
        "next_slot-numpy-0d-array",
        "next_slot-int-subclass",
        "runs_after_resume-Decimals",
    ],
)
def test_a_right_answer_whose_numbers_are_decimals_arrays_or_ints_passes(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any]
) -> None:
    assert refused(run_checks(checks_of(answer), limit=ANSWER_LIMIT)) == []


def runs_one_by_one(*args: Any) -> Iterator[float]:
    yield from runs_after_resume(*args)


@pytest.mark.parametrize(
    ("checks_of", "answer"),
    [
        (runs_after_resume_checks, runs_one_by_one),
        (runs_after_resume_checks, lambda *args: map(float, runs_after_resume(*args))),
        (runs_after_resume_checks, lambda *args: collections.deque(runs_after_resume(*args))),
        (parse_field_checks, lambda *args: (value for value in sorted(parse_field(*args)))),
    ],
    ids=["runs-generator", "runs-map", "runs-deque", "parse_field-generator"],
)
def test_a_right_answer_that_yields_its_values_passes(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any]
) -> None:
    assert refused(run_checks(checks_of(answer), limit=ANSWER_LIMIT)) == []


def nan(*args: object) -> float:
    return math.nan


def gives_up_with_false(*args: Any) -> Any:
    due = retry_at(*args)
    return False if due is None else due


def yields_the_instant(*args: Any) -> Iterator[float | None]:
    yield retry_at(*args)


def test_a_retry_at_that_gives_up_with_false_is_told_a_bool_is_no_instant() -> None:
    results = run_checks(retry_at_checks(gives_up_with_false), limit=ANSWER_LIMIT)
    assert failure(results, "is the last -> None") == (
        "retry_at(3, 100, 3, 1, 2, 60) returned False, a bool, which is no instant; return "
        "the due instant (a number) or None"
    )


def a_microsecond_late(*args: Any) -> float | None:
    due = retry_at(*args)
    return None if due is None else due + 1e-5


def test_a_retry_at_off_by_less_than_the_sixth_digit_is_shown_apart_from_the_expected() -> None:
    results = run_checks(retry_at_checks(a_microsecond_late), limit=ANSWER_LIMIT)
    assert failure(results, "the first retry waits initial").startswith(
        "retry_at(1, 100, 3, 1, 2, 60): expected 101, got 101.00001"
    )


def raises_when_given_up(*args: Any) -> float:
    due = retry_at(*args)
    if due is None:
        raise RuntimeError("no attempt left")
    return due


def test_a_retry_at_that_raises_when_no_attempt_is_left_is_told_to_return_none() -> None:
    results = run_checks(retry_at_checks(raises_when_given_up), limit=ANSWER_LIMIT)
    message = failure(results, "max_attempts=1 never retries")
    assert message.startswith(
        "retry_at(1, 100, 1, 1, 2, 60) raised RuntimeError: no attempt left: no attempt is "
        "left here, and giving up is an answer, None, not an error"
    ), message
    assert [r.description for r in refused(results)] == [
        "attempt 3 of max_attempts=3 is the last -> None",
        "max_attempts=1 never retries -> None",
        "agrees with RetryPolicy on 300 random cases",
    ]


def test_a_retry_at_that_raises_where_an_attempt_is_left_is_told_only_what_it_raised() -> None:
    def raises(*args: Any) -> float:
        raise RuntimeError("not written")

    results = run_checks(retry_at_checks(raises), limit=ANSWER_LIMIT)
    assert failure(results, "the first retry waits initial") == (
        "retry_at(1, 100, 3, 1, 2, 60) raised RuntimeError: not written"
    )


# -- a value no instant is, or runs of the wrong shape ----------------------------------------


def every_run_after_the_pause(*args: Any) -> Iterator[float]:
    """The runs after the pause, for ever: right, but not the first three asked for."""
    first, period = runs_after_resume(*args)[0], args[1]
    k = 0
    while True:
        yield first + k * period
        k += 1


RETURNED = {
    retry_at_checks: "retry_at(1, 100, 3, 1, 2, 60) returned ",
    next_slot_checks: "next_slot(0, 60, 5, 'skip') returned ",
    runs_after_resume_checks: "runs_after_resume(0, 60, 10, 50, 'run_once') returned ",
}
"""How the first check of each pure exercise names the first call and what it returned."""


def first_return_refused(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any]
) -> str:
    """The message of the first check, which must fail on what the first call returned."""
    results = run_checks(checks_of(answer), limit=ANSWER_LIMIT)
    message = failure(results, results[0].description)
    assert message.startswith(RETURNED[checks_of]), message
    return message


@pytest.mark.parametrize(
    ("checks_of", "answer", "told"),
    [
        (
            retry_at_checks,
            retry_at_as(numpy.float32),
            "a numpy.float32, which keeps about 7 significant digits",
        ),
        (
            retry_at_checks,
            retry_at_as(lambda due: datetime.datetime.fromtimestamp(due, datetime.UTC)),
            "a datetime: the instants here are seconds",
        ),
        (
            retry_at_checks,
            lambda attempt, finished, *rule: datetime.timedelta(seconds=2.0 ** (attempt - 1)),
            "a timedelta, a length of time",
        ),
        (retry_at_checks, retry_at_as(str), "a str: the number's text, not the number"),
        (retry_at_checks, nan, "returned nan, not a number (an inf - inf or a 0 * inf"),
        (
            retry_at_checks,
            retry_at_as(lambda due: Decimal("sNaN")),
            "returned Decimal('sNaN'), not a number",
        ),
        (retry_at_checks, yields_the_instant, "a `yield` makes the function a generator"),
        (
            retry_at_checks,
            retry_at_as(lambda due: (due, due - 100)),
            "a tuple, a collection where one number",
        ),
        (
            next_slot_checks,
            next_slot_as(lambda due: datetime.datetime.fromtimestamp(due, datetime.UTC)),
            "a datetime: the instants here are seconds",
        ),
        (next_slot_checks, nan, "returned nan, not a number"),
        (
            next_slot_checks,
            next_slot_as(lambda due: iter([due])),
            "a list_iterator iterator, not a number: return the next due instant, a number",
        ),
        (
            runs_after_resume_checks,
            every_run_after_the_pause,
            "returned a generator that yields more than 3 instants (the first: [60, 120, 180])",
        ),
        (
            runs_after_resume_checks,
            lambda *args: set(runs_after_resume(*args)),
            "a set, which has no order",
        ),
        (
            runs_after_resume_checks,
            lambda *args: numpy.array(runs_after_resume(*args), dtype=numpy.float32),
            "is a numpy.float32, which keeps about 7 significant digits",
        ),
        (
            runs_after_resume_checks,
            lambda *args: [math.nan] * 3,
            "the instants are numbers, and nan is not a number (an inf - inf",
        ),
    ],
    ids=[
        "retry_at-float32",
        "retry_at-datetime",
        "retry_at-timedelta",
        "retry_at-str",
        "retry_at-nan",
        "retry_at-decimal-nan",
        "retry_at-generator",
        "retry_at-tuple",
        "next_slot-datetime",
        "next_slot-nan",
        "next_slot-iterator",
        "runs-endless-generator",
        "runs-set",
        "runs-float32-array",
        "runs-nan",
    ],
)
def test_an_answer_that_returns_what_no_instant_is_is_told_why(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any], told: str
) -> None:
    message = first_return_refused(checks_of, answer)
    assert told in message, message
    assert "jitter" not in message, message  # nan != nan is no random part


def test_a_resume_generator_that_loops_before_its_second_run_is_named_by_its_call() -> None:
    def loops_after_the_first(*args: Any) -> Iterator[float]:
        yield runs_after_resume(*args)[0]
        while True:
            pass

    results = run_checks(
        runs_after_resume_checks(loops_after_the_first)[:1],  # type: ignore[arg-type]
        limit=SHORT,
    )
    assert results[0].message.startswith(
        "runs_after_resume(0, 60, 10, 50, 'run_once') did not return within 0.5 s"
    ), results[0]


# -- parse_field: what it does with a field cron rejects -----------------------------------------


def none_when_rejected(text: str, low: int, high: int) -> set[int] | None:
    try:
        return parse_field(text, low, high)
    except ValueError:
        return None


def type_error_when_rejected(text: str, low: int, high: int) -> set[int]:
    try:
        return parse_field(text, low, high)
    except ValueError as error:
        raise TypeError(str(error)) from None


def endless_values(text: str, low: int, high: int) -> Iterator[int]:
    while True:
        yield low


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (
            none_when_rejected,
            "parse_field('50-70', 0, 59) returned None, where cron rejects '50-70': raise "
            "ValueError",
        ),
        (
            type_error_when_rejected,
            "parse_field('50-70', 0, 59) raised TypeError: 70 is out of range 0-59: cron "
            "rejects '50-70', and a field cron rejects raises ValueError (not TypeError)",
        ),
    ],
    ids=["none", "type-error"],
)
def test_a_parser_that_refuses_a_field_another_way_than_value_error_is_told_so(
    answer: Callable[[str, int, int], Any], told: str
) -> None:
    results = run_checks(parse_field_checks(answer), limit=ANSWER_LIMIT)
    assert failure(results, "range ends").startswith(told)
    assert [r.description for r in refused(results)] == [
        "range ends are bounds-checked: 50-70, 0-99/50",
        "rejects what cron rejects: +5, 1_0, 5-1, 1-5-7, */0, 1,,2",
        "agrees with lldsched on 300 random fields, edges included",
    ]


def test_a_parser_that_yields_for_ever_is_named_by_its_call() -> None:
    results = run_checks(
        parse_field_checks(endless_values)[:1],  # type: ignore[arg-type]
        limit=ANSWER_LIMIT,
    )
    assert results[0].message == (
        "parse_field('*', 0, 59) returned a generator that yields more than 10,000 values: "
        "return the set of values the field allows"
    )


# -- the timer: what pop_due hands back ---------------------------------------------------------


class PopYields(TaskQueue):
    """``yield`` where ``return`` belongs: pop_due is a generator, which does nothing."""

    def pop_due(self) -> Any:
        yield super().pop_due()


class PopReturnsTheDue(TaskQueue):
    """Hands back the due instant of the head, not the task."""

    def pop_due(self) -> Any:
        task = super().pop_due()
        return self._clock() if task else task


@pytest.mark.parametrize(
    ("answer", "told", "not_told"),
    [
        (PopYields, "a `yield` makes pop_due a generator", "heap entry"),
        (PopReturnsTheDue, "return the task as it was pushed", "heap entry"),
    ],
    ids=["generator", "a-number"],
)
def test_a_pop_due_that_hands_back_no_task_is_told_what_it_returned_not_of_an_entry(
    answer: type[TaskQueue], told: str, not_told: str
) -> None:
    checks = [c for c in timer_checks(answer) if "due first, then arrival" in c[0]]
    (result,) = run_checks(checks)
    assert not result.passed and result.message.startswith("pop_due returned "), result
    assert told in result.message and not_told not in result.message, result


# -- an answer that answers the same call two ways ----------------------------------------------


def jittered_next_slot(slot: float, period: float, finished: float, policy: str) -> float:
    return next_slot(slot, period, finished, policy) + random.random()


def jittered_runs(*args: Any) -> list[float]:
    return [run + random.random() for run in runs_after_resume(*args)]


@pytest.mark.parametrize(
    ("checks_of", "answer", "not_told"),
    [
        (next_slot_checks, jittered_next_slot, "not on the grid"),
        (runs_after_resume_checks, jittered_runs, "changes with the policy"),
    ],
    ids=["next_slot", "runs_after_resume"],
)
def test_an_answer_with_a_random_part_is_told_so_not_of_a_mistake_in_the_rule(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any], not_told: str
) -> None:
    message = first_return_refused(checks_of, answer)
    assert ", then " in message and message.endswith(
        ": the same call has one answer; leave out any random part (jitter) and keep nothing "
        "from one call to the next"
    ), message
    assert not_told not in message, message


def half_written_retry_at(attempt: int, finished: float, max_attempts: int, *rule: float) -> Any:
    """The wait is written, the giving up not yet."""
    if attempt >= max_attempts:
        raise NotImplementedError("your turn")
    return retry_at(attempt, finished, max_attempts, *rule)


def half_written_parse_field(text: str, low: int, high: int) -> Any:
    """The fields cron takes are written, the refusals not yet."""
    try:
        return parse_field(text, low, high)
    except ValueError:
        raise NotImplementedError("your turn") from None


@pytest.mark.parametrize(
    ("checks_of", "answer", "check", "told"),
    [
        (
            retry_at_checks,
            half_written_retry_at,
            "max_attempts=1 never retries",
            "retry_at(1, 100, 1, 1, 2, 60) raised NotImplementedError: your turn",
        ),
        (
            parse_field_checks,
            half_written_parse_field,
            "range ends",
            "parse_field('50-70', 0, 59) raised NotImplementedError: your turn",
        ),
    ],
    ids=["retry_at", "parse_field"],
)
def test_a_branch_not_written_yet_is_told_only_that(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any], check: str, told: str
) -> None:
    assert failure(run_checks(checks_of(answer), limit=ANSWER_LIMIT), check) == told


# -- an answer that recurses without end --------------------------------------------------------


def recurses_for_ever(slot: float, period: float, finished: float, policy: str) -> float:
    return recurses_for_ever(slot, period, finished, policy)


def test_an_answer_that_recurses_without_end_is_told_so_not_that_it_turned_the_watch_off() -> None:
    # CPython drops a profile function that raises, and the watch raises RecursionError
    # too at the depth limit: that is the learner's recursion, not a call to setprofile.
    told = failure(run_checks(next_slot_checks(recurses_for_ever), limit=ANSWER_LIMIT), "short")
    assert told.startswith("next_slot(0, 60, 5, 'skip') raised RecursionError"), told
    assert "setprofile" not in told
    assert "calls itself" in told


def test_a_parser_that_returns_the_sets_text_is_told_so_not_shown_its_characters() -> None:
    def prints_the_set(text: str, low: int, high: int) -> str:
        return str(parse_field(text, low, high))

    checks = parse_field_checks(prints_the_set)  # type: ignore[arg-type]
    told = failure(run_checks(checks, limit=ANSWER_LIMIT), "hour")
    assert told.startswith("parse_field('*', 0, 23) returned '{0, 1, 2, "), told
    assert "a str: the set's text, not the set" in told
    assert "' '" not in told  # no set of its characters


# -- an answer written `async def` --------------------------------------------------------------


async def next_slot_async(slot: float, period: float, finished: float, policy: str) -> float:
    return next_slot(slot, period, finished, policy)


async def retry_at_async(*args: Any) -> float | None:
    return retry_at(*args)


async def runs_after_resume_async(*args: Any) -> list[float]:
    return runs_after_resume(*args)


async def parse_field_async(text: str, low: int, high: int) -> set[int]:
    return parse_field(text, low, high)


class PopDueAsync(TaskQueue):
    """pop_due written ``async def`` (and the rest as given): the coroutine it returns
    takes nothing until an event loop awaits it."""

    async def pop_due(self) -> str:  # type: ignore[override]
        return super().pop_due()


ASYNC_ANSWERS = [
    (next_slot_checks, next_slot_async),
    (retry_at_checks, retry_at_async),
    (runs_after_resume_checks, runs_after_resume_async),
    (parse_field_checks, parse_field_async),
]


@pytest.mark.parametrize(
    ("checks_of", "answer"), ASYNC_ANSWERS, ids=[a.__name__ for _, a in ASYNC_ANSWERS]
)
def test_an_async_def_answer_is_told_to_be_a_plain_def_and_leaves_no_coroutine_unawaited(
    checks_of: Callable[[Any], list[Check]], answer: Callable[..., Any]
) -> None:
    """It read "returned <coroutine object ... at 0x...>, a coroutine, not a number", one
    address a line, and the notebook showed a RuntimeWarning ("coroutine ... was never
    awaited") on stderr for each call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = run_checks(checks_of(answer), limit=ANSWER_LIMIT)
        gc.collect()  # an unawaited coroutine warns when it is collected
    assert all(not r.passed and "is `async def`" in r.message for r in results), results
    assert all("returned a coroutine" in r.message for r in results), results
    assert all("0x" not in r.message for r in results), results
    assert [w for w in caught if "never awaited" in str(w.message)] == []


def test_an_async_pop_due_is_told_the_consumers_are_threads_and_leaves_no_coroutine() -> None:
    checks = [c for c in timer_checks(PopDueAsync) if "then arrival" in c[0]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (result,) = run_checks(checks)
        gc.collect()
    assert result.message.startswith("pop_due returned a coroutine: pop_due is `async def`")
    assert "consumers are threads" in result.message
    assert [w for w in caught if "never awaited" in str(w.message)] == []


@pytest.mark.parametrize(
    ("checker", "answer", "named"),
    [
        ("check_next_slot", next_slot_async, "next_slot_async"),
        ("check_task_queue", PopDueAsync, "PopDueAsync.pop_due"),
    ],
)
def test_a_checker_given_an_async_def_answer_says_so_in_one_line(
    checker: str, answer: Any, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import exercises

    getattr(exercises, checker)(answer)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"✗ {named} is `async def`: "), lines


def _retry_with_the_defaults_written_in(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """The rule, with the defaults' numbers where the parameters belong."""
    if attempt >= max_attempts:
        return None
    return finished + min(2.0 ** min(attempt - 1, 64), 60.0)


def test_a_retry_at_that_writes_in_the_defaults_is_told_to_use_the_parameters() -> None:
    results = run_checks(retry_at_checks(_retry_with_the_defaults_written_in))
    grown = next(r for r in results if r.description.startswith("the wait grows until the cap"))
    assert not grown.passed
    assert "got 160: that is the instant under the defaults" in grown.message, grown.message
    assert "cap=3600" in grown.message


def _fields_by_a_regex(text: str, low: int, high: int) -> set[int]:
    """A right parser but for its regex's ``\\d``, which takes a fullwidth five."""
    import re

    values: set[int] = set()
    for item in text.split(","):
        found = re.fullmatch(r"(\*|(\d+)(?:-(\d+))?)(?:/(\d+))?", item)
        if found is None:
            raise ValueError(item)
        star, first, last, step_text = found.group(1) == "*", *found.group(2, 3, 4)
        step = int(step_text) if step_text else 1
        if step == 0:
            raise ValueError(item)
        start = low if star else int(first)
        stop = high if star else int(last) if last else high if step_text else start
        if not low <= start <= stop <= high:
            raise ValueError(item)
        values.update(range(start, stop + 1, step))
    return values


def test_a_parser_by_regex_that_takes_other_digits_is_told_about_backslash_d() -> None:
    results = run_checks(parse_field_checks(_fields_by_a_regex))
    rejects = next(r for r in results if r.description.startswith("rejects what cron"))
    assert not rejects.passed
    assert "\\d matches other scripts' digits too: write [0-9]" in rejects.message, rejects.message
    assert [r.description for r in results if not r.passed] == [rejects.description]


def retries_by_recursion(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """A right rule written as a recursion one call deep per attempt: it ends, but attempt
    5,000 is deeper than Python's recursion limit."""
    if attempt >= max_attempts:
        return None

    def wait(n: int) -> float:
        return min(cap, initial) if n == 1 else min(cap, wait(n - 1) * multiplier)

    return finished + wait(attempt)


def test_a_right_recursion_too_deep_for_python_is_not_told_it_never_ends() -> None:
    results = run_checks(retry_at_checks(retries_by_recursion), limit=ANSWER_LIMIT)
    told = failure(results, "attempt 5,000")
    assert told.startswith("retry_at(5000, 100, 1000000, 1, 2, 60) raised RecursionError"), told
    # It was told "a function that calls itself and never reaches a case that returns",
    # which it does: both readings are said, and what to write instead.
    assert "sys.getrecursionlimit()" in told and "a count in the thousands" in told, told
    assert "write those steps as a loop" in told
    assert [r.description for r in results if not r.passed] == [
        "attempt 5,000 of 1,000,000 waits the cap, no overflow"
    ]


def grows_by_a_step(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """A wait that grows by initial * multiplier each attempt, not by a factor: after
    attempt 1 it is initial * multiplier, as an exponent one too high makes it."""
    if attempt >= max_attempts:
        return None
    return finished + min(cap, initial * multiplier * attempt)


def test_a_wait_that_grows_by_a_step_is_not_told_its_exponent_is_one_too_high() -> None:
    results = run_checks(retry_at_checks(grows_by_a_step), limit=ANSWER_LIMIT)
    told = failure(results, "the first retry waits initial")
    assert told.startswith(
        "retry_at(1, 100, 3, 1, 2, 60): expected 101, got 102: the wait grows by a step, "
        "initial * multiplier * n (6 s after attempt 3), not by a factor"
    ), told
    assert "exponent is one too high" not in told
    told = failure(results, "the wait is capped")  # no longer a bare "expected 160, got 120"
    assert told.startswith(
        "retry_at(10, 100, 20, 1, 2, 60): expected 160, got 120: the wait grows by a step"
    ), told
    # An exponent one too high, asked about attempt 3 too, keeps its own message.
    results = run_checks(retry_at_checks(first_retry_doubled), limit=ANSWER_LIMIT)
    told = failure(results, "the first retry waits initial")
    assert told.endswith(
        "expected 101, got 102: the exponent is one too high; the first retry waits initial, "
        "and the wait after attempt n is initial * multiplier ** (n - 1)"
    ), told
