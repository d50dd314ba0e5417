# %% [markdown]
# # 10 · When one process is not enough
#
# [previous: 09 · The design lab](09-design-lab.ipynb) · [contents](00-index.ipynb)
#
# **Objectives**
#
# - explain why N web workers that each start a scheduler run every job N times;
# - say what a lease is, what it promises, and what it cannot promise;
# - walk through the paused-process counterexample, and show how a fencing token
#   refuses the stale write;
# - write an idempotent sink that refuses a write carrying an older token;
# - run three real scheduler processes on one SQLite file, each slot once.
#
# **Minutes:** 25 (read and run).
#
# Everything so far ran in one process. The first thing many teams do with an in-process
# scheduler is deploy it in a web app, where a process manager (gunicorn, uWSGI) starts
# several copies of the app: every copy starts its own scheduler. This notebook is the
# hand-off to distributed scheduling: the failure, the usual cure (leases), the hole in
# that cure (a process that stops for longer than its lease), and the fix for the hole
# (fencing tokens, plus actions that can take a second delivery). The design it follows is
# `docs/CLUSTER.md` in the repository.

# %%
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import cluster_node

from lldsched import (
    FakeClock,
    FixedRate,
    OneTime,
    RunContext,
    Scheduler,
    SqliteTaskStore,
    StoreError,
    TaskStatus,
)
from lldsched.sim import ClusterScenario, ClusterTask, Crash, Pause, simulate_cluster, uniform
from lldsched.views.cluster import cluster_counts
from lldsched.views.plots import cluster_timeline, fencing_comparison

# %% [markdown]
# ## 1. The failure: N workers, N runs
#
# Three web workers, each with its own scheduler, each registering the same report job
# at import time. The report is due at once and then every minute; a fake clock moves
# five minutes on.


# %% tags=["nbval-check-output"]
runs: Counter[str] = Counter()


def send_report(worker: str) -> None:
    runs[worker] += 1


clock = FakeClock(1_000_000.0)
web_workers = [Scheduler(workers=1, clock=clock).start() for _ in range(3)]
for index, scheduler in enumerate(web_workers):
    scheduler.schedule("report", send_report, FixedRate(60), args=(f"worker-{index}",), id="report")
for _ in range(5):
    clock.advance(60)
    for scheduler in web_workers:
        scheduler.wait_idle()
slots = {record.slot for scheduler in web_workers for record in scheduler.records()}
for scheduler in web_workers:
    scheduler.shutdown()
print(f"{len(slots)} slots were due; the report ran {sum(runs.values())} times:", end=" ")
print(dict(sorted(runs.items())))

# %% [markdown]
# Every worker did exactly what it was told. Nothing is broken in any one of them: the
# bug is that nobody decides *which* process runs a slot.
#
# Sharing the task store does not decide it either: two schedulers reading one table
# would both see the task due, and both run it. So lldsched refuses the second one: a
# `SqliteTaskStore` holds an operating-system lock on its file for as long as it is open,
# and a second store on the same file (in this process or any other) raises `StoreError`.

# %% tags=["nbval-check-output"]
directory = tempfile.TemporaryDirectory()
path = str(Path(directory.name) / "tasks.db")
with SqliteTaskStore(path) as first:
    try:
        SqliteTaskStore(path)
    except StoreError as refused:
        print("StoreError:", str(refused).replace(path, "tasks.db"))
directory.cleanup()

# %% [markdown]
# That turns a silent N-fold duplication into a loud error, and gives the simplest
# recipe: run the scheduler in **one** process (a service of its own, or one designated
# worker). When one process is not enough (for availability: it dies, and nobody runs
# the jobs), the processes must agree on who runs each slot: that is what
# `SqliteTaskStore(path, shared=True)` does, with the mechanism of the next sections
# (section 7 runs it).
#
# ## 2. Leases
#
# A **lease** is a row in a shared table: *this slot of this task is mine until
# `expires_at`*. A process **claims** a due slot by writing the row in one transaction
# (nobody else can hold it at the same time), **renews** it while the run goes on, and
# **settles** when the run ends: it deletes the row and writes the task's next slot. If
# the process dies, it stops renewing; the lease expires, and another process **takes
# over** the slot. Each claim also takes a **fencing token** from a counter that only ever
# goes up; we will need it in section 3.
#
# Nothing waits for a dead process to admit it is dead: the lease length is the time
# it takes to notice. Execution is therefore *at-least-once*: a process that only looked
# dead may still be running the slot that was taken over.
#
# `simulate_cluster` plays this out on virtual time: N scheduler nodes, each driving the
# same core state machine as every other runtime in this kit, over one lease table. Here
# three nodes share a report due every minute (each run takes 5 s), with a 30 s lease
# renewed every 10 s, and node-0 crashes in the middle of its run of the 60 s slot.

