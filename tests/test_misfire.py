"""Misfire policies, decided against hand-computed slots (no scheduler, no store)."""

from __future__ import annotations

import logging

import pytest

from lldsched import (
    CronSchedule,
    FakeClock,
    FixedDelay,
    FixedRate,
    Misfire,
    MisfirePolicy,
    OneTime,
    Scheduler,
    Window,
)
from lldsched.core.misfires.plan import (
    COALESCED,
    MAX_SLOTS,
    MISSED,
    Plan,
    first_after,
    passed_slots,
    plan,
    plan_and_since,
    plan_as_cut,
    plan_put_off,
)
from lldsched.errors import ValidationError
from lldsched.logs import instant_text
from lldsched.model import ExecutionRecord
from lldsched.schedules.catchup import SCHEDULE_DECIDES, CatchUp
from tests import jobs
from tests.conftest import T0, settle

HOUR = 3600.0
# An hourly job that last ran at 09:00; the process died at 09:30 and is back at 12:30.
# The slots that passed: 10:00, 11:00, 12:00.  The next one: 13:00.
TEN, ELEVEN, NOON, ONE = T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR, T0 + 4 * HOUR
BACK = T0 + 3.5 * HOUR
HOURLY = [FixedRate(HOUR, start_delay=HOUR), CronSchedule("0 * * * *")]


@pytest.mark.parametrize("schedule", HOURLY, ids=["fixed-rate", "cron"])
def test_down_three_hours_run_once_runs_the_latest_slot_and_coalesces_the_rest(
    schedule: FixedRate | CronSchedule,
) -> None:
    decided = plan(schedule, TEN, BACK, MisfirePolicy(Misfire.RUN_ONCE))
    assert decided.runs == [NOON]
    assert decided.decisions == [(TEN, COALESCED, None), (ELEVEN, COALESCED, None)]
    assert decided.resume is SCHEDULE_DECIDES and decided.misfired


@pytest.mark.parametrize("schedule", HOURLY, ids=["fixed-rate", "cron"])
def test_down_three_hours_run_all_runs_the_three_slots(schedule: FixedRate | CronSchedule) -> None:
    decided = plan(schedule, TEN, BACK, MisfirePolicy(Misfire.RUN_ALL))
    assert decided.runs == [TEN, ELEVEN, NOON] and decided.decisions == []


@pytest.mark.parametrize("schedule", HOURLY, ids=["fixed-rate", "cron"])
def test_down_three_hours_skip_runs_nothing_and_resumes_at_the_next_slot_in_the_future(
    schedule: FixedRate | CronSchedule,
) -> None:
    decided = plan(schedule, TEN, BACK, MisfirePolicy(Misfire.SKIP))
    assert decided.runs == []
    assert decided.decisions == [(TEN, MISSED, None), (ELEVEN, MISSED, None), (NOON, MISSED, None)]
    assert decided.resume == ONE and ONE > BACK


def test_run_all_is_bounded_and_records_the_oldest_slots_beyond_the_bound_as_missed() -> None:
    decided = plan(FixedRate(HOUR), TEN, BACK, MisfirePolicy(Misfire.RUN_ALL, max_catch_up=2))
    assert decided.runs == [ELEVEN, NOON]
    assert decided.decisions == [(TEN, MISSED, None)]


def test_a_slot_within_grace_is_not_a_misfire_whatever_the_policy() -> None:
    late = TEN + 45
    for action in Misfire:
        decided = plan(FixedRate(HOUR), TEN, late, MisfirePolicy(action, grace=60))
        assert decided.runs == [TEN] and decided.decisions == [] and not decided.misfired
    assert plan(FixedRate(HOUR), TEN, TEN + 61, MisfirePolicy(Misfire.SKIP, grace=60)).misfired


def test_grace_is_measured_on_the_oldest_passed_slot() -> None:
    # 12:00 is only 30 s late, but 10:00 is 2.5 h late: the task misfired.
    decided = plan(FixedRate(HOUR), TEN, NOON + 30, MisfirePolicy(Misfire.SKIP, grace=60))
    assert [slot for slot, _, _ in decided.decisions] == [TEN, ELEVEN, NOON]


