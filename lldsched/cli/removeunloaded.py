"""``python -m lldsched tasks remove ID`` of a task the command's environment cannot load.

A verb acts through a scheduler built on the store (:func:`~lldsched.cli.storeurl.act_on`),
which loads every task as a starting process does: a task whose action no longer imports
(a rollback's leftover, the newer release's job that no release still running has; a
function renamed without an alias) or whose row this release cannot read is left out of
it.  Every verb but ``remove`` needs the task loaded, and is refused by name.  A removal
needs none of its code: refused too, the operator was sent to "run the command where the
service's code imports", an environment that no longer exists after a rollback, while
the row stayed due for good, each process's start warning of it.  So ``remove`` of such a
task deletes its row and records through the store (``delete``, as a ``remove()`` in any
process does: the other processes' change feeds say it was removed), once no task of the
store depends on it (read as the listing reads rows, imports none: the same refusal as
the runtime's ``remove``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from lldsched.errors import shown
from lldsched.persistence import TaskStore
from lldsched.printable import name_after
from lldsched.runtime import Runtime
from lldsched.stores.peek import Peek, Row

if TYPE_CHECKING:
    from lldsched.threaded.scheduler import Scheduler

__all__ = ["dependents_of", "remove_unloaded"]


def dependents_of(reader: Peek, task_id: str) -> list[str]:
    """The tasks of the store ``reader`` reads whose ``depends_on`` names ``task_id``, each
    as ``id 'name'``, in the store's order (rows that cannot be read name none)."""
    return [
        f"{row.id}{name_after(row.id, row.snapshot.task.name)}"
        for row in reader.tasks()
        if row.snapshot is not None and task_id in row.snapshot.task.depends_on
    ]


def remove_unloaded(scheduler: Runtime, row: Row, dependents: list[str]) -> str | None:
    """Delete ``row``'s task, which ``scheduler`` (built by ``act_on``, never started) did
    not load, from its store: None once deleted; the refusal, nothing changed, when
    ``dependents`` (:func:`dependents_of`) depend on it.  A store's failure raises its
    :class:`~lldsched.errors.StoreError`."""
    task_id = row.id
    if dependents:
        verb = "depends" if len(dependents) == 1 else "depend"
        return (
            f"cannot remove {shown(task_id)}: {', '.join(dependents)} {verb} on it; remove "
            "them first, or register them again without it"
        )
    store = cast("TaskStore", cast("Scheduler", scheduler)._core._store)  # act_on's store
    store.delete(task_id)
    return None
