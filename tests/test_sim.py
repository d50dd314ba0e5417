"""The simulation, against times computed by hand: overruns, delays, retries, interventions,
priority and lateness under contention, timeouts, determinism and bad input."""

from __future__ import annotations

import inspect
import math
import re
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    ExecutionRecord,
    FixedDelay,
    FixedRate,
    OneTime,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    TaskEvent,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.errors import error_text
from lldsched.sim import Simulation, exponential, fails_on, fixed, lognormal, uniform
from tests.test_sim_interrupt import interrupting_once

T = 1_000_000.0


def starts(sim: Simulation, name: str) -> list[float]:
    return [r.started - T for r in sim.records() if r.name == name and r.outcome.ran]


def dues(sim: Simulation, name: str) -> list[float]:
    return [r.due - T for r in sim.records() if r.name == name and r.outcome.ran]


def test_fixed_rate_skip_after_an_overrun_resumes_on_the_grid() -> None:
    sim = Simulation(workers=1, start=T)
    calls = iter([150.0, 10.0, 10.0])
    sim.schedule("report", FixedRate(60), duration=lambda rng, attempt: next(calls, 10.0))
    sim.run(T + 310)  # runs are recorded when they finish: let the one at 300 finish
    assert starts(sim, "report") == [0, 180, 240, 300]


def test_fixed_rate_catch_up_after_an_overrun_runs_every_missed_slot() -> None:
    sim = Simulation(workers=1, start=T)
    calls = iter([150.0])
    sim.schedule(
        "report", FixedRate(60, OverrunPolicy.CATCH_UP),
        duration=lambda rng, attempt: next(calls, 10.0),
    )  # fmt: skip
    sim.run(T + 310)
    assert dues(sim, "report") == [0, 60, 120, 180, 240, 300]
    assert starts(sim, "report") == [0, 150, 160, 180, 240, 300]


def test_fixed_delay_counts_from_each_finish() -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("poll", FixedDelay(30), duration=fixed(12))
    sim.run(T + 140)
    assert starts(sim, "poll") == [0, 42, 84, 126]


def test_retries_back_off_then_the_task_fails_into_the_dead_letter_and_redrive_works() -> None:
    sim = Simulation(workers=1, start=T)
    task = sim.schedule(
        "import", OneTime(delay=0), duration=fixed(2), fails=1.0,
        retry=RetryPolicy(max_attempts=3, initial_backoff=10, multiplier=3),
    )  # fmt: skip
    sim.run(T + 100)
    assert starts(sim, "import") == [0, 12, 44]  # finish 2 + 10, finish 14 + 30
    assert task.status is TaskStatus.FAILED and sim.dead_letter() == [task.id]
    sim.at(T + 200, lambda: sim.redrive(task.id))
    sim.run(T + 300)
    assert starts(sim, "import")[3:] == [200, 212, 244]


def test_interventions_pause_resume_and_cancel_at_simulated_instants() -> None:
    sim = Simulation(workers=1, start=T)
    tick = sim.schedule("tick", FixedRate(60))
    sim.at(T + 90, lambda: sim.pause(tick.id))
    sim.at(T + 250, lambda: sim.resume(tick.id))
    sim.at(T + 400, lambda: sim.cancel(tick.id))
    sim.run(T + 1000)
    # 0, 60; paused through 120..240; resumed at 250 (runs at once), 310, 370; cancelled.
    assert starts(sim, "tick") == [0, 60, 250, 310, 370]
    assert tick.status is TaskStatus.CANCELLED


def test_an_intervention_at_the_instant_a_task_is_due_acts_before_it_starts() -> None:
    sim = Simulation(workers=1, start=T)
    tick = sim.schedule("tick", FixedRate(60))
    sim.at(T + 60, lambda: sim.pause(tick.id))
    sim.run(T + 100)
    assert starts(sim, "tick") == [0]


def test_priority_decides_who_gets_the_free_worker_under_contention() -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("blocker", OneTime(delay=0), duration=fixed(100))
    for name, priority in [
        ("low", Priority.LOW),
        ("high", Priority.HIGH),
        ("normal", Priority.NORMAL),
    ]:
        sim.schedule(name, OneTime(delay=10), duration=fixed(5), priority=priority)
    sim.run(T + 200)
    assert [(r.name, r.started - T) for r in sim.records()] == [
        ("blocker", 0), ("high", 100), ("normal", 105), ("low", 110),
    ]  # fmt: skip


