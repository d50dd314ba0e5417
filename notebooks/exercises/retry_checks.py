"""The checks of the retry exercise (notebook 07, minutes 24-34): when is a failed task
tried again, and when is it given up?

``retry_at(attempt, finished, max_attempts, initial, multiplier, cap)`` is compared with
lldsched's own :class:`~lldsched.RetryPolicy` (``allows_retry`` and ``backoff``), on
named cases that each pin one mistake and on random ones: the last attempt allowed,
the first retry's wait, the cap, a wait still growing at attempt 80 (multiplier 1.1: an
exponent bounded by a fixed number, 30 or 63, stops it short), and an attempt so late
that an uncapped power of the multiplier overflows a float.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

from exercises.checks import (
    Check,
    Raised,
    as_number,
    call_answer,
    check_answer,
    shown_apart,
    unlike_a_number,
)
from lldsched import RetryPolicy

__all__ = ["check_retry_at", "reference_retry_at", "retry_at_checks"]

RetryAt = Callable[..., float | None]


def reference_retry_at(
    attempt: int,
    finished: float,
    max_attempts: int = 3,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> float | None:
    """What lldsched does after the ``attempt``-th attempt failed at ``finished``."""
    policy = RetryPolicy(
        max_attempts=max_attempts, initial_backoff=initial, multiplier=multiplier, max_backoff=cap
    )
    if not policy.allows_retry(attempt):
        return None
    return finished + policy.backoff(attempt)


def _mistake(
    attempt: int,
    finished: float,
    max_attempts: int,
    initial: float,
    multiplier: float,
    cap: float,
    got: float | None,
    expected: float | None,
) -> str:
    """What a wrong ``got`` most likely says about the answer (": ..."), or nothing."""
    policy = (initial, multiplier, cap)
    if expected is None:
        if attempt == max_attempts:
            return (
                f": attempt {attempt} of max_attempts={max_attempts} was the last one allowed "
                "(max_attempts counts every attempt, the first included), so return None: "
                "without that cap a broken task is retried for ever"
            )
        return ": no attempt is left; a retry with no cap tries a broken task for ever"
    if got is None:
        return (
            f": attempt {attempt} of {max_attempts} failed, so {max_attempts - attempt} "
            "more may run; max_attempts counts every attempt, the first included"
        )
    wait = expected - finished
    if _counted_from_now(got, finished, expected):
        return (
            ": counted from the time now (time.time()); the wait counts from `finished`, "
            "the instant the attempt failed"
        )
    uncapped = _grown(initial, multiplier, attempt - 1)
    instant_capped = finished + uncapped > cap and abs(got - cap) < 1e-9
    if abs(got - wait) < 1e-9 and finished:
        if instant_capped:
            return (
                ": that is the wait, or the instant capped, min(finished + wait, cap); "
                "return the instant, finished + min(cap, wait)"
            )
        return ": that is the wait; return the instant, finished + wait"
    if instant_capped:
        return (
            f": the instant was capped, min(finished + wait, cap) = {cap:g}; the cap is on "
            "the wait: return finished + min(cap, wait)"
        )
    if 1 < attempt <= MOST_SUMMED and abs(got - (finished + _summed(attempt, *policy))) < 1e-6:
        return (
            ": that adds up every wait since the first failure; each wait counts from the "
            f"finish of the attempt that just failed, so after attempt {attempt} it is "
            "finished + one wait, initial * multiplier ** (n - 1), capped"
        )
    if uncapped > cap and got - finished > cap:
        if abs(got - (finished + _grown(min(cap, initial), multiplier, attempt - 1))) < 1e-6:
            return (
                f": the wait is capped at {cap:g} s once it has grown, min(cap, initial * "
                "multiplier ** (n - 1)); min(cap, initial) * multiplier ** (n - 1) caps the "
                "first wait only"
            )
        return f": the wait is capped at {cap:g} s (min(cap, ...))"
    if multiplier != 1 and initial:
        for exponent, which in [(attempt, "high"), (attempt - 2, "low")]:
            if abs(got - (finished + min(cap, _grown(initial, multiplier, exponent)))) < 1e-9:
                return (
                    f": the exponent is one too {which}; the first retry waits initial, and "
                    "the wait after attempt n is initial * multiplier ** (n - 1)"
                )
    if abs(got - (finished + min(cap, initial * attempt))) < 1e-9 and multiplier != 1:
        return ": the wait grows by a factor (exponential backoff), not by a step"
    if uncapped < cap and abs(got - (finished + cap)) < 1e-9:
        return (
            f": that waits the cap, {cap:g} s, where initial * multiplier ** (n - 1) is "
            f"{uncapped:g} s; the wait is at most the cap, min(cap, ...), and max(cap, ...) "
            "waits at least the cap"
        )
    if (
        finished < got < expected
        and wait < cap
        and _grown_from(got - finished, initial, multiplier)
    ):
        return (
            f": the wait stopped growing below the cap; it grows with every attempt until "
            f"it reaches cap={cap:g} s, whatever the attempt (stop at the cap, not at a "
            "fixed exponent)"
        )
    if policy != DEFAULTS:
        by_defaults = reference_retry_at(attempt, finished, max_attempts, *DEFAULTS)
        if by_defaults is not None and abs(got - by_defaults) < 1e-9:
            return (
                ": that is the instant under the defaults, initial=1, multiplier=2, cap=60; "
                f"this call's are initial={initial:g}, multiplier={multiplier:g}, cap={cap:g}: "
                "write the rule with the parameters, not with the defaults' numbers"
            )
    return ""


DEFAULTS = (1.0, 2.0, 60.0)
"""The exercise's default ``initial``, ``multiplier`` and ``cap``: an answer that wrote
them in as numbers (``min(2 ** (attempt - 1), 60)``) was shown "expected 2148, got 160"
and nothing more."""


MOST_SUMMED = 1_000
"""The latest attempt whose waits :func:`_summed` adds up (the sum is a guess at a mistake:
it need not reach attempt 5,000)."""


def _summed(attempt: int, initial: float, multiplier: float, cap: float) -> float:
    """Every wait from the first failure to attempt ``attempt``'s, each capped: the due
    instant of an answer that counts from the first failure, less ``finished``."""
    return sum(min(cap, _grown(initial, multiplier, n)) for n in range(attempt))


def _counted_from_now(got: float, finished: float, expected: float) -> bool:
    """Whether ``got`` is the right wait counted from ``time.time()``, not ``finished``."""
    wait = expected - finished
    return abs(got - finished - wait) >= 1 and abs(got - (time.time() + wait)) < 60


def _grown_from(wait: float, initial: float, multiplier: float) -> bool:
    """Whether ``wait`` is ``initial * multiplier ** k`` for some k >= 1: a wait that grew
    and then stopped (at attempt 1 nothing has grown yet)."""
    if initial <= 0 or multiplier <= 1:
        return False
    grown = initial * multiplier
    while grown < wait + 1e-6:
        if abs(grown - wait) < 1e-6:
            return True
        grown *= multiplier
    return False


def _grown(initial: float, multiplier: float, exponent: int) -> float:
    """``initial * multiplier ** exponent``, infinite where a float overflows."""
    try:
        return initial * multiplier**exponent
    except OverflowError:
        return math.inf


def _verdict(
    retry_at: RetryAt,
    attempt: int,
    finished: float,
    max_attempts: int,
    initial: float = 1.0,
    multiplier: float = 2.0,
    cap: float = 60.0,
) -> None:
    policy = f"{max_attempts}, {initial:g}, {multiplier:g}, {cap:g}"
    call = f"retry_at({attempt}, {finished:g}, {policy})"
    args = (attempt, finished, max_attempts, initial, multiplier, cap)
    try:
        got = call_answer(call, retry_at, *args, passes=(OverflowError,))
    except OverflowError as error:
        raise AssertionError(
            f"{call} raised OverflowError ({error}): {multiplier:g} ** {attempt - 1} does not "
            "fit in a float; stop growing the wait once it reaches the cap"
        ) from None
    except Raised as raised:
        # Asked once the answer has returned (raised): no frame of the checker holds it.
        # (A NotImplementedError is an answer not written yet: nothing more to say.)
        if not isinstance(raised.error, NotImplementedError) and reference_retry_at(*args) is None:
            raise AssertionError(
                f"{raised}: no attempt is left here, and giving up is an answer, None, not "
                "an error (the scheduler asks after every failure, and an exception would "
                "be a failure of the scheduler itself)"
            ) from None
        raise
    if got is not None:
        number = as_number(got)  # a plain number, whatever arithmetic the answer's has
        if number is None:
            raise AssertionError(
                f"{call} returned {got!r}, {unlike_a_number(got)}; return the due "
                "instant (a number) or None"
            )
        got = number
    # The expectation exists only once the answer has returned: no frame of the checker
    # holds it for the answer to read.
    expected = reference_retry_at(attempt, finished, max_attempts, initial, multiplier, cap)
    if got is None and expected is None:
        return
    if got is not None and expected is not None and abs(got - expected) < 1e-6:
        return
    if got is None or expected is None or not _counted_from_now(got, finished, expected):
        again = call_answer(call, retry_at, *args)
        number = as_number(again)
        if (again if number is None else number) != got:  # a random part: told so
            shown = _shown(number) if again is None or number is not None else repr(again)
            raise AssertionError(
                f"{call} returned {_shown(got)}, then {shown}: one failure has one retry "
                "instant; leave the jitter out (a random part of the wait: "
                "RetryPolicy(jitter=...) draws it on top of this rule), and keep nothing "
                "from one call to the next"
            )
    why = _mistake(attempt, finished, max_attempts, initial, multiplier, cap, got, expected)
    if expected is not None:  # (a retry where none is left: _mistake says so)
        why = _asked_again(retry_at, args, got) or why
    pair = (
        shown_apart(expected, got)
        if expected is not None and got is not None
        else (_shown(expected), _shown(got))
    )
    raise AssertionError(f"{call}: expected {pair[0]}, got {pair[1]}{why}")


def _asked_again(
    retry_at: RetryAt,
    args: tuple[int, float, int, float, float, float],
    got: float | None,
) -> str:
    """What a wrong ``got`` says about the answer once it is asked about another attempt
    (": ..."), where one instant is the same for two mistakes; or nothing.

    A wait of ``initial`` at attempt 2 or later is a wait that never grows (a fixed retry
    delay) or an exponent one too low (they agree at attempt 2): at the attempt after,
    the first still waits ``initial``.  A wait of the cap where the wait has not grown
    to it is ``max(cap, ...)`` or a fixed attempt past which the wait is the cap ("since
    2 ** 6 = 64 is past 60"): at attempt 1 the first waits the cap, the second
    ``initial``.  The answer's failure at the other attempt says nothing more."""
    attempt, finished, max_attempts, initial, multiplier, cap = args
    stepped = _stepped(retry_at, args, got)
    if stepped:
        return stepped
    if got is None or attempt < 2:
        return ""
    grown = _grown(initial, multiplier, attempt - 1)
    if abs(got - finished - initial) < 1e-9 and grown > initial:
        after = (attempt + 1, finished, max(max_attempts, attempt + 2), initial, multiplier, cap)
        then = _answer(retry_at, after)
        if then is not None and abs(then - finished - initial) < 1e-9:
            return (
                f": every retry waits initial, {initial:g} s: the wait never grows; a backoff "
                "multiplies it by multiplier after each failure, initial * multiplier ** "
                "(n - 1), at most cap, so a struggling dependency gets room"
            )
    if abs(got - finished - cap) < 1e-9 and grown < cap:
        first = (1, finished, max(max_attempts, 2), initial, multiplier, cap)
        then = _answer(retry_at, first)
        if then is not None and abs(then - finished - min(cap, initial)) < 1e-9:
            return (
                f": that waits the cap, {cap:g} s, where the wait has grown to {grown:g} s "
                f"by attempt {attempt}; it reaches the cap by growing, whatever the "
                "multiplier: a fixed attempt or exponent past which the wait is the cap is "
                "right only for the multiplier it was worked out for"
            )
    return ""


def _stepped(
    retry_at: RetryAt, args: tuple[int, float, int, float, float, float], got: float | None
) -> str:
    """What a wait of ``initial * multiplier * n`` after attempt n says, where it is also
    ``initial * multiplier ** n`` (at attempt 1, and 2 when the multiplier is 2): a wait
    that grows by a step was told "the exponent is one too high", an exponent it does not
    have.  Asked about a later attempt, where the two part, the answer says which it is;
    or nothing."""
    attempt, finished, max_attempts, initial, multiplier, cap = args
    if got is None or not initial or multiplier in (0, 1):
        return ""
    if abs(got - finished - min(cap, initial * multiplier * attempt)) >= 1e-9:
        return ""
    later = max(attempt + 1, 3)
    step, factor = initial * multiplier * later, _grown(initial, multiplier, later)
    if min(cap, step) == min(cap, factor):  # capped alike: the later attempt tells nothing
        return ""
    then = _answer(retry_at, (later, finished, max(max_attempts, later + 1), *args[3:]))
    if then is None or abs(then - finished - min(cap, step)) >= 1e-9:
        return ""
    return (
        f": the wait grows by a step, initial * multiplier * n ({min(cap, step):g} s after "
        f"attempt {later}), not by a factor: each wait is multiplier times the one before "
        "(exponential backoff), initial * multiplier ** (n - 1)"
    )


def _answer(retry_at: RetryAt, args: tuple[int, float, int, float, float, float]) -> float | None:
    """The answer's instant for ``args``, or None where it gives none (None, or not a
    number) or raises, loops or sleeps."""
    call = f"retry_at({', '.join(f'{value:g}' for value in args)})"
    try:
        return as_number(call_answer(call, retry_at, *args))
    except AssertionError:
        return None


def _shown(value: float | None) -> str:
    return "None" if value is None else f"{value:g}"


def retry_at_checks(retry_at: RetryAt) -> list[Check]:
    """``retry_at(attempt, finished, max_attempts, initial, multiplier, cap)``: the instant the
    next attempt is due after attempt ``attempt`` (1-based) failed at ``finished``, or None
    when no attempt is left; the wait is ``initial * multiplier ** (attempt - 1)``, at most
    ``cap``."""

    def named(attempt: int, max_attempts: int, **policy: float) -> Callable[[], None]:
        return lambda: _verdict(retry_at, attempt, 100.0, max_attempts, **policy)

    def doubling() -> None:
        for attempt in (1, 2, 3, 4):
            _verdict(retry_at, attempt, 100.0, 5)

    def random_cases() -> None:
        rng = random.Random(5)
        for _ in range(300):
            max_attempts = rng.randint(1, 20)  # past 2 ** 11 s: a long cap is reached late
            attempt = rng.randint(1, max_attempts)
            initial = rng.choice([0.0, 0.5, 1.0, 5.0])
            _verdict(
                retry_at,
                attempt,
                float(rng.randint(0, 10_000)),
                max_attempts,
                initial,
                rng.choice([1.0, 1.5, 2.0, 3.0]),
                initial + rng.choice([0.0, 10.0, 60.0, 3600.0]),
            )

    return [
        ("the first retry waits initial, counted from the finish -> 101", named(1, 3)),
        ("the wait doubles: attempts 1 to 4 of 5 -> +1, +2, +4, +8", doubling),
        ("attempt 3 of max_attempts=3 is the last -> None", named(3, 3)),
        ("max_attempts=1 never retries -> None", named(1, 1)),
        ("the wait is capped: attempt 10 of 20 waits 60 s, not 512", named(10, 20)),
        (
            "the wait grows until the cap: attempt 12 of 20, cap 3600 s, waits 2048 s",
            named(12, 20, cap=3600.0),
        ),
        (
            "a slow wait grows too: multiplier 1.1, attempt 80 of 100, cap 3600 s, waits "
            "1.1 ** 79 = 1862 s",
            named(80, 100, multiplier=1.1, cap=3600.0),
        ),
        ("attempt 5,000 of 1,000,000 waits the cap, no overflow", named(5_000, 1_000_000)),
        ("agrees with RetryPolicy on 300 random cases", random_cases),
    ]


def check_retry_at(retry_at: RetryAt) -> None:
    """Run the retry-rule checks against your ``retry_at``."""
    check_answer(retry_at, retry_at_checks, "check_retry_at(retry_at)")
