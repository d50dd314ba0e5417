"""The demo prints the scheduler's narrative, every figure computed by the library."""

from __future__ import annotations

import os
import subprocess
import sys

EXPECTED = """\
cron '*/15 * * * *' from 09:07 UTC fires at 09:15, 09:30, 09:45
fixed rate 60 s after a run of 150 s: skip -> t+180 s, catch-up -> t+60 s
heartbeat every 30 s: runs at +0 s, +30 s and +60 s
import: succeeded on attempt 3 after retries at +1 s and +2 s
cleanup: failed after 2 attempts, last error 'RuntimeError: disk is full'
dead letter: ['task-3'] (cleanup)
timer parked 12 h out, then an insertion due now: urgent-alert ran without a nudge = True
digest paused through its slot: 0 runs, status paused
digest resumed: 1 run, next due in 3600 s
cancelled digest and heartbeat: heap holds 3 entries, 2 tombstoned
shutdown: 6 tasks registered, 2 succeeded, 1 dead
"""


def test_the_demo_prints_the_narrative() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lldsched", "demo"], capture_output=True, text=True, timeout=20
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED
    assert result.stderr == ""


def test_the_demo_runs_in_process_too() -> None:
    from lldsched.cli.demo import run_demo

    assert "\n".join(run_demo()) + "\n" == EXPECTED


def test_a_reader_that_leaves_early_is_not_an_error() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the demo writes a byte (like `| head -0`)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "lldsched", "demo"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=20,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.returncode == 0 and result.stderr == ""