def test_a_run_due_while_every_worker_is_busy_waits_and_its_wait_is_its_lateness() -> None:
    sim = Simulation(workers=2, start=T)
    sim.schedule("a", OneTime(delay=0), duration=fixed(50))
    sim.schedule("b", OneTime(delay=0), duration=fixed(80))
    late = sim.schedule("late", OneTime(delay=10), duration=fixed(5))
    sim.run(T + 200)
    (record,) = late.history
    assert record.due - T == 10 and record.started - T == 50 and record.lateness == 40
    assert record.worker == 0  # a's worker, free at 50


def test_the_hand_off_queue_is_not_modelled_a_past_due_slot_takes_its_heap_place() -> None:
    sim = Simulation(workers=1, start=T)
    calls = iter([100.0])
    sim.schedule(
        "catch-up", FixedRate(45, OverrunPolicy.CATCH_UP),
        duration=lambda rng, attempt: next(calls, 1.0),
    )  # fmt: skip
    sim.schedule("other", OneTime(delay=60), duration=fixed(1))
    sim.run(T + 120)
    # At 100 the catch-up slot due 45 and "other" due 60 both wait: heap order, due first.
    assert [(r.name, r.due - T, r.started - T) for r in sim.records()][:3] == [
        ("catch-up", 0, 0), ("catch-up", 45, 100), ("other", 60, 101),
    ]  # fmt: skip


def test_a_run_longer_than_its_timeout_is_recorded_timed_out_at_its_finish() -> None:
    sim = Simulation(workers=1, start=T)
    task = sim.schedule(
        "slow", OneTime(delay=0), duration=fixed(90), timeout=60, retry=RetryPolicy.never()
    )
    sim.run(T + 100)
    (record,) = task.history
    assert record.timed_out and record.finished - T == 90 and task.status is TaskStatus.FAILED


def test_a_real_action_runs_and_its_exception_fails_the_run() -> None:
    sim = Simulation(workers=1, start=T)
    seen: list[float] = []

    def action() -> None:
        seen.append(sim.now)
        raise OSError("no route")

    task = sim.schedule("real", FixedRate(60), action=action, retry=RetryPolicy.never())
    sim.run(T + 10)
    assert seen == [T] and task.last_error == "OSError: no route"


def test_failure_models_give_the_error_text_they_return() -> None:
    sim = Simulation(workers=1, start=T)
    task = sim.schedule("flaky", OneTime(delay=0), fails=fails_on(1, error="IOError: disk"))
    sim.run(T + 10)
    assert [(r.attempt, r.error) for r in task.history] == [(1, "IOError: disk"), (2, None)]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (True, "SimulatedFailure: attempt 1"),
        ("OSError: disk full", "OSError: disk full"),
        (OSError("disk full"), "OSError: disk full"),
        (False, None),
        (None, None),
    ],
)
def test_a_failure_model_answers_a_verdict_a_text_or_an_exception(
    answer: bool | str | BaseException | None, error: str | None
) -> None:
    sim = Simulation(workers=1, start=T)
    task = sim.schedule("t", OneTime(delay=0), fails=lambda rng, attempt: answer)
    sim.run(T)
    assert task.history[0].error == error


@pytest.mark.parametrize(
    "answer",
    [0.3, 0, 1, [], ["timeout"], {}, b"OSError", Fraction(1, 2), Decimal("0.05"), 0j],
    ids=repr,
)
def test_a_failure_model_returning_no_verdict_is_an_error_naming_it_and_the_task(
    answer: object,
) -> None:
    """A probability returned where a verdict is meant (``lambda rng, attempt: 0.3``) failed
    every attempt, being truthy; it is refused at its draw, as a bad duration is.  So is
    any answer that is none of a verdict's kinds: only an int or a float was refused, and
    the rest read by their truth (``[]`` or ``Decimal`` succeeded or failed every attempt
    without a word)."""
    sim = Simulation(workers=1, start=T)
    task = sim.schedule(
        "import",
        OneTime(delay=0),
        fails=lambda rng, attempt: answer,  # type: ignore[arg-type,return-value]
        retry=RetryPolicy.never(),
    )
    said = rf"of task 'import' returned {re.escape(repr(answer))}; a failure"
    with pytest.raises(ValidationError, match=said):
        sim.run(T + 10)
    assert task.status is TaskStatus.FAILED and sim.busy == 0


