"""The spare children of the multi-process harness (:class:`tests.cluster.Spares`): a
child scheduler starts from a process that has done its imports, each spare serves one
child, a child has the environment its test has, and a spare never given orders ends
when its stdin does."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import cluster as harness
from tests.cluster import SPARES, Cluster, Spares, StoreSpec, start_child
from tests.pg_server import PostgresServer


def test_each_child_is_a_new_process_and_spares_wait_for_the_next(
    tmp_path: Path, cluster: Cluster
) -> None:
    spec = StoreSpec("sqlite", {"path": str(tmp_path / "tasks.db")})
    first = start_child(spec, tmp_path / "first.jsonl")
    cluster.children.append(first)
    waiting = {spare.process.pid for spare in SPARES._idle}
    assert len(waiting) == Spares.COUNT
    assert first.pid not in waiting
    second = start_child(spec, tmp_path / "second.jsonl")
    cluster.children.append(second)
    assert second.pid != first.pid
    assert second.pid in waiting  # it was a spare, and is one no more
    assert second.pid not in {spare.process.pid for spare in SPARES._idle}
    assert first.node != second.node
    assert first.stop() == {"rejected": 0, "node": first.node}
    assert second.stop() == {"rejected": 0, "node": second.node}


def test_a_spare_never_given_orders_ends_with_its_stdin_and_close_reaps_every_one() -> None:
    spares = Spares()
    spares.fill()
    processes = [spare.process for spare in spares._idle]
    assert len(processes) == Spares.COUNT
    first = processes[0]
    assert first.stdin is not None
    first.stdin.close()  # as when this process dies: the end of its stdin
    assert first.wait(30) == 0
    spares.close()
    assert all(process.returncode is not None for process in processes)
    spares.fill()  # closed: it starts no more
    assert spares._idle == []


def _environ(pid: int) -> list[bytes]:
    """The environment process ``pid`` was started with (Linux)."""
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


def test_a_child_has_its_tests_environment_not_the_one_its_spare_was_started_with(
    tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = StoreSpec("sqlite", {"path": str(tmp_path / "tasks.db")})
    SPARES.fill()
    started_before = {spare.process.pid for spare in SPARES._idle}
    monkeypatch.setenv("LLDSCHED_TEST_SPARE", "set by this test")
    child = start_child(spec, tmp_path / "runs.jsonl")
    cluster.children.append(child)
    assert child.pid not in started_before  # those were ended: started without the variable
    assert b"LLDSCHED_TEST_SPARE=set by this test" in _environ(child.pid)
    monkeypatch.delenv("LLDSCHED_TEST_SPARE")  # the spares started since have it
    later = start_child(spec, tmp_path / "runs-2.jsonl")
    cluster.children.append(later)
    assert not [line for line in _environ(later.pid) if line.startswith(b"LLDSCHED_TEST_SPARE")]


def test_the_next_tests_children_come_from_the_spares_this_test_started(
    tmp_path: Path, cluster: Cluster
) -> None:
    """pytest sets ``PYTEST_CURRENT_TEST`` to each test's id: spares started during one
    test are used by the next all the same (they were all ended, unused, before)."""
    spec = StoreSpec("sqlite", {"path": str(tmp_path / "tasks.db")})
    SPARES.fill()
    waiting = {spare.process.pid for spare in SPARES._idle}
    for spare in SPARES._idle:
        spare.env["PYTEST_CURRENT_TEST"] = "tests/test_other.py::test_before (call)"
    children = cluster.start(spec, [tmp_path / f"runs-{n}.jsonl" for n in range(3)])
    assert {child.pid for child in children} == waiting


def _argv(process: subprocess.Popen[str]) -> list[str]:
    """What ``process`` was started with (a list: :meth:`Spares._start`)."""
    assert isinstance(process.args, list)
    return [str(arg) for arg in process.args]


def test_a_spare_imports_postgresqls_store_only_after_a_child_that_opened_one() -> None:
    """An SQLite child never opens PostgreSQL's store: its spare does not import psycopg
    (as long again as lldsched); the spares started after a PostgreSQL child do."""
    spares = Spares()
    taken = [spares.take("sqlite")]  # none waiting: one started for it
    try:
        spares.fill()
        assert [_argv(spare.process)[-1] for spare in [*taken, *spares._idle]] == [
            "tests.cluster_child"
        ] * (1 + Spares.COUNT)
        taken.append(spares.take("postgres"))  # the oldest waiting, as ever
        spares.fill()
        assert _argv(spares._idle[-1].process)[-2:] == ["tests.cluster_child", "postgres"]
        taken.append(spares.take("pgbouncer"))  # PostgreSQL's store too
        assert spares.ahead
    finally:
        for spare in taken:
            assert spare.process.stdin is not None
            spare.process.stdin.close()  # given no orders: it ends
            assert spare.process.wait(30) == 0
        spares.close()


def test_a_postgresql_child_from_a_spare_that_did_not_import_its_store_opens_it(
    tmp_path: Path,
    cluster: Cluster,
    postgres_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next test's engine guessed wrong: a PostgreSQL child from an SQLite test's
    spare imports the store as it opens it, and runs as any."""
    spares = Spares()
    monkeypatch.setattr(harness, "SPARES", spares)
    try:
        spares.fill()  # as after an SQLite test
        waiting = [spare.process for spare in spares._idle]
        spec = StoreSpec("postgres", {"dsn": postgres_server.create_schema()})
        child = start_child(spec, tmp_path / "runs.jsonl")
        cluster.children.append(child)
        assert child.process is waiting[0] and _argv(child.process)[-1] == "tests.cluster_child"
        assert child.stop() == {"rejected": 0, "node": child.node}
    finally:
        spares.close()
