"""What a library that embeds lldsched meets (a plugin host, a bot framework, a pipeline
library offering "run this every hour" to users who never heard of lldsched): the
package's import leaves the importing process as it was; a plugin reloaded under a
running scheduler is told what to register; a call that raced the host's shutdown is
told from a mistake by its class; a plugin loaded from its file cannot have a
process-isolated task (docs/GUIDE.md, "Inside a library of your own")."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lldsched import (
    FixedRate,
    OneTime,
    SchedulerShutDownError,
    SchedulerStateError,
    SqliteTaskStore,
    TaskStatus,
    ValidationError,
)
from tests import jobs
from tests.conftest import SchedulerFactory

WHAT_A_PROCESS_HAS = """
import json, logging, os, signal, sys, threading, warnings


def state():
    root = logging.getLogger()
    return {
        "threads": sorted(t.name for t in threading.enumerate()),
        "signals": {s.name: repr(signal.getsignal(s)) for s in signal.valid_signals()
                    if hasattr(s, "name")},
        "root": [repr(root.handlers), root.level, logging.root.manager.disable],
        "warnings": repr(warnings.filters),
        "hooks": [repr(sys.excepthook), repr(sys.unraisablehook), repr(threading.excepthook),
                  repr(sys.displayhook), repr(warnings.showwarning)],
        "logging": [repr(logging.getLoggerClass()), repr(logging.getLogRecordFactory()),
                    repr(logging.lastResort), logging.raiseExceptions],
        "interpreter": [sys.getswitchinterval(), sys.getrecursionlimit(),
                        repr(sys.gettrace()), repr(sys.getprofile()), len(sys.meta_path),
                        len(sys.path_hooks), list(sys.path)],
        "environment": dict(os.environ),
        "files": sorted(os.listdir(".")),
    }


