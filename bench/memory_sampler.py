"""Memory figures of a benchmark run (`job_bench.py`): the resident memory of this process,
the Spark JVM and its Python workers, read from /proc.

`MemorySampler` samples them together, so its peak is what a machine must hold at one
moment; `descendants_peak_rss_mib` sums each process's own peak (VmHWM), an upper bound.
"""

from __future__ import annotations

import os
import threading
from typing import Any


def _descendants() -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - mine
        mine |= frontier
    return mine


class MemorySampler:
    """The resident memory in use at the same moment, sampled every `interval` seconds:
    this process (the job's driver), the Spark JVM and the Python workers (not a child the
    JVM forked and has not yet exec'd: it shares the JVM's pages). Its peak is the
    figure a machine must hold; the sum of each process's own peak (VmHWM,
    `descendants_peak_rss_mib`) is an upper bound, since the processes peak at different
    moments."""

    def __init__(self, interval: float = 0.5) -> None:
        self.peak: dict[str, Any] = {"total": 0.0, "driver": 0.0, "jvm": 0.0, "workers": 0.0}
        self.step = ""  # the step running, named in the peak (set by the caller)
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        now = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
        workers = []
        procs: dict[int, tuple[int, int, bool]] = {}  # pid -> (parent, KiB resident, runs java)
        for pid in [os.getpid(), *_descendants()]:
            try:
                with open(f"/proc/{pid}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh if ":" in line)
                java = os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "java"
            except OSError:
                continue
            procs[pid] = (
                int(fields.get("PPid", "0").strip() or 0),
                int(fields.get("VmRSS", "0 kB").split()[0]),
                java,
            )
        for pid, (parent, kib, java) in procs.items():
            if java and procs.get(parent, (0, 0, False))[2]:
                # a child the JVM forked to start a process, not yet exec'd: its pages are the
                # JVM's own (copy on write), and counting it would count the JVM twice
                continue
            kind = "driver" if pid == os.getpid() else "jvm" if java else "workers"
            now[kind] += kib / 1024
            if kind == "workers":
                workers.append(kib / 1024)
        total = sum(now.values())
        if total > self.peak["total"]:
            self.peak = {
                "total": total,
                **now,
                "step": self.step,
                "each_worker": sorted((round(w) for w in workers), reverse=True),
            }

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        return {k: round(v) if isinstance(v, float) else v for k, v in self.peak.items()}


def descendants_peak_rss_mib() -> float:
    """Sum of the peak resident memory (VmHWM) of this process's live descendants: the
    Spark JVM and its Python workers, which RUSAGE_CHILDREN does not see."""
    mine = _descendants()
    total = 0
    for pid in mine:
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024