def test_a_slot_still_in_the_future_is_left_alone() -> None:
    decided = plan(FixedRate(HOUR), ONE, BACK, MisfirePolicy(Misfire.SKIP))
    assert decided.runs == [ONE] and not decided.misfired
    # Also where no grace is given (a stored plan's slots, recovery's stored_plan): none
    # of its slots passed, so none is decided, least of all recorded missed.
    assert passed_slots(FixedRate(HOUR), ONE, BACK) == ([], ONE)
    ungraced = plan(FixedRate(HOUR), ONE, BACK, MisfirePolicy(Misfire.SKIP), grace=False)
    assert ungraced == ([ONE], [], SCHEDULE_DECIDES, False)
    # A slot due at that very instant has passed (not after now): without grace it is
    # decided.
    at_now = plan(FixedRate(HOUR), ONE, ONE, MisfirePolicy(Misfire.SKIP), grace=False)
    assert at_now == ([], [(ONE, MISSED, None)], ONE + HOUR, True)


def test_a_fixed_delay_misses_one_slot_however_long_the_downtime() -> None:
    assert passed_slots(FixedDelay(600), TEN, BACK) == ([TEN], None)
    decided = plan(FixedDelay(600), TEN, BACK, MisfirePolicy(Misfire.SKIP))
    assert decided.decisions == [(TEN, MISSED, None)] and decided.resume == BACK + 600


def test_a_one_off_skipped_has_nothing_to_resume_at() -> None:
    decided = plan(OneTime(TEN), TEN, BACK, MisfirePolicy(Misfire.SKIP))
    assert decided.runs == [] and decided.resume is None
    assert plan(OneTime(TEN), TEN, BACK, MisfirePolicy()).runs == [TEN]


def test_enumeration_is_capped_and_one_record_stands_for_the_slots_beyond_the_cap() -> None:
    # A minutely cron down for a day: 1,440 slots passed, MAX_SLOTS are listed.
    minutely = CronSchedule("* * * * *")
    back = T0 + 86400 + 30
    decided = plan(minutely, T0 + 60, back, MisfirePolicy(Misfire.SKIP))
    assert len(decided.decisions) == MAX_SLOTS + 1
    first_unlisted, outcome, text = decided.decisions[-1]
    assert first_unlisted == T0 + 60 * (MAX_SLOTS + 1) and outcome == MISSED
    assert text is not None and "more than 1000 slots" in text
    assert decided.resume == T0 + 86400 + 60  # the first minute after `back`
    # The slot after the listed ones due at that very instant: it passed too, and the
    # record for the slots beyond the cap stands for it; the task goes on after it.
    sharp = T0 + 60 * (MAX_SLOTS + 1)
    at_cap = plan(minutely, T0 + 60, sharp, MisfirePolicy(Misfire.SKIP))
    slot, outcome, text = at_cap.decisions[-1]
    assert (slot, outcome, at_cap.resume) == (sharp, MISSED, sharp + 60)
    assert text is not None and "stands for 1 slot, every later one" in text
    # A later slot due at that very instant passed too: counted with those it stands
    # for (3: the first unlisted, the next, and the one at the instant decided).
    later = T0 + 60 * (MAX_SLOTS + 3)
    for schedule in (minutely, FixedRate(60, start_delay=60)):
        stood = plan(schedule, T0 + 60, later, MisfirePolicy(Misfire.SKIP), origin=T0)
        text = stood.decisions[-1][2]
        assert text is not None and "stands for 3 slots, every later one" in text
        assert stood.resume == later + 60
    once = plan(minutely, T0 + 60, back, MisfirePolicy(Misfire.RUN_ONCE))
    assert len(once.runs) == 1 and once.resume == T0 + 86400 + 60
    assert {outcome for _, outcome, _ in once.decisions} == {COALESCED}


