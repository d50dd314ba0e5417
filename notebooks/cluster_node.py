"""A scheduler process for notebook 10, and the action its runs perform.

``python cluster_node.py STORE`` opens the SQLite store at STORE in shared mode
(leases and fencing tokens, docs/CLUSTER.md), runs a ``Scheduler`` on it, prints
``ready`` and runs until its stdin is closed; then it shuts down and exits.

A shared store keeps an action as its import path (``cluster_node:record_run``),
so every process can import it: the action lives here, not in the notebook.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from lldsched import Scheduler, SqliteTaskStore
from lldsched.core.context import RunContext

_lock = threading.Lock()  # serialises this process's workers' appends to the log


def record_run(log: str, ctx: RunContext) -> None:
    """Append what this run is (its slot, its fencing token, this process) to ``log``."""
    line = json.dumps({"task": ctx.task_id, "token": ctx.fencing_token, "pid": os.getpid()})
    with _lock, open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def main(path: str) -> None:
    store = SqliteTaskStore(path, shared=True, lease=5.0, poll=0.1)
    scheduler = Scheduler(workers=2, store=store).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the notebook closes it
    scheduler.shutdown()
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
