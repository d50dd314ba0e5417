"""A data scientist's own notebook, on a real Jupyter kernel: what docs/GUIDE.md, "In a
Jupyter notebook", says holds.

* the cell GUIDE.md shows, run twice, leaves one scheduler: the first is shut down,
  its threads gone, and the durable store's file opened again by the second;
* the chart cell GUIDE.md shows draws once, then a listener redraws that one output
  (by its display id) after each run of the job, run again or not;
* a job's ``print`` lands under the cell that ran last, even once that cell has
  finished (ipykernel's rule for a thread it did not start);
* with ``logging.basicConfig()`` a job that gives up shows its traceback, the user's
  own line in it, under the cell that ran;
* a task shows its next run as an instant a person reads (before: epoch seconds);
* a store refused because this process holds the file says that a shutdown leaves a
  store open, and where the notebook's recipe is (before: "close that store", which a
  cell that opened it inline cannot reach once its scheduler is shut down);
* an ``isolation="process"`` job runs the code its worker process imported until the
  scheduler is built again (what the guide says of ``%autoreload``).

One kernel for the module (a start is a second or two); every wait is on a message
the kernel sends, bounded by a timeout, never a sleep.
"""

from __future__ import annotations

import os
import queue
import re
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lldsched import FakeClock, FixedRate, OneTime, Scheduler, SqliteTaskStore, StoreError
from lldsched.threaded.processes.pool import SUPPORTED as PROCESSES

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "GUIDE.md"
WAIT = 60.0  # seconds any one message may take (a loaded machine); none should
COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def guide_cells() -> list[str]:
    """The notebook cells of GUIDE.md, "In a Jupyter notebook", as written there."""
    text = GUIDE.read_text(encoding="utf-8")
    cells = re.findall(
        r"<!-- not run: a notebook cell[^\n]*\n```python\n(.*?)```", text, flags=re.DOTALL
    )
    assert len(cells) == 2, "GUIDE.md's notebook cells: the scheduler's and the chart's"
    return cells


def guide_cell() -> str:
    """The cell that builds and starts the scheduler, on a store, run again at will."""
    return guide_cells()[0]


class Kernel:
    """A real IPython kernel, its cells run one at a time, each cell's messages kept by
    the request that caused them (what a notebook shows under that cell)."""

    def __init__(self, cwd: Path) -> None:
        manager_module = pytest.importorskip("jupyter_client.manager")
        self.manager = manager_module.KernelManager(kernel_name="python3")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(cwd)]))
        self.manager.start_kernel(env=env, cwd=str(cwd))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=WAIT)
        self.later: list[dict[str, Any]] = []  # messages of cells run before

    def run(self, code: str) -> tuple[str, list[dict[str, Any]]]:
        """Run ``code`` as a cell: its request's id and the outputs shown under it until
        it finished; an error in it fails the test, with the traceback."""
        request: str = self.client.execute(code)
        outputs: list[dict[str, Any]] = []
        while True:
            message = self.client.get_iopub_msg(timeout=WAIT)
            if message["parent_header"].get("msg_id") != request:
                self.later.append(message)
                continue
            kind = message["msg_type"]
            if kind == "status" and message["content"]["execution_state"] == "idle":
                return request, outputs
            if kind == "error":
                shown = COLOURS.sub("", "\n".join(message["content"]["traceback"]))
                pytest.fail(f"the cell raised:\n{shown}")
            if kind in ("stream", "execute_result", "display_data", "update_display_data"):
                outputs.append(message)

    def next_output(self, text: str) -> dict[str, Any]:
        """The first stream message holding ``text``, from any cell, run now or before."""
        return self.next_message("stream", text)

    def next_message(self, kind: str, text: str = "") -> dict[str, Any]:
        """The first message of ``kind`` (a stream holding ``text``), from any cell."""
        while True:
            for message in self.later:
                if message["msg_type"] == kind and text in message["content"].get("text", ""):
                    self.later.remove(message)
                    return message
            try:
                self.later.append(self.client.get_iopub_msg(timeout=WAIT))
            except queue.Empty:
                pytest.fail(f"no output holding {text!r} came within {WAIT} s")

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def printed(outputs: list[dict[str, Any]], stream: str = "stdout") -> str:
    return "".join(o["content"]["text"] for o in outputs if o["content"].get("name") == stream)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    folder = tmp_path_factory.mktemp("notebook")
    (folder / "refresh_jobs.py").write_text(
        textwrap.dedent(
            """
            prices = []

            def refresh():
                prices.append(len(prices) % 3)
                print("refreshed", len(prices))
                return len(prices)

            def late(fifo):
                with open(fifo, encoding="utf-8") as gate:  # until the test writes to it
                    gate.read()
                print("late job printed")

            def broken():
                raise ValueError("no column named 'price'")  # the user's line
            """
        ),
        encoding="utf-8",
    )
    started = Kernel(folder)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.timeout(180)
def test_the_guides_cell_run_twice_leaves_one_scheduler_on_its_store(kernel: Kernel) -> None:
    cell = guide_cell()
    assert "SqliteTaskStore(" in cell
    kernel.run(cell)
    kernel.run("first = sched\nsched.wait_idle()")
    kernel.run(cell)  # again: a second store on the file was refused while the first open
    _, outputs = kernel.run(
        textwrap.dedent(
            """
            import threading
            import refresh_jobs
            assert sched is not first and sched.running and not first.running
            left = [t.name for t in threading.enumerate() if t.name.startswith("lldsched-")]
            print(sorted({name.split("-")[1] for name in left}) == [sched.name])
            sched.wait_idle()
            before = len(refresh_jobs.prices)
            sched.run_now("refresh")
            sched.wait_idle()
            print(len(refresh_jobs.prices) - before)
            """
        )
    )
    # only the second scheduler's threads are left, and a run now runs the job once
    lines = printed(outputs).splitlines()
    assert lines[0] == "True" and lines[-1] == "1", lines