def test_a_capped_plan_set_back_counts_only_the_runs_recorded_after_its_cut_record() -> None:
    # RUN_ALL, max_catch_up=3, every minute: the plan's record for the slots beyond the
    # cap is at the 10th slot, so read from its first slot up to it the plan holds ten
    # runs, more than any plan has (the wall clock was set back while it went on:
    # plan_as_cut).  One run recorded after the cut record: two runs are left, and the
    # task resumes where the jump moved it.  A run recorded before the cut record is
    # another plan's, and counts for nothing.
    minute = 60.0

    def ran(slot: float) -> ExecutionRecord:
        return ExecutionRecord("t", "job", 1, slot, slot, 0, slot, slot + 1, True)

    cut = ExecutionRecord(
        "t", "job", 0, T0 + 10 * minute, T0 + 10 * minute, 0, T0 + 20 * minute,
        T0 + 20 * minute, False, "MisfireCap: the slots beyond the cap", misfire=MISSED,
    )  # fmt: skip
    # first attempts count: not the runs before the cut record, nor a retry after it
    retry = ran(T0 + 5 * minute)._replace(attempt=2)
    history = [ran(T0 - 2 * minute), ran(T0 - minute), cut, ran(T0 + 5 * minute), retry]
    policy = MisfirePolicy(Misfire.RUN_ALL, max_catch_up=3)
    decided = plan_as_cut(FixedRate(minute), T0, cut, history, policy, origin=T0)
    # resumed at 09:21 (the first slot after the cut was decided), moved back with the
    # plan's last run: from just before the cut record (the 10th) to the 2nd
    assert decided == ([T0, T0 + minute], [], T0 + 13 * minute, True)
    # Every run of it made since: nothing is left, and its resume is not moved (no run
    # is left to measure the jump by).
    made = [*history, *(ran(T0 + n * minute) for n in (6, 7, 8))]  # one more than it holds
    assert plan_as_cut(FixedRate(minute), T0, cut, made, policy, origin=T0) == (
        [], [], T0 + 21 * minute, True,
    )  # fmt: skip
    # RUN_ONCE's plan holds one run, SKIP's none: read from the same cut record with
    # nothing run since, RUN_ONCE's is its first slot, resumed where the jump moved it.
    for action, runs, resume in [(Misfire.RUN_ONCE, [T0], 12), (Misfire.SKIP, [], 21)]:
        decided = plan_as_cut(FixedRate(minute), T0, cut, [cut], MisfirePolicy(action), origin=T0)
        assert decided == (runs, [], T0 + resume * minute, True)
    # A plan its schedule ends after (no slot to resume at) has no slots after it to
    # decide: plan_and_since gives it back as it is.
    ended = Plan([T0, T0 + minute], [], None, True)
    assert plan_and_since(ended, FixedRate(minute), T0 + 30 * minute, policy, origin=T0) is ended
    # Read up to a cut record at the 3rd slot, it holds three runs, as many as a plan
    # has: a plan not moved, taken as it is whatever ran since.
    at_size = cut._replace(slot=T0 + 3 * minute, due=T0 + 3 * minute)
    decided = plan_as_cut(FixedRate(minute), T0, at_size, [at_size, ran(T0)], policy, origin=T0)
    assert decided == ([T0, T0 + minute, T0 + 2 * minute], [], T0 + 21 * minute, True)


def test_a_run_nows_extra_run_past_grace_with_its_put_off_slot_due_now_decides_both() -> None:
    # The extra run was due at 10:10 and put off the 11:00 slot behind it; decided at
    # 11:00 sharp, both passed (a slot is passed when not after now): RUN_ONCE runs
    # 11:00, the extra run coalesced into it; SKIP misses both and goes on at 12:00.
    # Neither is a record for slots beyond the cap (one said "more than 1000 slots").
    hourly, extra = FixedRate(HOUR, start_delay=HOUR), TEN + 600
    once = plan_put_off(hourly, extra, ELEVEN, ELEVEN, MisfirePolicy(Misfire.RUN_ONCE), origin=T0)
    assert (once.runs, once.decisions) == ([ELEVEN], [(extra, COALESCED, None)])
    skip = plan_put_off(hourly, extra, ELEVEN, ELEVEN, MisfirePolicy(Misfire.SKIP), origin=T0)
    assert skip == ([], [(extra, MISSED, None), (ELEVEN, MISSED, None)], NOON, True)


def test_a_run_nows_extra_run_and_its_put_off_slot_both_run_under_run_all_then_the_grid() -> None:
    # The extra run due at 10:10 put off 11:00; decided at 11:01:40, past both graces,
    # RUN_ALL runs both, then hands the task to its schedule (12:00).  Resuming at the
    # slot put off (as when only the extra run runs) would run 11:00 a second time.
    hourly, extra = FixedRate(HOUR, start_delay=HOUR), TEN + 600
    policy = MisfirePolicy(Misfire.RUN_ALL, grace=60)
    both = plan_put_off(hourly, extra, ELEVEN, ELEVEN + 100, policy, origin=T0)
    assert both == ([extra, ELEVEN], [], SCHEDULE_DECIDES, True)
    alone = plan_put_off(hourly, extra, ELEVEN, TEN + 700, policy, origin=T0)
    assert alone == ([extra], [], ELEVEN, True)