def test_a_failure_model_returning_numpys_bool_is_read_as_a_verdict() -> None:
    sim = Simulation(workers=1, start=T)
    verdicts = iter([numpy.bool_(True), numpy.bool_(False)])  # what `x < p` of numpy gives
    task = sim.schedule("t", OneTime(delay=0), fails=lambda rng, attempt: next(verdicts))  # type: ignore[arg-type,return-value]
    sim.run(T + 10)
    assert [r.error for r in task.history] == ["SimulatedFailure: attempt 1", None]


@pytest.mark.parametrize(
    ("attempts", "error", "message"),
    [
        ((), "x", r"fails_on\(\) needs at least one attempt number"),
        ((0,), "x", "fails_on attempt must be an int >= 1, got 0"),
        ((1, -2), "x", "fails_on attempt must be an int >= 1, got -2"),
        (("1",), "x", "fails_on attempt must be an int >= 1, got '1'"),
        ((1.5,), "x", "fails_on attempt must be an int >= 1, got 1.5"),
        ((True,), "x", "fails_on attempt must be an int >= 1, got True"),
        ((1,), "", "fails_on error must be a non-empty text, got ''"),
        ((1,), 3, "fails_on error must be a non-empty text, got 3"),
    ],
)
def test_fails_on_refuses_attempts_that_never_come_and_an_error_that_is_no_text(
    attempts: tuple[object, ...], error: object, message: str
) -> None:
    """``fails_on(0)`` or ``fails_on("1")`` never failed anything, silently (and the second
    printed as ``fails_on(1)``)."""
    with pytest.raises(ValidationError, match=message):
        fails_on(*attempts, error=error)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        (uniform(60, 600), "uniform(60, 600)"),
        (uniform(1234567, 2e6), "uniform(1234567.0, 2e+06)"),
        (lognormal(median=240, sigma=0.4), "lognormal(median=240, sigma=0.4)"),
        (exponential(mean=0.1234567), "exponential(mean=0.1234567)"),
        (fixed(86400.5), "fixed(86400.5)"),
    ],
    ids=repr,
)
def test_a_models_repr_is_the_model_as_written(model: object, shown: str) -> None:
    """``:g`` kept six significant digits: ``uniform(1234567, 2e6)`` printed as
    ``uniform(1.23457e+06, 2e+06)`` and ``exponential(mean=0.1234567)`` as
    ``exponential(mean=0.123457)``, other models than the scenario's."""
    assert repr(model) == shown
    assert eval(shown, {"uniform": uniform, "lognormal": lognormal, "exponential": exponential,
                        "fixed": fixed}) == model  # fmt: skip


def test_the_same_seed_gives_identical_records_and_another_seed_does_not() -> None:
    def replay(seed: int) -> list[ExecutionRecord]:
        sim = Simulation(workers=2, start=T, seed=seed)
        sim.schedule("a", FixedRate(60), duration=exponential(mean=40), fails=0.2)
        sim.schedule("b", CronSchedule("*/5 * * * *"), duration=uniform(30, 400))
        sim.schedule("c", FixedDelay(90), duration=lognormal(median=30, sigma=1), fails=0.1)
        sim.run_for(6 * 3600)
        return sim.records()

    assert replay(7) == replay(7)
    assert replay(7) != replay(8)


def test_listeners_see_events_in_virtual_time_in_order() -> None:
    log = EventLog()
    sim = Simulation(workers=1, start=T, listeners=[log])
    sim.schedule("tick", FixedRate(60), duration=fixed(5))
    sim.run(T + 60)
    assert [(e.status.value, e.at - T) for e in log.events] == [
        ("scheduled", 0), ("running", 0), ("scheduled", 5), ("running", 60),
    ]  # fmt: skip


