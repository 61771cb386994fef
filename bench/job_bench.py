"""Benchmark of the Spark job (not a test): the cluster log of `engine_bench.py` through
(a) the in-process engine, (b) the job in file mode, (c) the job on the embedded broker.

Each scenario step is fed on its own and timed from the moment its events are available
to the moment its last decision is written (file: the batch output file; Kafka: the sink's
checked delivery), so the figure is the job's, not Spark's start-up.

    .venv/bin/python bench/job_bench.py --partitions 10000 --modes engine,file,kafka \
        --json bench/results/10k.json

`--repeat N` runs each mode N times; each step reports its median run and every run's batch time.
`--record` keeps the run on record in `bench/results/` (`record.py`; `chart.py` draws them).
`work s` is the seconds a fixed piece of Python work took just before and just after the
step (`record.python_work`): this shared machine's speed changes from minute to minute,
and a step's ratio to the engine says most when its figures and the engine's agree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_bench import cluster_log
from bench.record import RESULTS_DIR, commit, python_work, record
from shadow_controller.cli import Parser
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming.collector import collect_less, process_settled


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


def _progress(p) -> dict:
    return p if isinstance(p, dict) else json.loads(p.json)


# the controller settings of every run (--no-update-metadata turns UpdateMetadata off, to
# compare with a tree that has none)
CONFIG = ControllerConfig()
DRIVER_MEMORY: str | None = None
MAX_RESULT_SIZE: str | None = None
SPARK_CONF: dict[str, str] = {}


def run_engine(phases: dict[str, list[dict]]) -> list[dict]:
    """The steps through the in-process engine, under the collector policy `simulate` runs
    it with (`streaming/collector.py`; the job's workers set the same thresholds)."""
    engine = Engine(CONFIG)
    collect_less()
    rows, offset = [], 0
    for name, events in phases.items():
        envs = []
        for e in events:
            envs.append(parse_event(e, offset))
            offset += 1
        speed = python_work(passes=1)
        start = time.perf_counter()
        decisions = 0
        for env in envs:
            decisions += len(process_settled(engine, env))
        seconds = time.perf_counter() - start
        rows.append(
            {
                "step": name,
                "events": len(events),
                "decisions": decisions,
                "seconds": seconds,
                "python_work_s": [speed, python_work(passes=1)],
            }
        )
    return rows


def run_spark(
    phases: dict[str, list[dict]], mode: str, work: Path, bucket_count: int | None
) -> list[dict]:
    from streaming.job import spark_session, start
    from streaming.settings.schema import JobSettings
    from streaming.sink import BatchSink

    settings = JobSettings(
        input=f"file:{work / 'in'}" if mode == "file" else "kafka",
        output=f"file:{work / 'out'}" if mode == "file" else "kafka",
        checkpoint=str(work / "ckpt"),
        trigger_interval="0 seconds",
        controller=CONFIG,
    )
    if bucket_count:
        settings.partition_buckets = bucket_count
    broker_ctx = None
    producer = None
    if mode == "kafka":
        from confluent_kafka import Producer

        from shadow_controller.broker import create_topics, embedded_broker

        broker_ctx = embedded_broker(log_dir=work)
        broker = broker_ctx.__enter__()
        settings.bootstrap_servers = broker.bootstrap_servers
        create_topics(
            broker.bootstrap_servers,
            {settings.events_topic: 1, settings.decisions_topic: 1, settings.dlq_topic: 1},
        )
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20, "log_level": 0}
        )
    (work / "in").mkdir(parents=True, exist_ok=True)
    extra = {"spark.driver.memory": DRIVER_MEMORY} if DRIVER_MEMORY else {}
    if MAX_RESULT_SIZE:
        extra["spark.driver.maxResultSize"] = MAX_RESULT_SIZE
    extra.update(SPARK_CONF)
    spark = spark_session(settings, app_name="shadow-controller-bench", extra=extra)
    spark.sparkContext.setLogLevel("ERROR")
    sink = BatchSink(settings)
    query, _ = start(spark, settings, available_now=True, sink=sink)
    rows = []
    peak_children = 0.0
    sampler = MemorySampler()
    try:
        # warm-up: Spark plans and starts its Python workers on the first micro-batch
        query.processAllAvailable()
        for n, (name, events) in enumerate(phases.items()):
            sampler.step = name
            batches_before = set(sink.stats)
            speed = python_work(passes=1)
            start_t = time.perf_counter()
            if mode == "file":
                tmp = work / f".{n:04d}.tmp"
                tmp.write_text("".join(json.dumps(e) + "\n" for e in events))
                tmp.rename(work / "in" / f"{n:04d}.jsonl")
            else:
                for e in events:
                    producer.produce(settings.events_topic, json.dumps(e).encode())
                producer.flush(60)
            query.processAllAvailable()
            seconds = time.perf_counter() - start_t
            new_ids = sorted(set(sink.stats) - batches_before)
            new = [sink.stats[b] for b in new_ids]
            # Spark's own figure: the micro-batches' triggerExecution (planning, reading,
            # both stateful stages, the sink and the commit), without the trigger's idle wait
            progress = [p for p in map(_progress, query.recentProgress) if p["batchId"] in new_ids]
            batch_seconds = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
            rows.append(
                {
                    "step": name,
                    "events": len(events),
                    "decisions": sum(s["decisions"] for s in new),
                    "seconds": seconds,
                    "batch_seconds": batch_seconds,
                    "micro_batches": len(new),
                    "python_work_s": [speed, python_work(passes=1)],
                    "progress": [
                        {k: p.get(k) for k in ("batchId", "durationMs", "stateOperators")}
                        for p in progress
                    ],
                }
            )
            print(
                f"  {mode:5} {name:34} {seconds:8.2f} s  batch time {batch_seconds:6.2f} s  "
                f"{rows[-1]['decisions']:>8} decisions  (fixed Python work {speed:.3f} -> "
                f"{rows[-1]['python_work_s'][1]:.3f} s)",
                flush=True,
            )
        peak_children = descendants_peak_rss_mib()
        rows.append(
            {
                "step": "_memory",
                "events": 0,
                "decisions": 0,
                "seconds": 0.0,
                "descendants_peak_rss_mib": round(peak_children),
                "simultaneous_peak_mib": sampler.stop(),
            }
        )
    finally:
        query.stop()
        spark.stop()
        if broker_ctx is not None:
            broker_ctx.__exit__(None, None, None)
    return rows