@pytest.mark.parametrize(
    ("action", "fate"),
    [
        (Misfire.SKIP, "none of them run"),
        (Misfire.RUN_ALL, "none of them run"),
        (Misfire.RUN_ONCE, "coalesced into the one run the policy made (the slot before them)"),
    ],
)
def test_the_record_standing_for_the_slots_beyond_the_cap_says_what_happened(
    action: Misfire, fate: str
) -> None:
    """What ``tasks show`` prints for it, an operator's only account of those slots: that
    they passed unrun, what decided them and when, the first of them (the instants in UTC,
    as every log line shows them, not seconds since the epoch), what became of them, and
    where the task goes on.  Before: "MisfireCap: more than 1000 slots passed; this record
    stands for the slots from 1767663660.0 to 1767690030.0"."""
    minutely = CronSchedule("* * * * *")
    back = T0 + 86400 + 30
    first_unlisted, _, text = plan(minutely, T0 + 60, back, MisfirePolicy(action)).decisions[-1]
    assert first_unlisted == T0 + 60 * (MAX_SLOTS + 1)
    assert text == (
        "MisfireCap: more than 1000 slots passed unrun (the scheduler down or not started, "
        f"or its clock moved on) before the misfire policy ({action.value}) decided them at "
        f"{instant_text(back)}; the first 1,000 are recorded one by one, and this record "
        f"stands for 440 slots, every later one, from {instant_text(first_unlisted)} up to "
        "then: "
        f"{fate}; the task goes on at {instant_text(T0 + 86400 + 60)}"
    )
    ended = plan(Window(minutely, end=T0 + 86400), T0 + 60, back, MisfirePolicy(action))
    assert ended.resume is None
    last = ended.decisions[-1][2]
    assert last is not None and last.endswith(f"{fate}; its schedule has no slot after that")


def test_first_after_jumps_arithmetically_for_a_fixed_rate_and_by_next_after_for_cron() -> None:
    assert first_after(FixedRate(HOUR), TEN, BACK) == ONE
    assert first_after(FixedRate(HOUR), TEN, NOON) == ONE  # strictly after now
    assert first_after(CronSchedule("0 * * * *"), TEN, BACK) == ONE
    assert first_after(OneTime(TEN), TEN, BACK) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"on_misfire": "skip"},
        {"grace": -1},
        {"grace": float("nan")},
        {"grace": True},
        {"max_catch_up": 0},
        {"max_catch_up": 2.5},
    ],
)
def test_a_bad_misfire_policy_is_rejected_with_the_value_in_the_message(
    kwargs: dict[str, object],
) -> None:
    with pytest.raises(ValidationError, match=repr(next(iter(kwargs.values())))[:4]):
        MisfirePolicy(**kwargs)  # type: ignore[arg-type]


def test_the_default_policy_runs_once_with_a_minute_of_grace() -> None:
    policy = MisfirePolicy()
    assert (policy.on_misfire, policy.grace, policy.max_catch_up) == (Misfire.RUN_ONCE, 60.0, 100)


def test_the_lowest_values_are_accepted_and_mean_what_they_say() -> None:
    # grace=0: a slot due exactly now is on time, one a second late has misfired.
    no_grace = MisfirePolicy(Misfire.SKIP, grace=0)
    assert not plan(FixedRate(HOUR), TEN, TEN, no_grace).misfired
    assert plan(FixedRate(HOUR), TEN, TEN + 1, no_grace).misfired
    # max_catch_up=1: RUN_ALL runs only the newest passed slot, the older ones are missed.
    decided = plan(FixedRate(HOUR), TEN, BACK, MisfirePolicy(Misfire.RUN_ALL, max_catch_up=1))
    assert decided.runs == [NOON]
    assert decided.decisions == [(TEN, MISSED, None), (ELEVEN, MISSED, None)]


