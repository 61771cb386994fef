"""How fast the metadata-log reader decodes: record batches from a segment file, then every
record's value (MetadataRecordSerde) on one core, in records a second.

The log is what a KRaft controller writes for a cluster of `--brokers` brokers and the
creation of one topic of `--partitions` partitions (default a million): a
RegisterBrokerRecord, an UnfenceBrokerRecord per broker and a FeatureLevelRecord, then the
TopicRecord and a PartitionRecord v2 per partition (three replicas, their log directories),
`--records-per-batch` records a batch. Built with the project's encoder: one record per
distinct replica placement, and the partition id (the body's first four bytes, after the
three-byte frame) set per partition.

    .venv/bin/python bench/metadata_log_decode.py [--partitions N] [--compression zstd]
        [--distinct] [--repeat 3] [--record]

Figures: records / CPU second of the process (time.process_time, the best of `--repeat`
passes: what one core does, whoever else shares the machine) and records / wall second of
the same pass; `python_work_s` (bench/record.py, wall) and `python_work_cpu_s` (the same
work in CPU seconds) say how fast the machine was at the time: on a quiet machine
python_work takes 0.3-0.6 s, and a busy neighbour slows even the CPU seconds.
`--record` writes them as JSON under bench/results/metadata_log_decode/.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.record import RESULTS_DIR, commit, python_work
from streaming.metadata_log.batches import RecordBatch, read_batches
from streaming.metadata_log.encode import encode_batch, metadata_value, write_segment
from streaming.metadata_log.records import decode_control, decode_metadata

TOPIC_ID = "c2hhZG93LWNvbnRyb2xsZQ"  # 22 base64 characters: a Uuid
DIRS = ("ZGlyZWN0b3J5LW9uZS0wMQ", "ZGlyZWN0b3J5LXR3by0wMg", "ZGlyZWN0b3J5LXRocmVlMw")


def build(
    directory: Path, partitions: int, brokers: int, per_batch: int, codec: str, distinct: bool
) -> int:
    """The segment file; returns the number of records in it. `distinct`: every partition
    gets its own leader epoch, so no two records' bodies after the id are alike (the
    decoder's memo of a topic's placements never hits: its generic speed)."""
    values = [metadata_value("FeatureLevelRecord", name="metadata.version", feature_level=21)]
    for broker in range(brokers):
        values.append(
            metadata_value(
                "RegisterBrokerRecord",
                broker_id=broker,
                incarnation_id=TOPIC_ID,
                broker_epoch=100 + broker,
                end_points=[
                    {
                        "name": "PLAINTEXT",
                        "host": f"b{broker}",
                        "port": 9092,
                        "security_protocol": 0,
                    }
                ],
                features=[
                    {
                        "name": "metadata.version",
                        "min_supported_version": 1,
                        "max_supported_version": 21,
                    }
                ],
                rack=None,
                log_dirs=[DIRS[broker % 3]],
            )
        )
        values.append(metadata_value("UnfenceBrokerRecord", id=broker, epoch=100 + broker))
    values.append(metadata_value("TopicRecord", name="bench", topic_id=TOPIC_ID))
    templates: dict[int, tuple[bytes, bytes]] = {}
    for p in range(partitions):
        first = p % brokers
        if distinct:
            replicas = tuple((first + i) % brokers for i in range(3))
            values.append(
                metadata_value(
                    "PartitionRecord",
                    2,
                    partition_id=p,
                    topic_id=TOPIC_ID,
                    replicas=replicas,
                    isr=replicas,
                    leader=first,
                    leader_epoch=p,
                    partition_epoch=0,
                    directories=tuple(DIRS[r % 3] for r in replicas),
                )
            )
            continue
        template = templates.get(first)
        if template is None:
            replicas = tuple((first + i) % brokers for i in range(3))
            value = metadata_value(
                "PartitionRecord",
                2,
                partition_id=0,
                topic_id=TOPIC_ID,
                replicas=replicas,
                isr=replicas,
                leader=first,
                leader_epoch=0,
                partition_epoch=0,
                directories=tuple(DIRS[r % 3] for r in replicas),
            )
            template = templates[first] = (value[:3], value[7:])
        values.append(template[0] + struct.pack(">i", p) + template[1])
    batches = (
        encode_batch(values[i : i + per_batch], i, compression=codec)
        for i in range(0, len(values), per_batch)
    )
    write_segment(directory, 0, batches)
    return len(values)


def python_work_cpu() -> float:
    """bench/record.py's python_work in CPU seconds of this process (its wall seconds also
    count the time the neighbours hold the core): how fast one core is now."""
    start = time.process_time()
    python_work(passes=1)
    return round(time.process_time() - start, 3)


def decode_all(path: Path) -> int:
    """What `metadata-log dump` and `verify` do per record: the batches, then each value."""
    count = 0
    for batch in read_batches(path):
        assert isinstance(batch, RecordBatch)
        if batch.is_control:
            for record in batch.records:
                decode_control(record.key, record.value)
        else:
            for record in batch.records:
                decode_metadata(record.value)  # type: ignore[arg-type]
        count += len(batch.records)
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=6)
    ap.add_argument("--records-per-batch", type=int, default=10_000)
    ap.add_argument(
        "--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd")
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--distinct",
        action="store_true",
        help="every partition record different after its id (no memo hits: the generic path)",
    )
    ap.add_argument("--record", action="store_true", help="write the figures under bench/results")
    args = ap.parse_args()
    head = commit()
    started = time.time()
    work_start = python_work()
    work_cpu = [python_work_cpu()]
    with tempfile.TemporaryDirectory(prefix="metadata-log-bench-") as tmp:
        t = time.perf_counter()
        records = build(
            Path(tmp),
            args.partitions,
            args.brokers,
            args.records_per_batch,
            args.compression,
            args.distinct,
        )
        build_s = time.perf_counter() - t
        path = Path(tmp) / f"{0:020d}.log"
        size = path.stat().st_size
        passes = []
        for _ in range(args.repeat):
            cpu, wall = time.process_time(), time.perf_counter()
            assert decode_all(path) == records
            passes.append((time.process_time() - cpu, time.perf_counter() - wall))
    work_cpu.append(python_work_cpu())
    work_end = python_work()
    cpu_s, wall_s = min(passes)
    result = {
        "records": records,
        "bytes": size,
        "compression": args.compression,
        "records_per_batch": args.records_per_batch,
        "distinct": args.distinct,
        "build_s": round(build_s, 2),
        "cpu_s": [round(c, 3) for c, _ in passes],
        "wall_s": [round(w, 3) for _, w in passes],
        "records_per_cpu_s": round(records / cpu_s),
        "records_per_wall_s": round(records / wall_s),
    }
    print(
        f"{records:,} records ({size / 2**20:.0f} MiB, {args.compression}"
        f"{', distinct' if args.distinct else ''}): "
        f"{result['records_per_cpu_s']:,} records/s on one core "
        f"({cpu_s:.2f} s CPU; {result['records_per_wall_s']:,} records/s wall, load "
        f"{os.getloadavg()[0]:.1f}; python_work {work_start}/{work_end} s, "
        f"CPU {work_cpu[0]}/{work_cpu[1]} s)"
    )
    if args.record:
        out_dir = RESULTS_DIR / "metadata_log_decode"
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
        kind = "-distinct" if args.distinct else ""
        out = out_dir / f"{stamp}-{args.partitions}p{kind}-{(head['sha'] or 'nogit')[:8]}.json"
        doc = {
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "commit": head,
            "machine": {
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "python_work_s": {"start": work_start, "end": work_end},
                "python_work_cpu_s": {"start": work_cpu[0], "end": work_cpu[1]},
            },
            "args": vars(args),
            "result": result,
        }
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"recorded: {out.relative_to(RESULTS_DIR.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
