"""A subclass of a built-in schedule that answers ``next_run`` its own way: the fast paths
it inherits from a class whose answers it overrides are replaced, a query by the method
that answers from its own ``next_run`` (:data:`~lldsched.schedules.base.FROM_NEXT_RUN`),
a grid by None (:func:`answered_its_own_way`, run once per class by
:class:`AnswersItsOwnWay`, the base of every built-in schedule; docs/EXTENDING.md, "A
subclass of a built-in schedule").
"""

from __future__ import annotations

from lldsched.schedules.base import FROM_NEXT_RUN

__all__ = ["FAST_PATHS", "AnswersItsOwnWay", "answered_its_own_way"]

FAST_PATHS: dict[str, tuple[str, ...]] = {
    "next_run_and_skipped": ("next_run",),
    "slot_after": ("next_run",),
    "first_slot_after": ("next_run",),
    "slot_at": ("next_run",),
    "on_grid": ("next_run",),
    "next_on_grid": ("next_run", "next_run_and_skipped"),
}
"""A built-in schedule's fast paths, each with the answers it is derived from: what a
subclass that answers one of those its own way no longer inherits
(:func:`answered_its_own_way`)."""


def answered_its_own_way(cls: type) -> None:
    """The one rule for a subclass of a built-in schedule (:class:`AnswersItsOwnWay`
    calls it once, as the class is made): a fast path it inherits (:data:`FAST_PATHS`:
    ``next_run_and_skipped``, ``slot_after``, ``first_slot_after``, ``slot_at``,
    ``on_grid``, ``next_on_grid``) from a class whose answers it overrides (it, or a mixin
    before that class, defines ``next_run``; for ``next_on_grid``, also
    ``next_run_and_skipped``) answers with that class's arithmetic, over the head of its own
    ``next_run``.  A query among them (``next_run_and_skipped``, ``slot_after``,
    ``first_slot_after``) is replaced by a method that answers from ``next_run``
    (:data:`~lldsched.schedules.base.FROM_NEXT_RUN`, what the functions of
    :mod:`lldsched.schedules.base` derive for a schedule that has none), so
    ``sub.slot_after(slot)`` still answers, the subclass's way; a grid one (``slot_at``,
    ``on_grid``, ``next_on_grid``) is set to None: the subclass counts on no grid, as a
    ``Window`` around a fixed delay counts on none.  A fast path it defines itself (or one
    defined after its own ``next_run``) is kept, and so is every fast path of a subclass
    that only words itself differently.  Nothing is asked at run time: a built-in schedule's
    attributes are what they were."""
    mro = cls.__mro__

    def owner(name: str) -> int:
        return next((i for i, kind in enumerate(mro) if name in vars(kind)), len(mro))

    for fast, answers in FAST_PATHS.items():
        defined = owner(fast)
        if defined < len(mro) and any(owner(answer) < defined for answer in answers):
            setattr(cls, fast, FROM_NEXT_RUN.get(fast))  # a grid's: None, not typed


class AnswersItsOwnWay:
    """The base of every built-in schedule a user may subclass (``OneTime``,
    ``FixedDelay``, ``FixedRate``, ``CronSchedule``, ``Window``, ``Jittered``): a
    subclass that overrides ``next_run`` is asked it (:func:`answered_its_own_way`,
    docs/EXTENDING.md, "A subclass of a built-in schedule")."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        answered_its_own_way(cls)