class _Broken:
    """A user's schedule with a bug: its next_run raises."""

    def first_run(self, now: float) -> float:
        return now

    def next_run(self, record: object, now: float) -> float:
        raise RuntimeError("a bug in the schedule")

    def __repr__(self) -> str:
        return "_Broken()"


def test_a_schedule_that_raises_while_its_missed_slots_are_listed_ends_there_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its one passed slot is decided, it has nothing to resume at, and each failure is
    # logged with the schedule named (recovery never raises for a user's schedule).
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        decided = plan(_Broken(), TEN, BACK, MisfirePolicy(Misfire.SKIP))
    assert decided.runs == [] and decided.decisions == [(TEN, MISSED, None)]
    assert decided.resume is None and decided.misfired
    assert caplog.messages == [
        "_Broken().next_run raised while listing missed slots",
        "_Broken().next_run raised while skipping missed slots",
    ]
    assert all(r.exc_info is not None for r in caplog.records)  # the traceback is kept
    assert [r.funcName for r in caplog.records] == ["following_slot", "first_after"]


def test_a_schedule_that_raises_while_a_tasks_missed_slots_are_listed_is_logged_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Said with the schedule's repr alone, the line named no task: a service of 300 tasks,
    # several on one schedule class, could not tell whose slots were being listed.
    clock = FakeClock(T0)
    scheduler = Scheduler(clock=clock)
    scheduler.schedule(
        "nightly report", jobs.noop, _Broken(), id="report-1",
        misfire=MisfirePolicy(Misfire.SKIP),
    )  # fmt: skip
    clock.advance(HOUR)  # its first slot passes before start(): the policy decides it
    with caplog.at_level(logging.ERROR, logger="lldsched.jobs"):
        scheduler.start()
        settle(scheduler)
    assert scheduler.shutdown()
    listed = [r for r in caplog.records if "missed slots" in r.getMessage()]
    assert [r.getMessage() for r in listed] == [
        "task report-1 'nightly report': _Broken().next_run raised while listing missed slots",
        "task report-1 'nightly report': _Broken().next_run raised while skipping missed slots",
    ]
    for line in listed:
        assert (line.task_id, line.task_name) == ("report-1", "nightly report")  # type: ignore[attr-defined]
        assert line.exc_info is not None
    # Each line says where the listing met the schedule, not the logging helper.
    assert [line.funcName for line in listed] == ["following_slot", "first_after"]


@pytest.mark.parametrize(
    ("every", "back"),
    [(HOUR, BACK), (1.0, TEN + 5000.5)],  # three slots; more than MAX_SLOTS (first_after)
    ids=["listed", "past-the-cap"],
)
def test_a_plan_in_front_of_the_schedule_is_neither_read_nor_used_up_by_the_decision(
    every: float, back: float
) -> None:
    # A forward jump while a task waits under a plan (run_now's slot put first, a
    # catch-up's slots): its passed slots are its own schedule's, as after a restart
    # (where no plan is stored), and the plan is left as it was (the decision replaces
    # it; a jump within grace keeps it, and then it must still hand out its slots).
    own = FixedRate(every, start_delay=every)
    fronted = CatchUp(own, [TEN + every / 4], TEN + every / 2)  # slots off the grid
    policy = MisfirePolicy(Misfire.RUN_ONCE)
    assert plan(fronted, TEN, back, policy) == plan(own, TEN, back, policy)
    assert (fronted.waited, fronted.spent) == (TEN + every / 4, False)
    assert plan(own, TEN, back, policy).misfired


def test_a_schedule_that_answers_the_same_slot_again_ends_the_listing_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class _Stuck:
        """A user's schedule with a bug: its next slot is the slot it was given."""

        def first_run(self, now: float) -> float:
            return now

        def next_run(self, record: ExecutionRecord, now: float) -> float:
            return record.slot

        def __repr__(self) -> str:
            return "_Stuck()"

    with caplog.at_level(logging.ERROR, logger="lldsched"):
        slots, following = passed_slots(_Stuck(), TEN, BACK)
    assert (slots, following) == ([TEN], None)  # listed once, not MAX_SLOTS times
    assert caplog.messages == [
        f"_Stuck().next_run went from {TEN!r} back to {TEN!r}; no more slots"
    ]
    # Nothing raised: the line carries no traceback (not "NoneType: None" after it).
    assert caplog.records[0].exc_info is None and "NoneType" not in caplog.text