def measure(phases: dict[str, list[dict]], mode: str, buckets: int) -> tuple[dict, dict, float]:
    """One mode in this process: (results, Spark's peak memory by mode, this process's peak)."""
    work = Path(tempfile.mkdtemp(prefix=f"bench-{mode}-"))
    try:
        rows = (
            run_engine(phases)
            if mode == "engine"
            else run_spark(phases, mode, work, buckets or None)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mem_row = next((r for r in rows if r["step"] == "_memory"), {})
    memory: dict = {mode: mem_row.get("descendants_peak_rss_mib")}
    if mem_row.get("simultaneous_peak_mib"):
        memory[f"{mode}_at_once"] = mem_row["simultaneous_peak_mib"]
    rows = [
        {**r, "batch_seconds_all": [round(r.get("batch_seconds", r["seconds"]), 3)]}
        for r in rows
        if r["step"] != "_memory"
    ]
    return {mode: rows}, memory, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _median_rows(mode_runs: list[list[dict]]) -> list[dict]:
    """Per step, the run with the median batch time (the lower middle one of an even count),
    with every run's batch time beside it."""
    out = []
    for i in range(len(mode_runs[0])):
        candidates = sorted(
            (r[i] for r in mode_runs), key=lambda r: r.get("batch_seconds", r["seconds"])
        )
        all_runs = [round(run[i].get("batch_seconds", run[i]["seconds"]), 3) for run in mode_runs]
        out.append(
            {**candidates[(len(candidates) - 1) // 2], "batch_seconds_all": sorted(all_runs)}
        )
    return out


MODES = ("engine", "file", "kafka")


def main() -> int:
    started = time.time()
    ap = Parser(
        prog="job_bench.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--modes", default="engine,file,kafka")
    ap.add_argument(
        "--buckets", type=int, default=0, help="scale mode: pack partitions into N groups"
    )
    ap.add_argument(
        "--shutdown-broker", type=int, help="the broker shut down (default: one leading P/B)"
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each mode N times: the table shows each step's median run and the range",
    )
    ap.add_argument(
        "--controller-mode",
        choices=("zk", "kraft"),
        default="zk",
        help="the rule set (controller.mode): ZK's controller or KRaft's quorum controller",
    )
    ap.add_argument(
        "--no-update-metadata",
        action="store_true",
        help="controller.emit.update.metadata = false (to compare with a tree without it)",
    )
    ap.add_argument(
        "--driver-memory",
        metavar="SIZE",
        help="spark.driver.memory for the Spark modes (default: the job's, 2g); in local mode the "
        "driver's JVM runs every task, and the sink collects each batch's decisions through it",
    )
    ap.add_argument(
        "--max-result-size",
        metavar="SIZE",
        help="spark.driver.maxResultSize for the Spark modes (default Spark's, 1g; 0: no "
        "limit): the "
        "sink's collection of a batch's decisions counts against it",
    )
    ap.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the Spark modes, over the job's own (repeatable)",
    )
    ap.add_argument("--json", help="write every figure, Spark's progress included, to this file")
    ap.add_argument(
        "--record",
        action="store_true",
        help=(
            "keep the run on record: a small JSON with the commit and the machine in --results-dir"
        ),
    )
    ap.add_argument(
        "--results-dir",
        default=str(RESULTS_DIR),
        help="where --record writes (default bench/results)",
    )
    args = ap.parse_args()
    modes = args.modes.split(",")
    if not modes or any(m not in MODES for m in modes) or len(set(modes)) != len(modes):
        ap.error(f"--modes {args.modes}: a comma-separated list of {', '.join(MODES)}, each once")
    for flag, value, least in (
        ("--partitions", args.partitions, 1),
        ("--brokers", args.brokers, 3),
        ("--partitions-per-topic", args.partitions_per_topic, 1),
        ("--repeat", args.repeat, 1),
        ("--buckets", args.buckets, 0),
    ):
        if value < least:
            ap.error(f"{flag} {value}: must be at least {least}")
    for kv in args.spark_conf:
        key, eq, value = kv.partition("=")
        if not eq or not key.startswith("spark.") or not value:
            ap.error(f"--spark-conf {kv}: KEY=VALUE with a Spark setting's name (spark....)")
    if args.record and Path(args.results_dir).exists() and not Path(args.results_dir).is_dir():
        ap.error(f"--results-dir {args.results_dir}: not a directory")
    if args.driver_memory is not None and not re.fullmatch(
        r"[1-9][0-9]*[mgMG]", args.driver_memory
    ):
        ap.error(f"--driver-memory {args.driver_memory}: a size such as 4g or 512m")
    if args.max_result_size is not None and not re.fullmatch(
        r"0|[1-9][0-9]*[mgMG]", args.max_result_size
    ):
        ap.error(f"--max-result-size {args.max_result_size}: a size such as 4g, or 0 for no limit")
    global CONFIG, DRIVER_MEMORY, MAX_RESULT_SIZE, SPARK_CONF
    DRIVER_MEMORY, MAX_RESULT_SIZE = args.driver_memory, args.max_result_size
    SPARK_CONF = dict(kv.split("=", 1) for kv in args.spark_conf)
    CONFIG = ControllerConfig(
        emit_update_metadata=not args.no_update_metadata, mode=args.controller_mode
    )
    phases = cluster_log(
        args.brokers,
        args.partitions,
        3,
        args.partitions_per_topic,
        full=True,
        shutdown_broker=args.shutdown_broker,
    )
    head = commit() if args.record else {}
    machine_work = {"start": python_work()}
    if len(modes) == 1 and args.repeat == 1:
        results, memory, peak = measure(phases, modes[0], args.buckets)
    else:
        # Each mode and each repeat in a process of its own: a Python heap or a JVM that an
        # earlier run filled makes the next one slower (up to 1.7 times, measured).
        runs: dict[str, list[list[dict]]] = {}
        memory, peak = {}, 0.0
        for mode in modes:
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
                    out = Path(tmp) / "run.json"
                    cmd = [
                        sys.executable,
                        str(Path(__file__).resolve()),
                        "--partitions",
                        str(args.partitions),
                        "--brokers",
                        str(args.brokers),
                        "--partitions-per-topic",
                        str(args.partitions_per_topic),
                        "--modes",
                        mode,
                        "--buckets",
                        str(args.buckets),
                        "--json",
                        str(out),
                    ]
                    if args.shutdown_broker:
                        cmd += ["--shutdown-broker", str(args.shutdown_broker)]
                    if args.no_update_metadata:
                        cmd += ["--no-update-metadata"]
                    if args.controller_mode != "zk":
                        cmd += ["--controller-mode", args.controller_mode]
                    if args.driver_memory:
                        cmd += ["--driver-memory", args.driver_memory]
                    if args.max_result_size:
                        cmd += ["--max-result-size", args.max_result_size]
                    for kv in args.spark_conf:
                        cmd += ["--spark-conf", kv]
                    child = subprocess.run(
                        cmd, stdout=subprocess.DEVNULL if mode == "engine" else None
                    )
                    if child.returncode != 0:
                        print(
                            f"job_bench.py: the {mode} run failed (exit "
                            f"{child.returncode}); nothing recorded",
                            file=sys.stderr,
                        )
                        return 1
                    doc = json.loads(out.read_text())
                runs.setdefault(mode, []).append(doc["results"][mode])
                peak = max(peak, doc["peak_rss_mib"])
                if doc["spark_peak_rss_mib"].get(mode) is not None:
                    memory[mode] = max(memory.get(mode, 0), doc["spark_peak_rss_mib"][mode])
                at_once = doc["spark_peak_rss_mib"].get(f"{mode}_at_once")
                if at_once and at_once["total"] > memory.get(f"{mode}_at_once", {}).get("total", 0):
                    memory[f"{mode}_at_once"] = at_once
        results = {mode: _median_rows(mode_runs) for mode, mode_runs in runs.items()}
    machine_work["end"] = python_work()
    print(
        f"\n{args.partitions} partitions, RF 3, {args.brokers} brokers"
        + (f", {args.buckets} buckets" if args.buckets else "")
        + f"; the machine's fixed Python work (bench/record.py): {machine_work['start']:.3f} "
        "s at the start, "
        f"{machine_work['end']:.3f} s at the end"
    )
    print(
        f"{'mode':7} {'step':34} {'events':>7} {'decisions':>10} {'seconds':>9} "
        f"{'batch s':>8} {'events/s':>10} "
        f"{'decisions/s':>12} {'x engine':>9} {'work s':>11}"
        + (f" {'batch s, all runs':>20}" if args.repeat > 1 else "")
    )
    for mode, rows in results.items():
        for i, r in enumerate(rows):
            base = results.get("engine", [None] * len(rows))[i]
            ratio = f"{r['seconds'] / base['seconds']:.1f}" if base and base["seconds"] else "-"
            spread = " ".join(f"{v:.2f}" for v in r["batch_seconds_all"]) if args.repeat > 1 else ""
            print(
                f"{mode:7} {r['step']:34} {r['events']:>7} {r['decisions']:>10} "
                f"{r['seconds']:>9.2f} "
                f"{r.get('batch_seconds', r['seconds']):>8.2f} "
                f"{r['events'] / r['seconds']:>10.1f} "
                f"{r['decisions'] / r['seconds']:>12.1f} {ratio:>9} "
                f"{'/'.join(f'{w:.2f}' for w in r.get('python_work_s', ())):>11} {spread:>20}"
            )
        ev = sum(r["events"] for r in rows)
        de = sum(r["decisions"] for r in rows)
        sec = sum(r["seconds"] for r in rows)
        print(
            f"{mode:7} {'total':34} {ev:>7} {de:>10} {sec:>9.2f} {'':>8} {ev / sec:>10.1f} "
            f"{de / sec:>12.1f}"
        )
    spark_mem = ", ".join(f"{m} {v} MiB" for m, v in memory.items() if isinstance(v, (int, float)))
    print(
        f"peak resident memory: driver process {peak:.0f} MiB (the engine runs in it); "
        "Spark JVM + Python workers, "
        f"each process's own peak summed: {spark_mem}"
    )
    for m, v in memory.items():
        if isinstance(v, dict):
            print(
                f"peak resident memory at one moment, {m[: -len('_at_once')]} mode: "
                f"{v['total']} MiB (the job's "
                f"driver {v['driver']}, the JVM {v['jvm']}, the Python workers {v['workers']}"
                + (f": {', '.join(map(str, v['each_worker']))}" if v.get("each_worker") else "")
                + (f"; during {v['step']!r}" if v.get("step") else "")
                + ")"
            )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "results": results,
                    "peak_rss_mib": peak,
                    "spark_peak_rss_mib": memory,
                },
                indent=2,
            )
        )
    if args.record:
        where = record(
            vars(args), results, peak, memory, started, head, machine_work, Path(args.results_dir)
        )
        print(f"recorded {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
