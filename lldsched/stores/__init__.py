"""Stores: implementations of the persistence seam (:class:`~lldsched.persistence.TaskStore`)."""

from lldsched.persistence import HistoryStore, TaskStore
from lldsched.stores.memory import InMemoryTaskStore
from lldsched.stores.sqlite import SqliteTaskStore

__all__ = ["HistoryStore", "InMemoryTaskStore", "SqliteTaskStore", "TaskStore"]
