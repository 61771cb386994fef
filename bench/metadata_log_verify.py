"""Benchmark of `metadata-log verify` against the engine (not a test; issue 45 §2's speed).

The cluster story of `engine_bench.py` (B brokers register, topics of 100 partitions are
created until P partitions exist, RF 3, round-robin placement, then broker 1's session
times out) is run two ways:

* the engine (KRaft rules) over the contract's events, as `simulate` runs it;
* `verify` over the metadata log a 3.9 quorum controller writes for the same story, from
  the files: reading, decoding and checking every record. The log is written first (not
  timed), one segment per step, as Kafka would append it: a registration and its unfencing
  per broker, one atomic batch per topic (TopicRecord, PartitionRecords), the fence's
  PartitionChangeRecords in appends of 10,000 (`QuorumController.appendRecords`) and its
  BrokerRegistrationChangeRecord.

Prints each step's seconds, both ways (the best of `--repeat` alternated runs), and the
ratio (the bar: verify within 1.5x the engine's time). `--record` keeps the run in
bench/results/metadata_log_verify/ (`record.py`'s format, with `verify` as the mode set
against `engine`).

    .venv/bin/python bench/metadata_log_verify.py --partitions 100000 --record
"""

from __future__ import annotations

import argparse
import io
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_bench import cluster_log
from bench.record import RESULTS_DIR, commit, python_work, record
from shadow_controller.metadata_log_verify import _Reader
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.log_verify.verifier import Verifier
from state_machines.model import ControllerConfig
from streaming.collector import collect_less, process_settled
from streaming.metadata_log.encode import control_value, encode_batch, metadata_value, write_segment
from streaming.metadata_log.wire import uuid_bytes

MAX_RECORDS_PER_BATCH = 10_000  # QuorumController.MAX_RECORDS_PER_BATCH
STEPS = ("register brokers", "create {p} partitions", "broker 1 fails")


def _uuid(kind: str, n: int) -> str:
    return f"{kind}{n:08d}".ljust(21, "x") + "A"


_TEMPLATES: dict[str, bytes] = {}
_CALLS = [0]


def _partition_value(name: str, version: int, topic_id: str, pid: int, **fields: Any) -> bytes:
    """A PartitionRecord's or PartitionChangeRecord's value: the encoder's bytes for the
    same fields once, then only the ids patched in (after the frame's three bytes, the
    partition id as int32, then the topic id's 16 bytes, in both schemas). Every 10,000th
    value is checked against the encoder's own."""
    key = f"{name}/{version}/{sorted(fields.items())!r}"
    template = _TEMPLATES.get(key)
    if template is None:
        template = _TEMPLATES[key] = metadata_value(
            name, version, topic_id=topic_id, partition_id=pid, **fields
        )
    value = (
        template[:3] + pid.to_bytes(4, "big", signed=True) + uuid_bytes(topic_id) + template[23:]
    )
    _CALLS[0] += 1
    if _CALLS[0] % 10_000 == 1:
        assert value == metadata_value(name, version, topic_id=topic_id, partition_id=pid, **fields)
    return value


def write_log(
    directory: Path, brokers: int, partitions: int, rf: int, per_topic: int
) -> list[Path]:
    """The log of the story, one segment per step; returns the segments in order."""
    offset = 0
    segments: list[Path] = []
    dirs = {b: _uuid("Dir", b) for b in range(1, brokers + 1)}

    def segment(batches: list[bytes], base: int) -> None:
        segments.append(write_segment(directory, base, batches))

    # step 1: the quorum leader's LeaderChange, metadata.version, then the brokers
    batches = [encode_batch([control_value("LeaderChange", 0, leader_id=3000)], 0, control=True)]
    batches.append(
        encode_batch(
            [metadata_value("FeatureLevelRecord", 0, name="metadata.version", feature_level=21)], 1
        )
    )
    offset = 2
    epochs: dict[int, int] = {}
    for b in range(1, brokers + 1):
        epochs[b] = offset
        value = metadata_value(
            "RegisterBrokerRecord",
            3,
            broker_id=b,
            incarnation_id=_uuid("Inc", b),
            broker_epoch=offset,
            fenced=True,
            rack=None,
            log_dirs=[dirs[b]],
        )
        batches.append(encode_batch([value], offset))
        offset += 1
    for b in range(1, brokers + 1):
        unfence = metadata_value(
            "BrokerRegistrationChangeRecord", 0, broker_id=b, broker_epoch=epochs[b], fenced=-1
        )
        batches.append(encode_batch([unfence], offset))
        offset += 1
    segment(batches, 0)
    # step 2: the topics, one CreateTopics each (atomic: one batch)
    base = offset
    batches = []
    placement: list[tuple[str, int, list[int]]] = []
    made = topic = 0
    while made < partitions:
        count = min(per_topic, partitions - made)
        topic_id = _uuid("Top", topic)
        values = [metadata_value("TopicRecord", 0, name=f"topic-{topic:05d}", topic_id=topic_id)]
        for p in range(count):
            first = (made + p) % brokers
            replicas = [((first + i) % brokers) + 1 for i in range(rf)]
            placement.append((topic_id, p, replicas))
            values.append(
                _partition_value(
                    "PartitionRecord",
                    1,
                    topic_id,
                    p,
                    replicas=replicas,
                    isr=replicas,
                    leader=replicas[0],
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=[dirs[r] for r in replicas],
                    removing_replicas=[],
                    adding_replicas=[],
                )
            )
        batches.append(encode_batch(values, offset))
        offset += len(values)
        made += count
        topic += 1
    segment(batches, base)
    # step 3: broker 1's session times out: handleBrokerFenced, then its fence record
    base = offset
    values = []
    for topic_id, p, replicas in placement:
        if 1 not in replicas:
            continue
        isr = [r for r in replicas if r != 1]
        fields: dict[str, Any] = {"isr": isr}
        if replicas[0] == 1:
            fields["leader"] = isr[0]  # the first ISR replica in replica order
        values.append(_partition_value("PartitionChangeRecord", 1, topic_id, p, **fields))
    values.append(
        metadata_value(
            "BrokerRegistrationChangeRecord", 0, broker_id=1, broker_epoch=epochs[1], fenced=1
        )
    )
    batches = []
    for start in range(0, len(values), MAX_RECORDS_PER_BATCH):
        chunk = values[start : start + MAX_RECORDS_PER_BATCH]
        batches.append(encode_batch(chunk, offset))
        offset += len(chunk)
    segment(batches, base)
    return segments


