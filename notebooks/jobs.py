"""Actions for notebook 06.  A durable store keeps an action as its import path
(``jobs:send_report``), so the actions a notebook persists live in a module."""

from __future__ import annotations

import threading

SENT: list[str] = []  # what send_report was asked to send, in order
_lock = threading.Lock()  # guards SENT: the scheduler runs send_report on its worker threads


def send_report(region: str) -> None:
    """Pretend to send an hourly report for ``region``."""
    with _lock:
        SENT.append(region)
