# The rows capture their wrong value as a lambda's default (``lambda v=value: ...``),
# whose type mypy cannot infer ([misc]); the values are wrong on purpose ([arg-type],
# [list-item], [dict-item]).
# mypy: disable-error-code="misc, arg-type, list-item, dict-item"
"""Bad input a third audit of the public API found refused with a bare error (the rule and
the helpers of ``tests/test_bad_input_table.py``: a package error quoting the value,
raised before anything changes; docs/decisions/checking-input.md).

* an int too long to print (``10**5000``) given where *no number* goes (an isolation, a
  listener, a store's path, a policy's member, a view's frame or ``freq``): the message
  meant to refuse it quoted it by ``{value!r}``, which raised a bare ``ValueError: Exceeds
  the limit (4300 digits) for integer string conversion``, naming nothing. The rule was
  written ("a message that quotes a caller's value writes ``shown(value)``") and kept where
  a number goes (``tests/test_extreme_numbers.py``), not where something else does;
* the views' smaller arguments: a ``schedules`` map whose value is no schedule
  (``summarize``, ``task_summary``: ``AttributeError`` at its task's first record) or
  whose key is no id (matched nothing, unsaid); ``describe(5)``, ``task_colours(5)``,
  ``task_colours("abc")`` (three tasks), ``gantt(title=5)``, ``mark_wait(text=5)``,
  ``cluster_counts(5)``, ``fencing_comparison(5)``, ``percentile(5, 50)`` and
  ``seconds_text(inf)`` (bare errors of matplotlib or Python, or taken);
* a store's ``get`` and ``delete`` given what is no id (``delete(snapshot)``): ``None``
  and nothing deleted, unsaid, where ``records(5)`` is refused;
* (``tasks --store sqlite:////srv/jobs.db``: ``tests/test_cli_tasks.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    InMemoryTaskStore,
    Jittered,
    LldschedError,
    MisfirePolicy,
    OneTime,
    OverrunPolicy,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    ValidationError,
    Window,
)
from lldsched.views import cluster, report, tables
from lldsched.views.frames import task_summary, to_frame, utilisation
from lldsched.views.plots import (
    cluster_timeline,
    describe,
    fencing_comparison,
    gantt,
    lateness_distribution,
    mark_wait,
    overrun_comparison,
    task_colours,
    utilisation_plot,
)
from tests.test_bad_input_table import (
    INF,
    T0,
    Build,
    Named,
    Runtime,
    check_error,
    noop,
    populated_runtime,
    refused_build,
    refused_unchanged,
    register,
)

matplotlib.use("Agg")

GIANT = 10**5000
GIANT_SHOWN = Named("an int of 5,001 digits")


def frame() -> pd.DataFrame:
    """A frame of runs: a task every minute for ten minutes, on two workers."""
    simulation = Simulation(start=T0, workers=2)
    simulation.schedule("job", FixedRate(60), duration=30)
    simulation.run_for(600)
    return to_frame(simulation)


def asked_closed(store: SqliteTaskStore) -> object:
    """``store.records(GIANT)``, the store closed after."""
    try:
        return store.records(GIANT)
    finally:
        store.close()


def giant_refused(call: Build) -> None:
    """``call()`` raises one of the package's errors quoting the giant by its digits'
    count, in a message a log line holds."""
    with pytest.raises(Exception) as caught:  # check below says which kind
        call()
    assert isinstance(caught.value, LldschedError), repr(caught.value)[:300]
    assert "an int of 5,001 digits" in str(caught.value)
    assert len(str(caught.value)) < 2_500


# -- an int too long to print, where no number goes ------------------------------------

GIANT_BUILDS: list[tuple[str, Build]] = [
    ("SqliteTaskStore(giant)", lambda: SqliteTaskStore(GIANT)),
    ("SqliteTaskStore(synchronous=giant)",
     lambda: SqliteTaskStore(":memory:", synchronous=GIANT)),
    ("InMemoryTaskStore().records(giant)", lambda: InMemoryTaskStore().records(GIANT)),
    ("SqliteTaskStore().records(giant)", lambda: asked_closed(SqliteTaskStore(":memory:"))),
    ("MisfirePolicy(giant)", lambda: MisfirePolicy(GIANT)),
    ("FixedRate(60, on_overrun=giant)", lambda: FixedRate(60, on_overrun=GIANT)),
    ("OneTime(at=giant, delay=5)", lambda: OneTime(at=GIANT, delay=5)),
    ("Jittered(giant, 5)", lambda: Jittered(GIANT, 5, seed=1)),
    ("Window(giant)", lambda: Window(GIANT, max_runs=1)),
    ("Scheduler(ids=giant)", lambda: Scheduler(ids=GIANT)),
    ("Scheduler(listeners=giant)", lambda: Scheduler(listeners=GIANT)),
    ("Scheduler(listeners=[giant])", lambda: Scheduler(listeners=[GIANT])),
    ("Simulation(listeners=[giant])", lambda: Simulation(listeners=[GIANT])),
    ("EventLog().runs(giant)", lambda: EventLog().runs(GIANT)),
    ("EventLog().wait_for(giant)", lambda: EventLog().wait_for(GIANT, timeout=0)),
    ("Simulation().at(T0 + 1, giant)", lambda: Simulation(start=T0).at(T0 + 1, GIANT)),
    ("to_frame(giant)", lambda: to_frame(GIANT)),
    ("to_frame(simulation, priorities=giant)",
     lambda: to_frame(Simulation(), priorities=GIANT)),
    ("task_summary(giant)", lambda: task_summary(GIANT)),
    ("utilisation(giant, 2)", lambda: utilisation(GIANT, 2)),
    ("utilisation(frame, 2, freq=giant)", lambda: utilisation(frame(), 2, GIANT)),
    ("readable(giant)", lambda: tables.readable(GIANT)),
    ("gantt(giant)", lambda: gantt(GIANT)),
    ("gantt(frame, by=giant)", lambda: gantt(frame(), by=GIANT)),
    ("gantt(frame, ax=giant)", lambda: gantt(frame(), ax=GIANT)),
    ("gantt(frame, span=giant)", lambda: gantt(frame(), span=GIANT)),
    ("gantt(frame, depends_on=giant)", lambda: gantt(frame(), depends_on=GIANT)),
    ("gantt(frame, by='task', workers=giant)",
     lambda: gantt(frame(), by="task", workers=GIANT)),
    ("lateness_distribution(giant)", lambda: lateness_distribution(GIANT)),
    ("utilisation_plot(frame, 2, freq=giant)",
     lambda: utilisation_plot(frame(), 2, GIANT)),
    ("overrun_comparison(giant)", lambda: overrun_comparison(GIANT)),
    ("overrun_comparison({giant: frame})", lambda: overrun_comparison({GIANT: frame()})),
    ("overrun_comparison({SKIP: giant})",
     lambda: overrun_comparison({OverrunPolicy.SKIP: GIANT})),
    ("mark_wait(giant, run)", lambda: mark_wait(GIANT, frame().iloc[0])),
    ("cluster_frame(giant)", lambda: cluster.cluster_frame(GIANT)),
    ("cluster_counts([giant])", lambda: cluster.cluster_counts([GIANT])),
    ("cluster_timeline(giant)", lambda: cluster_timeline(GIANT)),
    ("fencing_comparison([giant])", lambda: fencing_comparison([GIANT])),
    ("report.summarize(records, schedules={'job': giant})",
     lambda: report.summarize(Simulation().records(), {"job": GIANT})),
]  # fmt: skip


def marked() -> tuple[Any, pd.Series[Any]]:
    """A gantt chart and the row of a run to mark on it."""
    runs = frame()
    return gantt(runs), runs.iloc[0]


GIANT_BUILDS += [
    ("mark_wait(chart, giant)", lambda: mark_wait(marked()[0], GIANT)),
    ("mark_wait(chart, run, by=giant)", lambda: mark_wait(*marked(), by=GIANT)),
]


@pytest.mark.parametrize(("label", "call"), GIANT_BUILDS, ids=[label for label, _ in GIANT_BUILDS])
def test_an_int_too_long_to_print_where_no_number_goes_is_quoted_by_its_size(
    label: str, call: Build
) -> None:
    giant_refused(call)


Verb = Callable[[Runtime], object]
GIANT_VERBS: list[tuple[str, Verb]] = [
    ("schedule(isolation=giant)", lambda rt: register(rt, isolation=GIANT)),
    ("schedule(schedule=giant)", lambda rt: register(rt, "job", lambda: None, GIANT)),
    ("reschedule('kept', giant)", lambda rt: rt.reschedule("kept", GIANT)),
    ("add_listener(giant)", lambda rt: rt.add_listener(GIANT)),
]


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
@pytest.mark.parametrize(("label", "call"), GIANT_VERBS, ids=[label for label, _ in GIANT_VERBS])
def test_an_int_too_long_to_print_given_a_verb_is_quoted_and_changes_nothing(
    kind: str, label: str, call: Verb
) -> None:
    with populated_runtime(kind) as runtime:
        refused_unchanged(runtime, call, GIANT_SHOWN)


@pytest.mark.parametrize("model", ["duration", "fails"])
def test_a_model_that_draws_an_int_too_long_to_print_is_named(model: str) -> None:
    simulation = Simulation(start=T0)
    simulation.schedule("job", FixedRate(60), **{model: lambda rng, attempt: GIANT})
    giant_refused(lambda: simulation.run_for(120))


def test_the_builds_refuse_what_they_are_given_not_a_lost_frame() -> None:
    """The rows above fail for the giant, not for a frame or a chart they could not build."""
    refused_build(lambda: gantt(frame(), by="lane"), "lane")


# -- the views' smaller arguments -------------------------------------------------------

VIEW_ROWS: list[tuple[str, Build, object]] = [
    # A value that was no schedule raised AttributeError ('int' object has no attribute
    # 'next_run') or TypeError at its task's first record; a key that was no id matched
    # nothing, unsaid.
    ("summarize(records, {'job': 60})", lambda: report.summarize([], {"job": 60}),
     Named("got 'job': 60")),
    ("summarize(records, {'job': FixedRate})",
     lambda: report.summarize([], {"job": FixedRate}), Named("got 'job': <class")),
    ("summarize(records, {5: FixedRate(60)})",
     lambda: report.summarize([], {5: FixedRate(60)}), Named("got 5: FixedRate(60)")),
    ("task_summary(frame, {'task-1': 'x'})", lambda: task_summary(frame(), {"task-1": "x"}),
     Named("got 'task-1': 'x'")),
    # Cron text, taken where a task or a decorator takes a schedule, names no zone: read
    # in UTC, its slots an hour from those of a runtime in Berlin, every overrun miscounted.
    ("summarize(records, {'report': '30 2 * * *'})",
     lambda: report.summarize([], {"report": "30 2 * * *"}),
     Named("got 'report': '30 2 * * *' (text: a runtime reads cron text in its tz, so "
           "pass the runtime's schedules(), or CronSchedule('30 2 * * *', tz=...))")),
    # A figure's words, a chart's colours and texts: bare errors of matplotlib or Python.
    ("describe(5)", lambda: describe(5), 5),
    ("task_colours(5)", lambda: task_colours(5), 5),
    ("task_colours('abc')", lambda: task_colours("abc"), "abc"),  # three tasks, a, b, c
    ("task_colours([5])", lambda: task_colours([5]), 5),
    ("gantt(frame, title=5)", lambda: gantt(frame(), title=5), 5),  # drawn as "5"
    ("gantt(frame, title=giant)", lambda: gantt(frame(), title=GIANT), GIANT_SHOWN),
    ("mark_wait(chart, run, text=5)", lambda: mark_wait(*marked(), text=5), 5),
    ("cluster_counts(5)", lambda: cluster.cluster_counts(5), 5),
    ("fencing_comparison(5)", lambda: fencing_comparison(5), 5),
    ("report.percentile(5, 50)", lambda: report.percentile(5, 50), 5),
    ("report.percentile('ab', 50)", lambda: report.percentile("ab", 50), "ab"),
]  # fmt: skip
for value in (INF, -INF, None, "5", True):
    VIEW_ROWS.append((f"seconds_text({value!r})", lambda v=value: tables.seconds_text(v), value))
VIEW_ROWS.append(("seconds_text(giant)", lambda: tables.seconds_text(GIANT), GIANT_SHOWN))


@pytest.mark.parametrize(
    ("label", "call", "bad"), VIEW_ROWS, ids=[label for label, _, _ in VIEW_ROWS]
)
def test_a_views_bad_argument_is_refused_quoting_it(label: str, call: Build, bad: object) -> None:
    refused_build(call, bad)


def test_the_views_still_take_what_they_took() -> None:
    simulation = Simulation(start=T0)
    simulation.schedule("job", FixedRate(60), duration=90, id="job")  # overruns
    simulation.run_for(600)
    (row,) = report.summarize(simulation.records(), simulation.schedules())
    assert row.overruns > 0
    assert task_summary(to_frame(simulation), simulation.schedules())["overruns"].iloc[0] > 0
    assert set(task_colours(("a", "b"))) == {"a", "b"}
    assert [tables.seconds_text(v) for v in (math.nan, 0.25, 351, 7500)] == [
        "—", "0.25 s", "5 min 51 s", "2 h 05 min"
    ]  # fmt: skip
    assert report.percentile([1.0, 2.0, 3.0], 50) == 2.0


# -- a store's get() and delete() ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("verb", ["get", "delete"])
@pytest.mark.parametrize("value", [5, None, ["kept"], b"kept"])
def test_a_stores_get_and_delete_refuse_what_is_no_id_and_delete_nothing(
    tmp_path: Path, kind: str, verb: str, value: object
) -> None:
    """``get(5)`` answered None and ``delete(5)`` deleted nothing, unsaid, where
    ``records(5)`` is refused; the task given by the object holding its id is told so."""
    store = InMemoryTaskStore() if kind == "memory" else SqliteTaskStore(tmp_path / "t.db")
    try:
        scheduler = Scheduler(clock=FakeClock(T0), store=store)
        kept = scheduler.schedule("kept", noop, FixedRate(60), id="kept")
        assert scheduler.shutdown(timeout=5)
        before = store.load_all()
        for given, bad in ((value, value), (kept, Named("pass its .id, 'kept'"))):
            with pytest.raises(ValidationError) as caught:
                getattr(store, verb)(given)
            check_error(caught.value, bad)
            assert f"{verb}() takes a task id (a str)" in str(caught.value)
        assert store.load_all() == before
        assert store.get("kept") is not None and store.get("nope") is None
    finally:
        store.close()
