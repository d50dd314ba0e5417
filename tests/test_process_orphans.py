"""Processes of ``isolation="process"`` do not outlive what owns them: a worker process
its scheduler's process, a command a job started the job's kill.

The scheduler's process is killed (SIGKILL, as the OOM killer does) while its worker
process runs a job that waits; the worker process must not live on, finishing a call
whose timeout nobody enforces while a restarted scheduler runs the job again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lldsched import OneTime, RetryPolicy
from tests.conftest import SchedulerFactory
from tests.waits import wait_until

BOUND = 20.0  # seconds: the most any wait below may take (the job waits 60 s at most)


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie nobody has reaped yet counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.exists():  # Linux
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return state.stdout.strip().startswith("Z") or not state.stdout.strip()


def read_pid(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text() != "", timeout=BOUND, what=str(path))
    return int(path.read_text())


@pytest.fixture
def scheduler_process(tmp_path: Path) -> Iterator[Callable[[bool], subprocess.Popen[str]]]:
    """Start ``tests.orphan_child`` (with a lingering forked child, or not); at the end,
    release and kill whatever it left."""
    started: list[subprocess.Popen[str]] = []

    def start(linger: bool) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "tests.orphan_child", str(tmp_path / "store.db"),
                str(tmp_path / "worker"), str(tmp_path / "release"),
                str(tmp_path / "linger") if linger else "-",
            ],
            stdin=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    (tmp_path / "release").write_text("")  # a worker process left behind returns at once
    for process in started:
        process.kill()
        process.communicate(timeout=BOUND)  # closes the stdin a lingering child waits on


@pytest.mark.parametrize("linger", [False, True], ids=["alone", "with-a-forked-child"])
def test_a_worker_process_dies_when_its_schedulers_process_is_killed(
    scheduler_process: Callable[[bool], subprocess.Popen[str]], tmp_path: Path, linger: bool
) -> None:
    """SIGKILL the scheduler's process while its worker process runs a job: the worker
    process is gone too, mid-call, as a thread would be.  With a child forked from the
    scheduler's process living on (a gunicorn worker), its copies of the scheduler's
    descriptors must not keep the worker process alive."""
    process = scheduler_process(linger)
    worker = read_pid(tmp_path / "worker")
    assert worker != process.pid and not gone(worker)
    if linger:
        lingering = read_pid(tmp_path / "linger")
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=BOUND) == -signal.SIGKILL
    wait_until(lambda: gone(worker), timeout=BOUND, what=f"worker process {worker} to exit")
    if linger:
        assert not gone(lingering)  # it was there all along, holding what it inherited


def test_a_job_killed_at_its_timeout_takes_the_command_it_started_with_it(
    make_scheduler: SchedulerFactory, tmp_path: Path
) -> None:
    """A job that shelled out and ran past its timeout: the worker process is killed,
    and so is the command it started (its process group), not left running.

    The timeout is cut once the command runs, not given short at the start: a 2 s
    timeout counted from the run's start left the job that long to import its module,
    start the command and write its pid, and a worker process a loaded machine kept
    from running that long was killed before the command existed (the test then waited
    for a pid that never came).  A timeout cut below what the run has taken already
    stops it at once (docs/decisions/changing-a-task.md, "A run in flight is held to its task's
    timeout now"), whatever the machine's load."""
    scheduler = make_scheduler(workers=1)
    marker = tmp_path / "command"
    task = scheduler.schedule(
        "shells-out", "tests.process_jobs:shell_out", OneTime(delay=0), isolation="process",
        args=[str(marker), 3600], timeout=3600, retry=RetryPolicy(max_attempts=1),
    )  # fmt: skip
    command = read_pid(marker)  # the command runs: now the run is over its timeout
    assert not task.history and not gone(command)
    scheduler.modify(task.id, timeout=0.001)
    wait_until(lambda: len(task.history) == 1, timeout=BOUND, what="the run's timeout")
    assert task.history[0].timed_out, task.history[0].error
    wait_until(lambda: gone(command), timeout=BOUND, what=f"the job's command {command}")


def test_the_guide_says_a_run_in_flight_dies_with_its_schedulers_process() -> None:
    """GUIDE.md's at-least-once bullet said a process-isolated run in flight "is not
    stopped by its scheduler's death: its worker process finishes the call (its timeout
    no longer enforced)", what the lifeline was made to end and what
    ``test_a_worker_process_dies_when_its_schedulers_process_is_killed`` shows false."""
    guide = " ".join((Path(__file__).parent.parent / "docs" / "GUIDE.md").read_text().split())
    bullet = guide.split("- **At-least-once**", 1)[1].split(" - **", 1)[0]
    assert "finishes the call" not in bullet
    assert "A *process-isolated* run in flight dies with its scheduler's process" in bullet
