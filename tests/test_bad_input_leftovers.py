# The rows capture their wrong value as a lambda's default (``lambda v=value: ...``),
# whose type mypy cannot infer ([misc]); the values are wrong on purpose ([arg-type],
# [list-item], [dict-item]).
# mypy: disable-error-code="misc, arg-type, list-item, dict-item"
"""Bad input a fourth audit of the public API found refused with a bare error, or taken
(the rule and the helpers of ``tests/test_bad_input_table.py``: a package error quoting
the value, raised before anything changes; docs/decisions/checking-input.md).

* a value whose ``repr`` cannot be written, an int too long to print (``10**5000``) or an
  object whose ``__repr__`` raises, given to the cluster simulation's values, a
  ``Stepper``, ``simulate_overrun``, ``poisson_arrivals``, ``to_frame``'s records, a
  ``ControlPanel`` or a ``SimulationPlayer``, or answered by a schedule or a retry policy
  of one's own: the message meant to refuse it quoted it by ``{value!r}`` (or
  ``reprlib.repr``, which calls the same ``repr`` for an int), which raised a bare
  ``ValueError: Exceeds the limit (4300 digits)`` or the ``__repr__``'s own error instead;
* a shared store's ``lease`` or ``poll`` too short for a timer to keep (``lease=1e-4``,
  ``poll=1e-6``): taken, and the scheduler on it ran nothing, its timer renewing or
  polling at every turn of its loop without ever waiting, under the lock, and its
  ``shutdown()`` gave up after its timeout;
* a cluster task's name that no registration takes (``ClusterTask("a\\nb", 60)``): taken,
  and refused by ``simulate_cluster``, not by the constructor that promises every value
  checked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import pytest

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from lldsched.coordination import SHORTEST_LEASE, SHORTEST_POLL
from lldsched.sim import models
from lldsched.sim.cluster import simulate_cluster
from lldsched.sim.cluster_scenario import ClusterScenario, ClusterTask, Crash, Pause
from lldsched.sim.overrun import simulate_overrun
from lldsched.testing import Stepper
from lldsched.views import report
from lldsched.views.frames import to_frame
from tests.test_bad_input_sweep import GIANT
from tests.test_bad_input_table import (
    T0,
    Named,
    check_error,
    noop,
    populated_runtime,
    refused_build,
    refused_unchanged,
    register,
)

matplotlib.use("Agg")


class Unprintable:
    """A value whose ``repr`` raises (a user's class with a broken ``__repr__``)."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr here")


UNPRINTABLE = Unprintable()

# What errors.shown writes for each: the message must hold it.
HOW_SHOWN = {
    "giant": Named("an int of 5,001 digits"),
    "unprintable": Named("<Unprintable object (its repr raised RuntimeError)>"),
}
VALUES = {"giant": GIANT, "unprintable": UNPRINTABLE}


# -- a value no repr writes -------------------------------------------------------------

Given = Callable[[object], object]
BUILDS: list[tuple[str, Given]] = [
    ("ClusterTask(name=v)", lambda v: ClusterTask(v, 60)),
    ("ClusterScenario(tasks=v)", lambda v: ClusterScenario(tasks=v)),
    ("ClusterScenario(tasks=[v])", lambda v: ClusterScenario(tasks=[v])),
    ("ClusterScenario(skews=v)", lambda v: ClusterScenario(skews=v)),
    ("ClusterScenario(pauses=v)", lambda v: ClusterScenario(pauses=v)),
    ("ClusterScenario(crashes=[v])", lambda v: ClusterScenario(crashes=[v])),
    ("ClusterScenario(lease_clock=v)", lambda v: ClusterScenario(lease_clock=v)),
    ("simulate_cluster(v)", lambda v: simulate_cluster(v)),
    ("Stepper(v)", lambda v: Stepper(v)),
    ("simulate_overrun(policies=v)", lambda v: simulate_overrun(policies=v)),
    ("simulate_overrun(policies=[v])", lambda v: simulate_overrun(policies=[v])),
    ("poisson_arrivals(count=v, until=...)",
     lambda v: models.poisson_arrivals(1, start=0, count=v, until=10)),
    ("fails_on(1, error=v)", lambda v: models.fails_on(1, error=v)),
    ("to_frame([v])", lambda v: to_frame([v])),
]  # fmt: skip


def _widgets() -> list[tuple[str, Given]]:
    """The widgets' rows, when ipywidgets is installed (the views extra)."""
    pytest.importorskip("ipywidgets")
    from lldsched.views.panel import ControlPanel
    from lldsched.views.player import SimulationPlayer

    return [
        ("ControlPanel(v)", lambda v: ControlPanel(v)),
        ("ControlPanel(sim, loop=v)", lambda v: ControlPanel(Simulation(), loop=v)),
        ("SimulationPlayer(v)", lambda v: SimulationPlayer(v)),
    ]


@pytest.mark.parametrize("kind", sorted(VALUES))
@pytest.mark.parametrize(("label", "call"), BUILDS, ids=[label for label, _ in BUILDS])
def test_a_value_no_repr_writes_is_quoted_by_the_one_rule(
    kind: str, label: str, call: Given
) -> None:
    refused_build(lambda: call(VALUES[kind]), HOW_SHOWN[kind])


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_a_widget_given_a_value_no_repr_writes_quotes_it(kind: str) -> None:
    for _, call in _widgets():
        refused_build(lambda call=call: call(VALUES[kind]), HOW_SHOWN[kind])


class Answers:
    """A schedule of one's own whose first run is ``answer``."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def first_run(self, now: float) -> object:
        return self.answer

    def next_run(self, record: object, now: float) -> object:
        return self.answer

    def __repr__(self) -> str:
        return "Answers()"


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize("value", sorted(VALUES))
def test_a_schedules_answer_no_repr_writes_is_quoted_and_changes_nothing(
    kind: str, value: str
) -> None:
    with populated_runtime(kind) as runtime:
        refused_unchanged(
            runtime,
            lambda rt: register(rt, "job", noop, Answers(VALUES[value])),
            HOW_SHOWN[value],
        )


class Waits(RetryPolicy):
    """A retry policy of one's own whose every backoff is ``WAIT``."""

    __slots__ = ()
    WAIT: object = None

    def backoff(self, attempt: int, rng: Any = None) -> float:
        return Waits.WAIT  # type: ignore[return-value]


def fails() -> None:
    raise RuntimeError("always")


@pytest.mark.parametrize("value", sorted(VALUES))
def test_a_backoff_no_repr_writes_fails_its_task_naming_it(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backoff of one's own that answers no delay fails its task (docs/EXTENDING.md, "A
    retry policy of your own"), its record naming the answer; it was the ``ValueError`` the
    message's ``repr`` raised, naming neither the policy nor the answer."""
    monkeypatch.setattr(Waits, "WAIT", VALUES[value])
    simulation = Simulation(start=T0)
    task = simulation.schedule("job", OneTime(delay=0), action=fails, retry=Waits())
    simulation.run_for(60)
    assert task.status is TaskStatus.FAILED
    assert simulation.dead_letter() == [task.id]
    assert f"answered {HOW_SHOWN[value].words}, not a delay" in (task.last_error or "")


def test_the_rows_refuse_the_value_not_what_they_could_not_build() -> None:
    """What the rows above give wrong, given right, is taken."""
    scenario = ClusterScenario(
        tasks=[ClusterTask("job", 60)], skews=(0, 0, 0), pauses=[Pause(0, 10, 5)],
        crashes=[Crash(1, 20)], lease_clock="database",
    )  # fmt: skip
    assert simulate_cluster(scenario).runs
    assert simulate_overrun()
    assert list(models.poisson_arrivals(1, start=0, count=2)) != []
    assert models.fails_on(1, error="RuntimeError: planned")
    simulation = Simulation(start=T0)
    simulation.schedule("job", FixedRate(60))
    simulation.run_for(120)
    assert len(to_frame(simulation.records())) == 3  # at 0, 60 and 120 s
    with Scheduler(clock=FakeClock(T0)) as scheduler:
        Stepper(scheduler).close()


# -- a shared store's lease and poll ----------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [("lease", 1e-4), ("lease", 1e-7), ("poll", 1e-6), ("poll", 1e-7)],
)
def test_a_lease_or_poll_too_short_to_keep_is_refused_before_the_file_opens(
    tmp_path: Path, option: str, value: float
) -> None:
    """``lease=1e-4`` or ``poll=1e-6`` was taken: the scheduler on the store ran nothing,
    its timer renewing or polling at every turn of its loop without ever waiting (the
    instant it would wake by had passed when it got there), under the lock, and its
    ``shutdown()`` returned False after its timeout."""
    path = tmp_path / "shared.db"
    with pytest.raises(ValidationError) as caught:
        SqliteTaskStore(path, shared=True, **{option: value})
    check_error(caught.value, value)
    assert f"{option} must be finite and >= " in str(caught.value)
    assert not path.exists()


@pytest.mark.parametrize(("option", "value"), [("lease", 1e-4), ("poll", 1e-6)])
def test_a_postgres_store_refuses_them_by_the_same_rule_before_it_connects(
    option: str, value: float
) -> None:
    """The rule is both shared stores' (``coordination.lease_seconds``, ``poll_seconds``):
    refused before a connection is tried (this dsn reaches no server)."""
    postgres = pytest.importorskip("lldsched.stores.postgres")
    with pytest.raises(ValidationError) as caught:
        postgres.PostgresTaskStore("host=/nonexistent dbname=none", **{option: value})
    check_error(caught.value, value)


def test_the_shortest_lease_and_poll_taken_keep_a_scheduler_running(tmp_path: Path) -> None:
    """The bounds leave room: a store with the shortest lease and poll taken runs its
    tasks and shuts down (a fake clock: one run, no wait on time)."""
    store = SqliteTaskStore(
        tmp_path / "shared.db", shared=True, lease=SHORTEST_LEASE, poll=SHORTEST_POLL
    )
    try:
        with Stepper(Scheduler(workers=1, clock=FakeClock(T0), store=store)) as steps:
            task = steps.scheduler.schedule("job", noop, OneTime(delay=0), id="job")
            steps.advance(0)
        assert task.status is TaskStatus.SUCCEEDED
    finally:
        store.close()


# -- a cluster task's name ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\nb", " job", "x" * 2001, "a\x00b"])
def test_a_cluster_tasks_name_no_registration_takes_is_refused_when_it_is_built(
    name: str,
) -> None:
    """The name is the task's id on every node: ``simulate_cluster`` refused it, after a
    scenario built around it had been taken."""
    with pytest.raises(ValidationError) as caught:
        ClusterTask(name, 60)
    check_error(caught.value, Named(repr(name)[:40]))


def test_a_cluster_task_takes_the_names_a_registration_takes() -> None:
    assert ClusterTask("é" * 500, 60).name == "é" * 500  # 1,000 bytes: within the bound
    assert ClusterTask("nightly report", 60).name == "nightly report"


# -- a percentile of values that are no numbers --------------------------------------------


@pytest.mark.parametrize("values", [["a"], ["a", "b"], [None], [1j], [b"1", b"2"]])
def test_a_percentile_of_values_that_sort_but_are_no_numbers_is_refused_naming_them(
    values: list[object],
) -> None:
    """Values that compare among themselves sort (one value always does), and ``isnan``
    then raised a bare ``TypeError: must be real number, not str``."""
    refused_build(lambda: report.percentile(values, 50), values)


# -- a retry policy of one's own that cannot be called as the core calls it ---------------


class TakesNoGenerator(RetryPolicy):
    __slots__ = ()

    def backoff(self, attempt: int) -> float:  # type: ignore[override]
        return 1.0


class TakesNoAttempt(RetryPolicy):
    __slots__ = ()

    def allows_retry(self) -> bool:  # type: ignore[override]
        return True


class WantsMore(RetryPolicy):
    __slots__ = ()

    def fails_after(self, given_up: int, why: str) -> bool:  # type: ignore[override]
        return False


class TakesWhatItIsGiven(RetryPolicy):
    """Other signatures that bind: defaults, ``*args``."""

    __slots__ = ()

    def backoff(self, *args: Any) -> float:
        return 1.0

    def allows_retry(self, attempt: int, extra: int = 0) -> bool:
        return attempt < 2


UNCALLABLE = [
    (TakesNoGenerator, "its backoff cannot be called as backoff(attempt, rng)"),
    (TakesNoAttempt, "its allows_retry cannot be called as allows_retry(attempt)"),
    (WantsMore, "its fails_after cannot be called as fails_after(given_up)"),
]


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(("policy", "words"), UNCALLABLE, ids=[p.__name__ for p, _ in UNCALLABLE])
def test_a_retry_policy_whose_override_cannot_be_called_is_refused_at_registration(
    kind: str, policy: type[RetryPolicy], words: str
) -> None:
    """Taken, it failed its task at the first failure (``TypeError`` in the core's call,
    logged as the policy raising): found now, as a listener's or a model's signature is,
    by registration and by ``modify``, with nothing changed."""
    with populated_runtime(kind) as runtime:
        refused_unchanged(runtime, lambda rt: register(rt, retry=policy()), Named(words))
        refused_unchanged(runtime, lambda rt: rt.modify("kept", retry=policy()), Named(words))


def test_a_retry_policy_whose_overrides_bind_is_taken_and_used() -> None:
    simulation = Simulation(start=T0)
    task = simulation.schedule(
        "job", OneTime(delay=0), action=fails, retry=TakesWhatItIsGiven(max_attempts=5)
    )
    simulation.run_for(60)
    assert [record.started - T0 for record in simulation.records()] == [0, 1]
    assert task.status is TaskStatus.FAILED


class Verdicts(RetryPolicy):
    """A retry policy of one's own whose ``allows_retry`` and ``fails_after`` answer
    ``ALLOWS`` and ``FAILS``."""

    __slots__ = ()
    ALLOWS: object = True
    FAILS: object = False

    def allows_retry(self, attempt: int) -> bool:
        return Verdicts.ALLOWS if attempt < 3 else False  # type: ignore[return-value]

    def fails_after(self, given_up: int) -> bool:
        return Verdicts.FAILS  # type: ignore[return-value]


@pytest.mark.parametrize("method", ["allows_retry", "fails_after"])
@pytest.mark.parametrize("answer", ["no", None, 1, 0.0])
def test_a_retry_verdict_that_is_no_bool_fails_its_task_naming_it(
    method: str, answer: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read as a truth value, ``allows_retry`` answering ``"no"`` retried its task for ever
    and one answering None (a forgotten ``return``) never retried; ``fails_after`` so
    answered stopped a recurring task at its first slot given up, or never
    (docs/decisions/extending.md, "A retry policy's verdict is a bool")."""
    monkeypatch.setattr(Verdicts, "ALLOWS" if method == "allows_retry" else "FAILS", answer)
    simulation = Simulation(start=T0)
    task = simulation.schedule("job", FixedRate(60), action=fails, retry=Verdicts())
    simulation.run_for(600)
    assert task.status is TaskStatus.FAILED
    assert simulation.dead_letter() == [task.id]
    assert f".{method}(" in (task.last_error or "")
    assert f"answered {answer!r}, not a bool" in (task.last_error or "")
    asked_at = 1 if method == "allows_retry" else 3  # fails_after: once the slot is given up
    assert len(task.history) == asked_at


def test_a_retry_verdict_that_is_a_bool_is_taken() -> None:
    """What the test above refuses, answered as a bool, retries and gives slots up."""
    simulation = Simulation(start=T0)
    task = simulation.schedule("job", FixedRate(60), action=fails, retry=Verdicts())
    simulation.run_for(150)
    assert task.status is not TaskStatus.FAILED
    assert [record.attempt for record in task.history][:3] == [1, 2, 3]
