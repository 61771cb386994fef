"""How soon `run --input metadata-log:DIR` writes an event's verdict (issue 45 §3: within
3 s of its batch reaching the file, median, on a directory growing by 100 batches a second).

It starts the job (`shadow-controller run`, a subprocess, as a user runs it) on an empty
directory, writes a cluster's bootstrap (LeaderChange, metadata.version, three brokers, a
topic of `--partitions` partitions), then appends `--rate` batches a second for
`--seconds`, with the record-batch encoder, rolling to a new segment every `--roll`
batches. Each batch is one controller event: a leader's AlterPartition (an ISR shrink or
expansion at the same leader) or a topic config change, alternately, and a NoOpRecord
every 50 batches (Kafka's `metadata.max.idle.interval.ms`, 500 ms). Latency: from the
`write` of the batch holding an event's last record to the modification time of the
verdicts file that holds its verdict. Every batch's verdict must come, and match.

    .venv/bin/python bench/metadata_log_live.py --seconds 60 --record

`--record` keeps the run in bench/results/metadata_log_live/ (record.py's commit and machine
fields, the arguments, and the figures).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.record import RESULTS_DIR, commit, machine
from streaming.metadata_log.encode import (
    control_value,
    encode_batch,
    metadata_value,
    segment_name,
)

TOPIC_ID = "3uv2Ux6HQMqsTWeSWl1XsA"
MV_3_9 = 21


class Log:
    """Appends batches as the quorum controller's raft log does: to the active segment, a
    new one (named by its base offset) on a roll; remembers when each offset was written."""

    def __init__(self, directory: Path, roll: int) -> None:
        self.dir = directory
        self.roll = roll
        self.offset = 0
        self.batches = 0
        self.active: Any = None
        self.written_at: dict[int, float] = {}  # last offset of a batch -> time written
        self.segments = 0

    def append(self, values: list[Any], control: bool = False) -> None:
        if self.active is None or self.batches % self.roll == 0:
            if self.active is not None:
                self.active.close()
            self.active = open(self.dir / segment_name(self.offset), "ab")  # noqa: SIM115
            self.segments += 1
        data = encode_batch(values, self.offset, control=control, timestamp=int(time.time() * 1000))
        self.active.write(data)
        self.active.flush()
        self.offset += len(values)
        self.batches += 1
        self.written_at[self.offset - 1] = time.time()


def bootstrap(log: Log, partitions: int) -> None:
    log.append(
        [control_value("LeaderChange", 0, leader_id=1000, voters=[{"voter_id": 1000}])],
        control=True,
    )
    log.append(
        [metadata_value("FeatureLevelRecord", name="metadata.version", feature_level=MV_3_9)]
    )
    epochs = {}
    for b in (1, 2, 3):
        # ClusterControlManager.registerBroker: fenced, its epoch the offset of its record
        epochs[b] = log.offset
        log.append(
            [
                metadata_value(
                    "RegisterBrokerRecord",
                    3,
                    broker_id=b,
                    broker_epoch=epochs[b],
                    incarnation_id=f"Inc{b:02d}00".ljust(21, "x") + "Q",
                    fenced=True,
                    rack=None,
                    log_dirs=[f"Dir{b:03d}".ljust(21, "x") + "A"],
                )
            ]
        )
    for b in (1, 2, 3):  # each first heartbeat: handleBrokerUnfenced
        log.append(
            [
                metadata_value(
                    "BrokerRegistrationChangeRecord",
                    0,
                    broker_id=b,
                    broker_epoch=epochs[b],
                    fenced=-1,
                )
            ]
        )
    records = [metadata_value("TopicRecord", name="t", topic_id=TOPIC_ID)]
    for p in range(partitions):
        replicas = [1 + (p + i) % 3 for i in range(3)]
        records.append(
            metadata_value(
                "PartitionRecord",
                1,  # Kafka's version at 3.9-IV0 (MetadataVersion.partitionRecordVersion)
                partition_id=p,
                topic_id=TOPIC_ID,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
                leader_epoch=0,
                partition_epoch=0,
            )
        )
    log.append(records)


def steady(log: Log, n: int, partitions: int) -> bytes | list[bytes]:
    """Batch `n` of the steady stream: an ISR change of one partition (dropping its last
    replica, then adding it back), a topic config change, or a NoOpRecord."""
    if n % 50 == 49:
        return [metadata_value("NoOpRecord")]
    if n % 2 == 1:
        return [
            metadata_value(
                "ConfigRecord",
                resource_type=2,
                resource_name="t",
                name="retention.ms",
                value=str(n),
            )
        ]
    k = n // 2
    p = k % partitions
    replicas = [1 + (p + i) % 3 for i in range(3)]
    shrink = (k // partitions) % 2 == 0
    isr = replicas[:2] if shrink else replicas
    return [metadata_value("PartitionChangeRecord", 1, partition_id=p, topic_id=TOPIC_ID, isr=isr)]


def verdicts_seen(out: Path, seen: dict[str, float], found: dict[int, tuple[float, str]]) -> None:
    for f in glob.glob(str(out / "verdicts" / "verdicts-*.jsonl")):
        if f in seen:
            continue
        mtime = os.stat(f).st_mtime
        seen[f] = mtime
        with open(f) as fh:
            for line in fh:
                v = json.loads(line)
                found[v["offsets"][1]] = (mtime, v["outcome"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=100.0, help="batches a second")
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--roll", type=int, default=2000, help="batches a segment")
    ap.add_argument("--trigger", default="200 milliseconds", help="job.trigger_interval")
    ap.add_argument("--work-dir", help="default: a new temporary directory")
    ap.add_argument("--record", action="store_true", help="keep the run in bench/results/")
    args = ap.parse_args()
    started, head = time.time(), commit()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="metadata-log-live-"))
    logdir, out = work / "__cluster_metadata-0", work / "out"
    logdir.mkdir(parents=True, exist_ok=True)
    argv = [
        str(Path(sys.executable).with_name("shadow-controller")),
        "run",
        "--input",
        f"metadata-log:{logdir}",
        "--output",
        f"file:{out}",
        "--checkpoint",
        str(work / "ckpt"),
        "--set",
        f'job.trigger_interval="{args.trigger}"',
    ]
    print("job:", " ".join(argv), flush=True)
    job = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def follow() -> None:
        assert job.stderr is not None
        for line in job.stderr:
            lines.append(line.rstrip())
            print("  job|", line.rstrip(), flush=True)
            if "query started" in line:
                ready.set()

    threading.Thread(target=follow, daemon=True).start()
    log = Log(logdir, args.roll)
    try:
        bootstrap(log, args.partitions)
        if not ready.wait(600):
            print("the job did not start within 600 s", file=sys.stderr)
            return 1
        # the steady state: once the job's first micro-batch (the bootstrap) has written its
        # decisions (it starts the Python workers and state stores: a minute or two on a
        # loaded machine)
        deadline = time.time() + 600
        while not glob.glob(str(out / "decisions-*.jsonl")):
            if time.time() > deadline or job.poll() is not None:
                print("the job wrote no verdict for the bootstrap", file=sys.stderr)
                return 1
            time.sleep(0.1)
        first_steady = log.offset
        period = 1.0 / args.rate
        t0 = time.time()
        n = 0
        total = int(args.seconds * args.rate)
        while n < total:
            due = t0 + n * period
            now = time.time()
            if due > now:
                time.sleep(due - now)
            log.append(steady(log, n, args.partitions))
            n += 1
        append_s = time.time() - t0
        log.append([metadata_value("NoOpRecord")])  # closes the last event
        seen: dict[str, float] = {}
        found: dict[int, tuple[float, str]] = {}
        wanted = [o for o in log.written_at if first_steady <= o < log.offset - 1]
        deadline = time.time() + 120
        while time.time() < deadline:
            verdicts_seen(out, seen, found)
            if all(o in found for o in wanted if not _noop(o, first_steady)):
                break
            time.sleep(0.2)
    finally:
        job.terminate()
        try:
            job.wait(120)
        except subprocess.TimeoutExpired:
            job.kill()
    events = [o for o in wanted if not _noop(o, first_steady)]
    missing = [o for o in events if o not in found]
    latencies = sorted(found[o][0] - log.written_at[o] for o in events if o in found)
    outcomes: dict[str, int] = {}
    for o in events:
        if o in found:
            outcomes[found[o][1]] = outcomes.get(found[o][1], 0) + 1
    # the job's micro-batches after the first (its Python workers' start): how long each ran
    durations = [
        int(m.group(2))
        for line in lines
        if (m := re.search(r"batch (\d+): .*, (\d+) ms", line)) and int(m.group(1)) > 0
    ]
    p50 = statistics.median(latencies) if latencies else None
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else None
    print(
        f"appended {n} batches in {append_s:.1f} s ({n / append_s:.1f}/s) over {log.segments} "
        f"segments; verdicts {len(latencies)}/{len(events)} {outcomes}; latency append -> verdict "
        f"written: median {p50:.2f} s, p95 {p95:.2f} s, max {latencies[-1]:.2f} s"
        if latencies
        else f"no verdicts ({len(events)} events)"
    )
    if durations:
        print(
            f"the job's micro-batches after the first: {len(durations)}, median "
            f"{statistics.median(durations) / 1000:.2f} s, max {max(durations) / 1000:.2f} s"
        )
    if args.record and latencies:
        doc = {
            "format": 1,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "commit": head,
            "machine": machine(),
            "args": {k: v for k, v in vars(args).items() if k not in ("record", "work_dir")},
            "bench": "metadata_log_live",
            "batches": n,
            "batches_per_s": round(n / append_s, 1),
            "segments": log.segments,
            "events": len(events),
            "verdicts": len(latencies),
            "outcomes": outcomes,
            "micro_batch_s": {
                "count": len(durations),
                "median": round(statistics.median(durations) / 1000, 3) if durations else None,
            },
            "latency_s": {
                "median": round(p50 or 0, 3),
                "p95": round(p95 or 0, 3),
                "max": round(latencies[-1], 3),
            },
        }
        directory = RESULTS_DIR / "metadata_log_live"
        directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
        path = directory / f"{stamp}-{(head['sha'] or 'nogit')[:8]}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"recorded: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 1 if missing or not latencies else 0


def _noop(offset: int, first: int) -> bool:
    return (offset - first) % 50 == 49


if __name__ == "__main__":
    sys.exit(main())