before = state()
import lldsched, lldsched.testing, lldsched.runtime  # noqa: E401
after = state()
own = {
    name: [repr(handler) for handler in logging.getLogger(name).handlers]
    for name in logging.root.manager.loggerDict
    if name == "lldsched" or name.startswith("lldsched.")
}
print(json.dumps({"before": before, "after": after, "handlers": own}))
"""


def test_importing_lldsched_leaves_the_importing_process_as_it_was(tmp_path: Path) -> None:
    """A library's ``import lldsched`` starts no thread, installs no signal handler, no
    hook (``sys.excepthook``, ``sys.unraisablehook``, ``threading.excepthook``), no
    warnings filter, no handler or level on the root logger, writes no file and changes
    no variable of the environment; its loggers have one handler between them, the
    ``NullHandler`` the logging HOWTO asks of a library, on ``lldsched``.  (Its exit
    and fork hooks, registered once, are docs/OPERATIONS.md's, "What a scheduler leaves
    behind".)  Run under ``-X dev -W error``: the import warns nothing either."""
    result = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", WHAT_A_PROCESS_HAS],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert result.stderr == ""
    seen = json.loads(result.stdout)
    assert seen["after"] == seen["before"]
    assert seen["handlers"].pop("lldsched") == ["<NullHandler (NOTSET)>"]
    assert seen["handlers"] and not any(seen["handlers"].values()), seen["handlers"]


PLUGIN_V1 = "def harvest() -> str:\n    return 'v1'\n"


def test_an_action_held_across_its_modules_reload_is_refused_naming_the_reload(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin host reloads a plugin's module (``importlib.reload``) while it still holds
    the function the plugin gave it: a durable store keeps the action by its import
    path, which now names the new definition, so the old one is refused.  Before, the
    message blamed "a bound method of an instance" for a plain function; it names the
    reload now, and what to register.  The new definition registers, and the task
    registered before stays."""
    (tmp_path / "harvest_plugin.py").write_text(PLUGIN_V1)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "harvest_plugin", raising=False)
    plugin = importlib.import_module("harvest_plugin")
    held = plugin.harvest
    (tmp_path / "harvest_plugin.py").write_text(PLUGIN_V1.replace("v1", "v2"))
    importlib.invalidate_caches()
    plugin = importlib.reload(plugin)
    assert plugin.harvest is not held
    with SqliteTaskStore(tmp_path / "tasks.db") as store:
        scheduler = make_scheduler(store=store)
        scheduler.schedule("kept", plugin.harvest, FixedRate(60), id="kept")
        with pytest.raises(ValidationError) as refused:
            scheduler.schedule("harvest", held, FixedRate(60), id="harvest")
        message = str(refused.value)
        assert "'harvest_plugin:harvest' imports" in message
        assert "the module was reloaded" in message
        assert "bound method" not in message
        assert [task.id for task in scheduler.tasks()] == ["kept"]
        task = scheduler.schedule("harvest", plugin.harvest, FixedRate(60), id="harvest")
        assert task.action is plugin.harvest
        assert sorted(s.task.id for s in store.load_all()) == ["harvest", "kept"]


def test_a_call_that_raced_the_hosts_shutdown_is_told_from_a_mistake(
    make_scheduler: SchedulerFactory,
) -> None:
    """A host shuts a plugin's scheduler down while the plugin's own code still calls it:
    that refusal is a ``SchedulerShutDownError``, which the host may ignore, and a
    mistake (rescheduling a finished task, starting a running scheduler) stays a plain
    ``SchedulerStateError``.  Before, all were the one class, told apart by their text."""
    scheduler = make_scheduler()  # started
    done = scheduler.schedule("once", jobs.noop, OneTime(delay=0), id="once")
    assert scheduler.wait_idle()
    assert done.status is TaskStatus.SUCCEEDED
    with pytest.raises(SchedulerStateError) as finished:
        scheduler.reschedule("once", FixedRate(60))
    with pytest.raises(SchedulerStateError) as running:
        scheduler.start()
    assert type(finished.value) is SchedulerStateError
    assert type(running.value) is SchedulerStateError
    scheduler.shutdown()
    for late in (
        lambda: scheduler.schedule("late", jobs.noop, FixedRate(60)),
        lambda: scheduler.reschedule("once", FixedRate(60)),
        scheduler.start,
    ):
        with pytest.raises(SchedulerShutDownError, match=r"stopped|shut down"):
            late()


PLUGIN_DOUBLES = "def double(n: int) -> int:\n    return n * 2\n"


@pytest.mark.skipif(sys.platform == "win32", reason="process isolation is POSIX only")
def test_a_process_isolated_action_of_a_module_loaded_from_a_file_is_refused_at_registration(
    make_scheduler: SchedulerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin host loads a plugin from its file (``spec_from_file_location``), not from
    ``sys.path``: the module imports back in this process (it is in ``sys.modules``), and
    the worker process, which imports it by its name, cannot.  Before, the registration
    passed and every run failed there ("No module named ..."), retried; it is refused
    now, naming the module and its file, nothing registered changed.  With its folder on
    ``sys.path`` the same module registers and runs."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "embedded_doubles.py").write_text(PLUGIN_DOUBLES)
    spec = importlib.util.spec_from_file_location(
        "embedded_doubles", folder / "embedded_doubles.py"
    )
    assert spec is not None and spec.loader is not None
    plugin = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "embedded_doubles", plugin)
    spec.loader.exec_module(plugin)
    scheduler = make_scheduler(workers=1)
    scheduler.schedule("kept", jobs.noop, FixedRate(60), id="kept")
    with pytest.raises(ValidationError) as refused:
        scheduler.schedule(
            "double", "embedded_doubles:double", OneTime(delay=0), args=(21,),
            isolation="process",
        )  # fmt: skip
    message = str(refused.value)
    assert "imports 'embedded_doubles' by its name" in message
    assert repr(str(folder / "embedded_doubles.py")) in message
    assert [task.id for task in scheduler.tasks()] == ["kept"]
    monkeypatch.syspath_prepend(str(folder))
    task = scheduler.schedule(
        "double", "embedded_doubles:double", OneTime(delay=0), args=(21,), isolation="process"
    )
    assert scheduler.wait_idle(timeout=30)
    assert [(record.ok, record.result) for record in task.history] == [(True, "42")]
