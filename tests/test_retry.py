"""RetryPolicy: validated at construction; backoff doubles, is capped, and jitter only shortens."""

from __future__ import annotations

import random

import pytest

from lldsched import RetryPolicy, ValidationError


def test_default_backoff_is_one_two_four_seconds_capped_at_sixty() -> None:
    policy = RetryPolicy()
    assert [policy.backoff(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert policy.backoff(10_000) == 60  # no overflow for absurd attempt numbers


def test_max_attempts_counts_the_first_attempt() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert [policy.allows_retry(n) for n in (1, 2, 3)] == [True, True, False]
    assert not RetryPolicy.never().allows_retry(1)


def test_jitter_draws_within_the_fraction_below_the_capped_backoff() -> None:
    policy = RetryPolicy(initial_backoff=10, max_backoff=10, jitter=0.5)
    rng = random.Random(7)
    draws = [policy.backoff(3, rng) for _ in range(500)]
    assert all(5.0 <= d <= 10.0 for d in draws)
    assert max(draws) - min(draws) > 4.0  # it does spread
    again = random.Random(7)
    assert draws[:20] == [policy.backoff(3, again) for _ in range(20)]  # seeded: reproducible


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be an int >= 1, got 0"),
        ({"max_attempts": 2.5}, "got 2.5"),
        ({"initial_backoff": -1}, "initial_backoff must be finite and >= 0, got -1"),
        ({"multiplier": 0.5}, "multiplier must be finite and >= 1, got 0.5"),
        ({"max_backoff": float("inf")}, "max_backoff must be finite"),
        ({"jitter": 1.5}, "jitter must be a fraction in \\[0, 1\\], got 1.5"),
        ({"initial_backoff": 10, "max_backoff": 5}, "max_backoff \\(5\\) is below initial_backoff"),
    ],
)
def test_bad_policies_are_rejected_with_the_value(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
