"""Policies: how a task retries, what it does with missed slots, how a fixed rate overruns.

Small immutable values, validated at construction, that a registration passes
and the core state machine consults.

**RetryPolicy.**  A retry is the same task, attempt ``n + 1``, due at the failed run's finish plus
``backoff(n)``; the schedule is not consulted.  Backoffs grow geometrically and are
capped: with the defaults 1 s, 2 s, 4 s, ... never more than 60 s.

When a slot's attempts run out, a one-off task is FAILED (its id goes to the dead
letter).  A recurring task *gives the slot up*: the last attempt is recorded with
the outcome ``given_up`` and the task is due at its next slot with a fresh attempt
counter, as cron, Quartz and Celery beat keep a failing job on its schedule.
``fail_after_given_up=n`` stops it instead (FAILED, dead letter) once ``n`` slots
in a row were given up; the default ``None`` never does.

Optional jitter spreads retries of many tasks that failed together (a "thundering
herd" after an outage): with ``jitter=j`` the wait is drawn uniformly from
``[b * (1 - j), b]``, where ``b`` is the capped backoff, so jitter never makes a
wait longer than the policy without it.  The runtimes draw it from
:func:`retry_draws`: a generator seeded by the runtime's seed, the task, the slot and
the attempt alone, so a retry waits the same whatever else failed before it, in
whichever order threads settled their runs, in a simulation of the same seed, and
after a restart.

**MisfirePolicy.**  A slot *misfires* when the scheduler was not there to run it: the process was
down (recovery from a durable store), or the wall clock jumped forward past it.
The model is Quartz's: a task whose oldest pending slot is no more than
``grace`` seconds late has not misfired at all (it runs at once, late, and its
schedule carries on as after any late run); beyond ``grace`` the policy decides
for every slot that passed:

* ``RUN_ONCE`` (coalesce): one run, for the latest slot that passed; the
  earlier slots are recorded ``coalesced`` into it;
* ``RUN_ALL`` (catch up, bounded): every slot that passed runs, oldest first,
  at most ``max_catch_up`` of them (the most recent); older ones are recorded
  ``missed``;
* ``SKIP``: nothing runs; every slot that passed is recorded ``missed`` and
  the task waits for its first slot after now.

Every decision is an :class:`~lldsched.model.ExecutionRecord` whose ``outcome``
says ``missed`` or ``coalesced``: nothing is skipped in silence.  The
decisions themselves are taken by :mod:`lldsched.core.misfires`.

**OverrunPolicy** says what a fixed-rate task does when a run outlasts its
period (see :class:`~lldsched.schedules.simple.FixedRate`).

**Overlap** generalises it to any task whose schedule has slots on a grid (fixed
rate, cron, and the decorators over them): what happens to a slot that comes due
while a run of the same task is still in flight.  A task registered without
``overlap=`` keeps its schedule's own rule (a fixed rate's ``on_overrun``, a cron
task's skipped fires): its runs never overlap.  With ``overlap=``:

* ``BUFFER_ONE``: at most one run waits behind the running one.  The slots that
  came due while it ran collapse into one run for the latest of them, started as
  soon as the run finishes; the earlier ones are recorded ``coalesced``.
* ``CANCEL_OTHER``: the slot starts a new run at once and raises the running run's
  cancel flag (:class:`~lldsched.core.context.RunContext`; a coroutine run is
  cancelled for real, a process-isolated run's worker process killed).  The
  cancelled run's record says ``cancelled`` and why.  A slot that finds every
  worker busy (the run it cancels may hold the last one) cancels it as it comes
  due all the same, and starts once a worker is free.
* ``ALLOW`` with ``max_instances=N``: up to ``N`` runs of the task at once; a slot
  due while ``N`` run is recorded ``skipped``, its record naming the limit.

Fixed delay never overlaps (its next run counts from a finish) and a one-off
task has one slot, so both reject ``overlap=``; so does a fixed rate whose
``on_overrun`` is ``CATCH_UP`` (two rules for the same slots).  The decisions are
taken by the core state machine (:class:`~lldsched.core.machine.SchedulerCore`),
for both runtimes.
"""

