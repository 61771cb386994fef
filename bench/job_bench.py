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
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_bench import cluster_log
from bench.job_runs import MODES, RunSettings, measure, median_rows
from bench.record import RESULTS_DIR, commit, python_work, record
from shadow_controller.cli import Parser
from state_machines.model import ControllerConfig


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
    run = RunSettings(
        config=ControllerConfig(
            emit_update_metadata=not args.no_update_metadata, mode=args.controller_mode
        ),
        driver_memory=args.driver_memory,
        max_result_size=args.max_result_size,
        spark_conf=dict(kv.split("=", 1) for kv in args.spark_conf),
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
        results, memory, peak = measure(phases, modes[0], args.buckets, run)
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
        results = {mode: median_rows(mode_runs) for mode, mode_runs in runs.items()}
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


if __name__ == "__main__":
    sys.exit(main())