def test_step_processes_one_event_at_a_time() -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("tick", FixedRate(60), duration=fixed(5))
    first = sim.step()
    assert first is not None and first.kind == "start" and sim.now == T
    second = sim.step()
    assert second is not None and second.kind == "finish" and second.at == T + 5
    assert second.record is not None and second.record.duration == 5
    assert sim.step() is not None and sim.now == T + 60
    assert Simulation(workers=1, start=T).step() is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"duration": -1}, "duration must be finite and >= 0, got -1"),
        ({"duration": "long"}, "duration must be a number of seconds or a timedelta, got 'long'"),
        ({"fails": 1.5}, "fails must be a probability in \\[0, 1\\] or a function, got 1.5"),
        ({"fails": -0.1}, "got -0.1"),
        (
            {"duration": lambda rng: 5.0},
            "duration model <function .*<lambda> .*> must take \\(rng, attempt\\), as each "
            "draw calls it: too many positional arguments",
        ),
        ({"fails": lambda: True}, "fails model .* must take \\(rng, attempt\\)"),
    ],
)
def test_bad_models_are_rejected_and_nothing_registered_is_lost(
    kwargs: dict[str, object], message: str
) -> None:
    sim = Simulation(workers=1, start=T)
    kept = sim.schedule("kept", FixedRate(60))
    with pytest.raises(ValidationError, match=message):
        sim.schedule("bad", FixedRate(60), **kwargs)  # type: ignore[arg-type]
    assert sim.tasks() == [kept]
    sim.run(T + 60)
    assert len(kept.history) == 2


def test_a_time_before_now_is_refused_with_both_instants_readable() -> None:
    """A learner's ``sim.run(datetime(...))`` an hour back was told ``until=datetime.datetime(
    ..., tzinfo=datetime.timezone.utc) is before now (1767574800.0)``: the simulated
    instant in epoch seconds.  What was given is still quoted as given."""
    sim = Simulation(workers=1, start=datetime(2026, 1, 5, tzinfo=UTC))
    sim.run_for(3600)
    with pytest.raises(ValidationError) as refused:
        sim.run(datetime(2026, 1, 4, 23, tzinfo=UTC))
    assert str(refused.value) == (
        "until=datetime.datetime(2026, 1, 4, 23, 0, tzinfo=datetime.timezone.utc) is before "
        "now (2026-01-05T01:00:00.000+00:00): a simulation runs forward only"
    )
    with pytest.raises(ValidationError) as past:
        sim.at(datetime(2026, 1, 5, tzinfo=UTC).timestamp(), lambda: None)
    assert str(past.value) == (
        "intervention at 1767571200.0 (2026-01-05T00:00:00.000+00:00) is in the past (the "
        "simulation is at 2026-01-05T01:00:00.000+00:00)"
    )


def test_bad_times_are_rejected_and_the_simulation_carries_on() -> None:
    sim = Simulation(workers=1, start=T)
    kept = sim.schedule("kept", FixedRate(60))
    sim.run(T + 100)
    with pytest.raises(ValidationError, match="is before now"):
        sim.run(T + 50)
    with pytest.raises(ValidationError, match="is in the past"):
        sim.at(T + 10, lambda: None)
    with pytest.raises(ValidationError, match="run_for\\(\\) takes seconds >= 0, got -5"):
        sim.run_for(-5)
    with pytest.raises(ValidationError, match="workers must be an int >= 1, got 0"):
        Simulation(workers=0)
    with pytest.raises(ValidationError, match="workers must be an int <= 100000, got 100001"):
        Simulation(workers=100_001)  # each is listed up front: 10**9 ran out of memory
    sim.run(T + 120)
    assert len(kept.history) == 3


@pytest.mark.parametrize("drawn", [-3.0, math.nan, math.inf, 1e308], ids=repr)
def test_a_duration_model_returning_no_duration_is_an_error_naming_the_task(drawn: float) -> None:
    """The message said "durations must be seconds >= 0" for a NaN, an infinity and
    1e308 too, the last of them >= 0: it names what a duration must be now."""
    sim = Simulation(workers=1, start=T)
    sim.schedule("broken", OneTime(delay=0), duration=lambda rng, attempt: drawn)
    said = (
        rf"task 'broken' returned {re.escape(repr(drawn))}; a duration must be finite "
        r"seconds >= 0, at most 315537897600 \(year 1 to 9999\)"
    )
    with pytest.raises(ValidationError, match=said):
        sim.run(T + 10)


