"""Statements and round trips per run on PostgreSQL, for 1 and 4 scheduler processes: the
cost of a claimed run counted instead of timed, so the figure holds on a busy machine.

The workload is ``bench_cluster``'s (``TASKS`` one-off no-op tasks, all due, in one
``PostgresTaskStore``; N ``cluster_worker.py`` processes told to go at once, stopped
when every task has a record), on a throwaway server (``tests/pg_server.py``) started
with ``log_statement=all``.  The workers connect with ``application_name=lldsched-bench``;
every statement the server logged for a session of that name is counted, from the
moment they are told to go until the last record is written (loading and connecting
are not counted; the LISTEN connection's statements are).  The server logs one line
per statement executed (``statement:`` for the simple protocol, ``execute`` for the
extended one).

**Round trips.**  The store uses no pipeline mode and sends no multi-statement
string: each statement is one message the client waits for, so round trips equal
statements.  A string with several statements would show as one log line with a
``;`` inside, which the count flags.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/cluster_statements.py [TASKS]``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_cluster import count, timed, worker  # noqa: E402

from tests.pg_server import PostgresServer  # noqa: E402

APPLICATION = "lldsched-bench"
SETTINGS = {
    "log_statement": "all",
    # The session's application name, then the message ("@@": pg_ctl passes its options
    # through sh, where a "|" would start a pipe).
    "log_line_prefix": "%a@@",
}
# One log line per statement: "<app>@@LOG:  statement: ..." or "<app>@@LOG:  execute <name>: ...".
STATEMENT = re.compile(r"^(.*?)@@LOG:  (?:statement|execute [^:]*): (.*)$")


def statements(log: Path, *, start: int) -> list[str]:
    """The statements logged after byte ``start`` of ``log`` by the workers' sessions."""
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", "replace")
    found = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = STATEMENT.match(line)
        if match and match.group(1) == APPLICATION:
            statement = match.group(2)  # a statement written over lines starts on the next
            if not statement.strip() and number + 1 < len(lines):
                statement = lines[number + 1]
            found.append(statement.strip())
    return found


def measure(server: PostgresServer, template: str, tasks: int, processes: int) -> dict[str, float]:
    dsn = server.create_database(template=template)
    log = server.data.parent / "server.log"
    records = count(dsn, "SELECT count(*) FROM records")
    spec = f"postgres:{dsn}?application_name={APPLICATION}"
    # Statements logged before "go" (the workers loading the rows) are not counted:
    # timed() calls done() for the first time right after it told them to go.
    start = [0]

    def done() -> int:
        if not start[0]:
            start[0] = log.stat().st_size
        return records()

    timed(worker("work", spec), processes=processes, total=tasks, done=done)
    time.sleep(0.5)  # the server writes its log asynchronously: let the last lines land
    found = statements(log, start=start[0])
    several = sum(";" in text.rstrip().rstrip(";") for text in found)
    kinds: dict[str, int] = {}
    for text in found:
        words = text.split()
        key = " ".join(words[:2]).upper() if words else "?"
        kinds[key] = kinds.get(key, 0) + 1
    print(f"{processes} process(es): {len(found)} statements for {tasks} runs")
    for key, number in sorted(kinds.items(), key=lambda item: -item[1])[:12]:
        print(f"    {number:>8}  {key}")
    if several:
        print(f"    {several} statements carried a ';' (several in one message?)")
    return {
        f"statements per run, {processes} procs": len(found) / tasks,
        f"round trips per run, {processes} procs": len(found) / tasks,
    }


def main(argv: list[str]) -> dict[str, float]:
    tasks = int(argv[0]) if argv else 2000
    results: dict[str, float] = {}
    with PostgresServer(settings=SETTINGS) as server:
        template = server.create_database()
        subprocess.run(worker("load", f"postgres:{template}", str(tasks)), cwd=ROOT, check=True)
        for processes in (1, 4):
            results.update(measure(server, template, tasks, processes))
    for label, value in results.items():
        print(f"{label:>32}: {value:.2f}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