@pytest.mark.timeout(180)
def test_the_guides_chart_cell_redraws_its_output_after_each_run(kernel: Kernel) -> None:
    kernel.run(guide_cell())
    chart_cell = guide_cells()[1]
    for _ in range(2):  # run again: the listener of its run before is removed
        _, outputs = kernel.run(chart_cell)
        [shown] = [o for o in outputs if o["msg_type"] == "display_data"]
        assert "image/png" in shown["content"]["data"]
        display_id = shown["content"]["transient"]["display_id"]
        kernel.run("first_redraw = globals().get('first_redraw', redraw)")
    _, removed = kernel.run("print(sched.remove_listener(first_redraw) or redraw is first_redraw)")
    assert printed(removed).strip() == "False"  # the first run's listener was gone already
    _, outputs = kernel.run('sched.wait_idle()\nsched.run_now("refresh")\nsched.wait_idle();')
    updates = [o for o in outputs if o["msg_type"] == "update_display_data"]  # heard in time
    update = updates[0] if updates else kernel.next_message("update_display_data")
    assert update["content"]["transient"]["display_id"] == display_id
    assert "image/png" in update["content"]["data"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="the job waits on a named pipe")
@pytest.mark.timeout(180)
def test_a_jobs_print_lands_under_the_cell_that_ran_last(kernel: Kernel, tmp_path: Path) -> None:
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    kernel.run(guide_cell())
    request, _ = kernel.run(
        "import refresh_jobs\nfrom lldsched import OneTime\n"
        f'sched.schedule("late", refresh_jobs.late, OneTime(delay=0), args=({str(fifo)!r},));'
    )
    with open(fifo, "w", encoding="utf-8") as gate:  # opens once the job opened its end
        gate.write("go")
    message = kernel.next_output("late job printed")
    assert message["parent_header"]["msg_id"] == request  # a cell that had finished


@pytest.mark.timeout(180)
def test_a_failed_jobs_traceback_shows_under_the_cell_with_the_users_line(
    kernel: Kernel,
) -> None:
    kernel.run(guide_cell())  # its logging.basicConfig()
    _, outputs = kernel.run(
        textwrap.dedent(
            """
            import refresh_jobs
            from lldsched import OneTime, RetryPolicy
            sched.schedule("broken", refresh_jobs.broken, OneTime(delay=0),
                           retry=RetryPolicy(max_attempts=1))
            sched.wait_idle();
            """
        )
    )
    err = printed(outputs, "stderr")
    assert "ERROR:lldsched.jobs:task " in err and "'broken' attempt 1 of 1 failed" in err, err
    assert "Traceback (most recent call last)" in err
    assert "raise ValueError(\"no column named 'price'\")  # the user's line" in err


def test_a_task_shows_its_next_run_as_an_instant_a_person_reads() -> None:
    clock = FakeClock(datetime(2026, 12, 7, 9, 0, tzinfo=UTC))
    scheduler = Scheduler(clock=clock)
    recurring = scheduler.schedule("refresh", print, FixedRate(60), id="refresh")
    assert repr(recurring) == (
        "<ScheduledTask refresh 'refresh' scheduled "
        "next_run_at=2026-12-07T09:00:00.000+00:00 attempt=0>"
    )
    once = scheduler.schedule("once", print, OneTime(delay=0), id="once")
    scheduler.cancel("once")
    assert repr(once).endswith(" cancelled next_run_at=never attempt=0>"), repr(once)
    assert scheduler.shutdown()


def test_a_file_this_process_holds_says_a_shutdown_leaves_its_store_open(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with SqliteTaskStore(path) as store:  # the cell's first run (its store inline there)
        first = Scheduler(store=store)
        first.start()
        assert first.shutdown()
        with pytest.raises(StoreError) as refused:  # the cell again: the old store open
            SqliteTaskStore(path)
    said = str(refused.value)
    assert "already open in this process (another SqliteTaskStore on the same file, not " in said
    assert "closed: a scheduler's shutdown leaves its store open; a notebook's cell run " in said
    assert (
        "again: https://github.com/lldsched/lldsched/blob/main/docs/GUIDE.md#in-a-jupyter-" in said
    )


@pytest.mark.skipif(not PROCESSES, reason="process isolation is POSIX only")
@pytest.mark.timeout(120)
def test_an_isolated_job_runs_the_code_its_worker_process_imported_until_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "edited_job.py"
    module.write_text("def version():\n    return 'first'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the child inherits sys.path

    def results() -> list[str | None]:
        with Scheduler(workers=1) as scheduler:
            task = scheduler.schedule(
                "version", "edited_job:version", FixedRate(3600), isolation="process"
            )
            assert scheduler.wait_idle(timeout=30)
            module.write_text("def version():\n    return 'edited'\n", encoding="utf-8")
            scheduler.run_now(task.id)
            assert scheduler.wait_idle(timeout=30)
            return [record.result for record in task.history]

    assert results() == ["'first'", "'first'"]  # the kept child: the code it imported
    assert results() == ["'edited'", "'edited'"]  # built again: a new child imports anew
