"""The spare children of the multi-process harness (:class:`tests.cluster.Spares`): a
child scheduler starts from a process that has done its imports, each spare serves one
child, and a spare never given orders ends when its stdin does."""

from __future__ import annotations

from pathlib import Path

from tests.cluster import SPARES, Cluster, Spares, StoreSpec, start_child


def test_each_child_is_a_new_process_and_spares_wait_for_the_next(
    tmp_path: Path, cluster: Cluster
) -> None:
    spec = StoreSpec("sqlite", {"path": str(tmp_path / "tasks.db")})
    first = start_child(spec, tmp_path / "first.jsonl")
    cluster.children.append(first)
    waiting = {process.pid for process, _ in SPARES._idle}
    assert len(waiting) == Spares.COUNT
    assert first.pid not in waiting
    second = start_child(spec, tmp_path / "second.jsonl")
    cluster.children.append(second)
    assert second.pid != first.pid
    assert second.pid in waiting  # it was a spare, and is one no more
    assert second.pid not in {process.pid for process, _ in SPARES._idle}
    assert first.node != second.node
    assert first.stop() == {"rejected": 0, "node": first.node}
    assert second.stop() == {"rejected": 0, "node": second.node}


def test_a_spare_never_given_orders_ends_with_its_stdin() -> None:
    spares = Spares()
    spares.fill()
    processes = [process for process, _ in spares._idle]
    assert len(processes) == Spares.COUNT
    spares.close()
    assert [process.returncode for process in processes] == [0] * Spares.COUNT
    spares.fill()  # closed: it starts no more
    assert spares._idle == []
