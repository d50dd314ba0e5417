"""The checks of the pause exercise (notebook 07, minutes 34-38): what runs after a resume?

``runs_after_resume(first, period, paused, resumed, policy)`` is compared with what
lldsched's own :class:`~lldsched.Scheduler` does, driven on a fake clock by
:class:`~lldsched.testing.Stepper` (:func:`reference_runs_after_resume`): a fixed-rate
task on the grid ``first + k * period``, paused at ``paused``, resumed at ``resumed``,
its first three runs after the pause read from its records.  ``policy`` sets the two
policies a learner may think decide it: ``"skip"`` (``OverrunPolicy.SKIP`` and
``Misfire.SKIP``), ``"run_once"`` (the defaults: ``SKIP`` and ``Misfire.RUN_ONCE``) and
``"catch_up"`` (``OverrunPolicy.CATCH_UP`` and ``Misfire.RUN_ALL``).  Neither decides a
resume (docs/decisions/schedules.md, "Resume re-anchors a fixed-rate grid"), and the named cases
pin the answers a learner gives instead: every slot slept through run at the resume,
the next slot of the old grid waited for, the old grid kept after the resumed run, a
run at the resume when nothing was missed, a countdown frozen at the pause, and a slot
at the pause instant taken for missed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence, Set
from functools import partial

from exercises.checks import (
    Check,
    Taken,
    as_number,
    asked_again,
    call_answer,
    check_answer,
    unlike_a_number,
)
from lldsched import FakeClock, FixedRate, Misfire, MisfirePolicy, OverrunPolicy, Scheduler
from lldsched.model import Outcome
from lldsched.testing import Stepper

__all__ = [
    "POLICIES",
    "check_runs_after_resume",
    "reference_runs_after_resume",
    "runs_after_resume_checks",
]

RunsAfterResume = Callable[[float, float, float, float, str], Sequence[float]]

POLICIES: dict[str, tuple[OverrunPolicy, Misfire]] = {
    "skip": (OverrunPolicy.SKIP, Misfire.SKIP),
    "run_once": (OverrunPolicy.SKIP, Misfire.RUN_ONCE),
    "catch_up": (OverrunPolicy.CATCH_UP, Misfire.RUN_ALL),
}
"""The policy names of the exercise, as the task's overrun and misfire policies."""

RUNS = 3
"""How many runs after the pause the answer returns."""

NOT_CONSULTED = (
    "a pause is a deliberate stop, neither an overrun (OverrunPolicy) nor a downtime "
    "(MisfirePolicy), so no policy decides a resume"
)


def _noop() -> None:
    """The checked task's action: a run on the fake clock takes no time."""


def reference_runs_after_resume(
    first: float, period: float, paused: float, resumed: float, policy: str
) -> list[float]:
    """The instants lldsched's Scheduler starts the task's first three runs after the
    pause: a real Scheduler stepped on a fake clock from 0, the task registered at 0
    with ``start_delay=first``, every slot up to ``paused`` run, then paused."""
    overrun, misfire = POLICIES[policy]
    with Stepper(Scheduler(workers=1, clock=FakeClock(0))) as steps:
        task = steps.scheduler.schedule(
            "report",
            _noop,
            FixedRate(period, overrun, start_delay=first),
            misfire=MisfirePolicy(misfire),
        )
        steps.advance_to(paused)  # every slot up to the pause runs
        before = len(steps.records(task.id))
        steps.scheduler.pause(task.id)
        steps.advance_to(resumed)
        steps.scheduler.resume(task.id)
        while True:
            after = steps.records(task.id)[before:]
            runs = [record.started for record in after if record.outcome is Outcome.OK]
            if len(runs) >= RUNS:
                return runs[:RUNS]
            steps.advance(period)


def _waited_for(first: float, period: float, paused: float) -> float:
    """The slot the paused task waited for: the first of the grid after the pause (one
    at the pause instant ran before it)."""
    if paused < first:
        return first
    return first + (math.floor((paused - first) / period) + 1) * period


def _on_old_grid(value: float, first: float, period: float) -> bool:
    return value >= first and math.isclose((value - first) % period, 0, abs_tol=1e-9)


def _same(got: Sequence[float], expected: Sequence[float]) -> bool:
    return len(got) == len(expected) and all(
        abs(g - e) < 1e-9 for g, e in zip(got, expected, strict=True)
    )


