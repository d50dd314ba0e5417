"""Cron: real cron semantics, time zones and DST, fast, explained.

:mod:`~lldsched.schedules.cron.schedule` is the public face
(:class:`CronSchedule`); the grammar is in :mod:`~lldsched.schedules.cron.parse`,
the dates an expression fires on in :mod:`~lldsched.schedules.cron.days`, the
local days of its zone in :mod:`~lldsched.schedules.cron.zone`, the search in
:mod:`~lldsched.schedules.cron.search` and the English in
:mod:`~lldsched.schedules.cron.explain`.
"""

from lldsched.schedules.cron.schedule import CronSchedule

__all__ = ["CronSchedule"]
