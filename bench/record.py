"""Benchmark results on record: one small JSON per run of `job_bench.py --record`, in
`bench/results/`, with what is needed to compare it with another run later: the commit
(and whether the tree had changes), the machine, the arguments, and per step the figures
the bench prints. `chart.py` reads them.

A record (format 1):

    {"format": 1, "recorded_at": "2026-11-23T22:40:00Z",
     "commit": {"sha": "...", "dirty": false},
     "machine": {"cpus": 2, "cpu_model": "...", "memory_gib": 23.4, "load_avg_1m": 0.4,
                 "python": "3.11.9", "java": "17.0.13", "spark": "4.3.0",
                 "python_work_s": {"start": 0.56, "end": 0.57}},
     "args": {... job_bench's arguments ...},
     "peak_memory_mib": {"driver": 812, "file": 2950,
                         "file_at_once": {"total": 2410, "driver": 310, "jvm": 1500,
                                          "workers": 600}},
     "steps": [{"step": "create 10000 partitions", "events": 101, "decisions": 90000,
                "engine": {"seconds": 1.2, "python_work_s": [0.56, 0.55]},
                "file": {"seconds": 3.1, "batch_seconds": 2.9, "batch_seconds_all": [2.9],
                         "micro_batches": 1, "x_engine": 2.58,
                         "python_work_s": [0.55, 0.58]}}, ...]}

`python_work_s` in a step: `python_work(passes=1)` just before and just after the step, in
the process that ran it; a ratio to the engine means most when the two modes' figures
agree.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
FORMAT = 1


def _run(argv: list[str]) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None


def commit() -> dict[str, Any]:
    """HEAD and whether tracked files differ from it (untracked files do not count)."""
    head = _run(["git", "rev-parse", "HEAD"])
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"])
    return {
        "sha": head.stdout.strip() if head and head.returncode == 0 else None,
        "dirty": bool(status.stdout.strip()) if status and status.returncode == 0 else None,
    }


def _java_version() -> str | None:
    done = _run(["java", "-version"])
    match = re.search(r'version "([^"]+)"', done.stderr) if done else None
    return match.group(1) if match else None


def _proc_field(path: str, name: str) -> str | None:
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def python_work(passes: int = 3) -> float:
    """Seconds this machine takes now for a fixed piece of pure-Python work, the fastest of
    `passes`. A shared VM runs the same code up to twice as slowly from one hour to the
    next, and by half again from one minute to the next, with nothing in `load_avg_1m` to
    show it (measured here: the engine's creation of a million partitions in 45 s one day
    and 97-107 s another), so a run's figures are set against another's through this one:
    measured as the run starts and as it ends, and once before and after each step.

    The work is the engine's kind: dictionary lookups and small strings, then building
    half a million small objects (50 MB, past any cache) and reading them in a scattered
    order. The dictionary loop alone did not follow the engine: it read 0.30 s around runs
    whose creation took 97-102 s and 0.62 s around one that took 107 s, so what the
    neighbours take is not only the CPU's time; the scattered reads add the memory's."""
    best = float("inf")
    n = 500_000
    for _ in range(passes):
        start = time.perf_counter()
        seen: dict[tuple[int, int], str] = {}
        for i in range(n):
            key = (i % 997, i % 13)
            text = seen.get(key)
            if text is None:
                text = seen[key] = f"{key[0]}-{key[1]}"
            seen[key] = text if len(text) < 16 else text[:8]
        objects = [(i, f"t-{i}") for i in range(n)]
        total = 0
        for i in range(n):
            total += objects[(i * 104_729) % n][0]  # a prime stride: every object once, scattered
        best = min(best, time.perf_counter() - start)
    return round(best, 3)


def machine() -> dict[str, Any]:
    import pyspark

    mem_kib = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "memory_gib": round(int(mem_kib.split()[0]) / 2**20, 1) if mem_kib else None,
        # a shared machine: the load when the run started says how quiet it was
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "java": _java_version(),
        "spark": pyspark.__version__,
    }


def steps(results: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """Per step, each mode's figures side by side, with the ratio to the engine's seconds."""
    modes = list(results)
    out = []
    for i, first in enumerate(results[modes[0]]):
        row: dict[str, Any] = {
            "step": first["step"],
            "events": first["events"],
            "decisions": first["decisions"],
        }
        engine = results["engine"][i]["seconds"] if "engine" in results else None
        for mode in modes:
            r = results[mode][i]
            fig: dict[str, Any] = {"seconds": round(r["seconds"], 3)}
            if "python_work_s" in r:
                fig["python_work_s"] = r["python_work_s"]
            if "batch_seconds" in r:
                fig["batch_seconds"] = round(r["batch_seconds"], 3)
                fig["batch_seconds_all"] = r.get("batch_seconds_all")
                fig["micro_batches"] = r.get("micro_batches")
            if mode != "engine" and engine:
                fig["x_engine"] = round(r["seconds"] / engine, 2)
            row[mode] = fig
        out.append(row)
    return out


def record(
    args: dict[str, Any],
    results: dict[str, list[dict]],
    driver_peak_mib: float,
    spark_peak_mib: dict[str, Any],
    started: float,
    head: dict[str, Any],
    work: dict[str, float],
    directory: Path = RESULTS_DIR,
) -> Path:
    """Write the run's record; return its path (named by time, size and commit, so records
    sort by time and never overwrite each other). `head` is `commit()` as the run started:
    the tree may change while a long run goes on. `work` is `python_work()` at the run's
    start and end."""
    doc = {
        "format": FORMAT,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "commit": head,
        "machine": {**machine(), "python_work_s": work},
        "args": {k: v for k, v in args.items() if k not in ("record", "results_dir", "json")},
        "peak_memory_mib": {
            "driver": round(driver_peak_mib),
            **{m: v for m, v in spark_peak_mib.items() if v is not None},
        },
        "steps": steps(results),
    }
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    path = directory / f"{stamp}-{args['partitions']}p-{(head['sha'] or 'nogit')[:8]}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