# %% tags=["nbval-check-output"]
report = (ClusterTask("report", every=60.0, duration=5.0),)
crash = ClusterScenario(
    nodes=3,
    tasks=report,
    lease=30.0,
    renewal=10.0,
    horizon=300.0,
    crashes=(Crash(node=0, at=62.0, restart_after=100.0),),
)
crashed = simulate_cluster(crash)
for run in crashed.runs:
    wrote = "crashed" if run.finished is None else f"wrote at {run.finished:g} s"
    how = "took it over" if run.takeover else "claimed it"
    print(f"slot {run.slot:>3g}: {run.node} {how} at {run.claimed:g} s, token {run.token}, {wrote}")
print(crashed.summary())

# %% [markdown]
# The slot of 60 s runs twice (node-0 started it and died), but only one run wrote, and
# no slot is lost: node-1 claimed it when node-0's lease ran out, at 90 s.
#
# ## 3. The paused process: why a lease is not enough
#
# Now node-0 does not die: it **stops**. A stop-the-world garbage collection, a virtual
# machine migrated, a laptop lid closed, `SIGSTOP`. For 90 s it runs no code at all,
# renews nothing, and cannot know that time passed. Then it carries on exactly where it
# was: its run finishes and it writes the report.
#
# 1. At 60 s node-0 claims the slot: lease until 90 s, **token 1**.
# 2. At 61 s node-0 pauses, in the middle of its 5 s run.
# 3. At 90 s the lease expires; node-1 claims the slot, **token 2**, runs it, writes at 95 s.
# 4. At 151 s node-0 wakes up, its run finishes, and it writes the report for slot 60,
#    carrying token 1.
#
# Checking "do I still hold the lease?" just before the write does not help: the pause
# can fall between the check and the write. What helps is that the *place written to*
# checks, at the moment of the write. With **fencing**, the sink refuses a write whose
# token is older than one it has already seen, and the settle is conditional on the
# token too (a process whose lease was taken over settles nothing).

# %% tags=["nbval-check-output"]
paused = replace(crash, crashes=(), pauses=(Pause(node=0, at=61.0, seconds=90.0),))
unfenced = simulate_cluster(replace(paused, fencing=False))
fenced = simulate_cluster(paused)
for result in (unfenced, fenced):
    print("with fencing:" if result.fencing else "without fencing:")
    for run in result.runs:
        if run.slot == 60:
            print(f"  {run.node} token {run.token} wrote at {run.finished:g} s: {run.write}")
print(cluster_counts([unfenced, fenced]).to_string())

# %% [markdown]
# Without fencing the report for the 60 s slot lands twice, and worse: node-0's late
# settle wrote the task's row back to the 120 s slot, which node-1 had already run, so
# that slot ran (and landed) twice as well. With fencing, the stale write is rejected,
# the stale settle does nothing, and no slot lands twice. The slot still *ran* twice:
# fencing does not make execution exactly-once; it makes the late write harmless.
#
# ## 4. The simulation's plot
#
# Each lane is a node: a bar per run from its claim to its write, labelled
# *slot·#token*, the green line under it the lease it held; the pause is shaded. A star
# (★, on a hatched bar) marks a write that landed on a slot where another write landed
# too; a cross (✖, on a hollow bar), a write the sink refused. Two writes seconds apart
# on one node (node-0's late write at 151 s and its next run's at 156 s) would share one
# spot: the later mark sits under the bar.

# %%
cluster_timeline(unfenced)

# %%
cluster_timeline(fenced)

# %% [markdown]
# One pause shows the mechanism; many show the rate. Five nodes, six tasks with runs of 5
# to 28 s, an hour, and twelve pauses and three crashes drawn from a seeded generator
# (so the same faults hit both runs):

