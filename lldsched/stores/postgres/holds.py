"""A control verb's hold of a task's row in a
:class:`~lldsched.stores.postgres.PostgresTaskStore`
(:func:`~lldsched.storecalls.verb_held`): one transaction that holds the id's lock and
the row's (``also``'s rows too), and the store's lock, while the verb reads the change
feed and writes; every write inside is a savepoint of it, committed at its end.

:class:`PostgresHolds` is mixed into the store: ``verb_held``, ``verb_call`` (one
``timeout`` a verb, in an outage: ``_out_of_reach``), a hold inside a hold
(``_hold_inside``: the outer one's), and what ends a hold: a call inside that lost the
connection or aborted the transaction (``_inside_failed``, noted for the hold's end to
name) and the error of a hold whose connection was lost (``_hold_lost``).  What a hold
wrote, and the caches put back when it is not stored, is
:class:`~lldsched.stores.held.HeldWrites`'; the connection each call inside is given is
:mod:`~lldsched.stores.postgres.connection`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.stores.held import HeldWrites
from lldsched.stores.postgres import sql
from lldsched.stores.postgres.driver import lost, psycopg
from lldsched.stores.postgres.parts import PostgresParts

__all__ = ["PostgresHolds"]

log = logging.getLogger(STORE)


class PostgresHolds(PostgresParts):
    """A verb's hold of its rows: mixed into PostgresTaskStore."""

    @contextlib.contextmanager
    def verb_held(self, task_id: str, also: Sequence[str] = ()) -> Iterator[None]:
        """Inside, no other node writes ``task_id``'s row: a control verb (pause, cancel,
        resume, modify, ...) reads the change feed and writes its rows in one transaction
        that holds the id's lock and the row's (the lock order: :meth:`_known`), and this
        store's lock throughout (see :func:`~lldsched.storecalls.verb_held`).  So a run's
        settle on another node (its ``UPDATE`` of the row) waits for the verb's commit,
        and then keeps a pause or cancel written during its run, as ever; one that
        committed before is read by the verb's feed (a new statement's snapshot).  Every
        write inside is a savepoint of it; what they wrote is committed at the end,
        whatever the block raised (the verb's registry has it).  ``also``: the rows of other
        tasks it may write (a ``cancel``'s dependents), locked with the task's own in one
        statement, in the order of their ids (:data:`~lldsched.stores.postgres.sql.LOCK_HELD`),
        so that two holds never wait for each other's rows.

        A hold whose end fails (the COMMIT: the connection lost, the deadline passed)
        stored none of them: the caches are put back as they were before them and
        :class:`~lldsched.storecalls.HoldNotCommitted` names every task written
        (:mod:`lldsched.stores.held`), for the runtime to write again.  Nothing else is
        written inside: the settles queued meanwhile wait for its end, and a call inside
        whose connection was lost fails (a new one would write outside the hold).  A hold
        whose connection was lost inside names why (:meth:`_hold_lost`); one whose
        transaction a call inside aborted names that call and the database's words
        (:meth:`_inside_failed`).  An interrupt (a Ctrl-C, a signal handler's exception)
        that lands in the end before the transaction block is left (psycopg's COMMIT) is
        the same, the COMMIT taken as not made, the interrupt raised over the
        ``HoldNotCommitted`` (:meth:`HeldWrites.cut
        <lldsched.stores.held.HeldWrites.cut>`); one that lands after is raised alone.  A
        hold inside a hold is the outer one's (:meth:`_hold_inside`).

        **One timeout a verb, in an outage.**  A hold that cannot be taken because the
        server is out of reach for its whole ``timeout`` (no connection to be had, or its
        round trips cut by the deadline: :meth:`_out_of_reach`) lets the verb run unheld,
        as the runtime does on any failure to hold, and every call the verb makes inside
        (its read of the feed, its writes) fails at once, sending nothing: they are the
        runtime's failed writes of an outage, written again once the store answers.
        Before, each of them waited its own timeout: a ``pause`` waited three (six with
        settles held back, which each call writes first).  A hold that fails at once (a
        connection found dead by a restart), or that the server itself ends (a lock
        timeout it answers), raises as before, and the verb's calls are made as ever; one
        whose wait for another process's hold (a stalled one) the deadline cut is out of
        reach as well: its writes would wait for the same lock."""
        raised: BaseException | None = None
        unheld: str | None = None  # why the verb goes on unheld, its calls refused
        with self.verb_call():  # the verb's, which its calls may share
            if self._hold is not None:  # a hold inside a hold: the outer one's, as one
                yield from self._hold_inside(task_id, also)
                return
            held = self._hold = HeldWrites(
                (self._defined, self._held, self._added, self._decoded, self._seen)
            )
            entered = made = False  # its rows locked; its COMMIT known to be made
            committing = False  # its COMMIT under way: failed, whether made is not known
            try:
                with self._using("take the row locks for a verb on task", task_id) as connection:
                    with connection.transaction() as transaction:
                        self._bound(connection)
                        connection.execute(sql.LOCK_ID, {"id": task_id})
                        connection.execute(sql.LOCK_HELD, {"ids": [task_id, *also]})
                        entered = True
                        self._holding = connection
                        try:
                            yield
                        except BaseException as exc:  # committed all the same, then raised
                            raised = exc
                        # A statement that failed inside outside a savepoint of its own (a
                        # read: the records a dependency recount reads, on a lock timeout)
                        # aborted the transaction: its COMMIT would roll back every write
                        # inside, and psycopg would say it committed.
                        if (
                            connection.info.transaction_status
                            is psycopg.pq.TransactionStatus.INERROR
                        ):
                            raise held.ended_error(
                                f"the PostgreSQL store {self.dsn!r}",
                                "failed: a statement on its connection inside it, not one of "
                                "the store's calls, aborted its transaction",
                            )
                        # The COMMIT is a round trip too: the writes inside disarmed the
                        # deadline as each ended, and a COMMIT sent into a silent network
                        # waited for ever, the scheduler's lock held.
                        if not lost(connection):
                            self._deadline.watch(connection.fileno(), fresh=True)
                        committing = True  # the block's end sends it
                    committing = False
                    # psycopg ends a transaction whose connection was lost inside (a write
                    # there failed so: a restart, a reset, the deadline) without a word.
                    if transaction.status is not transaction.Status.COMMITTED:
                        raise self._hold_lost(held)
                    made = True
            except StoreError as exc:
                if entered:  # the block's error, if any, over it
                    # A COMMIT sent, its reply lost with the connection, may have been made;
                    # one the server refused, or never sent (the connection still fit), was not.
                    known = not (committing and lost(connection))
                    held.undo(exc, raised=raised, known=known)
                unheld = self._out_of_reach()
                if unheld is None:
                    raise  # the verb goes on unheld, its calls made as ever
                log.debug("no hold of task %r's row for a verb: %s", task_id, exc)
            except BaseException as exc:  # a Ctrl-C, a signal handler's: in its end, or around
                if not entered or made:
                    raise  # nothing held yet, or stored: the runtime takes the verb for whole
                held.cut(f"the PostgreSQL store {self.dsn!r}", exc)
            finally:
                self._hold = None
                self._holding = None
                self._hold_failed = None
            if unheld is not None:
                self._deadline.spend(f"the server was out of reach at the verb's hold ({unheld})")
                yield  # every call inside refused at once (_open)
        if raised is not None:
            raise raised

    @contextlib.contextmanager
    def verb_call(self) -> Iterator[None]:
        """The calls of one verb or registration (:func:`~lldsched.storecalls.verb_call`),
        under this store's lock, as one call of the deadline's (:meth:`Deadline.call
        <lldsched.stores.postgres.deadline.Deadline.call>`): each call inside has a
        ``timeout`` of its own while the server answers, and once one finds it out of
        reach (no connection to be had, or a round trip the deadline cut) every call after
        it fails at once, sending nothing.  So a verb or a registration waits one
        ``timeout`` in all during an outage, not one for each call it makes (its read of
        the change feed, its writes).  :meth:`verb_held` is one, holding the row too."""
        self._refuse_if_forked()
        with self._call():
            yield

    def _out_of_reach(self) -> str | None:
        """Why the server could not be reached for the whole of the call under way (a
        verb's: :meth:`verb_held`), its ``timeout`` spent and no connection left; None if
        it could (it answered, or failed at once: a restart, a lock timeout it answered)."""
        spent = self._deadline.spent()
        connection = self._connection
        if spent is None or (connection is not None and not lost(connection)):
            return None
        return spent

    def _hold_inside(self, task_id: str, also: Sequence[str]) -> Iterator[None]:
        """A verb's hold inside another (caller holds the lock): its rows locked in the
        outer one's transaction, its writes the outer one's, stored or not with them and
        said once, by the outer hold.  Before, it was a savepoint of its own that checked
        the transaction as a hold's end does: a call inside that aborted it raised a
        plain StoreError naming no write, and the rollback to its savepoint let the outer
        hold commit without the inner one's writes, though the store's caches had them
        as written (never written again).  The locks are taken in a savepoint released
        at once (PostgreSQL keeps them to the outer hold's end), so a lock timeout there
        fails this hold alone (the verb runs unheld: ``verb_held``)."""
        doing = "take the row locks for a verb on task"
        with self._using(doing, task_id) as connection, connection.transaction():
            connection.execute(sql.LOCK_ID, {"id": task_id})
            connection.execute(sql.LOCK_HELD, {"ids": [task_id, *also]})
        yield

    def _inside_failed(
        self,
        exc: psycopg.Error,
        why: str,
        error: StoreError,
        doing: str,
        task_id: str | None,
    ) -> None:
        """A call inside a verb's hold (``doing`` ``task_id``) failed with ``exc`` (``why``:
        its words; ``error``: the StoreError it raises).  If it took the hold's
        transaction with it, noted for the hold's end to name
        (:meth:`HeldWrites.ended <lldsched.stores.held.HeldWrites.ended>`: the first such
        call, the cause; those after it counted): the call and the database's words with
        its SQLSTATE (the first line: the whole is ``error``'s, the hold's error's
        ``__cause__``), and how it ended the transaction: it lost the connection (``why``
        then kept for the calls refused after, :meth:`_hold_lost`), or it failed outside
        a savepoint of its own (a read, a RUNNING redefinition), which aborted it.  One
        that failed in a savepoint of its own ended nothing: the hold goes on.  Before,
        ``why`` was kept for every call that failed, the last one's named by a hold whose
        connection was lost, though an earlier read had aborted it."""
        holding, hold = self._holding, self._hold
        if hold is None or holding is None:
            return
        if lost(holding):
            self._hold_failed = why
            how = "which lost its connection"
        elif holding.info.transaction_status is psycopg.pq.TransactionStatus.INERROR:
            how = "outside a savepoint of its own, which aborted its transaction"
        else:
            return
        done = doing if task_id is None else f"{doing} {task_id!r}"
        said = why.partition("\n")[0]  # psycopg's next lines quote the statement
        code = f" (SQLSTATE {exc.sqlstate})" if exc.sqlstate else ""
        hold.ended(done, how, f"{said}{code}", error)

    def _hold_lost(self, held: HeldWrites | None = None) -> StoreError:
        """The error of a verb's hold whose connection was lost, naming why: the
        deadline's reason if it cut the connection, else psycopg's words for the call
        inside that failed on it (psycopg ends the hold's transaction without a word, and
        refusing a new connection has none of its own).  ``held``: the hold at its end,
        whose :class:`~lldsched.storecalls.HoldNotCommitted` names the hold and says it
        was not committed (before, its message said both twice): the error names the
        call that ended the hold (:meth:`_inside_failed`: it lost the connection, or
        before that aborted its transaction), "lost its connection (why)" if none did;
        None for a call refused inside."""
        why = self._deadline.reason(self._hold_failed or "no call inside failed on it")
        store = f"the PostgreSQL store {self.dsn!r}"
        if held is not None:
            return held.ended_error(store, f"lost its connection ({why})")
        return StoreError(
            f"{store} failed: the connection of a verb's hold was lost ({why}); "
            "nothing more is written inside it"
        )