def run_engine(phases: dict[str, list[dict[str, Any]]]) -> list[tuple[str, int, float]]:
    engine = Engine(ControllerConfig(mode="kraft"))
    offset = 0
    rows = []
    for name, events in phases.items():
        envelopes = []
        for obj in events:
            envelopes.append(parse_event(obj, offset))
            offset += 1
        start = time.perf_counter()
        for env in envelopes:
            process_settled(engine, env)
        rows.append((name, len(envelopes), time.perf_counter() - start))
    return rows


def run_verify(segments: list[Path]) -> tuple[list[tuple[int, float]], Any]:
    reader = _Reader(False, io.StringIO())
    v = Verifier()
    rows = []
    for path in segments:
        start = time.perf_counter()
        n = 0
        for entry in reader.entries(path, False):
            v.feed(entry)
            n += 1
        if path is segments[-1]:
            v.finish()
        rows.append((n, time.perf_counter() - start))
    return rows, v.summary


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="runs of each, alternated (engine, verify, engine, ...); each step's best is kept",
    )
    ap.add_argument("--record", action="store_true", help="keep the run in bench/results/")
    args = ap.parse_args()

    started, head = time.time(), commit()
    work_start = python_work()
    all_phases = cluster_log(args.brokers, args.partitions, args.rf, args.partitions_per_topic)
    names = list(all_phases)
    # the engine's story up to the failure: registration (and the empty failover), the
    # creation, broker 1's failure; the controlled shutdown after it is not in the log
    phases = {k: all_phases[k] for k in names[:4]}
    collect_less()
    scratch = Path(tempfile.mkdtemp(prefix="mlverify-bench-"))
    try:
        t = time.perf_counter()
        segments = write_log(
            scratch / "__cluster_metadata-0",
            args.brokers,
            args.partitions,
            args.rf,
            args.partitions_per_topic,
        )
        written = time.perf_counter() - t
        size = sum(p.stat().st_size for p in segments)
        # alternated, so that a shared machine's slow minutes fall on both (record.py)
        engine_runs, verify_runs = [], []
        for _ in range(max(1, args.repeat)):
            engine_runs.append(run_engine(phases))
            rows, summary = run_verify(segments)
            verify_runs.append(rows)
        engine_rows = [
            (name, events, min(run[i][2] for run in engine_runs))
            for i, (name, events, _) in enumerate(engine_runs[0])
        ]
        verify_rows = [
            (records, min(run[i][1] for run in verify_runs))
            for i, (records, _) in enumerate(verify_runs[0])
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    work_end = python_work()
    engine_steps = [
        (STEPS[0], engine_rows[0][1] + engine_rows[1][1], engine_rows[0][2] + engine_rows[1][2]),
        (engine_rows[2][0], engine_rows[2][1], engine_rows[2][2]),
        (engine_rows[3][0], engine_rows[3][1], engine_rows[3][2]),
    ]
    print(
        f"verify vs engine (kraft): {args.partitions} partitions, RF {args.rf}, "
        f"{args.brokers} brokers; "
        f"log {size / 2**20:.1f} MiB written in {written:.1f} s"
    )
    print(f"{'step':34} {'events':>7} {'records':>9} {'engine s':>9} {'verify s':>9} {'ratio':>6}")
    results: dict[str, list[dict[str, Any]]] = {"engine": [], "verify": []}
    tot_e = tot_v = 0.0
    for (name, events, e_s), (records, v_s) in zip(engine_steps, verify_rows, strict=True):
        tot_e += e_s
        tot_v += v_s
        print(f"{name:34} {events:>7} {records:>9} {e_s:>9.3f} {v_s:>9.3f} {v_s / e_s:>6.2f}")
        results["engine"].append(
            {"step": name, "events": events, "decisions": records, "seconds": e_s}
        )
        results["verify"].append(
            {"step": name, "events": events, "decisions": records, "seconds": v_s}
        )
    print(f"{'total':34} {'':>7} {'':>9} {tot_e:>9.3f} {tot_v:>9.3f} {tot_v / tot_e:>6.2f}")
    s = summary
    print(
        f"verify: {s.events} events, {s.decisions} decisions checked, {s.matched} matched, "
        f"divergent {dict(s.divergent)}; python_work {work_start} -> {work_end} s; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    if s.decisions != s.matched or s.divergent:
        print("verify did not match the log: the figures are not comparable", file=sys.stderr)
        return 1
    if args.record:
        path = record(
            {**vars(args), "bench": "metadata_log_verify", "log_mib": round(size / 2**20, 1)},
            results,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            {},
            started,
            head,
            {"start": work_start, "end": work_end},
            RESULTS_DIR / "metadata_log_verify",
        )
        print(f"recorded: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
