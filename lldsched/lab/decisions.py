"""The lab's table: every decision, its claim, what switching it off shows, the tests
that catch it, and a short run of the experiment for ``python -m lldsched lab``.

Each ``run`` returns a few lines of text; defaults are sized for a terminal (the
notebook ``notebooks/09-design-lab.ipynb`` draws the same experiments).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = ["DECISIONS", "Decision", "decision"]


class Decision(NamedTuple):
    """One row of the lab.  ``lab_test`` shows the switched-off variant failing;
    ``production_test`` is a test the real runtime passes that the variant would fail
    (for the ``while`` row, the lab's own test of the real timer: no other test injects
    a spurious wake-up)."""

    key: str
    title: str
    claim: str
    switched_off: str
    lab_test: str
    production_test: str
    run: Callable[[], list[str]]

    @property
    def anchor(self) -> str:
        """The notebook section's anchor: ``09-design-lab.ipynb#<anchor>``."""
        return f"lab-{self.key}"


def _wait() -> list[str]:
    from lldsched.lab.timer import measure_polling

    return [
        f"{r.label:>15}: {r.wakeups_per_s:6.0f} wake-ups and {r.cpu_ms_per_s:5.1f} ms CPU "
        f"per idle second; a run due in 20-120 ms starts {r.lateness_ms:6.2f} ms late "
        f"(median; middle half {r.lateness_low_ms:.2f}-{r.lateness_high_ms:.2f})"
        for r in measure_polling()
    ]


def _push() -> list[str]:
    from lldsched.lab.timer import SilentPushScheduler, run_due_now_behind_parked_timer

    real = run_due_now_behind_parked_timer(patience=5.0)
    silent = run_due_now_behind_parked_timer(SilentPushScheduler, patience=0.5)
    return [
        f"push notifies: the task due now ran at once: {real.lateness:g} s late",
        f"silent push:   it waited for the timer parked 12 h out: "
        f"{silent.lateness / 3600:g} h late (fake clock)",
    ]


def _notify_all() -> list[str]:
    from lldsched.lab.shutdown import NotifyOnePool, run_shutdown_with_idle_workers

    real = run_shutdown_with_idle_workers(timeout=5.0)
    one = run_shutdown_with_idle_workers(NotifyOnePool, timeout=0.5)
    return [
        f"notify_all: shutdown stopped every worker ({real.workers_left} left)",
        f"notify:     shutdown gave up after 0.5 s: {one.workers_left} of 4 workers still "
        "asleep beside their sentinels",
    ]


def _while() -> list[str]:
    from lldsched.lab.timer import IfScheduler, run_early_on_spurious_wakeup

    real = run_early_on_spurious_wakeup(patience=0.5)
    broken = run_early_on_spurious_wakeup(IfScheduler, patience=5.0)
    return [
        f"while: a spurious wake-up ran nothing; the task ran {real.lateness:g} s late (on time)",
        f"if:    the spurious wake-up ran it {-broken.lateness:g} s early (fake clock)",
    ]


def _tombstones() -> list[str]:
    from lldsched.lab.entries import measure_cancel_cost

    return [
        f"heap of {c.size:>7,}: tombstone {c.tombstone_us:6.2f} us, "
        f"list.remove + heapify {c.remove_us:9,.0f} us per cancel ({c.ratio:,.0f}x)"
        for c in measure_cancel_cost()
    ]


def _sequence() -> list[str]:
    from lldsched.lab.entries import IdTieScheduler, TaskTieScheduler, run_a_tie

    real, by_task, by_id = run_a_tie(), run_a_tie(TaskTieScheduler), run_a_tie(IdTieScheduler)
    return [
        f"(due, priority, sequence, id): {' '.join(real.order[:5])} ... (first in, first out)",
        f"(due, priority, task):         {by_task.error}",
        f"(due, priority, task_id):      {' '.join(by_id.order[:5])} ... (by id, as a string)",
    ]


