"""The container and systemd service of docs/OPERATIONS.md, run as a process and stopped
as an orchestrator stops it: SIGTERM, then SIGKILL if the grace runs out.

The block under "In a container or under systemd" is written to a file and started
with ``python`` as a slim image runs it (no TTY: its output is a pipe; ``LANG=C``,
``TZ`` unset), on an SQLite store in a temporary folder, with a fake
``NOTIFY_SOCKET`` this test binds and reads as systemd would.  Its one job
(``tests.container_jobs``) runs in a worker process and holds its run until the test
writes to a FIFO, so a run is in flight for as long as the test needs.  Every wait is
on a datagram, a line of output, an HTTP answer or the process's exit, each with a
timeout.
"""

from __future__ import annotations

import errno
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from lldsched import Outcome, SqliteTaskStore, TaskStatus
from tests.test_process_orphans import gone
from tests.waits import wait_until

ROOT = Path(__file__).resolve().parent.parent
_IMAGE_UNSETS = {"PYTHONUNBUFFERED", "TZ", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE"}
BOUND = 30.0  # seconds: the most any wait below may take (Kubernetes' default grace)


def service_block() -> str:
    """The documented service: the first Python block of the container section of
    docs/OPERATIONS.md."""
    operations = (ROOT / "docs" / "OPERATIONS.md").read_text(encoding="utf-8")
    section = operations.split("## In a container or under systemd\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert found is not None, "the container section of docs/OPERATIONS.md lost its service"
    return found.group(1)


def _read(stream: IO[str], put: Callable[[str], object]) -> None:
    with stream:  # closed at its end: unclosed, it is a ResourceWarning under -X dev
        for line in stream:
            put(line)


class Service:
    """One run of the documented service, its notifications and its output."""

    def __init__(self, folder: Path, **env: str) -> None:
        self.notify_socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # a socket's path has at most 107 bytes: a short folder, not pytest's tmp_path
        self.socket_folder = tempfile.mkdtemp(prefix="lldsched-", dir="/tmp")
        address = env.pop("NOTIFY_SOCKET", f"{self.socket_folder}/notify")
        self.notify_socket.bind("\0" + address[1:] if address.startswith("@") else address)
        self.notify_socket.settimeout(BOUND)
        script = folder / "service.py"
        script.write_text(service_block(), encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            env={
                **{k: v for k, v in os.environ.items() if k not in _IMAGE_UNSETS},
                "LANG": "C",  # a slim image's locale, TZ unset
                "LC_ALL": "C",
                "PYTHONPATH": str(ROOT),
                "PYTHONUNBUFFERED": "1",
                "APP_JOBS": "tests.container_jobs:register",
                "STORE": str(folder / "tasks.db"),
                "GATE": str(folder / "gate"),
                "HEARTBEAT": str(folder / "alive"),
                "PROBE_PORT": "0",
                "NOTIFY_SOCKET": address,
                **env,
            },
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        self.readers = [
            threading.Thread(target=_read, args=(stream, put), daemon=True)
            for stream, put in (
                (self.process.stdout, self.lines.put),
                (self.process.stderr, self.errors.append),
            )
        ]
        for reader in self.readers:
            reader.start()
        self.port = 0

    def notification(self, *, pings: bool = False) -> str:
        """The next datagram the service sent to its NOTIFY_SOCKET (past the watchdog's
        pings, unless ``pings``: one is due every 10 s however slow the machine is)."""
        while True:
            try:
                message = self.notify_socket.recv(4096).decode()
            except TimeoutError:
                code = self.process.poll()
                raise AssertionError(
                    f"no notification in {BOUND} s (exit code {code}): {''.join(self.errors)}"
                ) from None
            if pings or message != "WATCHDOG=1":
                return message

    def ready(self) -> None:
        message = self.notification()
        assert message.startswith("READY=1\nSTATUS=running; probes on port "), message
        self.port = int(message.rsplit(" ", 1)[1])

    def started(self) -> int:
        """The pid of the worker process that began the held run."""
        line = self.lines.get(timeout=BOUND)
        assert line.startswith("started "), line
        return int(line.split()[1])

    def probe(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}{path}", timeout=BOUND
            ) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()

    def exit_code(self) -> int:
        """The exit code, once the process exited and its output was read to the end."""
        code = self.process.wait(timeout=BOUND)
        for reader in self.readers:
            reader.join(timeout=BOUND)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=BOUND)
        self.notify_socket.close()
        shutil.rmtree(self.socket_folder)


def release(folder: Path) -> None:
    """Let the held run finish: write to the FIFO once the job has opened it (a job that
    never does fails the test after ``BOUND``, where a blocking open would hang it)."""
    opened: list[int] = []

    def reader_there() -> bool:
        try:
            opened.append(os.open(folder / "gate", os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:  # ENXIO: nobody has it open for reading yet
            if exc.errno != errno.ENXIO:
                raise
        return bool(opened)

    wait_until(reader_there, timeout=BOUND, what="the job to open its gate")
    os.write(opened[0], b"released\n")
    os.close(opened[0])


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    os.mkfifo(tmp_path / "gate")
    yield tmp_path


@pytest.fixture
def services(folder: Path) -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    for service in started:
        service.close()


def start(folder: Path, services: list[Service], **env: str) -> Service:
    service = Service(folder, **env)
    services.append(service)
    return service


def held_records(folder: Path) -> list[tuple[Outcome, int, str | None]]:
    with SqliteTaskStore(folder / "tasks.db") as store:
        return [(record.outcome, record.attempt, record.result) for record in store.records("held")]


def test_sigterm_drains_the_isolated_run_in_flight_and_exits_0(
    folder: Path, services: list[Service]
) -> None:
    service = start(folder, services)
    service.ready()
    worker = service.started()
    assert service.probe("/livez")[0] == 200
    assert service.probe("/readyz") == (200, "ok: 1 busy, lag 0.0 s")
    assert service.probe("/nothing")[0] == 404
    service.process.send_signal(signal.SIGTERM)  # what docker stop and Kubernetes send
    assert service.notification() == "STOPPING=1"
    assert service.probe("/readyz") == (503, "stopping: draining the runs in flight")
    assert service.probe("/livez")[0] == 200  # alive while it drains: no restart now
    os.kill(worker, 0)  # the worker process got no SIGTERM: it still runs the job
    release(folder)
    assert service.exit_code() == 0, service.errors
    assert held_records(folder) == [(Outcome.OK, 1, "'released'")]


def test_sigkill_after_the_grace_cuts_the_run_and_the_next_start_runs_it_again(
    folder: Path, services: list[Service]
) -> None:
    first = start(folder, services)
    first.ready()
    worker = first.started()
    first.process.send_signal(signal.SIGTERM)
    assert first.notification() == "STOPPING=1"  # draining: the run is held
    first.process.kill()  # the grace ran out
    assert first.exit_code() == -signal.SIGKILL
    wait_until(lambda: gone(worker), timeout=BOUND, what="its worker process to die with it")
    assert held_records(folder) == []  # a run cut short leaves no record
    second = start(folder, services)
    second.ready()
    second.started()  # the restored one-off runs again (at-least-once)
    release(folder)
    second.process.send_signal(signal.SIGTERM)
    assert second.notification() == "STOPPING=1"
    assert second.exit_code() == 0, second.errors
    assert held_records(folder) == [(Outcome.OK, 1, "'released'")]  # same attempt, run once


def test_a_second_replica_on_the_unshared_store_is_refused_naming_holder_and_fix(
    folder: Path, services: list[Service]
) -> None:
    first = start(folder, services)
    first.ready()
    first.started()
    second = start(folder, services)  # a rolling update's new pod on the same volume
    assert second.exit_code() == 1
    refusal = "".join(second.errors)
    assert f"is already open by pid {first.process.pid} on {socket.gethostname()}:" in refusal
    assert "shared=True" in refusal
    release(folder)
    first.process.send_signal(signal.SIGTERM)
    assert first.exit_code() == 0, first.errors
    assert held_records(folder) == [(Outcome.OK, 1, "'released'")]  # run once, by the first


def test_the_watchdog_pings_an_abstract_notify_socket_and_the_heartbeat_moves(
    folder: Path, services: list[Service]
) -> None:
    service = start(
        folder, services, NOTIFY_SOCKET=f"@lldsched-test-{os.getpid()}", WATCHDOG_USEC="50000"
    )
    service.ready()
    assert service.notification(pings=True) == "WATCHDOG=1"
    assert service.notification(pings=True) == "WATCHDOG=1"
    (folder / "alive").unlink()  # touched at start; the beat touches it again while alive
    wait_until((folder / "alive").exists, timeout=BOUND, what="the heartbeat file")
    service.started()
    release(folder)
    service.process.send_signal(signal.SIGINT)  # Ctrl-C stops it the same way
    assert service.notification() == "STOPPING=1"
    assert service.exit_code() == 0, service.errors


def test_a_sigterm_to_every_process_of_the_unit_kills_the_isolated_run(
    folder: Path, services: list[Service]
) -> None:
    """What systemd's default KillMode=control-group does, and why the documented unit
    says KillMode=mixed: the worker process gets the SIGTERM too and dies mid-run."""
    service = start(folder, services)
    service.ready()
    worker = service.started()
    for pid in (service.process.pid, worker):
        os.kill(pid, signal.SIGTERM)
    assert service.notification() == "STOPPING=1"
    assert service.exit_code() == 0, service.errors
    with SqliteTaskStore(folder / "tasks.db") as store:
        (record,) = store.records("held")
        assert record.outcome is Outcome.FAILED
        assert f"the worker process {worker} was killed by signal 15 (SIGTERM)" in str(record.error)
        task = store.get("held")
        assert task is not None and task.status is TaskStatus.RETRYING  # at the next start
    # its log line, under LANG=C, names the task as it is
    assert any("'Bericht für München' attempt 1 of 3 failed" in line for line in service.errors)


@pytest.mark.parametrize("grace", ["3", "10", "30"])
def test_the_services_drain_fits_any_grace_it_is_given(
    grace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DRAIN`` is ``shutdown()``'s share of the grace: above 0 and under it.  It was
    ``GRACE - 5``, so a grace of 5 s or less made it 0 or negative, and the SIGTERM's
    ``shutdown(timeout=DRAIN)`` raised ``ValidationError`` instead of draining."""
    monkeypatch.setenv("GRACE", grace)
    namespace: dict[str, object] = {"__name__": "service"}  # not "__main__": main() not run
    exec(compile(service_block(), "service.py", "exec"), namespace)
    drain = namespace["DRAIN"]
    assert isinstance(drain, float) and 0 < drain < float(grace)


# A SIGTERM that lands while the service's main thread holds the lock of what it waits
# for the signal on: raised, once, as main() (or the function it waits in) enters an
# Event's wait and that wait has just taken the Event's lock.  The handler then runs on
# the main thread with that lock held.
HOLDS_ITS_WAITS_LOCK = """\
import signal, sys, threading

_enter = threading.Condition.__enter__
fired = []


def __enter__(self):
    held = _enter(self)
    caller = sys._getframe(1)
    if (
        not fired
        and threading.get_ident() == threading.main_thread().ident  # no current_thread():
        and caller.f_code is threading.Event.wait.__code__
        and caller.f_back is not None
        and caller.f_back.f_code.co_name in ("main", "first_signal")
        and caller.f_back.f_code.co_filename.endswith("service.py")
    ):
        fired.append(True)
        signal.raise_signal(signal.SIGTERM)  # handled here, the Event's lock held
    return held


threading.Condition.__enter__ = __enter__  # (a thread's start enters one before it is listed)
"""


def test_a_sigterm_while_the_main_thread_holds_its_waits_lock_still_drains(
    folder: Path, services: list[Service]
) -> None:
    """The handler takes no lock the main thread may hold.  Was: it called
    ``stopping.set()``, which takes the Event's lock, held for a moment by the main
    thread in each ``stopping.wait(1)``: a SIGTERM in that moment hung the service for
    good (no ``STOPPING=1``, no drain, the SIGKILL at the grace's end)."""
    (folder / "sitecustomize.py").write_text(HOLDS_ITS_WAITS_LOCK, encoding="utf-8")
    service = start(folder, services, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]))
    service.ready()
    service.started()
    service.process.send_signal(signal.SIGTERM)
    assert service.notification() == "STOPPING=1"
    release(folder)
    assert service.exit_code() == 0, service.errors
    assert held_records(folder) == [(Outcome.OK, 1, "'released'")]
