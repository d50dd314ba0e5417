"""The three interval schedules: OneTime, FixedDelay and FixedRate.

Each is a frozen value validated at construction, with the bad value quoted in
the :class:`~lldsched.errors.ScheduleError`.

Fixed rate keeps a grid of slots ``first + k * period``.  The next slot after a
run is computed from the slot the run served (``record.slot``), which is the
run's start whenever it started on time: so dispatch latency, a wait for a free
worker and a retry's backoff never make the grid drift.  The core counts that slot's
index from the grid's first slot, which it keeps with the task
(:meth:`FixedRate.next_on_grid`), so the period is never added run after run and the
floats' roundings do not drift the grid either.  A run that outlasts its
period has *missed* the slots that passed before it finished:

* ``SKIP`` moves to the first slot not before the finish (a slot that falls
  exactly at the finish has not been missed);
* ``CATCH_UP`` returns the first missed slot, which is due at once; the runs
  after it catch up one slot at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar, TypeVar

from lldsched import checks
from lldsched.checks import seconds
from lldsched.clock import dated, to_timestamp, utc_datetime
from lldsched.errors import ScheduleError, ValidationError, shown
from lldsched.model import ExecutionRecord
from lldsched.policies import OverrunPolicy
from lldsched.schedules.delaymeant import delay_meant
from lldsched.schedules.subclasses import AnswersItsOwnWay

__all__ = ["FixedDelay", "FixedRate", "FrozenValue", "OneTime", "instant_text"]


def instant_text(timestamp: float) -> str:
    """An instant as ``explain()`` writes it: ``"2026-06-01 09:00 UTC"`` (seconds when
    they are not zero)."""
    moment = utc_datetime(timestamp)
    return dated(moment, "%Y-%m-%d %H:%M:%S UTC" if moment.second else "%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True, slots=True, init=False)
class OneTime(AnswersItsOwnWay):
    """Run once: at ``at`` (epoch seconds or an aware datetime), or ``delay`` seconds (or
    a ``timedelta``) after registration.  An ``at`` that has already passed runs at once
    (``OneTime(5)`` on a clock decades past it, with a warning naming ``delay=``:
    :mod:`~lldsched.schedules.delaymeant`).
    A repeated local time is the one its ``fold`` names; one its zone skips (a
    spring-forward gap) is refused (docs/decisions/schedules.md, "Instants in")."""

    at: float | None
    delay: float | None

    def __init__(
        self, at: float | datetime | None = None, *, delay: float | timedelta | None = None
    ) -> None:
        if (at is None) == (delay is None):
            raise ScheduleError(
                "OneTime needs exactly one of at= or delay=, "
                f"got at={shown(at)}, delay={shown(delay)}"
            )
        try:
            when = None if at is None else to_timestamp(at, name="OneTime at")
        except ValidationError as exc:
            raise ScheduleError(str(exc)) from None
        wait = (
            None
            if delay is None
            else seconds(delay, name="OneTime delay", at_least=0, error=ScheduleError)
        )
        object.__setattr__(self, "at", when)
        object.__setattr__(self, "delay", wait)

    def first_run(self, now: float) -> float:
        """``at`` (or ``now`` if it has passed), or ``now + delay``.  An ``at`` that reads
        as a delay on a clock decades past it warns (:mod:`~.delaymeant`)."""
        checks.instant(now, name="first_run()", of=self, error=ScheduleError)
        at = self.at
        if at is None:
            return now + (self.delay or 0.0)
        if at < now:  # passed: due at once (rare: a call only here)
            delay_meant(at, now)
            return now
        return at

    def next_run(self, record: ExecutionRecord, now: float) -> float | None:
        """``None``: a one-off task is done after its run (typed as any schedule's
        answer, so that a subclass may answer a slot: docs/EXTENDING.md, "A subclass of
        a built-in schedule")."""
        return None

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[None, tuple[()]]:
        """``None``, and no skipped slots."""
        return None, ()

    def slot_after(self, slot: float) -> None:
        """``None``: there is no second slot."""
        checks.instant(slot, name="slot_after()", of=self, error=ScheduleError)
        return None  # one slot only

    def first_slot_after(self, slot: float, now: float) -> None:
        """``None``: there is no second slot."""
        checks.instant(slot, name="first_slot_after() slot", of=self, error=ScheduleError)
        checks.instant(now, name="first_slot_after() now", of=self, error=ScheduleError)
        return None

    @property
    def measures_elapsed_time(self) -> bool:
        """A delay counts elapsed time; an instant is a calendar instant."""
        return self.at is None

    def explain(self) -> str:
        """``"Once, at 2026-06-01 09:00 UTC"`` or ``"Once, 5 s after registration"``."""
        if self.at is None:
            return f"Once, {self.delay:g} s after registration"
        return f"Once, at {instant_text(self.at)}"

    def __repr__(self) -> str:
        return (
            f"OneTime(at={self.at!r})" if self.at is not None else f"OneTime(delay={self.delay!r})"
        )


class FrozenValue:
    """Immutable value semantics over ``_fields``: equal fields, equal values (and
    hashes); no attribute can be set after construction.  State outside
    ``_fields`` is a private detail (a :class:`~.decorators.Window`'s run counts)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._values()))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new one")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class _Interval(FrozenValue, AnswersItsOwnWay):
    """Frozen value semantics for the interval schedules, with equal values shared.

    Schedules are immutable, so equal ones can be one object, the way small ints
    are: 100,000 tasks on ``FixedRate(60)`` hold one schedule, and building it
    again costs a dict lookup (the scale benchmark measures both).  At most
    :data:`SHARED_LIMIT` values are kept (:data:`_DELAYS`, :data:`_RATES`); past that,
    new values are simply built.
    """

    __slots__ = ()
    start_delay: float

    def _set_start_delay(self, start_delay: float | timedelta, *, of: str) -> None:
        """Both interval schedules' ``start_delay``: seconds (or a ``timedelta``), at least
        0 (``of`` names the class in the error)."""
        checked = seconds(start_delay, name=f"{of} start_delay", at_least=0, error=ScheduleError)
        object.__setattr__(self, "start_delay", checked)

    def first_run(self, now: float) -> float:
        """``now + start_delay``: the first run counts from registration."""
        checks.instant(now, name="first_run()", of=self, error=ScheduleError)
        return now + self.start_delay

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), self._values()


SHARED_LIMIT = 4096
"""Values kept shared, of both classes together."""

_DELAYS: dict[tuple[object, ...], FixedDelay] = {}
_RATES: dict[tuple[object, ...], FixedRate] = {}
"""The shared values of each class (a subclass's with its base's), under their class and
their arguments with the arguments' types.  The class is part of the key: a subclass's
``Every(60)`` is not a ``FixedRate(60)`` (:meth:`FrozenValue.__eq__` compares types), and
one came back for the other when each class looked its values up in a class attribute
the subclass inherited.  A dict per class, so that what one gives back is typed as the
class that asks (one for both gave back an ``_Interval``)."""

_Shared = TypeVar("_Shared", bound=_Interval)


def _shared(values: dict[tuple[object, ...], _Shared], key: tuple[object, ...]) -> _Shared | None:
    try:
        return values.get(key)
    except TypeError:  # an unhashable argument: let validation name it
        return None


def _keep(
    values: dict[tuple[object, ...], _Shared], key: tuple[object, ...], value: _Shared
) -> None:
    if len(_DELAYS) + len(_RATES) < SHARED_LIMIT:
        values[key] = value


def _grid_index(slot: float, period: float, k: int, instant: float, *, strictly: bool) -> int:
    """The first ``k`` whose slot ``slot + k * period`` is after ``instant``
    (``strictly``) or not before it, starting from ``k`` as a division guessed it.

    The quotient is rounded, so the guess may be one off either way: an instant on the
    grid was answered as its own slot (the first slot "strictly after" it equal to it),
    or the slot at a finish was skipped (docs/decisions/schedules.md, "A fixed rate's next slot
    is checked against the instant, not guessed from a quotient")."""

    def passed(at: float) -> bool:
        return at <= instant if strictly else at < instant

    while passed(slot + k * period):
        k += 1
    while k > 1 and not passed(slot + (k - 1) * period):
        k -= 1
    return k


class FixedDelay(_Interval):
    """Run every ``delay`` seconds (or a ``timedelta``) measured from the previous run's
    *finish*: runs never overlap, however long they take.

    The delay is a step (:func:`~lldsched.checks.step`): at least a microsecond, as a
    fixed rate's period is.  ``FixedDelay(0)`` made its task due again at the instant
    its run finished, so on a clock that stands still (a ``FakeClock``, a simulation's
    zero-length runs) it ran for ever at one instant; ``FixedDelay(1e-6)`` runs back to
    back on a real clock, as 0 did (docs/decisions/schedules.md, "A fixed delay is at least a
    microsecond")."""

    __slots__ = ("delay", "start_delay")
    _fields: ClassVar[tuple[str, ...]] = ("delay", "start_delay")
    delay: float
    start_delay: float

    def __new__(cls, delay: float | timedelta, start_delay: float | timedelta = 0.0) -> FixedDelay:
        # Types are part of the key: True == 1, but FixedDelay(True) is an error.
        key = (cls, type(delay), delay, type(start_delay), start_delay)
        found = _shared(_DELAYS, key)
        if found is not None:
            return found
        self = object.__new__(cls)
        object.__setattr__(
            self, "delay", checks.step(delay, name="FixedDelay delay", error=ScheduleError)
        )
        self._set_start_delay(start_delay, of="FixedDelay")
        _keep(_DELAYS, key, self)
        return self

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        """``delay`` seconds after the run's finish."""
        return record.finished + self.delay

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[float, tuple[()]]:
        """:meth:`next_run`, and no skipped slots (a delay has no slots of its own)."""
        return record.finished + self.delay, ()  # no slots of its own: none skipped

    def slot_after(self, slot: float) -> None:
        """``None``: the next run counts from a finish, which a missed run has not."""
        checks.instant(slot, name="slot_after()", of=self, error=ScheduleError)
        return None  # the delay counts from a finish, and a missed run has none

    def first_slot_after(self, slot: float, now: float) -> float:
        """``now + delay``: after downtime, one delay from now."""
        checks.instant(slot, name="first_slot_after() slot", of=self, error=ScheduleError)
        checks.instant(now, name="first_slot_after() now", of=self, error=ScheduleError)
        return now + self.delay

    measures_elapsed_time = True

    def explain(self) -> str:
        """``"10 s after each run finishes"`` (and ``", the first 5 s after registration"``)."""
        first = f", the first {self.start_delay:g} s after registration" if self.start_delay else ""
        return f"{self.delay:g} s after each run finishes{first}"

    def __repr__(self) -> str:
        start = f", start_delay={self.start_delay!r}" if self.start_delay else ""
        return f"FixedDelay({self.delay!r}{start})"


class FixedRate(_Interval):
    """Run every ``period`` seconds (or a ``timedelta``) on a fixed grid of slots;
    ``on_overrun`` says what happens to the slots a long run misses (see the module
    docstring).  ``FixedRate(timedelta(minutes=5)) == FixedRate(300)``: a ``timedelta``
    is kept as its seconds."""

    __slots__ = ("on_overrun", "period", "start_delay")
    _fields: ClassVar[tuple[str, ...]] = ("period", "on_overrun", "start_delay")
    period: float
    on_overrun: OverrunPolicy
    start_delay: float

    def __new__(
        cls,
        period: float | timedelta,
        on_overrun: OverrunPolicy = OverrunPolicy.SKIP,
        start_delay: float | timedelta = 0.0,
    ) -> FixedRate:
        # Types are part of the key: True == 1, but FixedRate(True) is an error, and
        # FixedRate(60) must not come back as a FixedRate(60.0) built earlier.
        key = (cls, type(period), period, on_overrun, type(start_delay), start_delay)
        found = _shared(_RATES, key)
        if found is not None:
            return found
        if not isinstance(on_overrun, OverrunPolicy):
            raise ScheduleError(
                f"on_overrun must be OverrunPolicy.SKIP or OverrunPolicy.CATCH_UP, "
                f"got {shown(on_overrun)}"
            )
        self = object.__new__(cls)
        object.__setattr__(
            self, "period", checks.step(period, name="FixedRate period", error=ScheduleError)
        )
        object.__setattr__(self, "on_overrun", on_overrun)
        self._set_start_delay(start_delay, of="FixedRate")
        _keep(_RATES, key, self)
        return self

    def slot_after(self, slot: float) -> float:
        """``slot + period``: the next slot of the grid."""
        checks.instant(slot, name="slot_after()", of=self, error=ScheduleError)
        return slot + self.period

    def first_slot_after(self, slot: float, now: float) -> float:
        """The first slot of ``slot``'s grid strictly after ``now``."""
        checks.instant(slot, name="first_slot_after() slot", of=self, error=ScheduleError)
        checks.instant(now, name="first_slot_after() now", of=self, error=ScheduleError)
        period = self.period
        k = _grid_index(slot, period, math.floor((now - slot) / period) + 1, now, strictly=True)
        return FixedRate.slot_at(self, slot, k)  # not self.slot_at: a subclass may have none

    def slot_at(self, anchor: float, k: int) -> float:
        """The ``k``-th slot after the slot ``anchor``: ``anchor + k * period``, the grid's
        one rule.  The next slot, the slots a run skipped, the first slot after an
        instant and recovery's passed slots are all this, counted from the slot the run
        served (after a run and in recovery, from the task's grid origin:
        :meth:`next_on_grid`, :meth:`on_grid`), never
        ``period`` added again and again (which differs in the last bit:
        docs/decisions/schedules.md, "One grid for a fixed rate's slots").  ``slot_after`` and the
        on-time ``next_run`` are ``k = 1``: ``anchor + period``, the same float."""
        return anchor + k * self.period

    measures_elapsed_time = True

    def explain(self) -> str:
        """``"Every 60 s"``, ``"Every 60 s, catching up missed slots"``, ``"..., the first
        10 s after registration"``."""
        parts = [f"Every {self.period:g} s"]
        if self.on_overrun is OverrunPolicy.CATCH_UP:
            parts.append("catching up missed slots")
        if self.start_delay:
            parts.append(f"the first {self.start_delay:g} s after registration")
        return ", ".join(parts)

    def __repr__(self) -> str:
        policy = "" if self.on_overrun is OverrunPolicy.SKIP else ", OverrunPolicy.CATCH_UP"
        start = f", start_delay={self.start_delay!r}" if self.start_delay else ""
        return f"FixedRate({self.period!r}{policy}{start})"

    def next_run(self, record: ExecutionRecord, now: float) -> float:
        """The slot after the run's slot (``record.slot``), not after its start; under
        ``SKIP`` a run that outlasted it goes on to the first slot not before its finish."""
        slot, finished, period = record.slot, record.finished, self.period
        following = slot + period  # slot_at(slot, 1)
        if following >= finished or self.on_overrun is OverrunPolicy.CATCH_UP:
            return following
        # SKIP: the first slot of the grid that is not before the finish.  FixedRate's
        # slot_at, not self's: a subclass whose next_run calls this one has none.
        return FixedRate.slot_at(self, slot, _skip_index(slot, finished, period))

    def next_run_and_skipped(
        self, record: ExecutionRecord, *, limit: int
    ) -> tuple[float, list[float] | tuple[()]]:
        """:meth:`next_run`, and the slots of the grid SKIP passed over on the way (see
        :func:`~lldsched.schedules.base.next_run_and_skipped`): ``slot_at(slot, j)`` for
        ``0 < j < k``, where the next slot is ``slot_at(slot, k)``, so a slot is listed
        skipped or run, never both (at most ``limit + 1`` are listed)."""
        slot, finished, period = record.slot, record.finished, self.period
        following = slot + period  # slot_at(slot, 1)
        if following >= finished or self.on_overrun is OverrunPolicy.CATCH_UP:
            return following, ()  # on time, or CATCH_UP: the next slot is the one due
        k = _skip_index(slot, finished, period)
        grid = FixedRate.slot_at  # not self's, as in next_run
        due = grid(self, slot, k)
        skipped = [grid(self, slot, j) for j in range(1, min(k, limit + 2))]
        # Distinct products, distinct sums, as long as a period is wider than the
        # floats' spacing at the slot; where it is not, a slot equal to the next one
        # is not skipped.
        return due, [at for at in skipped if at < due]

    def next_on_grid(
        self, record: ExecutionRecord, origin: float, limit: int
    ) -> tuple[float, list[float] | tuple[()], float]:
        """:meth:`next_run_and_skipped` counted on the task's grid ``origin + k *
        period`` (``origin``: the grid's first slot, which the core keeps with the task),
        and the origin counted on: ``origin`` itself while the run's slot is a slot of
        that grid (``slot_at(origin, k)``, the very float), else the run's slot, where a
        new grid starts (a resume, a clock jump, a row an older rule wrote re-anchor it).

        Counted from the run's slot, as :meth:`next_run_and_skipped` counts, each
        on-time run rounds its sum once and the grid drifts by the roundings: a 0.1 s
        grid at 2026's epochs steps 0.0999999046 s, 0.095 s early after a million runs.
        Counted from the origin, the ``k``-th slot is ``slot_at(origin, k)`` however
        many runs came before it (docs/decisions/schedules.md, "A fixed rate's grid is counted from
        its origin")."""
        slot, period = record.slot, self.period
        origin, k = self._index_on_grid(slot, origin)
        # What the run missed is decided as next_run_and_skipped decides it, from its
        # slot (a run of exactly a period's float keeps its next slot, one of two keeps
        # the slot at its finish); only the slots' floats are the grid's.
        if slot + period >= record.finished or self.on_overrun is OverrunPolicy.CATCH_UP:
            return origin + (k + 1) * period, (), origin  # slot_at(origin, k + 1)
        last = _skip_index(slot, record.finished, period)
        due = origin + (k + last) * period
        skipped = [origin + (k + j) * period for j in range(1, min(last, limit + 2))]
        return due, [at for at in skipped if at < due], origin

    def on_grid(self, slot: float, origin: float) -> tuple[float, int]:
        """Where ``slot`` stands on the grid from ``origin``: ``(origin, k)`` when
        ``slot`` is ``slot_at(origin, k)``, the very float, else ``(slot, 0)``, a grid
        starting at the slot, as :meth:`next_on_grid` tells them apart.  Recovery counts
        the slots after downtime from here (``slot_at(anchor, k + j)``), so the slots it
        records and queues are the grid's, not ``slot_at(slot, j)``, a rounding off it
        (docs/decisions/schedules.md, "A fixed rate's slots after downtime are its grid's")."""
        checks.instant(slot, name="on_grid() slot", of=self, error=ScheduleError)
        checks.instant(origin, name="on_grid() origin", of=self, error=ScheduleError)
        anchor, k = self._index_on_grid(slot, origin)
        return anchor, int(k)

    def _index_on_grid(self, slot: float, origin: float) -> tuple[float, float]:
        """The grid ``slot`` is on and its index there: ``(origin, k)`` when ``slot`` is
        ``slot_at(origin, k)``, the very float, else ``(slot, 0.0)``, a new grid starting
        at the slot.  ``k`` is the nearest index, a whole float (exact up to 2**53): a
        floor division, not a round() call, on the run path."""
        period = self.period
        k = (slot - origin + 0.5 * period) // period
        if origin + k * period != slot:  # not a slot of that grid: one starts at the slot
            return slot, 0.0
        return origin, k


def _skip_index(slot: float, finished: float, period: float) -> int:
    """``SKIP``'s ``k``: the first slot ``slot + k * period`` not before ``finished``."""
    return _grid_index(
        slot, period, math.ceil((finished - slot) / period), finished, strictly=False
    )