@pytest.mark.parametrize(
    "drawn", [numpy.int64(42), numpy.int32(42), numpy.float32(42), Fraction(84, 2)], ids=repr
)
def test_a_duration_of_a_real_number_type_of_its_own_is_read_as_seconds(drawn: object) -> None:
    """A model that picks from observed durations, ``rng.choice(frame["s"].to_numpy())``,
    draws numpy's ``int64``: it was refused as "no duration" mid-run ("returned
    np.int64(42); a duration must be finite seconds >= 0").  A constant is an int or a
    float, as every number of seconds the library takes, refused at once naming it."""
    sim = Simulation(workers=1, start=T)
    task = sim.schedule("drawn", OneTime(delay=0), duration=lambda rng, attempt: drawn)  # type: ignore[arg-type]
    sim.run(T + 60)
    assert [(r.duration, type(r.duration)) for r in task.history] == [(42.0, float)]
    with pytest.raises(ValidationError, match=re.escape(f"got {drawn!r}")):
        sim.schedule("constant", OneTime(delay=0), duration=drawn)  # type: ignore[arg-type]


@pytest.mark.parametrize("drawn", [numpy.int64(-1), numpy.float32("nan"), numpy.bool_(True)])
def test_a_duration_of_a_number_type_of_its_own_out_of_range_is_refused_naming_it(
    drawn: object,
) -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("broken", OneTime(delay=0), duration=lambda rng, attempt: drawn)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=rf"task 'broken' returned {re.escape(repr(drawn))};"):
        sim.run(T + 10)


def test_a_lognormal_draw_past_a_floats_range_is_refused_as_any_draw_naming_the_task() -> None:
    """Before: ``OverflowError: math range error`` out of ``random.lognormvariate``, naming
    neither the model nor the task (``exp`` of a draw past 709)."""
    model = lognormal(median=1, sigma=1e6)  # seed 3: the first draw overflows
    sim = Simulation(workers=1, start=T, seed=3)
    sim.schedule("wide", OneTime(delay=0), id="wide", duration=model)
    said = (
        "duration model lognormal(median=1, sigma=1e+06) of task 'wide' returned inf; a "
        "duration must be finite seconds >= 0"
    )
    with pytest.raises(ValidationError, match=re.escape(said)):
        sim.run(T + 10)


def test_a_model_that_raises_mid_run_fails_that_attempt_and_leaves_the_simulation_whole() -> None:
    """The error reaches the caller; the attempt it was drawn for is recorded failed with it,
    so the task is not left RUNNING on a worker that never frees, and the next run() goes
    on from a consistent state (drawing again, and raising again)."""

    def broken(rng: object, attempt: int) -> float:
        raise KeyError(f"no duration for attempt {attempt}")

    sim = Simulation(workers=1, start=T)
    task = sim.schedule(
        "broken", OneTime(delay=0), duration=broken, retry=RetryPolicy(max_attempts=2)
    )
    other = sim.schedule("other", OneTime(delay=30), duration=1)
    with pytest.raises(KeyError, match="no duration for attempt 1"):
        sim.run(T + 10)
    assert (task.status, sim.busy) == (TaskStatus.RETRYING, 0)
    assert [r.error for r in task.history] == ["KeyError: 'no duration for attempt 1'"]
    with pytest.raises(KeyError, match="no duration for attempt 2"):
        sim.run(T + 10)
    assert task.status is TaskStatus.FAILED and sim.dead_letter() == [task.id]
    sim.run(T + 60)  # the worker is free: the other task runs on time
    assert [(r.started - T, r.outcome.value) for r in other.history] == [(30.0, "ok")]


