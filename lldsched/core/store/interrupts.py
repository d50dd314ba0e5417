"""A ``KeyboardInterrupt`` or ``SystemExit`` a store raised: a failed write like any other,
then raised to the user on the main thread, at once or once the verb under way is whole
(docs/decisions/store-failures.md, "A store's save that raises a BaseException").

A store's write that raises one is logged as any failed write is
(:func:`~lldsched.core.store.writes.store_failed`, and the rows an outage left stale
written again: :mod:`lldsched.core.store.outage`); then, on the main thread only
(:func:`on_main_thread`), it is raised again (:func:`interrupt`): the user's Ctrl-C or
exit reaches them (the registry holds the change already), at once or, inside
:meth:`StoreInterrupts.interrupts_deferred`, once the verb under way is whole, or it is
handed to the runtime collecting them (the simulation's event loop).  On any other
thread (a worker, the timer, the coroutine loop) it stops there: that thread goes on.
A runtime tells a verb left whole from one an interrupt cut short with
:func:`left_whole`.

:class:`StoreInterrupts` holds that state; it is the base of
:class:`~lldsched.core.store.writes.StoreWrites` (through
:class:`~lldsched.core.store.outage.OutageWrites`), whose construction sets it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = [
    "StoreInterrupts",
    "interrupt",
    "interrupts_deferred",
    "left_whole",
    "on_main_thread",
]


class StoreInterrupts:
    """What a :class:`~lldsched.core.store.writes.StoreWrites` keeps of an interrupt its store
    raised (set by its construction)."""

    __slots__ = ("collecting", "deferring", "interrupted", "refused")

    deferring: bool  # a verb under way whose later steps must not be cut short
    interrupted: BaseException | None  # the interrupt raised meanwhile, for its end
    refused: int | None  # the id() of what a refusal or a deferred interrupt raised
    collecting: list[BaseException] | None  # a runtime collecting them instead (sim)

    @contextlib.contextmanager
    def interrupts_deferred(self) -> Iterator[None]:
        """While the block runs (a verb whose steps after a write must run too: cancel's
        dependents failed, a remove's forgetting, the runtime's stop of the task's runs),
        a ``KeyboardInterrupt`` or ``SystemExit`` a store raises on the main thread is
        kept (:func:`store_failed` logs it as ever) and raised once the block ends, the
        verb whole (its id kept as :attr:`refused`: a runtime tells it from an interrupt
        that landed mid-verb): raised at once, it left the task changed and the rest
        undone.  Dropped if the block raises something else (it was logged)."""
        outer = self.deferring
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = outer
            interrupted = self.interrupted
            if not outer:
                self.interrupted = None
        if not outer and interrupted is not None:
            self.refused = id(interrupted)
            raise interrupted


def interrupts_deferred(writes: StoreInterrupts | None) -> contextlib.AbstractContextManager[None]:
    """:meth:`StoreWrites.interrupts_deferred` of a core's ``writes`` (``store_writes``);
    nothing to defer without a store."""
    return contextlib.nullcontext() if writes is None else writes.interrupts_deferred()


def interrupt(writes: StoreInterrupts, error: BaseException) -> None:
    """Raise ``error``, a ``KeyboardInterrupt`` or ``SystemExit`` a store raised on the
    main thread, to the user: at once, or once the verb under way is whole
    (:meth:`StoreWrites.interrupts_deferred`; the first one kept), or handed to the
    runtime collecting them (``StoreWrites.collecting``)."""
    if writes.collecting is not None:
        writes.collecting.append(error)
        return
    if not writes.deferring:
        raise error
    if writes.interrupted is None:
        writes.interrupted = error


def left_whole(writes: StoreInterrupts | None, error: BaseException) -> bool:
    """Whether a verb that raised ``error`` is whole: an ``Exception`` (a verb refuses
    before it changes anything, or the core puts it back), or what the store raised that
    refused it or that :meth:`StoreWrites.interrupts_deferred` kept until it was whole
    (:attr:`StoreWrites.refused`, cleared here: an id held on could match a later
    error's); not another ``KeyboardInterrupt`` or ``SystemExit``, which may have landed
    between two of its statements.  Called only as a verb raises: nothing on its way."""
    if writes is None:
        return isinstance(error, Exception)
    refused, writes.refused = writes.refused, None
    return isinstance(error, Exception) or id(error) == refused


def on_main_thread() -> bool:
    """True on the main thread, where a ``BaseException`` a store raised (a Ctrl-C, an
    exit) is raised again once logged; any other thread logs it and goes on."""
    return threading.current_thread() is threading.main_thread()
