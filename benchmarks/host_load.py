"""How busy the host was while a benchmark ran: CPU count, load averages, other processes' CPU.

On a shared two-core machine another process's test run is enough to move a latency by
milliseconds and a throughput ratio by half, so every figure is printed with the load
it was taken under.  :class:`Watch` reads the machine before and after a stretch of
work and says whether the host was busy meanwhile; the rule for "busy" lives here
only (``run_all.py`` and the paired benchmarks both use it).

Other processes' CPU is every process's CPU time from ``/proc/stat`` minus what the
watched work used (``own``: this process, or its children for ``run_all.py``) minus
the kernel's own threads, which are shown apart and not counted: most of their time
is I/O the benchmark itself caused (the store benchmark's SQLite writes).  Where
``/proc`` is missing (not Linux) only the load average is shown.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from types import TracebackType

BUSY_SHARE = 0.10
"""Other processes above this share of one core during the work: the host was busy."""

_PF_KTHREAD = 0x00200000  # the kernel-thread bit of a /proc/<pid>/stat flags field


def busy_seconds() -> float | None:
    """CPU seconds every process on the machine has used since boot (Linux), or None."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def kernel_thread_seconds() -> float:
    """CPU seconds the kernel's own threads have used (Linux; 0.0 where /proc is missing).

    Kernel threads do work on behalf of whoever asked: the block-I/O workers, for
    one, flush the SQLite files the store benchmark writes.  They live as long as
    the machine, so a difference of two readings is what they did in between.
    """
    total = 0
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:  # it exited meanwhile
            continue
        # After the command: state, ppid, ... flags is the 9th field of the line
        # (index 6 here), utime and stime the 14th and 15th (indexes 11 and 12).
        if int(fields[6]) & _PF_KTHREAD:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def self_seconds() -> float:
    """CPU seconds this process has used, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_seconds() -> float:
    """CPU seconds this process's finished children have used."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average() -> tuple[float, float, float] | None:
    return os.getloadavg() if hasattr(os, "getloadavg") else None


def load_text(load: tuple[float, float, float] | None = None) -> str:
    """The three load averages (now, when ``load`` is None), or "?" where there are none."""
    load = load or load_average()
    return "?" if load is None else ", ".join(f"{x:.2f}" for x in load)


class Watch:
    """Readings of the host around a stretch of work (a ``with`` block)."""

    def __init__(self, own: Callable[[], float] = self_seconds) -> None:
        self._own = own
        self.cpus = os.cpu_count() or 1
        self.load_before = self.load_after = load_average()
        self.wall = 0.0
        self.foreign: float | None = None  # other processes, in cores (1.0 = one core)
        self.kernel = 0.0  # the kernel's threads, in cores

    def __enter__(self) -> Watch:
        self.load_before = load_average()
        self._t0 = time.perf_counter()
        self._busy0, self._own0, self._kernel0 = (
            busy_seconds(),
            self._own(),
            kernel_thread_seconds(),
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.wall = time.perf_counter() - self._t0
        busy1, own1, kernel1 = busy_seconds(), self._own(), kernel_thread_seconds()
        self.load_after = load_average()
        if self._busy0 is not None and busy1 is not None and self.wall > 0:
            self.kernel = (kernel1 - self._kernel0) / self.wall
            spent = (busy1 - self._busy0) - (own1 - self._own0) - (kernel1 - self._kernel0)
            self.foreign = max(0.0, spent) / self.wall

    @property
    def busy(self) -> bool:
        """Other processes used more than :data:`BUSY_SHARE` of a core meanwhile, or the
        one-minute load average ended above the number of CPUs."""
        crowded = self.load_after is not None and self.load_after[0] > self.cpus
        return crowded or (self.foreign is not None and self.foreign > BUSY_SHARE)

    @property
    def warning(self) -> str:
        """What a reader is told after the figures of a busy stretch ("" when quiet)."""
        return ": NOT A QUIET MACHINE, figures may be skewed" if self.busy else ""

    def usage(self) -> str:
        """Other processes' CPU meanwhile (and the kernel's threads when they did work)."""
        if self.foreign is None:
            return "other processes' CPU unknown (no /proc/stat)"
        text = f"other processes used {self.foreign:.0%} of a core"
        if self.kernel >= 0.02:
            text += f" (kernel threads {self.kernel:.0%}: I/O and housekeeping, not counted)"
        return text

    def summary(self) -> str:
        """One line: CPUs, load averages before and after, other processes' CPU, a warning."""
        text = (
            f"host: {self.cpus} CPUs, load average {load_text(self.load_before)} before, "
            f"{load_text(self.load_after)} after; {self.usage()}"
        )
        return text + self.warning
