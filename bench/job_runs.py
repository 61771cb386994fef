"""The benchmark's modes (`job_bench.py`): the steps of a cluster log through the in-process
engine, or through the Spark job in file mode or on the embedded broker, each step timed
from the moment its events are available to the moment its last decision is written.
"""

from __future__ import annotations

import json
import resource
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.memory_sampler import MemorySampler, descendants_peak_rss_mib
from bench.record import python_work
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming.collector import collect_less, process_settled


def _progress(p) -> dict:
    return p if isinstance(p, dict) else json.loads(p.json)


# the controller settings of every run (--no-update-metadata turns UpdateMetadata off, to


@dataclass(frozen=True)
class RunSettings:
    """The settings of every run: the controller's (`--no-update-metadata` turns UpdateMetadata
    off, to compare with a tree that has none, `--controller-mode`), and Spark's for the Spark
    modes (`--driver-memory`, `--max-result-size`, `--spark-conf`)."""

    config: ControllerConfig = field(default_factory=ControllerConfig)
    driver_memory: str | None = None
    max_result_size: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)


def run_engine(phases: dict[str, list[dict]], config: ControllerConfig) -> list[dict]:
    """The steps through the in-process engine, under the collector policy `simulate` runs
    it with (`streaming/collector.py`; the job's workers set the same thresholds)."""
    engine = Engine(config)
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
    phases: dict[str, list[dict]],
    mode: str,
    work: Path,
    bucket_count: int | None,
    run: RunSettings,
) -> list[dict]:
    from streaming.job import spark_session, start
    from streaming.settings.schema import JobSettings
    from streaming.sink import BatchSink

    settings = JobSettings(
        input=f"file:{work / 'in'}" if mode == "file" else "kafka",
        output=f"file:{work / 'out'}" if mode == "file" else "kafka",
        checkpoint=str(work / "ckpt"),
        trigger_interval="0 seconds",
        controller=run.config,
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
    extra = {"spark.driver.memory": run.driver_memory} if run.driver_memory else {}
    if run.max_result_size:
        extra["spark.driver.maxResultSize"] = run.max_result_size
    extra.update(run.spark_conf)
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


def measure(
    phases: dict[str, list[dict]], mode: str, buckets: int, run: RunSettings
) -> tuple[dict, dict, float]:
    """One mode in this process: (results, Spark's peak memory by mode, this process's peak)."""
    work = Path(tempfile.mkdtemp(prefix=f"bench-{mode}-"))
    try:
        rows = (
            run_engine(phases, run.config)
            if mode == "engine"
            else run_spark(phases, mode, work, buckets or None, run)
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


def median_rows(mode_runs: list[list[dict]]) -> list[dict]:
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
