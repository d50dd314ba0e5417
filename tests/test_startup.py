"""What ``import lldsched`` leaves unimported until a path needs it (docs/PERFORMANCE.md,
"Start-up"): each check runs in a fresh interpreter, as a CLI call, a serverless cold
start or a test suite's subprocess does, and reads ``sys.modules`` there."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _loaded(code: str) -> set[str]:
    """The top-level modules loaded after ``code`` ran in a fresh interpreter."""
    script = textwrap.dedent(code) + "\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


THREAD_TASK = """
import threading
import lldsched

ran = threading.Event()
scheduler = lldsched.Scheduler(workers=2)
scheduler.schedule("tick", ran.set, lldsched.OneTime(delay=0))
scheduler.start()
assert ran.wait(60), "the thread task did not run"
assert scheduler.wait_idle(60)
assert scheduler.shutdown(timeout=60)
"""


def test_a_scheduler_of_thread_tasks_never_imports_asyncio_nor_the_simulation() -> None:
    loaded = _loaded(THREAD_TASK)
    assert "lldsched" in loaded
    assert "asyncio" not in loaded
    assert "concurrent.futures" not in loaded
    assert "lldsched.sim" not in loaded  # imported by lldsched/__init__.py before


def test_the_simulation_is_imported_where_it_is_first_named() -> None:
    """``lldsched.Simulation`` is the package's name as ever (an attribute, a ``from``
    import, a star import, ``dir``), its module imported when first asked for."""
    loaded = _loaded(
        """
        import lldsched

        assert "lldsched.sim" not in sys.modules
        assert "Simulation" in dir(lldsched) and "Simulation" in lldsched.__all__
        from lldsched import Simulation
        from lldsched.sim.simulation import Simulation as defined

        assert Simulation is defined and lldsched.Simulation is defined
        star = {}
        exec("from lldsched import *", star)
        assert star["Simulation"] is defined
        try:
            lldsched.Simulator
        except AttributeError as refused:
            assert "has no attribute 'Simulator'" in str(refused), refused
        else:
            raise AssertionError("lldsched.Simulator was found")
        """
    )
    assert "lldsched.sim" in loaded


def test_a_postgresql_store_compiles_the_unparsable_dsns_patterns_only_for_one() -> None:
    """The patterns that redact a dsn libpq cannot parse cost most of their module's
    import to compile (lldsched/stores/postgres/redact.py): a dsn that parses never
    compiles them, and one that does not still has its password hidden."""
    _loaded(
        """
        from lldsched.stores.postgres import redact as postgres_redact
        from lldsched.stores.postgres.redact import redact

        compiled = postgres_redact._compiled.cache_info
        assert "secret" not in redact("host=db password=secret")  # parsed by libpq
        assert compiled().currsize == 0
        assert "secret" not in redact("host=db password=secret '")  # libpq cannot parse it
        assert compiled().currsize == 1
        """
    )


def test_a_coroutine_task_imports_asyncio_and_runs() -> None:
    loaded = _loaded(
        """
        import lldsched

        async def job() -> int:
            return 42

        assert "asyncio" not in sys.modules  # registered below without it
        scheduler = lldsched.Scheduler(workers=1)
        scheduler.schedule("job", job, lldsched.OneTime(delay=0))
        assert "asyncio" not in sys.modules
        scheduler.start()
        assert scheduler.wait_idle(60)
        records = scheduler.records()
        assert scheduler.shutdown(timeout=60)
        assert [(r.ok, r.result) for r in records] == [(True, "42")], records
        """
    )
    assert "asyncio" in loaded


def test_a_plain_function_returning_a_coroutine_is_awaited_without_asyncio_imported_first() -> None:
    _loaded(
        """
        import lldsched

        async def inner() -> str:
            return "awaited"

        def job():  # not async def: detected by what it returns
            return inner()

        scheduler = lldsched.Scheduler(workers=1)
        scheduler.schedule("job", job, lldsched.OneTime(delay=0))
        assert "asyncio" not in sys.modules
        scheduler.start()
        assert scheduler.wait_idle(60)
        records = scheduler.records()
        assert scheduler.shutdown(timeout=60)
        assert [(r.ok, r.result) for r in records] == [(True, "'awaited'")]
        """
    )


def test_a_simulation_without_coroutines_never_imports_asyncio() -> None:
    loaded = _loaded(
        """
        from lldsched.sim import Simulation, fixed
        from lldsched import FixedRate

        sim = Simulation(workers=1)
        sim.schedule("tick", FixedRate(60), duration=fixed(1))
        sim.run_for(600)
        assert len(sim.records()) == 10
        """
    )
    assert "asyncio" not in loaded


def test_the_cron_command_never_imports_asyncio() -> None:
    loaded = _loaded(
        """
        from lldsched.cli import main

        assert main(["cron", "0 3 * * 1-5", "-n", "2", "--start", "2026-03-27"]) == 0
        """
    )
    assert "asyncio" not in loaded


RUN_ONLY = (
    "lldsched.sim",  # simulate's run: its parser imported all of it, for two bounds
    "lldsched.views",  # simulate's summary and chart
    "lldsched.cli.storetasks",  # tasks' run: the store's reader and opener
    "lldsched.cli.storeurl",
    "lldsched.stores.peek",
    "statistics",  # the lab's figures (with fractions and decimal)
)
"""What only a command's run needs, packages with their modules: every start built the
parser from them, ``--help`` too."""


def test_every_command_s_help_imports_none_of_its_run() -> None:
    """Each start of the command line builds every command's parser (lldsched/cli/__init__.py,
    ``build_parser``): the modules a command runs on are imported by its run."""
    loaded = _loaded(
        """
        import contextlib, io
        from lldsched.cli import main

        for command in ("simulate", "lab", "tasks"):
            with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
                main([command, "--help"])
            assert out.getvalue().startswith("usage:"), out.getvalue()
        """
    )
    assert "lldsched.cli" in loaded
    imported = [
        module
        for module in loaded
        if any(module == name or module.startswith(f"{name}.") for name in RUN_ONLY)
    ]
    assert imported == []
