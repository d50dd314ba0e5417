"""A Ctrl-C in the middle of a simulation's verb made between two ``run()`` calls (a notebook
cell's ``sim.pause(...)``): raised by a listener that hears the verb's event, by the
store in one of the verb's writes, or landing between two statements of the verb as a
real SIGINT can (injected with ``sys.settrace`` at every line, as
tests/test_sim_interrupt_anywhere.py injects it in the loop).

What must hold (docs/decisions/simulation.md, "A Ctrl-C in a simulation's verb"): a listener's or a
store write's Ctrl-C reaches the caller once the verb is whole (every step made, every
event published, the rows it could not write written again later); a store's Ctrl-C that
refused a registration or a change of definition leaves nothing changed; any other one
leaves the simulation whole or refusing to move on (``SchedulerStateError`` naming the
verb), never with records silently wrong.  Before, a store's Ctrl-C in a pause or cancel
left the task's coroutine run in flight uncut (recorded ``ok`` at its modelled end), in a
resume, redrive or run now the listeners never heard the verb (on threads too), and a
Ctrl-C landing mid-verb left a resumed task unqueued for good, a redriven one FAILED out
of the dead letter, a row never written and never marked stale, and ``run()`` went on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    TaskStatus,
)
from lldsched.sim import Simulation, fixed
from tests.harness import FailingStore
from tests.interrupting import Interrupter, Interrupting, InterruptingStore, disagreements

T = 1_000_000.0
END = T + 400


async def returns_at_once() -> None:
    pass


def build() -> tuple[Simulation, InterruptingStore, EventLog]:
    """At T + 5: a coroutine task ``c`` with its run in flight (to T + 10), a one-off ``f``
    dead-lettered, a rate ``r`` due at T + 100, and a rate ``p`` paused."""
    store, log = InterruptingStore(), EventLog()
    sim = Simulation(workers=1, start=T, store=store, listeners=[log])
    sim.schedule("c", FixedRate(60), action=returns_at_once, duration=fixed(10), id="c")
    retry = RetryPolicy(max_attempts=1)
    sim.schedule("f", OneTime(delay=1), duration=fixed(1), fails=1.0, retry=retry, id="f")
    sim.schedule("r", FixedRate(100), duration=fixed(1), id="r")
    sim.schedule("p", FixedRate(30), duration=fixed(2), id="p")
    sim.run(T + 5)
    sim.pause("p")
    return sim, store, log


VERBS: dict[str, Callable[[Simulation], object]] = {
    "schedule": lambda sim: sim.schedule("n", FixedRate(50), duration=fixed(1), id="n"),
    "replace": lambda sim: sim.schedule(
        "r", FixedRate(70), duration=fixed(2), id="r", replace_existing=True
    ),
    "reschedule": lambda sim: sim.reschedule("r", FixedRate(40)),
    "modify": lambda sim: sim.modify("c", priority=1, timeout=3),
    "run_now": lambda sim: sim.run_now("r"),
    "pause": lambda sim: sim.pause("c"),
    "resume": lambda sim: sim.resume("p"),
    "cancel": lambda sim: sim.cancel("c"),
    "remove": lambda sim: sim.remove("r"),
    "redrive": lambda sim: sim.redrive("f"),
}
SUBJECT = {"schedule": "n", "replace": "r", "reschedule": "r", "modify": "c", "run_now": "r",
           "pause": "c", "resume": "p", "cancel": "c", "remove": "r", "redrive": "f"}  # fmt: skip


def seen(sim: Simulation) -> list[tuple[str, float, float, str | None]]:
    return [(r.task_id, r.started - T, r.finished - T, r.error) for r in sim.records()]


def heard(log: EventLog, since: int) -> list[tuple[str, str | None, str]]:
    return [
        (e.task_id, None if e.previous is None else e.previous.value, e.status.value)
        for e in log.events[since:]
    ]


def references(verb: str) -> tuple[list[Any], list[Any], list[Any]]:
    """The records of a run to END with the verb made whole, and without it; the events
    the whole verb published."""
    done, _, log = build()
    before = len(log.events)
    VERBS[verb](done)
    events = heard(log, before)
    undone, _, _ = build()
    return seen(done.run(END)), seen(undone.run(END)), events


def not_whole(sim: Simulation, store: InMemoryTaskStore) -> list[str]:
    """What disagrees in ``sim`` (nothing: []): a runnable task not queued, or queued when
    it should not be, at another instant than it says; the dead letter and the FAILED
    tasks; the models and the registry; a row that is not the task's (and not marked
    stale, to be written again)."""
    wrong = disagreements(
        sim._core, sim._queue, sim._queue.entries() + sim._waiting.entries(), store
    )
    core = sim._core
    if core.tasks.keys() != sim._models.keys():
        wrong.append(f"tasks {sorted(core.tasks)}, models {sorted(sim._models)}")
    return wrong


@pytest.mark.parametrize("verb", ["pause", "cancel", "resume", "redrive", "run_now", "remove"])
def test_a_stores_ctrl_c_in_a_verbs_write_comes_once_the_verb_is_whole(verb: str) -> None:
    done, undone, events = references(verb)
    sim, store, log = build()
    before = len(log.events)
    store.armed = SUBJECT[verb]  # its write made, then the Ctrl-C
    with pytest.raises(KeyboardInterrupt, match="raised inside"):
        VERBS[verb](sim)
    assert heard(log, before) == events  # every listener heard the verb
    assert not_whole(sim, store) == []
    assert seen(sim.run(END)) == done != undone  # its coroutine run cut, as the verb's own
    assert sim.shutdown() is True and not_whole(sim, store) == []


@pytest.mark.parametrize("verb", ["schedule", "replace", "reschedule", "modify"])
def test_a_stores_ctrl_c_that_refuses_a_registration_or_a_change_changes_nothing(
    verb: str,
) -> None:
    """The save a registration or a change of definition makes first refuses it, the core
    puts everything back: the simulation is whole, not torn, and runs on as without it."""
    _, undone, _ = references(verb)
    sim, store, log = build()
    before = len(log.events)
    store.armed, store.written = SUBJECT[verb], False
    with pytest.raises(KeyboardInterrupt, match="raised inside save"):
        VERBS[verb](sim)
    assert heard(log, before) == [] and not_whole(sim, store) == []
    assert seen(sim.run(END)) == undone


def test_a_stores_ctrl_c_once_a_registrations_row_is_written_leaves_no_row_behind() -> None:
    """The Ctrl-C lands once the new task's row is written (in its commit's return, say):
    the registration is refused all the same, and that row, marked stale, is deleted by
    the next write, so the store never keeps a task nothing registered (restored at the
    next start)."""
    _, undone, _ = references("schedule")
    sim, store, log = build()
    before = len(log.events)
    store.armed = SUBJECT["schedule"]  # its row written, then the Ctrl-C
    with pytest.raises(KeyboardInterrupt, match="raised inside save"):
        VERBS["schedule"](sim)
    assert heard(log, before) == [] and not_whole(sim, store) == []
    assert seen(sim.run(END)) == undone
    assert sim.shutdown() is True and store.get("n") is None


@pytest.mark.parametrize("verb", ["pause", "resume", "redrive", "run_now"])
def test_a_listeners_ctrl_c_on_a_verbs_event_comes_once_the_verb_is_whole(verb: str) -> None:
    done, _, events = references(verb)

    def interrupts(event: object) -> None:
        raise KeyboardInterrupt("Ctrl-C")

    sim, store, log = build()
    sim.add_listener(interrupts)
    before = len(log.events)
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        VERBS[verb](sim)
    sim.remove_listener(interrupts)
    assert heard(log, before) == events and not_whole(sim, store) == []
    assert seen(sim.run(END)) == done


def interrupted(verb: str, at: int | None) -> tuple[Simulation, InMemoryTaskStore, Interrupter]:
    sim, store, _ = build()
    interrupter = Interrupter(at)
    sys.settrace(interrupter)
    try:
        VERBS[verb](sim)
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return sim, store, interrupter


@pytest.mark.parametrize("verb", list(VERBS))
def test_a_ctrl_c_anywhere_in_a_verb_leaves_it_whole_or_refusing_to_move_on(verb: str) -> None:
    done, undone, _ = references(verb)
    _, _, counted = interrupted(verb, None)
    outcomes, refused = [], 0
    for at in range(1, counted.lines + 1):
        sim, store, interrupter = interrupted(verb, at)
        if sim._interrupts.torn_at is not None:
            refused += 1
            with pytest.raises(SchedulerStateError) as refusal:
                sim.run(END)
            words = f"interrupt (KeyboardInterrupt: Ctrl-C at {interrupter.where})"
            assert words in str(refusal.value)
            assert f"in the middle of its verb {verb.replace('replace', 'schedule')}" in str(
                refusal.value
            )
            sim.records(), sim.metrics(), sim.tasks()  # the reads still answer
            assert sim.shutdown() is False
            continue
        wrong = not_whole(sim, store)
        records = seen(sim.run(END))
        outcomes.append((interrupter.where, wrong, records in (done, undone)))
    assert [outcome for outcome in outcomes if outcome[1:] != ([], True)] == []
    assert refused  # (the places that tore it before)


@pytest.mark.parametrize("verb", ["resume", "run_now"])
def test_a_stores_ctrl_c_in_resume_or_run_now_is_heard_on_threads_too(verb: str) -> None:
    """The same rule on the threaded runtime (the core's, ``verb_written``): its listeners
    never heard a resume or a run now whose write raised a Ctrl-C."""
    store, log = InterruptingStore(), EventLog()
    scheduler = Scheduler(workers=1, store=store, listeners=[log])
    try:
        scheduler.schedule("r", returns_at_once, OneTime(delay=3600), id="r")
        if verb == "resume":
            scheduler.pause("r")
        scheduler.start()
        assert scheduler.wait_idle(timeout=10)
        before = len(log.events)
        store.armed = "r"
        with pytest.raises(KeyboardInterrupt, match="raised inside save"):
            getattr(scheduler, verb)("r")
        assert scheduler.wait_idle(timeout=10)
        previous = "paused" if verb == "resume" else "scheduled"
        assert heard(log, before)[0] == ("r", previous, "scheduled")  # (then its run, now)
    finally:
        scheduler.shutdown()


class OutageThenCtrlC(Interrupting, FailingStore):
    """Writes fail while ``down`` (an outage); the first save of task ``armed`` then
    raises ``KeyboardInterrupt`` once written."""


def test_a_stores_ctrl_c_in_the_shutdowns_rewrite_after_a_verb_comes_from_the_shutdown() -> None:
    """A store's Ctrl-C outside any verb and any ``run()`` (here in the shutdown's
    rewrite of the rows an outage left stale) is raised at once, also after a verb was
    made between two runs: the verb collects the store's interrupts while it runs and
    hands that back as it ends.  Left collected, the shutdown returned True, the Ctrl-C
    unheard, and the next verb raised it."""
    store = OutageThenCtrlC()
    sim = Simulation(workers=1, start=T, store=store)
    sim.schedule("r", FixedRate(100), duration=fixed(1), id="r")
    store.down = True
    assert sim.pause("r") is True  # its row's write fails: left stale
    store.down, store.armed = False, "r"
    with pytest.raises(KeyboardInterrupt, match="raised inside save"):
        sim.shutdown()
    row = store.get("r")
    assert row is not None and row.status is TaskStatus.PAUSED  # written, then the Ctrl-C
    assert sim.cancel("r") is True  # nothing held back for a later verb
    assert sim.shutdown() is True


def test_of_two_listeners_ctrl_c_on_a_verbs_event_the_first_is_raised() -> None:
    """Each listener hears the event, and the first Ctrl-C is the one raised, once the
    verb is whole (as inside ``run()``)."""

    def interrupting(text: str) -> Callable[[object], None]:
        def listener(event: object) -> None:
            if getattr(event, "status", None) is TaskStatus.PAUSED:
                raise KeyboardInterrupt(text)

        return listener

    sim = Simulation(workers=1, start=T, listeners=[interrupting("first"), interrupting("second")])
    sim.schedule("r", FixedRate(100), duration=fixed(1), id="r")
    with pytest.raises(KeyboardInterrupt, match="first"):
        sim.pause("r")
    assert sim.task("r").status is TaskStatus.PAUSED
    assert sim.resume("r") is True  # nothing held back for a later verb