def _handoff() -> list[str]:
    from lldsched.lab.handoff import UNBOUNDED, run_a_burst

    bounded, unbounded = run_a_burst(), run_a_burst(UNBOUNDED)
    return [
        f"bounded (16 per worker): {bounded.handed_off:>5,} of 2,000 entries out of the heap; "
        f"a HIGH task ran after {bounded.runs_before_high:,} runs",
        f"unbounded:               {unbounded.handed_off:>5,} of 2,000 entries out of the heap; "
        f"a HIGH task ran after {unbounded.runs_before_high:,} runs",
    ]


def _overrun() -> list[str]:
    from lldsched.lab.overrun import OVERRUN_STRATEGIES, simulate_overrun_day

    lines = []
    for strategy in OVERRUN_STRATEGIES:
        day = simulate_overrun_day(strategy)
        lines.append(
            f"{strategy:>13}: {len(day.job):5,} runs, the job {day.job_late_at_end / 3600:5.1f} h "
            f"behind at the end of the day, up to {day.most_at_once} at once; "
            f"heartbeat up to {day.heartbeat_worst / 3600:4.1f} h late"
        )
    return lines


def _shutdown() -> list[str]:
    from lldsched.lab import shutdown

    lines = []
    for label, variant in [
        ("timer first (real)", shutdown.TimerFirstScheduler),
        ("pool first, real pool", shutdown.PoolFirstScheduler),
        ("timer first, executor-like pool", shutdown.ExecutorTimerFirstScheduler),
        ("pool first, executor-like pool", shutdown.ExecutorPoolFirstScheduler),
    ]:
        out = shutdown.run_shutdown_while_work_falls_due(variant)
        died = "; the timer thread died" if out.timer_died else ""
        hang = "" if out.idle_after else "; wait_idle hangs"
        lines.append(f"{label:>31}: {out.queued} kept, {out.lost} lost{died}{hang}")
    return lines


def _listeners() -> list[str]:
    from lldsched.lab.dispatch import measure_listener_latency

    return [
        f"listener takes {p.delay_ms:g} ms per event: runs start {p.off_lock_ms:6.1f} ms late "
        f"off the lock, {p.under_lock_ms:6.1f} ms under it (worst {p.under_lock_worst_ms:.0f} ms)"
        for p in measure_listener_latency()
    ]


def _wheel() -> list[str]:
    from lldsched.core.duequeue import TaskQueue
    from lldsched.lab.wheel import TimingWheel, compare_wheel_and_heap, pop_order_within_a_tick

    lines = [
        f"{c.size:>9,} timers, wheel over heap: insert "
        f"{c.wheel_insert_us / c.heap_insert_us:4.1f}x, pop {c.wheel_pop_us / c.heap_pop_us:5.2f}x"
        f"  (us per timer: insert {c.heap_insert_us:.1f} "
        f"/ {c.wheel_insert_us:.1f}, pop {c.heap_pop_us:.1f} / {c.wheel_pop_us:.1f}; "
        f"{c.ticks:,} ticks walked)"
        for c in compare_wheel_and_heap()
    ]
    heap, wheel = pop_order_within_a_tick(TaskQueue()), pop_order_within_a_tick(TimingWheel())
    lines.append(f"three timers due together: heap pops {heap}, wheel pops {wheel}")
    return lines