from __future__ import annotations

import enum
import math
import random
from dataclasses import dataclass
from datetime import timedelta

from lldsched.checks import call_error, fraction, number, seconds, whole, whole_or_none
from lldsched.deprecated import keyword_only_now
from lldsched.errors import ValidationError, doc_url, shown

__all__ = [
    "DEFAULT_MISFIRE",
    "TWO_AT_ONCE",
    "Misfire",
    "MisfirePolicy",
    "Overlap",
    "OverrunPolicy",
    "RetryPolicy",
    "checked_backoff",
    "checked_verdict",
    "retry_draws",
    "uncallable_override",
]


@dataclass(frozen=True, slots=True, init=False)
class RetryPolicy:
    """Attempts and capped exponential backoff (validated at construction).

    ``initial_backoff`` and ``max_backoff`` are seconds, or ``timedelta`` values (kept as
    their seconds: ``RetryPolicy(max_backoff=timedelta(minutes=1)) == RetryPolicy()``).

    ``max_attempts`` counts every attempt of one slot, the first included:
    ``max_attempts=1`` never retries, the default 3 runs at most twice more.
    ``fail_after_given_up`` (a recurring task only; see the module docstring) is
    how many slots in a row may be given up before the task is FAILED: ``None``,
    the default, keeps it on its schedule however many fail.
    """

    max_attempts: int = 3
    initial_backoff: float = 1.0
    multiplier: float = 2.0
    max_backoff: float = 60.0
    jitter: float = 0.0
    fail_after_given_up: int | None = None

    @keyword_only_now(
        kept=1,
        moved=("initial_backoff", "multiplier", "max_backoff", "jitter", "fail_after_given_up"),
    )
    def __init__(
        self,
        max_attempts: int = 3,
        *,
        initial_backoff: float | timedelta = 1.0,
        multiplier: float = 2.0,
        max_backoff: float | timedelta = 60.0,
        jitter: float = 0.0,
        fail_after_given_up: int | None = None,
    ) -> None:
        field = object.__setattr__  # frozen: the checked values are set once, here
        field(self, "max_attempts", whole(max_attempts, name="max_attempts", at_least=1))
        field(
            self,
            "initial_backoff",
            seconds(initial_backoff, name="initial_backoff", at_least=0, unit=""),
        )
        field(self, "multiplier", number(multiplier, name="multiplier", at_least=1))
        field(self, "max_backoff", seconds(max_backoff, name="max_backoff", at_least=0, unit=""))
        field(self, "jitter", fraction(jitter, name="jitter"))
        field(
            self,
            "fail_after_given_up",
            whole_or_none(fail_after_given_up, name="fail_after_given_up", at_least=1),
        )
        if self.max_backoff < self.initial_backoff:
            raise ValidationError(
                f"max_backoff ({self.max_backoff!r}) is below initial_backoff "
                f"({self.initial_backoff!r})"
            )

    @classmethod
    def never(cls) -> RetryPolicy:
        """A policy with a single attempt: a failure fails a one-off task (dead letter)
        and gives a recurring task's slot up at once."""
        return cls(max_attempts=1)

    def allows_retry(self, attempt: int) -> bool:
        """True when the ``attempt``-th attempt (1-based) may be followed by another.
        An ``attempt`` below 1 (or not an ``int``) is a :class:`ValidationError` naming it."""
        return whole(attempt, name="attempt", at_least=1) < self.max_attempts

    def fails_after(self, given_up: int) -> bool:
        """True when a recurring task that has given up ``given_up`` slots in a row
        stops (FAILED) instead of going on to its next slot.  A ``given_up`` below 0 (or
        not an ``int``) is a :class:`ValidationError` naming it."""
        limit = self.fail_after_given_up
        given_up = whole(given_up, name="given_up", at_least=0)
        return limit is not None and given_up >= limit

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after the ``attempt``-th attempt (1-based) failed.

        With jitter, ``rng`` draws the spread (the core passes :func:`retry_draws`'
        generator, so a seeded runtime draws the same wait for the same retry).  An
        ``attempt`` below 1 (or not an ``int``) is a :class:`ValidationError` naming it:
        ``backoff(0)`` answered half of ``initial_backoff``, a wait no retry has.
        """
        exponent = whole(attempt, name="attempt", at_least=1) - 1
        initial, cap = self.initial_backoff, self.max_backoff
        growth = exponent * math.log(self.multiplier)  # multiplier**exponent, as its log
        if growth <= 700 or not initial:  # no overflow (e**709 is the float's end); 0 stays 0
            base = min(cap, initial * self.multiplier**exponent) if initial else 0.0
        else:  # in log space: a large attempt never overflows, a tiny initial still grows
            grown = math.log(initial) + growth
            base = cap if grown >= math.log(cap) else math.exp(grown)
        if self.jitter:
            spread = (rng or random).random() * self.jitter
            return base * (1.0 - spread)
        return base


# Each method a subclass may override, as the core calls it (lldsched/core/runs.py): its
# arguments' names, for the message, and values of their kinds, for the binding.
_CALLED_AS: tuple[tuple[str, str, tuple[object, ...]], ...] = (
    ("allows_retry", "attempt", (1,)),
    ("backoff", "attempt, rng", (1, None)),
    ("fails_after", "given_up", (0,)),
)


def uncallable_override(policy: RetryPolicy) -> str | None:
    """Why a method ``policy``'s class overrides cannot be called as the core calls it
    (``"its backoff cannot be called as backoff(attempt, rng): too many positional
    arguments"``), or None: :func:`~lldsched.checks.call_error`'s check, made at
    registration (and at a ``modify``) rather than at the task's first failure, where the
    ``TypeError`` failed the task (docs/EXTENDING.md, "A retry policy of your own").  A
    policy of the class itself costs one identity test."""
    kind = type(policy)
    if kind is RetryPolicy:
        return None
    for method, names, args in _CALLED_AS:
        if getattr(kind, method) is not getattr(RetryPolicy, method):
            wrong = call_error(getattr(policy, method), *args)
            if wrong is not None:
                return f"its {method} cannot be called as {method}({names}): {wrong}"
    return None


def retry_draws(seed: int, task_id: str, slot: float, attempt: int) -> random.Random:
    """The generator a runtime seeded with ``seed`` hands ``backoff`` after the
    ``attempt``-th attempt of task ``task_id``'s run for ``slot`` failed: seeded by these
    four alone (text, which ``random.Random`` hashes with SHA-512: the same in every
    process), as ``Jittered`` draws from its seed and slot alone.

    One generator for the whole runtime made each wait depend on how many draws came
    before it: on the other tasks that failed first (a what-if simulation that added a
    failing task moved every later retry), on which of two threads settled its run first,
    and on a restart (the generator began again at its seed).
    """
    return random.Random(f"{seed}:{task_id}:{float(slot)!r}:{attempt}")


def checked_backoff(policy: RetryPolicy, attempt: int, delay: object) -> float:
    """``delay``, what ``policy.backoff(attempt, ...)`` answered, if it is a delay: finite
    seconds ``>= 0`` (a ``timedelta`` as its seconds), else :class:`ValidationError`
    naming the policy and its answer.  Asked of a policy of one's own (a subclass that
    overrides ``backoff``): :class:`RetryPolicy`'s own answers lie within its fields,
    checked at construction.  A NaN wait made the retry due at NaN (never run, never
    dead-lettered), a ``str`` raised ``TypeError`` out of the run's settle."""
    try:
        return seconds(delay, name="backoff", at_least=0)
    except ValidationError:
        raise ValidationError(
            f"{shown(policy)}.backoff({shown(attempt)}) answered {shown(delay)}, not a delay: "
            "a retry policy answers finite seconds >= 0 "
            f"({doc_url('docs/EXTENDING.md#a-retry-policy-of-your-own')})"
        ) from None


