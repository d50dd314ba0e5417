"""Both runtimes have the shape views rely on (lldsched.runtime): the same verbs, by name
and meaning."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    Scheduler,
    SchedulerStateError,
    TaskNotFoundError,
    TaskStatus,
    ValidationError,
)
from lldsched.runtime import Controls, Observable, Reads, Runtime, Stepped
from lldsched.sim import Simulation, fixed
from tests.conftest import T0, SchedulerFactory, settle

VERBS = ("pause", "resume", "cancel", "redrive", "run_now", "remove", "reschedule", "modify",
         "task", "tasks", "records", "dead_letter", "pending", "queue_stats", "metrics",
         "add_listener", "remove_listener")  # fmt: skip


def test_both_runtimes_satisfy_the_protocols_statically_and_at_run_time() -> None:
    threaded = Scheduler(workers=2)
    scheduler: Runtime = threaded  # mypy checks these two assignments
    simulation: Stepped = Simulation(workers=3)
    for runtime in (scheduler, simulation):
        for protocol in (Controls, Reads, Observable, Runtime):
            assert isinstance(runtime, protocol)
    assert isinstance(simulation, Stepped) and not isinstance(scheduler, Stepped)
    assert (scheduler.workers, simulation.workers) == (2, 3)
    assert threaded.shutdown()


def test_the_verbs_take_the_same_parameters_in_both_runtimes() -> None:
    for verb in VERBS:
        ours = inspect.signature(getattr(Scheduler, verb)).parameters
        theirs = inspect.signature(getattr(Simulation, verb)).parameters
        assert list(ours) == list(theirs), verb


def test_the_registration_options_share_names_in_both_runtimes() -> None:
    options = {"id", "replace_existing", "priority", "retry", "timeout", "args", "kwargs"}
    options |= {"misfire"}
    for runtime in (Scheduler, Simulation):
        for register in (runtime.schedule, runtime.scheduled):
            keywords = {
                name
                for name, parameter in inspect.signature(register).parameters.items()
                if parameter.kind is inspect.Parameter.KEYWORD_ONLY
            }
            assert options <= keywords, (runtime, register)


def test_scheduler_records_merge_the_task_histories_in_finish_order(
    make_scheduler: SchedulerFactory,
) -> None:
    clock = FakeClock(T0)
    scheduler = make_scheduler(clock=clock, workers=2)
    fast = scheduler.schedule("fast", lambda: None, FixedRate(10))
    slow = scheduler.schedule("slow", lambda: None, FixedRate(25))
    for _ in range(6):
        settle(scheduler)
        clock.advance(10)
    settle(scheduler)
    records = scheduler.records()
    assert {r.task_id for r in records} == {fast.id, slow.id}
    assert len(records) == len(fast.history) + len(slow.history)
    assert [r.finished for r in records] == sorted(r.finished for r in records)
    assert [r for r in records if r.task_id == slow.id] == list(slow.history)
    assert scheduler.now == clock.now()


def test_simulation_remove_forgets_the_task_and_its_run_in_flight_is_recorded() -> None:
    sim = Simulation(workers=1, start=T0)
    task = sim.schedule("long", FixedRate(60), duration=fixed(30))
    kept = sim.schedule("kept", OneTime(delay=100), duration=fixed(1))
    sim.run_for(10)  # "long" is running
    assert sim.remove(task.id) is task
    assert task.status is TaskStatus.CANCELLED
    assert [t.id for t in sim.tasks()] == [kept.id]
    with pytest.raises(TaskNotFoundError, match=task.id):
        sim.task(task.id)
    with pytest.raises(TaskNotFoundError, match="nope"):
        sim.remove("nope")
    sim.run_for(200)
    assert [(r.name, r.finished - T0) for r in sim.records()] == [("long", 30.0), ("kept", 101.0)]


# What one runtime has and the other has not, each for a reason (docs/decisions/public-api.md, "One
# surface, two runtimes"). A verb added to one runtime fails the test below until it is
# added to the other (and to lldsched.runtime) or named here with its reason.
ONLY_SCHEDULER = {
    "start", "wait_idle", "wait_drained",  # real threads
    "clock", "dropped_events", "name",  # wall time; a listener thread; a process's label
    "packed_records", "dispatcher_type", "pool_type", "queue_type",  # its parts, for tests
}  # fmt: skip
ONLY_SIMULATION = {
    "step", "run", "run_for", "at", "busy", "model", "record_log", "seed",
}  # fmt: skip
REGISTRATION = {"schedule", "scheduled"}  # the same options; the action differs by design


def public(runtime: object) -> set[str]:
    return {name for name in dir(runtime) if not name.startswith("_")}


def protocol_members(protocol: type) -> set[str]:
    return {name for name in dir(protocol) if not name.startswith("_")}


def test_what_both_runtimes_share_is_the_protocol_and_the_rest_is_named() -> None:
    threaded, simulation = Scheduler(workers=2), Simulation(workers=2)
    try:
        ours, theirs = public(threaded), public(simulation)
    finally:
        assert threaded.shutdown()
    assert ours - theirs == ONLY_SCHEDULER
    assert theirs - ours == ONLY_SIMULATION
    assert (ours & theirs) - REGISTRATION == protocol_members(Runtime)
    assert protocol_members(Stepped) - protocol_members(Runtime) < ONLY_SIMULATION


def signature_of(runtime: type, name: str) -> inspect.Signature:
    member = inspect.getattr_static(runtime, name)
    if isinstance(member, property):
        assert member.fget is not None
        return inspect.signature(member.fget)
    return inspect.signature(getattr(runtime, name))


def test_every_shared_verb_has_one_signature_names_defaults_and_types() -> None:
    """Not only the parameter names: kinds, defaults, annotations and the return type."""
    for name in sorted(protocol_members(Runtime)):
        assert signature_of(Scheduler, name) == signature_of(Simulation, name), name
        for runtime in (Scheduler, Simulation):
            assert inspect.getdoc(getattr(runtime, name)), (runtime, name)


def test_both_runtimes_are_context_managers_with_and_async_with() -> None:
    """A simulation had ``with`` but not ``async with``: code written for a scheduler in
    a coroutine met a TypeError on a drop-in simulation.  Entering is no protocol member
    (a scheduler's starts it), but both runtimes have all four, one signature each, and
    ``aclose`` is a coroutine function on both and on the protocol."""
    for name in ("__enter__", "__exit__", "__aenter__", "__aexit__"):
        ours, theirs = signature_of(Scheduler, name), signature_of(Simulation, name)
        assert ours.parameters == theirs.parameters, name
    for name in ("__aenter__", "__aexit__", "aclose"):
        for runtime in (Scheduler, Simulation):
            assert inspect.iscoroutinefunction(getattr(runtime, name)), (runtime, name)
    assert inspect.iscoroutinefunction(Runtime.aclose)


def test_what_is_fixed_at_construction_is_read_only_on_both_runtimes() -> None:
    """``sim.workers = 8`` was taken, and then ``busy`` and the metrics counted eight
    workers that the pool of four never had."""
    threaded, simulation = Scheduler(workers=2), Simulation(workers=4)
    try:
        for runtime in (threaded, simulation):
            for name in ("workers", "now", "tz", "retain_finished"):
                with pytest.raises(AttributeError):
                    setattr(runtime, name, 8)
        assert simulation.workers == 4 and simulation.metrics().workers == 4
    finally:
        assert threaded.shutdown()


def test_a_simulation_s_seed_is_read_only() -> None:
    """``sim.seed = 7`` on a ``Simulation(seed=0)`` was taken: the models of the tasks
    registered after it drew from seed 7 and the retry jitter from seed 0, a run equal
    to neither seed's."""
    simulation = Simulation(workers=1, seed=0)
    with pytest.raises(AttributeError):
        simulation.seed = 7  # type: ignore[misc]
    assert simulation.seed == 0


def test_the_registration_options_are_the_same_parameters_in_both_runtimes() -> None:
    """Each keyword option both registrations take has one default and one type; what
    only one takes is the documented difference."""
    differences: dict[str, tuple[set[str], set[str]]] = {
        "schedule": (set(), {"action", "duration", "fails"}),
        "scheduled": (set(), {"duration", "fails"}),
    }
    for verb in differences:
        ours = inspect.signature(getattr(Scheduler, verb)).parameters
        theirs = inspect.signature(getattr(Simulation, verb)).parameters
        keywords = {n for n, p in ours.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        their_keywords = {n for n, p in theirs.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert (keywords - their_keywords, their_keywords - keywords) == differences[verb]
        for option in keywords & their_keywords:
            assert ours[option] == theirs[option], (verb, option)
        assert inspect.signature(getattr(Scheduler, verb)).return_annotation == (
            inspect.signature(getattr(Simulation, verb)).return_annotation
        )


def test_the_constructors_take_workers_by_position_and_the_rest_by_keyword() -> None:
    """``Simulation(4, 100, 7)`` read as start and seed, and the two runtimes put
    ``store`` at different positions: every option is keyword-only, and the options both
    take share their default and type (but ``seed``: None draws one on a Scheduler, a
    simulation's default 0 makes two runs alike)."""
    ours = inspect.signature(Scheduler).parameters
    theirs = inspect.signature(Simulation).parameters
    for parameters in (ours, theirs):
        positional = [n for n, p in parameters.items() if p.kind is not p.KEYWORD_ONLY]
        assert positional == ["workers"]
    shared = (set(ours) & set(theirs)) - {"seed"}
    assert shared == {"workers", "store", "listeners", "ids", "history_limit", "tz",
                      "retain_finished", "purge_retired", "max_coroutines"}  # fmt: skip
    for name in shared:
        assert ours[name] == theirs[name], name


def test_options_passed_by_position_still_work_with_a_deprecation_warning() -> None:
    clock = FakeClock(T0)
    with pytest.warns(DeprecationWarning, match=r"Scheduler: passing clock by position.*clock="):
        threaded = Scheduler(2, clock)  # type: ignore[call-arg]
    assert threaded.clock is clock and threaded.workers == 2
    assert threaded.shutdown()
    with pytest.warns(DeprecationWarning, match=r"passing start, seed by position") as caught:
        simulation = Simulation(3, T0, 7)  # type: ignore[call-arg]
    assert caught[0].filename == __file__  # it points at the caller's line
    assert (simulation.workers, simulation.now, simulation.seed) == (3, T0, 7)


def test_an_option_given_by_position_and_by_keyword_is_refused() -> None:
    with pytest.raises(TypeError, match="multiple values for argument 'start'"):
        Simulation(2, T0, start=T0)  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"at most 6 positional arguments \(7 given\)"):
        Simulation(2, T0, 1, None, (), 9)  # type: ignore[call-arg, arg-type]


def test_orphans_and_retain_finished_are_read_through_the_protocol() -> None:
    def read(runtime: Reads) -> tuple[list[str], object]:
        return runtime.orphans(), runtime.retain_finished

    assert read(Simulation(retain_finished=None)) == ([], None)


def raised(call: Callable[[], object]) -> type[BaseException]:
    try:
        call()
    except Exception as error:
        return type(error)
    raise AssertionError("nothing raised")


Case = tuple[str, Callable[[], object], type[Exception]]


def check_documented(runtime: Scheduler | Simulation, cases: list[Case]) -> None:
    for verb, call, error in cases:
        assert issubclass(raised(call), error), (verb, error)
        documented = inspect.getdoc(getattr(type(runtime), verb)) or ""
        assert error.__name__ in documented, f"{type(runtime).__name__}.{verb}: {error.__name__}"
        if error is TaskNotFoundError:
            assert "TaskRetiredError" in documented, verb


def by_id(runtime: object, verb: str, task_id: str) -> Callable[[], object]:
    return lambda: getattr(runtime, verb)(task_id)


@pytest.mark.parametrize("kind", ["scheduler", "simulation"])
def test_each_verb_raises_what_its_docstring_names(kind: str) -> None:
    """``help(runtime.verb)`` tells which errors a call can meet, and it meets those."""
    runtime: Scheduler | Simulation
    if kind == "scheduler":
        runtime = Scheduler(clock=FakeClock(T0))
        up = runtime.schedule("up", lambda: None, FixedRate(60))
        runtime.schedule("down", lambda: None, FixedRate(60), depends_on=[up.id])
        done = runtime.schedule("done", lambda: None, FixedRate(60))
    else:
        runtime = Simulation(start=T0)
        up = runtime.schedule("up", FixedRate(60))
        runtime.schedule("down", FixedRate(60), depends_on=[up.id])
        done = runtime.schedule("done", FixedRate(60))
    runtime.cancel(done.id)  # finished: not rescheduled or modified
    cases: list[Case] = [
        (verb, by_id(runtime, verb, "nope"), TaskNotFoundError)
        for verb in ("pause", "cancel", "resume", "redrive", "run_now", "remove", "task")
    ]
    cases += [
        ("reschedule", lambda: runtime.reschedule("nope", FixedRate(60)), TaskNotFoundError),
        ("reschedule", lambda: runtime.reschedule(up.id, 60), ValidationError),  # type: ignore[arg-type]
        ("reschedule", lambda: runtime.reschedule(done.id, FixedRate(5)), SchedulerStateError),
        ("modify", lambda: runtime.modify("nope", priority=2), TaskNotFoundError),
        ("modify", lambda: runtime.modify(up.id, priority="LOW"), ValidationError),  # type: ignore[arg-type]
        ("modify", lambda: runtime.modify(done.id, timeout=5), SchedulerStateError),
        ("remove", lambda: runtime.remove(up.id), SchedulerStateError),  # "down" depends on it
    ]  # fmt: skip
    if isinstance(runtime, Simulation):
        sim = runtime
        cases += [
            ("model", lambda: sim.model("nope"), TaskNotFoundError),
            ("model", lambda: sim.model(up.id, fails="x"), ValidationError),  # type: ignore[arg-type]
            ("schedule", lambda: sim.schedule("x", FixedRate(-1)), ValidationError),
            ("schedule", lambda: sim.schedule("x", FixedRate(60), id=up.id), ValidationError),
        ]  # fmt: skip
    check_documented(runtime, cases)
    if isinstance(runtime, Scheduler):
        assert runtime.shutdown()
        stopped: list[Case] = [
            (verb, by_id(runtime, verb, up.id), SchedulerStateError)
            for verb in ("resume", "redrive", "run_now")
        ]
        threaded = runtime
        stopped += [
            ("reschedule", lambda: threaded.reschedule(up.id, "* * * * *"), SchedulerStateError),
            ("schedule", lambda: threaded.schedule("x", print, "* * * * *"), SchedulerStateError),
        ]
        check_documented(runtime, stopped)
