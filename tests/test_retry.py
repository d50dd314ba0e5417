"""RetryPolicy: validated at construction; backoff doubles, is capped, and jitter only shortens;
the jitter a runtime draws depends on its seed, the task, the slot and the attempt alone."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    OneTime,
    RetryPolicy,
    ScheduledTask,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from tests import jobs
from tests.conftest import T0, SchedulerFactory, settle


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


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (lambda policy: policy.backoff(0), "attempt must be an int >= 1, got 0"),
        (lambda policy: policy.backoff(-3), "attempt must be an int >= 1, got -3"),
        (lambda policy: policy.backoff(1.5), "attempt must be an int >= 1, got 1.5"),
        (lambda policy: policy.backoff(True), "attempt must be an int >= 1, got True"),
        (lambda policy: policy.allows_retry(0), "attempt must be an int >= 1, got 0"),
        (lambda policy: policy.fails_after(-1), "given_up must be an int >= 0, got -1"),
        (lambda policy: policy.fails_after("2"), "given_up must be an int >= 0, got '2'"),
    ],
)
def test_an_attempt_the_policy_cannot_have_made_is_refused_naming_it(
    ask: Callable[[RetryPolicy], object], message: str
) -> None:
    # Attempts count from 1 (the first attempt of a slot).  backoff(0) answered half the
    # initial backoff and backoff(-3) an eighth, below what the policy ever waits: a
    # preview written range(5) read a wait that never happens.
    with pytest.raises(ValidationError, match=re.escape(message)):
        ask(RetryPolicy(fail_after_given_up=2))


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


# -- the jitter a runtime draws: a pure function of the seed, the task, its slot, the attempt

JITTERED = RetryPolicy(max_attempts=3, initial_backoff=10, max_backoff=10, jitter=0.9)


def retry_waits(task: ScheduledTask) -> list[float]:
    """The waits between a task's attempts (each due instant after the finish before it)."""
    return [later.due - earlier.finished for earlier, later in itertools.pairwise(task.history)]


def simulated_waits(*others: str) -> list[float]:
    """The retry waits of task ``sync`` (due at T0 + 5, every attempt failing), in a
    simulation of seed 7 where the tasks ``others`` fail too, earlier."""
    sim = Simulation(start=T0, seed=7)
    task = sim.schedule("sync", OneTime(at=T0 + 5), id="sync", fails=1.0, retry=JITTERED)
    for n, other in enumerate(others):
        sim.schedule(other, OneTime(at=T0 + n), id=other, fails=1.0, retry=JITTERED)
    sim.run(until=T0 + 100)
    return retry_waits(task)


def test_a_retrys_jitter_is_its_own_whatever_else_fails_in_a_simulation() -> None:
    # A what-if that adds failing tasks (ids given, registered last) must not move the
    # retries of the task it studies.  The draws followed one generator for the whole
    # simulation, so two failures before this one's gave it other waits.
    alone = simulated_waits()
    assert len(alone) == 2 and all(1 <= wait <= 10 for wait in alone)
    assert alone[0] != alone[1]  # it does spread
    assert simulated_waits("import", "export") == alone


def test_the_threaded_scheduler_draws_the_jitter_the_simulation_of_its_seed_draws(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(workers=1, clock=clock, seed=7)
    task = scheduler.schedule("sync", jobs.broken, OneTime(at=T0 + 5), id="sync", retry=JITTERED)
    for _ in range(3):  # each due instant in turn: the first slot, then each retry
        clock.set(task.next_run_at or clock.now())
        settle(scheduler)
    assert task.status is TaskStatus.FAILED
    assert retry_waits(task) == simulated_waits()


def test_a_retrys_jitter_does_not_depend_on_which_failure_settled_first(
    make_scheduler: SchedulerFactory,
) -> None:
    # Two tasks fail at one instant on two workers: which settles first is the threads'
    # business, and drew the first number of the shared generator.  Each order is forced
    # here (the second task's action waits for the first's retry to be announced).
    def waits(first: str) -> dict[str, float]:
        log = EventLog()
        scheduler = make_scheduler(workers=2, clock=FakeClock(T0), seed=7, listeners=[log])

        def fail(name: str) -> None:
            if name != first:
                assert log.wait_for(
                    lambda event: event.task_id == first and event.status is TaskStatus.RETRYING,
                    timeout=5,
                )
            raise RuntimeError(name)

        for name in ("a", "b"):
            scheduler.schedule(name, fail, OneTime(at=T0), id=name, args=(name,), retry=JITTERED)
        settle(scheduler)
        return {
            task.id: (task.next_run_at or 0) - task.history[0].finished
            for task in scheduler.tasks()
        }

    assert waits("a") == waits("b")


def test_a_retry_after_a_restart_waits_what_it_would_have_waited_without_one(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    # The generator began again at its seed in the restarted process, so the wait after
    # the second attempt was the first's: a restart changed when the task ran.
    def run(restart: bool) -> list[float]:
        clock = FakeClock(T0)
        with SqliteTaskStore(tmp_path / f"{restart}.db") as store:
            scheduler = make_scheduler(workers=1, clock=clock, seed=7, store=store)
            task = scheduler.schedule(
                "sync", jobs.broken, OneTime(at=T0 + 5), id="sync", retry=JITTERED
            )
            for attempt in range(3):
                if restart and attempt == 1:  # the first retry is due in a new process
                    assert scheduler.shutdown(timeout=5)
                    scheduler = make_scheduler(workers=1, clock=clock, seed=7, store=store)
                    task = scheduler.task("sync")
                clock.set(task.next_run_at or clock.now())
                settle(scheduler)
            assert scheduler.shutdown(timeout=5)
            return retry_waits(task)

    assert run(restart=True) == run(restart=False) == simulated_waits()