def checked_verdict(policy: RetryPolicy, method: str, argument: int, answer: object) -> bool:
    """``answer``, what ``policy.<method>(argument)`` answered (``allows_retry`` or
    ``fails_after``), if it is a ``bool``, else :class:`ValidationError` naming the
    policy, the question and the answer.  Asked of a policy of one's own, as
    :func:`checked_backoff` is: read as a truth value, ``"no"`` retried for ever and a
    forgotten ``return`` (None) never retried, each without a word
    (docs/decisions/extending.md, "A retry policy's verdict is a bool")."""
    if isinstance(answer, bool):
        return answer
    raise ValidationError(
        f"{shown(policy)}.{method}({shown(argument)}) answered {shown(answer)}, not a bool: "
        "a retry policy answers True or False "
        f"({doc_url('docs/EXTENDING.md#a-retry-policy-of-your-own')})"
    )


class Misfire(enum.Enum):
    """What happens to the slots of a task that misfired (see the module docstring)."""

    RUN_ONCE = "run_once"
    RUN_ALL = "run_all"
    SKIP = "skip"


@dataclass(frozen=True, slots=True, init=False)
class MisfirePolicy:
    """A task's misfire policy, validated at construction.

    ``grace`` is in seconds (>= 0), or a ``timedelta`` (kept as its seconds);
    ``max_catch_up`` bounds ``RUN_ALL``.
    The defaults (run once, 60 s of grace, at most 100 catch-up runs) are
    written down in ``docs/DECISIONS.md``.
    """

    on_misfire: Misfire = Misfire.RUN_ONCE
    grace: float = 60.0
    max_catch_up: int = 100

    @keyword_only_now(kept=1, moved=("grace", "max_catch_up"))
    def __init__(
        self,
        on_misfire: Misfire = Misfire.RUN_ONCE,
        *,
        grace: float | timedelta = 60.0,
        max_catch_up: int = 100,
    ) -> None:
        if not isinstance(on_misfire, Misfire):
            raise ValidationError(
                f"on_misfire must be Misfire.RUN_ONCE, RUN_ALL or SKIP, got {shown(on_misfire)}"
            )
        field = object.__setattr__  # frozen: the checked values are set once, here
        field(self, "on_misfire", on_misfire)
        field(self, "grace", seconds(grace, name="misfire grace", at_least=0))
        field(self, "max_catch_up", whole(max_catch_up, name="max_catch_up", at_least=1))


