"""The multi-process harness (tests/cluster.py) signals only its own children.

A child's pid is free once the child is reaped: with ``pid_max`` at 32,768 and a test
run starting thousands of processes a minute, any process can take it next, a
PostgreSQL backend of another test run included (each backend leads a session of its
own).  The ``cluster`` fixture sent SIGCONT to every child's pid at the end, reaped or
not: 65 such signals went to pids nobody held in one run of the cluster and process
tests (an ``os.kill`` audit).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import Child
from tests.processes import lines_of


def test_a_reaped_child_is_sent_no_signal_its_pid_is_free_for_any_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    child = Child(process, tmp_path / "runs.jsonl", lines_of(process))
    process.wait()  # reaped: its pid is no longer this test's
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, number: sent.append((pid, number)))
    child.signal(signal.SIGCONT)
    child.signal(signal.SIGKILL)
    assert sent == []


def test_a_live_child_gets_the_signal(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = Child(process, tmp_path / "runs.jsonl", lines_of(process))
    child.signal(signal.SIGKILL)
    assert process.wait(30) == -signal.SIGKILL
    assert process.stdin is not None
    process.stdin.close()