DECISIONS: tuple[Decision, ...] = (
    Decision(
        "wait",
        "Condition.wait(timeout)",
        "The timer sleeps until the head is due (a clock check at most once a minute): "
        "no polling, and no lateness but its own wake-up.",
        "poll every 1 / 10 / 100 ms",
        "tests/test_lab_timer.py::test_a_polling_timer_wakes_while_idle_and_the_real_one_does_not",
        "tests/test_scheduler_timer.py::test_an_idle_scheduler_parks_its_timer_for_at_most_the_bounded_wait",
        _wait,
    ),
    Decision(
        "push",
        "push notifies",
        "A push that makes a new head wakes the timer, so a task due now runs now.",
        "silent push",
        "tests/test_lab_timer.py::test_a_silent_push_leaves_a_task_due_now_behind_the_parked_timer",
        "tests/test_scheduler_timer.py::test_an_earlier_insertion_wakes_a_timer_parked_twelve_hours_out",
        _push,
    ),
    Decision(
        "notify-all",
        "notify_all",
        "When a change matters to every waiter (shutdown), notify_all reaches them all.",
        "notify (one waiter) at shutdown",
        "tests/test_lab_shutdown.py::test_notify_instead_of_notify_all_leaves_workers_asleep_at_shutdown",
        "tests/test_scheduler_shutdown.py::test_shutdown_is_idempotent_and_final",
        _notify_all,
    ),
    Decision(
        "while",
        "re-test in while",
        "A wait can end for any reason; the timer re-tests the clock before it runs anything.",
        "if",
        "tests/test_lab_timer.py::test_an_if_instead_of_while_runs_a_task_early_on_a_spurious_wakeup",
        "tests/test_lab_timer.py::test_the_real_timer_parks_again_after_a_spurious_wakeup",
        _while,
    ),
    Decision(
        "tombstones",
        "tombstones",
        "Cancel marks the entry dead in O(1); removing it from the heap is O(n).",
        "list.remove + heapify",
        "tests/test_lab_entries.py::test_removing_a_cancelled_entry_compares_the_heap_and_a_tombstone_compares_nothing",
        "tests/test_taskqueue.py::test_a_discarded_entry_becomes_a_tombstone_that_is_dropped_when_it_surfaces",
        _tombstones,
    ),
    Decision(
        "sequence",
        "the sequence field",
        "An ever-increasing sequence breaks every tie: the heap never compares tasks.",
        "entries of (due, priority, task)",
        "tests/test_lab_entries.py::test_without_the_sequence_field_a_tie_raises_or_breaks_first_in_first_out",
        "tests/test_scheduler_timer.py::test_priority_breaks_a_tie_and_equal_priorities_keep_arrival_order",
        _sequence,
    ),
    Decision(
        "handoff",
        "bounded hand-off",
        "The timer hands off a few entries; the rest keep their heap order.",
        "unbounded",
        "tests/test_lab_handoff.py::test_an_unbounded_handoff_takes_the_whole_burst_and_high_waits_behind_it",
        "tests/test_pool.py::test_room_is_the_bound_of_the_hand_off_queue",
        _handoff,
    ),
    Decision(
        "overrun",
        "overrun policy",
        "A fixed-rate job that overruns has one entry: its runs never pile up on the workers "
        "(CATCH_UP still falls behind).",
        '"keep queueing" a run per slot',
        "tests/test_lab_overrun.py::test_keep_queueing_piles_up_and_starves_the_heartbeat_and_skip_does_not",
        "tests/test_sim.py::test_fixed_rate_skip_after_an_overrun_resumes_on_the_grid",
        _overrun,
    ),
    Decision(
        "shutdown",
        "shutdown: timer first",
        "Stop the producer before the consumers: nothing due is popped into a closed pool.",
        "pool first",
        "tests/test_lab_shutdown.py::test_stopping_the_pool_before_the_timer_loses_the_work_that_falls_due",
        "tests/test_scheduler_shutdown.py::test_shutdown_stops_the_timer_before_draining_the_pool",
        _shutdown,
    ),
    Decision(
        "listeners",
        "listeners off the lock",
        "Listeners run on their own thread: a slow one delays no run.",
        "a slow listener called under the lock",
        "tests/test_lab_dispatch.py::test_a_listener_under_the_lock_holds_every_run_while_it_blocks",
        "tests/test_listeners.py::test_a_slow_listener_on_a_scheduler_never_blocks_its_workers",
        _listeners,
    ),
    Decision(
        "wheel",
        "heap",
        "A heap gives exact (due, priority, arrival) order at O(log n); a job scheduler keeps it.",
        "hierarchical timing wheel",
        "tests/test_lab_wheel.py::test_the_wheel_keeps_tick_order_but_not_priority_within_a_tick",
        "tests/test_scheduler_timer.py::test_priority_breaks_a_tie_and_equal_priorities_keep_arrival_order",
        _wheel,
    ),
)


def decision(key: str) -> Decision:
    """The decision named ``key``; ``KeyError`` names the keys there are."""
    for row in DECISIONS:
        if row.key == key:
            return row
    raise KeyError(f"no decision {key!r}; the lab has: {', '.join(d.key for d in DECISIONS)}")
