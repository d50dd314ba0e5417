"""Schedules: the *when* of a task, one Strategy per class behind :class:`Schedule`."""

from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.simple import FixedDelay, FixedRate, OneTime

__all__ = ["CronSchedule", "FixedDelay", "FixedRate", "OneTime", "Schedule"]