@pytest.mark.parametrize("coroutine", [False, True], ids=["function", "coroutine"])
@pytest.mark.parametrize("raised", [KeyboardInterrupt("stop"), SystemExit(3)], ids=repr)
def test_an_action_raising_a_base_exception_fails_that_attempt_and_reaches_the_caller(
    raised: BaseException, coroutine: bool
) -> None:
    """As a model that raises: before, the attempt was left RUNNING on a worker that never
    freed (the next run() ran nothing on it, and the task never ran again)."""

    def function() -> None:
        raise raised

    async def routine() -> None:
        raise raised

    action = routine if coroutine else function
    sim = Simulation(workers=1, start=T)
    task = sim.schedule("exits", OneTime(delay=0), action=action, retry=RetryPolicy(max_attempts=2))
    other = sim.schedule("other", OneTime(delay=30), duration=1)
    with pytest.raises(type(raised)):
        sim.run(T + 10)
    assert (task.status, sim.busy) == (TaskStatus.RETRYING, 0)
    assert [r.error for r in task.history] == [error_text(raised)]
    with pytest.raises(type(raised)):
        sim.run(T + 10)
    assert task.status is TaskStatus.FAILED and sim.dead_letter() == [task.id]
    sim.run(T + 60)  # the worker is free: the other task runs on time
    assert [(r.started - T, r.outcome.value) for r in other.history] == [(30.0, "ok")]


@pytest.mark.parametrize("on", ["running", "finished"])
def test_a_listeners_keyboard_interrupt_reaches_the_caller_once_the_event_is_processed(
    on: str,
) -> None:
    """A listener's Ctrl-C is not swallowed in a simulation (its listeners run on the
    caller's thread), but it left the run half done: raised from the run's start, the
    task stayed RUNNING with no finish to come; from its finish, the worker was never
    freed. With one worker, nothing ran again."""
    interrupted, listener = interrupting_once(on)
    sim = Simulation(workers=1, start=T, listeners=[listener])
    task = sim.schedule("report", FixedRate(60), duration=10)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        sim.run(T + 600)
    assert len(interrupted) == 1 and sim.now < T + 60
    sim.run(T + 150)  # goes on where it stopped: nothing half done
    assert [(r.started - T, r.outcome.value) for r in task.history] == [
        (0.0, "ok"),
        (60.0, "ok"),
        (120.0, "ok"),
    ]
    assert sim.busy == 0 and task.status is TaskStatus.SCHEDULED


def test_a_listeners_keyboard_interrupt_in_a_verb_called_outside_run_is_raised_at_once() -> None:
    def listener(event: TaskEvent) -> None:
        raise KeyboardInterrupt("Ctrl-C")

    sim = Simulation(workers=1, start=T, listeners=[listener])
    with pytest.raises(KeyboardInterrupt):
        sim.schedule("report", FixedRate(60), duration=10)
    sim.remove_listener(listener)
    sim.run(T + 30)  # nothing deferred to the next run()
    assert [task.run_count for task in sim.tasks()] == [1]


def test_models_have_readable_reprs_and_validate() -> None:
    assert [repr(m) for m in (fixed(5), uniform(1, 2), exponential(3), lognormal(240, 0.5))] == [
        "fixed(5)", "uniform(1, 2)", "exponential(mean=3)", "lognormal(median=240, sigma=0.5)",
    ]  # fmt: skip
    with pytest.raises(ValidationError, match="high is below low"):
        uniform(5, 1)
    with pytest.raises(ValidationError, match="exponential mean must be finite and > 0, got 0"):
        exponential(0)


def test_a_month_of_a_minutely_cron_replays_every_run() -> None:
    sim = Simulation(workers=1, start=T - T % 60)
    task = sim.schedule("minutely", CronSchedule("* * * * *"))
    sim.run_for(30 * 86400)
    assert task.run_count == 30 * 1440


def test_cancelling_most_tasks_in_an_intervention_rebuilds_the_heap_and_the_rest_run_on_time() -> (
    None
):
    sim = Simulation(workers=2, start=T)
    tasks = [sim.schedule(f"t{n}", FixedRate(60, start_delay=n)) for n in range(100)]

    def cancel_most() -> None:
        for task in tasks[:90]:
            sim.cancel(task.id)

    sim.at(T + 30, cancel_most)
    sim.run(T + 30)
    assert sim.queue_stats().tombstones == 0  # rebuilt: 90 tombstones outnumbered 10 live
    sim.run(T + 220)  # t90..t99 first ran at T+90..T+99: then every 60 s
    assert [len(t.history) for t in tasks[90:]] == [3] * 10
    assert all(task.status.value == "cancelled" for task in tasks[:90])