DEFAULT_MISFIRE = MisfirePolicy()
"""The policy of a task registered without ``misfire=``."""


class OverrunPolicy(enum.Enum):
    """What a fixed-rate task does when a run outlasts its period.

    SKIP: the next run is the first slot of the grid not before the run's finish.
    CATCH_UP: every missed slot runs, one after another, starting at once.
    """

    SKIP = "skip"
    CATCH_UP = "catch_up"

    # Members are singletons compared by identity, so the identity hash agrees with
    # equality; Enum's own hashes the name in Python, and every FixedRate(...) looks
    # its shared value up under a key holding the policy (bench_scale).
    __hash__ = object.__hash__


class Overlap(enum.Enum):
    """What a slot that comes due while a run of its task is in flight does (see the
    module docstring); registration's ``overlap=``, with ``max_instances=`` for ALLOW."""

    BUFFER_ONE = "buffer_one"
    CANCEL_OTHER = "cancel_other"
    ALLOW = "allow"

    __hash__ = object.__hash__  # as OverrunPolicy: identity hash, equal to equality


TWO_AT_ONCE = (Overlap.ALLOW, Overlap.CANCEL_OTHER)
"""The overlap policies that need two runs of one task at once: a shared store holds one
lease per task, so it refuses them at registration (docs/CLUSTER.md)."""
