"""RetryPolicy: validated at construction; backoff doubles, is capped, and jitter only shortens."""

from __future__ import annotations

import dataclasses
import random

import pytest

from lldsched import RetryPolicy, ValidationError


def test_default_backoff_is_one_two_four_seconds_capped_at_sixty() -> None:
    policy = RetryPolicy()
    assert [policy.backoff(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert policy.backoff(10_000) == 60  # no overflow for absurd attempt numbers


def test_a_backoff_far_along_the_curve_is_the_curve_until_it_meets_the_cap() -> None:
    # Zero seconds stay zero however many attempts: a policy that retries at once
    # does so at its 2,000th attempt too (it waited max_backoff from the 1,012th on).
    at_once = RetryPolicy(max_attempts=5_000, initial_backoff=0, max_backoff=60)
    assert [at_once.backoff(n) for n in (1, 1_011, 1_012, 2_000, 10_000)] == [0, 0, 0, 0, 0]
    # A tiny first wait grown past e**700 may still be under the cap: 1e-305 * 2**1015 s.
    tiny = RetryPolicy(initial_backoff=1e-305, max_backoff=60)
    assert tiny.backoff(1_016) == pytest.approx(3.511119404)
    assert tiny.backoff(1_017) == pytest.approx(7.022238808)
    assert tiny.backoff(1_025) == 60 and tiny.backoff(10**9) == 60


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


def test_the_lowest_values_are_accepted_and_mean_what_they_say() -> None:
    # Zero backoff retries at once; a multiplier of 1 keeps the backoff constant.
    at_once = RetryPolicy(initial_backoff=0, max_backoff=0)
    assert [at_once.backoff(n) for n in (1, 2, 5)] == [0, 0, 0]
    constant = RetryPolicy(initial_backoff=5, multiplier=1, max_backoff=60)
    assert [constant.backoff(n) for n in (1, 2, 5)] == [5, 5, 5]
    single = RetryPolicy(max_attempts=1, fail_after_given_up=1)
    assert not single.allows_retry(1) and single.fails_after(1)


def test_a_policy_is_an_immutable_value_shared_safely_between_tasks() -> None:
    # Set once, validated: an attribute set later would bypass validation and change
    # every task holding the policy.  Equal policies are one key.
    policy = RetryPolicy(max_attempts=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.max_attempts = 0  # type: ignore[misc]
    assert policy.max_attempts == 5
    assert {policy: "a"}[RetryPolicy(max_attempts=5)] == "a"