def _shown(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _mistake(
    first: float,
    period: float,
    paused: float,
    resumed: float,
    got: Sequence[float],
    expected: Sequence[float],
) -> str:
    """What a wrong ``got`` most likely says about the answer (": ..."), or nothing."""
    waiting = _waited_for(first, period, paused)
    slept = resumed > waiting  # a slot came and went while the task was paused
    if _same([v + resumed for v in got], expected):
        return ": those are delays counted from the resume; return the instants of the runs"
    if got[0] < resumed - 1e-9:
        return (
            f": {got[0]:g} is before the resume at {resumed:g}, and a paused task runs "
            "nothing; the slots slept through do not run at their own instants later"
        )
    if slept and sum(abs(v - resumed) < 1e-9 for v in got) > 1:
        return (
            f": the resume ran the slots slept through one by one; {NOT_CONSULTED}: the "
            f"slot slept through runs once, at the resume ({resumed:g}), whatever the "
            "policy (CATCH_UP and RUN_ALL catch up overruns and restarts, not pauses)"
        )
    if math.isclose(got[0], resumed + (waiting - paused)) and not math.isclose(got[0], expected[0]):
        return (
            f": the countdown was frozen at the pause ({waiting - paused:g} s left) and "
            "restarted at the resume; slots are instants, not a countdown: a resume before "
            "the slot keeps it, one after it runs the slot at once"
        )
    if not slept and math.isclose(got[0], resumed) and resumed < waiting:
        if paused >= first and _on_old_grid(paused, first, period):
            return (
                f": the slot at the pause instant ({paused:g}) had run (every slot up to the "
                f"pause ran), so the task waited for {waiting:g}, and the resume came before it"
            )
        return (
            f": resumed at {resumed:g}, before the slot it waited for ({waiting:g}) came: "
            "nothing was missed, so that slot runs when due, on the old grid; a resume is "
            "not a run now"
        )
    if slept and got[0] > resumed + 1e-9 and _on_old_grid(got[0], first, period):
        return (
            f": the resume does not wait for the old grid's next slot ({got[0]:g}): a slot "
            f"was slept through (from {waiting:g} on), so one run goes at once, at the resume "
            f"({resumed:g}), whatever the policy"
        )
    if (
        slept
        and math.isclose(got[0], resumed)
        and len(got) > 1
        and _on_old_grid(got[1], first, period)
        and not math.isclose(got[1], expected[1])
    ):
        return (
            f": the grid re-anchors at the resumed run: the next run is a period after "
            f"it ({expected[1]:g}), not the old grid's next slot ({got[1]:g})"
        )
    if not _on_old_grid(got[0], first, period) and not math.isclose(got[0], resumed):
        return (
            f": {got[0]:g} is neither a slot of the task's grid, {first:g} + k * {period:g}, "
            f"nor the resume ({resumed:g}); the slots count from first, not from 0 nor "
            "from the pause"
        )
    return ""


def _runs(call: str, got: object) -> list[float]:
    """What the answer returned, as a list of numbers; anything else fails, shown.  A
    numpy array is taken as the list of its items (numpy scalars are numbers, as for every
    exercise, a float32 excepted: see ``as_number``), and so is what an iterator (a
    generator) yielded: :func:`call_answer` took it."""
    if type(got).__module__ == "numpy" and getattr(got, "ndim", 0) >= 1:
        got = list(got)  # type: ignore[call-overload]
    if isinstance(got, Taken) and got.more:
        raise AssertionError(
            f"{call} returned a {got.kind} that yields more than {RUNS} instants (the first: "
            f"{_shown([as_number(v) or 0.0 for v in got])}): return the first {RUNS} runs "
            "after the pause, a list"
        )
    if isinstance(got, str) or not isinstance(got, Sequence):
        why = (
            f", a {type(got).__name__}, which has no order"
            if isinstance(got, Set | Mapping)
            else ""
        )
        raise AssertionError(
            f"{call} returned {got!r}{why}: return a list of the {RUNS} instants the runs start at"
        )
    values = [as_number(v) for v in got]  # plain numbers, whatever arithmetic the answer's has
    wrong = [v for v, number in zip(got, values, strict=True) if number is None]
    if wrong:
        raise AssertionError(
            f"{call} returned {list(got)!r}: the instants are numbers, and {wrong[0]!r} is "
            f"{unlike_a_number(wrong[0])}"
        )
    runs = [float(v) for v in values if v is not None]
    if len(runs) != RUNS:
        raise AssertionError(
            f"{call} returned {len(runs)} instants, {_shown(runs)}: return the first {RUNS} "
            "runs after the pause"
        )
    return runs


def _verdict(
    runs_after_resume: RunsAfterResume,
    first: float,
    period: float,
    paused: float,
    resumed: float,
    policy: str,
) -> None:
    case = f"{first:g}, {period:g}, {paused:g}, {resumed:g}"
    call = f"runs_after_resume({case}, {policy!r})"
    got = _runs(
        call,
        call_answer(call, runs_after_resume, first, period, paused, resumed, policy, take=RUNS),
    )
    # Asked once the answer has returned: no frame of the checker holds it to be read.
    expected = reference_runs_after_resume(first, period, paused, resumed, policy)
    if _same(got, expected):
        return
    args = (first, period, paused, resumed, policy)
    asked_again(call, runs_after_resume, args, got, partial(_runs, call), _shown, take=RUNS)
    why = _mistake(first, period, paused, resumed, got, expected)
    others = {}
    for other in POLICIES:
        if other != policy:
            again = f"runs_after_resume({case}, {other!r})"
            others[other] = _runs(
                again,
                call_answer(
                    again, runs_after_resume, first, period, paused, resumed, other, take=RUNS
                ),
            )
    changed = {name: runs for name, runs in others.items() if not _same(runs, got)}
    if changed:
        name, runs = next(iter(changed.items()))
        varies = f"your answer changes with the policy ({_shown(runs)} under {name!r})"
        if NOT_CONSULTED in why:
            why += f"; {varies}"
        else:
            why += f"{'; ' if why else ': '}{varies}, but {NOT_CONSULTED}"
    shown = (_shown(expected), _shown(got))
    if shown[0] == shown[1]:  # apart by less than 6 significant digits show
        shown = (repr(list(expected)), repr(got))
    raise AssertionError(f"{call}: expected {shown[0]}, got {shown[1]}{why}")


def _random_case(rng: random.Random) -> tuple[float, float, float, float, str]:
    """A pause on a grid, its ends often exactly on a slot; integers and halves only, so
    the grid's instants are exact."""
    period = float(rng.randint(1, 120))
    first = float(rng.randint(0, 300))
    k = rng.randint(0, 4)
    paused = max(0.0, first + rng.choice([k * period, k * period + 0.5, -period / 2, k + 0.5]))
    waiting = _waited_for(first, period, paused)
    resumed = paused + rng.choice(
        [
            0.0,  # resumed at once
            (waiting - paused) / 2,  # before the slot
            waiting - paused,  # on the slot it waited for
            waiting - paused + rng.randint(1, 6) * period,  # slept through, on the old grid
            waiting - paused + rng.randint(0, 500) + 0.5,  # slept through, off the grid
        ]
    )
    return first, period, paused, resumed, rng.choice(list(POLICIES))


def runs_after_resume_checks(runs_after_resume: RunsAfterResume) -> list[Check]:
    """``runs_after_resume(first, period, paused, resumed, policy)``: the instants of the
    first three runs after the pause of a fixed-rate task on the grid ``first + k *
    period``, each run taking no time, paused at ``paused`` (every slot up to then ran)
    and resumed at ``resumed``."""

    def named(first: float, paused: float, resumed: float, policy: str) -> Callable[[], None]:
        return lambda: _verdict(runs_after_resume, first, 60, paused, resumed, policy)

    def random_cases() -> None:
        rng = random.Random(7)
        for _ in range(100):
            _verdict(runs_after_resume, *_random_case(rng))

    return [
        (
            "paused and resumed between two slots: the old grid, 60, 120, 180",
            named(0, 10, 50, "run_once"),
        ),
        (
            "six slots slept through: one run at the resume, 400, then 460, 520",
            named(0, 10, 400, "run_once"),
        ),
        (
            "the same pause under skip: the slot slept through still runs, at 400",
            named(0, 10, 400, "skip"),
        ),
        (
            "the same pause under catch_up: one run at 400, not one per slot slept through",
            named(0, 10, 400, "catch_up"),
        ),
        ("resumed exactly at the slot it waited for: 60, 120, 180", named(0, 10, 60, "skip")),
        (
            "paused exactly on a slot, which ran: resumed at 100 -> 120, 180, 240",
            named(0, 60, 100, "run_once"),
        ),
        (
            "paused before its first run (grid from 30), resumed at 200 -> 200, 260, 320",
            named(30, 0, 200, "catch_up"),
        ),
        ("agrees with lldsched's Scheduler on 100 random pauses, all three policies", random_cases),
    ]


def check_runs_after_resume(runs_after_resume: RunsAfterResume) -> None:
    """Run the pause-and-resume checks against your ``runs_after_resume``."""
    check_answer(
        runs_after_resume, runs_after_resume_checks, "check_runs_after_resume(runs_after_resume)"
    )