# %%
rng = random.Random(7)
faults = ClusterScenario(
    nodes=5,
    tasks=tuple(ClusterTask(f"job-{i}", every=60.0, duration=uniform(5, 28)) for i in range(6)),
    horizon=3600.0,
    workers=2,
    pauses=tuple(
        Pause(node=rng.randrange(5), at=rng.uniform(0, 3500), seconds=rng.uniform(20, 120))
        for _ in range(12)
    ),
    crashes=tuple(
        Crash(node=rng.randrange(5), at=rng.uniform(0, 3500), restart_after=60.0) for _ in range(3)
    ),
)
busy = [simulate_cluster(replace(faults, fencing=False)), simulate_cluster(faults)]
fencing_comparison(busy)

# %% tags=["nbval-check-output"]
print(cluster_counts(busy).to_string())
fenced_busy = busy[1]
twice = sorted(key for key, count in fenced_busy.landed().items() if count > 1)
for task_id, slot in twice:
    print(f"with fencing, {task_id}'s slot {slot:g} landed twice:")
    for run in fenced_busy.runs:
        if (run.task_id, run.slot) == (task_id, slot) and run.write == "landed":
            print(
                f"  {run.node} claimed it at {run.claimed:g} s (token {run.token}),"
                f" lease to {run.lease_until:.0f} s, wrote at {run.finished:.0f} s"
            )
            for span in fenced_busy.spans:  # a pause of its node while it held the lease
                held = run.claimed <= span.start < run.lease_until
                if span.node == run.node and span.kind == "pause" and held:
                    print(f"    paused {span.end - span.start:.0f} s from {span.start:.0f} s")

# %% [markdown]
# Every pause longer than the lease, caught mid-run, is a takeover and a slot that runs
# twice, with or without fencing. Without it those writes land twice, and the stale
# settles send tasks back to slots already run (more runs still). With it, every stale
# write that comes after the newer one is rejected. A duplicate left with fencing (the
# lines under the table) is the other order: its node paused mid-run, a little longer
# than its lease had left, and its stale write reached the sink *before* the write of
# the node that took over (sections 5 and 6 come back to this). No slot is lost either
# way: leases are what keep the work going when a node dies.
#
# ## 5. Clock skew and the lease margin
#
# A lease's expiry is an instant, so whose clock says when it is? Here each node compares
# expiries on its own clock, as every process on a shared SQLite file compares them on
# the time its scheduler's clock gives (on one host that is one clock, unless schedulers
# are given clocks that disagree). A node whose clock runs
# ahead sees other nodes' leases expire early. A lease is never older than one renewal
# interval, so clocks may differ by up to the **margin**, `lease - renewal`, without a
# live lease looking expired. Beyond it, a node steals leases that are still held.
#
# PostgreSQL has a clock of its own: `PostgresTaskStore` compares every lease's expiry
# on the database's clock (the simulation plays it with `lease_clock="database"`), and
# skew stops mattering for leases. It still moves when each node thinks a slot is due: a
# skewed node claims early or late, never twice.

# %% tags=["nbval-check-output"]
skewed = ClusterScenario(
    nodes=3,
    tasks=tuple(ClusterTask(f"job-{i}", every=60.0, duration=uniform(5, 28)) for i in range(6)),
    horizon=3600.0,
    workers=1,
    fencing=False,
)
print(f"margin: {skewed.margin:g} s")
cases = {
    "skew within the margin": replace(skewed, skews=(0.0, 9.5, -9.5)),
    "skew past the margin": replace(skewed, skews=(0.0, 25.0, -10.0)),
    "past it, database clock": replace(skewed, skews=(0.0, 25.0, -10.0), lease_clock="database"),
}
results = [simulate_cluster(case) for case in cases.values()]
print(cluster_counts(results, labels=list(cases)).to_string())

# %% [markdown]
# Within the margin nothing is stolen. Past it, even fencing cannot save every write:
# the node whose lease was stolen is still running and often writes *before* the thief,
# when the sink has not yet seen the newer token, so it lands. Fencing refuses what comes
# after a newer write; it cannot refuse what comes before.

# %% tags=["nbval-check-output"]
with_fencing = simulate_cluster(replace(cases["skew past the margin"], fencing=True))
print(with_fencing.summary())

