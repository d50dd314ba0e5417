"""ControlPanel over a real Scheduler: rows follow events from worker threads, buttons act on the
scheduler, bursts of events coalesce into one refresh, and a closed panel hears nothing."""

from __future__ import annotations

import asyncio
import html
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from unittest.mock import patch
from zoneinfo import ZoneInfo

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    RetryPolicy,
    TaskEvent,
    TaskStatus,
    ValidationError,
)
from lldsched.sim import Simulation
from lldsched.views.panel import _Row
from lldsched.views.widgetkit import when as _when
from lldsched.views.widgets import COLUMNS, MAX_ROWS, ControlPanel
from tests.conftest import T0, SchedulerFactory, settle
from tests.test_metrics import BreakingClock
from tests.waits import wait_until

LAST_INSTANT = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


class QueuedLoop:
    """Stands in for the kernel's event loop: callbacks wait until the test runs them."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], object]] = []

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None:
        self.callbacks.append(callback)

    def run_pending(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


def boom() -> None:
    raise RuntimeError("disk is full")


def test_the_panel_shows_a_row_per_task_with_every_column(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    assert list(panel.rows[0]) == list(COLUMNS)
    assert panel.row(tick.id) == {
        "task": "tick", "status": "scheduled", "next run": "2026-01-05 09:00:30",
        "runs": "0", "ok": "0", "failed": "0", "last error": "",
    }  # fmt: skip
    panel.close()


def test_events_from_worker_threads_update_the_rows(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    panel = ControlPanel(scheduler, loop=None)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60))
    bad = scheduler.schedule("bad", boom, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    assert panel.row(tick.id)["runs"] == "1" and panel.row(tick.id)["next run"].endswith("09:01:00")
    assert panel.row(bad.id)["status"] == "failed"
    assert panel.row(bad.id)["last error"] == "RuntimeError: disk is full"
    clock.advance(60)
    settle(scheduler)
    assert panel.row(tick.id)["runs"] == "2" and panel.row(tick.id)["ok"] == "2"
    panel.close()


def test_buttons_pause_resume_cancel_and_redrive_the_scheduler_and_the_rows_follow(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    bad = scheduler.schedule("bad", boom, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    panel = ControlPanel(scheduler, loop=None)
    assert panel.button(tick.id, "resume").disabled and not panel.button(tick.id, "pause").disabled
    panel.button(tick.id, "pause").click()
    assert tick.status is TaskStatus.PAUSED and panel.row(tick.id)["status"] == "paused"
    assert panel.button(tick.id, "pause").disabled and not panel.button(tick.id, "resume").disabled
    clock.advance(60)
    settle(scheduler)
    assert panel.row(tick.id)["runs"] == "0"  # paused through its slot
    panel.button(tick.id, "resume").click()
    settle(scheduler)
    assert panel.row(tick.id)["runs"] == "1" and panel.row(tick.id)["status"] == "scheduled"
    assert panel.button(bad.id, "redrive").layout.visibility == "visible"  # for a dead task
    # hidden, not removed: it keeps its room, so the controls never shift
    assert panel.button(tick.id, "redrive").layout.visibility == "hidden"
    panel.button(bad.id, "redrive").click()
    settle(scheduler)
    assert panel.row(bad.id)["runs"] == "2" and scheduler.dead_letter() == [bad.id]
    panel.button(tick.id, "cancel").click()
    assert tick.status is TaskStatus.CANCELLED and panel.row(tick.id)["status"] == "cancelled"
    assert panel.button(tick.id, "cancel").disabled
    assert panel.message.value == "cancel tick: cancelled; no further run"
    panel.close()


def test_redrive_says_queued_again_at_once_and_then_that_the_re_run_failed_again(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # Before, the message was "redrive bad: done" whatever the re-run did.
    gate = threading.Event()

    def boom_when_let() -> None:
        gate.wait(10)
        boom()

    scheduler = make_scheduler(clock=clock)
    gate.set()
    bad = scheduler.schedule("bad", boom_when_let, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    gate.clear()
    panel = ControlPanel(scheduler, loop=None)
    try:
        panel.button(bad.id, "redrive").click()  # returns while the re-run waits at the gate
        assert panel.message.value == (
            "redrive bad: queued again, due now; its outcome shows here when it ends"
        )
    finally:
        gate.set()
    settle(scheduler)
    assert panel.message.value == (
        "redrive bad: re-driven, and the re-run failed again (RuntimeError: disk is full); "
        "back in the dead letter"
    )
    panel.close()


def test_redrive_says_when_the_re_run_succeeded(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    calls = []

    def fails_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            boom()

    scheduler = make_scheduler(clock=clock)
    flaky = scheduler.schedule("flaky", fails_once, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    panel = ControlPanel(scheduler, loop=None)
    panel.button(flaky.id, "redrive").click()
    settle(scheduler)
    assert panel.message.value == "redrive flaky: re-driven, and the re-run succeeded"
    assert flaky.status is TaskStatus.SUCCEEDED
    panel.close()


def test_redrive_follows_the_retries_of_the_re_run_to_its_end(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    retry = RetryPolicy(max_attempts=2, initial_backoff=30)
    bad = scheduler.schedule("bad", boom, OneTime(delay=0), retry=retry)
    settle(scheduler)
    clock.advance(30)
    settle(scheduler)
    assert bad.status is TaskStatus.FAILED
    panel = ControlPanel(scheduler, loop=None)
    panel.button(bad.id, "redrive").click()
    settle(scheduler)
    assert bad.status is TaskStatus.RETRYING
    assert panel.message.value == (
        "redrive bad: re-driven, the re-run failed (RuntimeError: disk is full); "
        "retry due 2026-01-05 09:01:00"
    )
    clock.advance(30)
    settle(scheduler)
    assert panel.message.value.startswith("redrive bad: re-driven, and the re-run failed again")
    panel.close()


def test_pause_and_cancel_say_what_becomes_of_the_run_in_flight(
    make_scheduler: SchedulerFactory,
) -> None:
    # Before, every press on a running task said "its run in flight finishes", though the
    # threaded scheduler kills a process-isolated run and cancels a coroutine run.
    gate = threading.Event()
    log = EventLog()

    def on_a_thread() -> None:
        gate.wait(10)

    async def on_the_loop() -> None:
        await asyncio.sleep(30)

    scheduler = make_scheduler(listeners=[log])
    retry = RetryPolicy.never()
    thread = scheduler.schedule("thread", on_a_thread, OneTime(delay=0), retry=retry)
    loop = scheduler.schedule("loop", on_the_loop, OneTime(delay=0), retry=retry)
    child = scheduler.schedule(
        "child", "time:sleep", OneTime(delay=0), args=[30], isolation="process", retry=retry
    )
    running = {thread.id, loop.id, child.id}

    def all_running(_event: TaskEvent) -> bool:
        return all(scheduler.task(task_id).running for task_id in running)

    assert log.wait_for(all_running, timeout=5)
    panel = ControlPanel(scheduler, loop=None)
    panel.button(thread.id, "pause").click()
    assert panel.message.value == (
        "pause thread: paused; its run in flight finishes, nothing runs until resume"
    )
    panel.button(loop.id, "pause").click()
    assert panel.message.value == (
        "pause loop: paused; its run in flight is cancelled, nothing runs until resume"
    )
    panel.button(child.id, "cancel").click()
    assert (
        panel.message.value
        == "cancel child: cancelled; its run in flight is killed, no further run"
    )
    gate.set()
    settle(scheduler)
    assert child.history[-1].error is not None and "task cancelled" in child.history[-1].error
    panel.close()


def test_a_simulated_run_in_flight_finishes_whatever_its_isolation() -> None:
    sim = Simulation(workers=1, start=datetime(2026, 1, 5, 9, tzinfo=UTC))
    child = sim.schedule("child", OneTime(delay=0), duration=60, isolation="process")
    sim.step()  # the run starts
    assert child.running
    panel = ControlPanel(sim, loop=None)
    panel.button(child.id, "pause").click()
    assert panel.message.value == (
        "pause child: paused; its run in flight finishes, nothing runs until resume"
    )
    panel.close()


def test_a_later_press_replaces_the_redrive_s_message_and_its_outcome_is_not_said(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    bad = scheduler.schedule("bad", boom, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    loop = QueuedLoop()
    panel = ControlPanel(scheduler, loop=loop)
    panel.button(bad.id, "redrive").click()
    settle(scheduler)  # the re-run failed; the refresh waits for the kernel loop
    panel.button(tick.id, "pause").click()
    loop.run_pending()
    assert panel.row(bad.id)["runs"] == "2"  # the refresh ran...
    assert panel.message.value == "pause tick: paused; nothing runs until resume"  # ...silently
    panel.close()


def test_a_press_that_changes_nothing_says_the_status_that_made_it_a_no_op(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    panel._press(tick.id, "resume")  # the button is disabled; a second click races it
    assert panel.message.value == "resume tick: nothing to do, it is scheduled"
    panel.button(tick.id, "pause").click()
    panel.button(tick.id, "resume").click()
    assert panel.message.value == "resume tick: resumed; next run 2026-01-05 09:00:30"
    panel.close()


def test_a_burst_of_events_coalesces_into_one_refresh_on_the_kernel_loop(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    loop = QueuedLoop()
    panel = ControlPanel(scheduler, loop=loop)
    tasks = [scheduler.schedule(f"t{n}", lambda: None, OneTime(delay=0)) for n in range(30)]
    settle(scheduler)  # 90 events delivered; none touched a widget yet
    assert len(loop.callbacks) == 1 and panel.refreshes == 1
    assert panel.rows == []
    loop.run_pending()
    assert panel.refreshes == 2
    assert [row["status"] for row in panel.rows] == ["succeeded"] * 30
    assert {row["task"] for row in panel.rows} == {task.name for task in tasks}
    panel.close()


def test_a_closed_panel_receives_nothing(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60))
    settle(scheduler)
    panel = ControlPanel(scheduler, loop=None)
    refreshes = panel.refreshes
    panel.close()
    assert panel.closed and scheduler.remove_listener(panel._on_event) is False
    clock.advance(60)
    settle(scheduler)
    assert tick.run_count == 2 and panel.refreshes == refreshes
    panel.close()  # idempotent


def test_a_button_on_a_shut_down_scheduler_reports_instead_of_raising(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    panel.button(tick.id, "pause").click()
    scheduler.shutdown()
    panel.button(tick.id, "resume").click()
    assert html.unescape(panel.message.value) == (  # named as its row names it
        f"resume tick: cannot resume '{tick.id}': the scheduler is shut down"
    )
    assert tick.status is TaskStatus.PAUSED
    panel.close()


def test_a_pause_on_a_shut_down_scheduler_says_nothing_runs_again_not_until_resume(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """Pause is taken after shutdown (it only keeps the books), resume is refused: the
    press said "nothing runs until resume", which a resume then contradicted."""
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    scheduler.shutdown()
    panel.button(tick.id, "pause").click()
    said = html.unescape(panel.message.value)
    assert tick.status is TaskStatus.PAUSED and "until resume" not in said
    assert said == (
        "pause tick: paused; the scheduler is shut down: nothing runs again, and resume is refused"
    )
    panel.button(tick.id, "resume").click()  # which the message said
    assert "the scheduler is shut down" in panel.message.value
    assert tick.status is TaskStatus.PAUSED
    panel.close()


def test_a_pause_on_a_shut_down_simulation_names_the_simulation_not_a_scheduler() -> None:
    """The panel over a simulation said "the scheduler is shut down", naming a runtime the
    user never built; the refusal of the resume after it names the simulation."""
    sim = Simulation(workers=1, start=datetime(2026, 1, 5, 9, tzinfo=UTC))
    tick = sim.schedule("tick", FixedRate(60, start_delay=30), duration=1)
    panel = ControlPanel(sim, loop=None)
    sim.shutdown()
    panel.button(tick.id, "pause").click()
    assert html.unescape(panel.message.value) == (
        "pause tick: paused; the simulation is shut down: nothing runs again, and resume is refused"
    )
    panel.button(tick.id, "resume").click()
    assert "the simulation is shut down" in html.unescape(panel.message.value)
    assert tick.status is TaskStatus.PAUSED
    panel.close()


def test_a_pause_resume_or_redrive_on_a_scheduler_whose_timer_died_says_so_and_what_to_do(
    make_scheduler: SchedulerFactory,
) -> None:
    """A scheduler whose timer thread died takes a pause, a resume and a redrive (they
    keep the books) and dispatches nothing: the pause said "nothing runs until resume",
    the resume a next run that never comes, and the redrive that the re-run's outcome
    would show."""
    clock = BreakingClock(T0)
    scheduler = make_scheduler(clock=clock)
    bad = scheduler.schedule("bad", boom, OneTime(delay=0), retry=RetryPolicy.never())
    wait_until(lambda: scheduler.dead_letter() == [bad.id], timeout=5, what="the dead letter")
    clock.broken = True
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    wait_until(lambda: scheduler.metrics().state == "dead", timeout=5, what="the timer's death")
    panel = ControlPanel(scheduler, loop=None)
    dead = (
        "the scheduler's timer thread died (its traceback is in the log, 'the timer thread "
        "died'): nothing runs again, resume included; shutdown() it and build a new "
        "Scheduler (a durable store keeps its tasks)"
    )
    panel.button(tick.id, "pause").click()
    assert tick.status is TaskStatus.PAUSED
    assert html.unescape(panel.message.value) == f"pause tick: paused; {dead}"
    panel.button(tick.id, "resume").click()
    assert tick.status is TaskStatus.SCHEDULED
    assert html.unescape(panel.message.value) == f"resume tick: resumed, yet {dead}"
    panel.button(bad.id, "redrive").click()
    assert bad.status is TaskStatus.SCHEDULED
    assert html.unescape(panel.message.value) == f"redrive bad: queued again, yet {dead}"
    panel.close()


def test_a_cancel_that_retires_the_task_at_once_says_what_it_did_and_the_row_goes(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    """With retain_finished=0 a cancelled task leaves the registry as the verb returns:
    the press read it again and raised TaskRetiredError in the button's callback (a
    traceback in the kernel's log, and no word under the table)."""
    scheduler = make_scheduler(clock=clock, retain_finished=0)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    keep = scheduler.schedule("keep", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    panel.button(tick.id, "cancel").click()
    assert panel.message.value == "cancel tick: cancelled; no further run"
    assert [row["task"] for row in panel.rows] == ["keep"]
    assert keep.status is TaskStatus.SCHEDULED
    panel.close()


def test_without_ipywidgets_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    from lldsched.views.widgets import require_ipywidgets

    with pytest.raises(ImportError, match=r"pip install 'lldsched\[views\]'"):
        require_ipywidgets()


def test_where_widgets_cannot_render_the_panel_shows_its_table_as_text(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None)
    text = panel._repr_mimebundle_()["text/plain"]
    assert text.splitlines() == [
        "task  status     next run (UTC)       runs  ok  not ok  last error",
        "tick  scheduled  2026-01-05 09:00:30  0     0   0",
    ]
    assert str(panel) == text  # print(panel)
    panel.close()


def test_the_next_run_column_names_its_zone_and_shows_times_in_it(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    tick = scheduler.schedule("tick", lambda: None, FixedRate(60, start_delay=30))
    panel = ControlPanel(scheduler, loop=None, tz="Europe/Berlin")
    headers = [child.value for child in panel._grid.children[: len(panel._header)]]
    assert "<b>next run (Europe/Berlin)</b>" in headers
    assert panel.row(tick.id)["next run"] == "2026-01-05 10:00:30 CET"  # 09:00:30 UTC
    assert panel.to_text().splitlines()[0].startswith("task  status     next run (Europe/Berlin)")


def test_the_two_half_past_two_of_a_night_the_clocks_go_back_read_apart() -> None:
    # 2026-10-25 in Berlin: 02:30 CEST (00:30 UTC), then 02:30 CET (01:30 UTC).
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC).timestamp()
    berlin = ZoneInfo("Europe/Berlin")
    assert [_when(at, berlin) for at in (first, first + 3600)] == [
        "2026-10-25 02:30:00 CEST", "2026-10-25 02:30:00 CET",
    ]  # fmt: skip
    assert _when(first, ZoneInfo("UTC")) == "2026-10-25 00:30:00"


def test_a_task_due_after_year_9999_shows_so_instead_of_breaking_the_table() -> None:
    """A fixed rate at the end of year 9999 comes due past it, where no ``datetime``
    goes: the panel raised ``OverflowError`` building its row (and so did every redraw)."""
    sim = Simulation(workers=1, start=datetime(9999, 12, 31, 22, tzinfo=UTC))
    task = sim.schedule("tick", FixedRate(7200), duration=1.0)
    sim.run_for(3600)
    assert task.next_run_at is not None and task.next_run_at > LAST_INSTANT
    for tz, shown in (("UTC", "after 9999"), ("Asia/Tokyo", "after 9999")):
        panel = ControlPanel(sim, loop=None, tz=tz)
        assert panel.row(task.id)["next run"] == shown
        assert shown in panel.to_text()
        panel.close()
    # An instant of 9999 that a zone east of UTC writes in year 10000 reads so too.
    assert _when(LAST_INSTANT, ZoneInfo("Asia/Tokyo")) == "after 9999"
    assert _when(LAST_INSTANT, ZoneInfo("UTC")) == "9999-12-31 23:59:59"
    first = datetime(1, 1, 1, tzinfo=UTC).timestamp()
    assert _when(first - 1, ZoneInfo("UTC")) == "before 0001"  # the other end alike


def test_a_task_s_name_and_error_show_as_text_never_as_markup(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # ipywidgets' HTML widget sets its value as markup: an error text quoting a web page
    # ran its script in the notebook before.
    def quoting() -> None:
        raise RuntimeError("<img src=x onerror=alert(1)>")

    scheduler = make_scheduler(clock=clock)
    bad = scheduler.schedule("<b>bad</b>", quoting, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    panel = ControlPanel(scheduler, loop=None)
    panel.button(bad.id, "redrive").click()
    settle(scheduler)
    assert panel.message.value == (
        "redrive &lt;b&gt;bad&lt;/b&gt;: re-driven, and the re-run failed again "
        "(RuntimeError: &lt;img src=x onerror=alert(1)&gt;); back in the dead letter"
    )
    panel.say("run until '<script>'")
    assert panel.message.value == "run until '&lt;script&gt;'"
    panel.close()


def service(tasks: int) -> Simulation:
    sim = Simulation(workers=4, start=datetime(2026, 1, 5, tzinfo=UTC))
    for k in range(tasks):
        sim.schedule(f"{('billing', 'search', 'audit')[k % 3]}-{k:03d}", FixedRate(60 + k))
    return sim


def test_a_panel_of_300_tasks_shows_50_rows_and_a_box_that_finds_the_others() -> None:
    # 300 rows were 2,400 widgets: ten seconds before the panel showed, and a wall.
    sim = service(300)
    panel = ControlPanel(sim, loop=None)
    ids = [task.id for task in sim.tasks()]
    assert [row["task"] for row in panel.rows] == [task.name for task in sim.tasks()[:MAX_ROWS]]
    assert len(panel._grid.children) == len(panel._header) * (MAX_ROWS + 1)
    assert panel.find.layout.display != "none"
    assert panel.note.value == (
        "50 of 300 tasks shown (the first registered): type part of a name to find others"
    )
    with pytest.raises(ValidationError, match=f"'{ids[200]}' is not shown"):
        panel.row(ids[200])
    panel.find.value = "billing-2"  # 201, 204, ..., 297 and nothing else
    shown = [row["task"] for row in panel.rows]
    assert shown == [f"billing-{k:03d}" for k in range(201, 300, 3)]
    assert panel.note.value == "33 of 300 tasks match 'billing-2'"
    assert panel.row(ids[201])["task"] == "billing-201"
    assert panel.to_text().splitlines()[-1] == "33 of 300 tasks match 'billing-2'"
    panel.find.value = "no such task"
    assert panel.rows == [] and panel.note.value == "0 of 300 tasks match 'no such task'"
    panel.close()


def test_the_find_box_applies_its_text_on_enter_and_says_so_where_the_page_shows_it() -> None:
    panel = ControlPanel(service(300), loop=None)
    # Enter (or leaving the box) sends the value once, not a refresh per keystroke.
    assert panel.find.continuous_update is False
    refreshes = panel.refreshes
    panel.find.set_state({"value": "audit-29"})  # the comm update Enter sends
    assert [row["task"] for row in panel.rows] == [
        "audit-290",
        "audit-293",
        "audit-296",
        "audit-299",
    ]
    assert panel.refreshes == refreshes + 1
    # ipywidgets 8.1 renders a Text's tooltip nowhere once it has a description
    # (jupyter-widgets/ipywidgets#3964): the hint is in its placeholder, which it shows.
    assert panel.find.description == "find"
    assert "Enter" in panel.find.placeholder
    panel.close()


def test_a_panel_of_few_tasks_hides_the_box_and_max_rows_is_checked() -> None:
    panel = ControlPanel(service(3), loop=None)
    assert len(panel.rows) == 3 and panel.find.layout.display == "none"
    assert panel.note.value == ""
    everything = ControlPanel(service(60), loop=None, max_rows=None)
    assert len(everything.rows) == 60 and everything.find.layout.display == "none"
    for bad in (0, 2.5):
        with pytest.raises(ValidationError, match=f"max_rows must be an int >= 1, got {bad}"):
            ControlPanel(service(1), loop=None, max_rows=bad)  # type: ignore[arg-type]


def test_what_is_no_runtime_loop_task_or_verb_is_refused_naming_it() -> None:
    # Before: ControlPanel(None) raised AttributeError ('NoneType' object has no attribute
    # 'tasks'); loop=5 was taken, and its first event raised AttributeError in the
    # listener; button() of a task not shown or of another verb raised KeyError, and
    # refresh(5) TypeError, where row() names the task.
    for source in (None, 42, [Simulation()]):
        with pytest.raises(ValidationError, match=r"ControlPanel takes a runtime .*, got "):
            ControlPanel(source, loop=None)  # type: ignore[arg-type]
    sim = Simulation()
    with pytest.raises(ValidationError, match='loop must be "auto", None or an event loop, got 5'):
        ControlPanel(sim, loop=5)  # type: ignore[arg-type]
    # Typed Literal["auto"]: any other text is refused as it always was, not taken for it.
    with pytest.raises(ValidationError, match=r"loop must be .* got 'automatic'"):
        ControlPanel(sim, loop="automatic")  # type: ignore[arg-type]
    assert sim._callbacks == []
    panel = ControlPanel(service(2), loop=None)
    task_id = panel._source.tasks()[0].id
    with pytest.raises(ValidationError, match="'nope' is not shown: no such task"):
        panel.button("nope", "pause")
    with pytest.raises(ValidationError, match=r"verb must be one of \['pause', .* got 'stop'"):
        panel.button(task_id, "stop")
    for bad in (5, task_id):
        with pytest.raises(ValidationError, match=f"task_ids must be task ids .* got {bad!r}"):
            panel.refresh(bad)  # type: ignore[arg-type]
    assert panel.button(task_id, "pause").description == "pause"
    panel.close()


def test_a_row_the_find_box_hides_leaves_the_grid_before_its_widgets_close() -> None:
    # Closed while still in the grid, a row's cells vanished from the browser at once,
    # and the cells after them shifted into the wrong columns (seen in Voila).
    panel = ControlPanel(service(300), loop=None)
    closed_in_grid: list[bool] = []
    close = _Row.close

    def checked(row: _Row) -> None:
        closed_in_grid.append(any(c in panel._grid.children for c in row.children))
        close(row)

    with patch.object(_Row, "close", checked):
        panel.find.value = "audit-0"
    # Of the first 50 rows, the 16 audits (audit-002 ... audit-047) stay; 34 go.
    assert len(panel.rows) == 33 and len(closed_in_grid) == 34
    assert not any(closed_in_grid)
    panel.close()


def test_a_long_last_error_is_cut_on_its_row_with_the_whole_text_a_click_away(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    # ipywidgets 8.1 renders a Label's (or an HTML's) tooltip nowhere
    # (jupyter-widgets/ipywidgets#3703): the whole text used to be there only, unseen.
    whole = "OSError: disk is full: 0 bytes left on /srv/exports for <daily-summary>.csv"

    def full() -> None:
        raise OSError(whole.removeprefix("OSError: "))

    scheduler = make_scheduler(clock=clock)
    bad = scheduler.schedule("bad", full, OneTime(delay=0), retry=RetryPolicy.never())
    short = scheduler.schedule("short", boom, OneTime(delay=0), retry=RetryPolicy.never())
    settle(scheduler)
    panel = ControlPanel(scheduler, loop=None)
    cut = whole[:59] + "…"
    assert panel.row(bad.id)["last error"] == cut  # the table as text: the cut line
    cell = panel._rows[bad.id].cells["last error"].value
    # A native disclosure (a <details>: Enter or a click opens it; a screen reader says
    # "collapsed"): the cut line as its summary, the whole text inside; escaped, as
    # every text the panel shows (an error may quote markup).
    assert cell.startswith("<details") and cell.endswith("</details>")
    summary, inside = cell.split("</summary>")
    assert summary.endswith(">" + html.escape(cut, quote=False))
    assert html.escape(whole, quote=False) in inside and "<daily" not in cell
    assert panel._rows[short.id].cells["last error"].value == "RuntimeError: disk is full"
    assert panel.row(short.id)["last error"] == "RuntimeError: disk is full"
    panel.close()


def test_the_failed_column_is_headed_for_what_it_counts_every_run_not_ok() -> None:
    """The row's ``failed`` is the task's ``failure_count``: a run that failed, timed out
    or was cancelled, where ``task_summary``'s ``failed`` counts only the errors.  Its
    heading says so ("not ok", and on hover "failed, timed out or cancelled"), as ``tasks
    show`` says "2 failed, timed out or cancelled"; before, both were headed "failed",
    for 4 against 2 here."""
    from lldsched.views.frames import task_summary, to_frame

    sim = Simulation(workers=1, start=datetime(2026, 1, 5, 9, tzinfo=UTC))
    flaky = sim.schedule("flaky", FixedRate(60), duration=10, timeout=5, retry=RetryPolicy.never())
    sim.run_for(60 * 3 + 30)  # four runs, each timed out
    panel = ControlPanel(sim, loop=None)
    summary = task_summary(to_frame(sim)).loc[flaky.id]
    row = panel.row(flaky.id)
    assert row["runs"] == "4" and row["ok"] == "0"
    assert row["failed"] == str(summary.failed + summary.timed_out + summary.cancelled) == "4"
    assert summary.failed == 0  # the summary's failed: errors only
    headers = [child.value for child in panel._grid.children[: len(panel._header)]]
    tip = "failed, timed out or cancelled: every run that did not succeed"
    assert f'<b title="{tip}">not ok</b>' in headers
    assert "failed" not in panel.to_text().splitlines()[0]
    panel.close()