def test_a_function_where_a_simulations_schedule_goes_is_told_where_its_action_goes() -> None:
    """``sim.schedule("job", job)``, as a ``Scheduler`` is called (the action second), was
    refused as no schedule, with no word of where a simulation takes its action."""

    def job() -> None:
        pass

    sim = Simulation(workers=1, start=T)
    with pytest.raises(ValidationError) as refused:
        sim.schedule("job", job)  # type: ignore[arg-type]
    assert f"got {job!r} (a function, where the schedule goes:" in str(refused.value)
    assert "Simulation.schedule(name, schedule, action=...) by keyword" in str(refused.value)
    assert sim.tasks() == []
    with pytest.raises(ValidationError) as refused:  # the class itself: no such hint
        sim.schedule("job", FixedRate)  # type: ignore[arg-type]
    assert "a function" not in str(refused.value)


def test_the_simulations_schedule_shows_its_signature_as_documented() -> None:
    """``*misplaced`` only catches the ``Scheduler``'s order to refuse it in words:
    ``inspect``, ``help()`` and the docs read the signature without it."""
    parameters = inspect.signature(Simulation.schedule).parameters
    assert list(parameters)[:4] == ["self", "name", "schedule", "duration"]
    assert all(p.kind is not p.VAR_POSITIONAL for p in parameters.values())


def test_a_simulations_metrics_take_a_timeout_of_zero_or_a_fraction_as_the_schedulers() -> None:
    sim = Simulation(start=0.0)
    assert sim.metrics(timeout=0).state == sim.metrics(timeout=0.5).state == "running"


def test_a_listener_added_again_after_the_last_one_was_removed_hears_the_events() -> None:
    sim, log = Simulation(start=0.0), EventLog()
    sim.add_listener(log)
    assert sim.remove_listener(log) is True  # none left
    sim.add_listener(log)
    task = sim.schedule("x", OneTime(delay=1), duration=0)
    sim.run(5)
    assert [(e.task_id, e.status.value) for e in log.events] == [
        (task.id, "scheduled"), (task.id, "running"), (task.id, "succeeded")
    ]  # fmt: skip


def test_a_simulations_metrics_refuse_a_negative_timeout_as_the_schedulers() -> None:
    with pytest.raises(ValidationError, match=r"metrics\(\) timeout") as refused:
        Simulation(start=0.0).metrics(timeout=-1)
    assert "-1" in str(refused.value)


def test_models_for_an_unknown_id_are_refused() -> None:
    sim = Simulation(start=0.0)
    with pytest.raises(TaskNotFoundError, match="'nope'"):
        sim.model("nope", duration=fixed(5))


def test_the_simulations_decorator_defaults_to_runs_that_take_no_time_and_never_fail() -> None:
    sim = Simulation(start=0.0)

    @sim.scheduled(FixedRate(60))
    def job() -> None:
        return None

    sim.run(125)
    assert [(r.started, r.finished, r.outcome.value) for r in sim.records()] == [
        (0.0, 0.0, "ok"), (60.0, 60.0, "ok"), (120.0, 120.0, "ok")
    ]  # fmt: skip


async def _returns_at_once() -> None:
    return None


def test_removing_a_coroutine_task_cuts_its_run_in_flight() -> None:
    sim = Simulation(workers=1, start=T)
    sim.schedule("c", FixedRate(60), action=_returns_at_once, duration=fixed(10), id="c")
    sim.run(T + 5)
    sim.remove("c")
    sim.run(T + 30)
    assert [(r.started - T, r.finished - T, r.error) for r in sim.records()] == [
        (0, 5, "CancelledError: task cancelled")
    ]


def test_a_removed_tasks_priority_and_schedule_stay_with_its_records() -> None:
    """``priorities()`` and ``schedules()`` name every task that has records, a removed
    one as it was when it left: ``to_frame``'s priority column, ``task_summary``'s
    overruns."""
    sim = Simulation(start=0.0)
    sim.schedule("x", FixedRate(60), duration=fixed(1), id="x", priority=Priority.HIGH)
    sim.run(30)
    sim.remove("x")
    assert [r.task_id for r in sim.records()] == ["x"]
    assert sim.priorities() == {"x": 0}
    assert sim.schedules() == {"x": FixedRate(60)}
