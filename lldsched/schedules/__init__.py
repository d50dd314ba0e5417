"""Schedules: the *when* of a task, one Strategy per class behind :class:`Schedule`,
and two decorators over any of them (:class:`Jittered`, :class:`Window`)."""

from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.simple import FixedDelay, FixedRate, OneTime

__all__ = ["CronSchedule", "FixedDelay", "FixedRate", "Jittered", "OneTime", "Schedule", "Window"]
