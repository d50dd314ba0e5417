"""Stores: the persistence seam (:class:`TaskStore`) and its implementations."""

from lldsched.stores.base import TaskStore
from lldsched.stores.memory import InMemoryTaskStore

__all__ = ["InMemoryTaskStore", "TaskStore"]