# %% [markdown]
# So skew past the margin is a configuration bug to prevent (the database's clock, or a
# margin larger than any skew NTP lets through), not something the tokens absorb.
#
# ## 6. An idempotent sink
#
# What an action owes a scheduler that runs it at least once is **idempotency**, keyed
# on the token: the run gets its claim's token (`ctx.fencing_token`), and the table it
# writes to keeps, **per task**, the newest token it has seen and refuses older ones.
# Per task, because the tokens come from one counter shared by every task: one fence for
# a table two tasks write to would refuse the slower task's rightful write the moment
# the other task's newer token landed. Writes are an upsert keyed by task and slot, so a
# second write for a slot replaces the first instead of adding to it. Here is such a
# table, on SQLite, in thirty lines. Actions write to it from the scheduler's worker
# threads, not from the thread that made it, and `sqlite3` binds a connection to the
# thread that opened it unless told not to: hence `check_same_thread=False`, and a lock.


# %%
class FencedReports:
    """Reports keyed by task and slot; a write carrying an older token than the newest
    seen for its task is refused."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.lock = threading.Lock()  # guards self.db: one transaction at a time
        self.db.execute("CREATE TABLE fence (task TEXT PRIMARY KEY, token INTEGER NOT NULL)")
        self.db.execute(
            "CREATE TABLE reports (task TEXT, slot REAL, body TEXT, token INTEGER,"
            " PRIMARY KEY (task, slot))"
        )

    def write(self, task: str, slot: float, body: str, token: int) -> bool:
        with self.lock, self.db:  # one transaction: the check and the write cannot be split
            self.db.execute("BEGIN IMMEDIATE")
            row = self.db.execute("SELECT token FROM fence WHERE task = ?", (task,)).fetchone()
            if row is not None and token < row[0]:
                return False  # a newer holder of this task has written: this one is stale
            self.db.execute("INSERT OR REPLACE INTO fence VALUES (?, ?)", (task, token))
            self.db.execute(
                "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?)", (task, slot, body, token)
            )
            return True

    def rows(self) -> list[tuple[str, float, str, int]]:
        query = "SELECT task, slot, body, token FROM reports ORDER BY task, slot"
        with self.lock:
            return self.db.execute(query).fetchall()


# %% tags=["nbval-check-output"]
sink = FencedReports()
print("report, node-1, token 2:", sink.write("report", 60, "by node-1", token=2))
print("report, node-0, token 1 (after its pause):", sink.write("report", 60, "by node-0", token=1))
print("backup, node-2, token 4:", sink.write("backup", 60, "by node-2", token=4))
print("report, node-1, token 3 (next slot):", sink.write("report", 120, "by node-1", token=3))
print(*sink.rows(), sep="\n")

# %% [markdown]
# The order the paused process causes (the stale write after the new one) is refused.
# The report's run under token 3 wrote after the backup's under token 4, and lands: the
# fence is the report's own, and its newest token is 3.
# The other order (the stale write first) is accepted, and then *replaced* by the newer
# write, because the write is keyed by slot: the table ends with one report per slot
# either way. A sink that appends (send an e-mail, add to a balance) cannot be fenced this
# way; it needs a key to deduplicate on, such as the task and slot.

# %% tags=["nbval-check-output"]
sink = FencedReports()
print("node-0, token 1 (before the takeover's):", sink.write("report", 60, "by node-0", token=1))
print("node-1, token 2:", sink.write("report", 60, "by node-1", token=2))
print(*sink.rows(), sep="\n")

# %% [markdown]
# Now from a real run: an action on a scheduler over a shared store (section 7 runs three
# processes on one) writes its report under its claim's token, from a worker thread.
# The same slot written again with an older token is refused.

# %% tags=["nbval-check-output"]
sink = FencedReports()


def write_report(ctx: RunContext) -> str:
    """The action: its report, under its claim's token (a first attempt's due is its slot)."""
    written = sink.write(ctx.task_id, ctx.due, "by a worker thread", token=ctx.fencing_token)
    return "written" if written else "superseded"


folder = tempfile.TemporaryDirectory()
with (
    SqliteTaskStore(Path(folder.name) / "tasks.db", shared=True) as shared,
    Scheduler(store=shared) as scheduler,
):
    daily = scheduler.schedule("report", write_report, OneTime(delay=0), id="report")
    scheduler.wait_idle()
folder.cleanup()
(record,) = daily.history
print(f"the run: {record.outcome}, token {record.token}, result {record.result}")
stale = sink.write("report", record.slot, "stale", token=record.token - 1)
print("the same slot, an older token:", stale)
print("the sink:", [(task, body, token) for task, _, body, token in sink.rows()])

# %% [markdown]
# ## 7. The same claims, for real: three processes on one SQLite file
#
# `SqliteTaskStore(path, shared=True)` is the lease table of this notebook on a real
# file: a claim is one `BEGIN IMMEDIATE` transaction, tokens come from one counter, a
# settle is conditional on the token, and each run gets its token as
# `ctx.fencing_token`. Here the notebook registers twenty one-off tasks, due a tenth
# of a second apart, and three separate Python processes (`cluster_node.py`, beside
# this notebook) each run a `Scheduler` on the same file. Each run appends its slot,
# its token and its process id to a log.

# %%
directory = tempfile.TemporaryDirectory()
store_path = str(Path(directory.name) / "tasks.db")
log = str(Path(directory.name) / "runs.jsonl")
store = SqliteTaskStore(store_path, shared=True, lease=5.0, poll=0.1)
registrar = Scheduler(store=store)  # never started: it registers, the three processes run
first_due = time.time() + 1.5
for n in range(20):
    registrar.schedule(
        f"slot-{n}",
        cluster_node.record_run,
        OneTime(first_due + n * 0.1),
        args=(log,),
        id=f"slot-{n}",
    )
nodes = [
    subprocess.Popen(
        [sys.executable, "cluster_node.py", store_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    for _ in range(3)
]
try:
    for node in nodes:
        node.stdout.readline()  # each prints "ready" once its scheduler runs
    deadline = time.monotonic() + 30
    done = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    while time.monotonic() < deadline:
        if all(snapshot.status in done for snapshot in store.load_all()):
            break
        time.sleep(0.1)
finally:
    for node in nodes:
        node.stdin.close()
    for node in nodes:
        node.wait(30)
runs = [json.loads(line) for line in Path(log).read_text().splitlines()]
records = {record.task_id: record for record in store.records()}
by_pid = Counter(run["pid"] for run in runs)
print("exit codes:", [node.returncode for node in nodes])
print("runs per process:", {f"process {i}": by_pid[node.pid] for i, node in enumerate(nodes)})

# %% tags=["nbval-check-output"]
per_slot = Counter(run["task"] for run in runs)
print(f"{len(per_slot)} slots, {len(runs)} runs; runs per slot: {dict(Counter(per_slot.values()))}")
print("different tokens:", len({run["token"] for run in runs}))
print(
    "each record carries its run's token:",
    all(records[run["task"]].token == run["token"] for run in runs),
)
registrar.shutdown()
store.close()
directory.cleanup()

# %% [markdown]
# Every slot ran once, in one of the three processes, under a token of its own. Which
# process runs which slot is a race (whoever wakes first claims), so the split changes
# from run to run, and one process may take them all; the count per slot does not. The
# repository's tests go further on the same file (`tests/test_cluster_processes.py`):
# 1,200 slots over three processes, one killed with `SIGKILL` at a random moment and
# one stopped with `SIGSTOP` past its lease and then resumed: no token claimed twice,
# no slot lost, and every write the stopped process made after its lease was taken over
# refused by the store, as in section 3.

# %% [markdown]
# ## Check yourself
#
# 1. A gunicorn app with four workers starts a scheduler in each, on one shared task
#    table and without leases. How many times does a job due every minute run in an
#    hour, and what does lldsched do instead when the store is a `SqliteTaskStore`?
# 2. A process holds a 30 s lease and checks, just before writing, that it still holds
#    it. Why can its write still be stale?
# 3. With a 30 s lease renewed every 10 s and every node passing its own clock, how far
#    apart may two nodes' clocks be before a live lease can be stolen? What removes the
#    limit?
#
# <details><summary>Answers</summary>
#
# 1. 240 times (60 slots, four runs each). lldsched refuses the second store on the same
#    file with `StoreError`, so only one process schedules; several need leases.
# 2. The process can pause between the check and the write for longer than the lease;
#    only a check at the sink, at the moment of the write (the fencing token), is safe.
# 3. 20 s, the margin `lease - renewal`. Taking expiries from one clock, the database's,
#    removes it.
#
# </details>
#
# [previous: 09 · The design lab](09-design-lab.ipynb) · [contents](00-index.ipynb)
