"""Stores: the persistence seam (:class:`TaskStore`) and its implementations."""

from lldsched.stores.base import HistoryStore, TaskStore
from lldsched.stores.memory import InMemoryTaskStore
from lldsched.stores.sqlite import SqliteTaskStore

__all__ = ["HistoryStore", "InMemoryTaskStore", "SqliteTaskStore", "TaskStore"]
