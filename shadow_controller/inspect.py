"""`shadow-controller inspect --checkpoint DIR`: the job's state at one micro-batch, for an
incident review.

What a batch saw comes from Spark's offset log, CHECKPOINT/query/offsets/<N>: each
source's offsets, read up to, named by their shape (offset_sources.py).

The state is the state *after* batch N, replayed without Spark and checked against the
job's output where the checkpoint allows it (`fast_state.py`), else read with Spark's state
data source readers through `streaming/state_reader.py` (the only module that touches
them). It reflects the events before the events source's end offset, less any the
sequencer still holds (a cause waiting for its partitions' reports and the events read
behind it): `reflects` says which.
`inspect()` returns plain data; `render_table()` and `--json` are two views of it, and the
text never shows a Python or JSON value (`None`, `null`) for something unknown.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from state_machines.directory import BrokerRecord
from state_machines.engine import partition_json
from streaming import state_reader
from streaming.exits import UsageError
from streaming.settings.checkpoint import CheckpointError, load_settings

from .checkpoint_files import checked_batch as checked_batch
from .checkpoint_files import committed_batches as committed_batches
from .checkpoint_files import read_offset_log as read_offset_log
from .console import report
from .errors import InspectError
from .offset_sources import batch_sources, ids_text, reflected_input, reflects_line
from .topic_partition import checked_partition, parse_topic_partition, partition_names

BROKER_PREFIX = "broker-"


# --- the state --------------------------------------------------------------------------


def _partition_row(rec: Any) -> dict[str, Any]:
    return {
        "topic_partition": f"{rec.topic}-{rec.partition}",
        "topic": rec.topic,
        "partition": rec.partition,
        **partition_json(rec),
    }


def _broker_row(broker_id: int, rec: BrokerRecord) -> dict[str, Any]:
    fact = rec.fact
    return {
        "id": broker_id,
        "live": fact.live,
        "registered": fact.registered,
        "shutting_down": fact.shutting_down,
        "epoch": fact.broker_epoch,
    }


def _on_broker(row: dict[str, Any], broker: int) -> bool:
    return (
        broker in row["replicas"]
        or broker in row["adding_replicas"]
        or broker in row["removing_replicas"]
    )


def _mode(checkpoint: str) -> str:
    """The checkpoint's rule set; inspect also reads a checkpoint without its settings
    (written by the job alone), which can only be zk-mode's."""
    try:
        return load_settings(checkpoint).controller.mode
    except CheckpointError:
        return "zk"


def refuse_kraft(checkpoint: str, mode: str) -> None:
    """inspect, health and what-if read the ZK rule set's state; a kraft-mode checkpoint
    holds KRaft registrations (README, "KRaft mode": not built yet)."""
    if mode == "kraft":
        raise InspectError(
            f"{checkpoint} runs controller.mode kraft; this tool reads zk-mode state only (not "
            "built "
            f"for kraft mode yet)"
        )


def inspect(
    spark: Any,
    checkpoint: str,
    batch: int | None = None,
    partitions: tuple[str, ...] | list[str] = (),
    broker: int | None = None,
) -> dict[str, Any]:
    """The job's state after micro-batch `batch` (default: the latest committed), as plain
    data: batch, latest_committed, sources, partitions, brokers, missing_partitions,
    missing_brokers. Read with Spark's state readers."""
    batch, latest = checked_batch(checkpoint, batch)
    for p in partitions:
        parse_topic_partition(p)
    meta = state_reader.operators(spark, checkpoint)
    oldest = max(r["minBatchId"] for r in meta.values())
    if batch < oldest:
        raise InspectError(f"the state of batch {batch} is no longer kept (oldest: {oldest})")
    records = state_reader.partition_records(spark, checkpoint, batch)
    directory = state_reader.directory_records(spark, checkpoint, batch)
    pending = state_reader.sequencer_pending(spark, checkpoint, batch, meta)
    held = [e.offset for e in state_reader.sequencer_buffer(spark, checkpoint, batch, meta)]
    return inspect_state(
        checkpoint, batch, latest, records, directory, pending, held, partitions, broker
    )


def inspect_state(
    checkpoint: str,
    batch: int,
    latest: int,
    records: dict[tuple[str, int], Any],
    directory: dict[str, Any],
    pending: Any,
    held: list[int],
    partitions: tuple[str, ...] | list[str] = (),
    broker: int | None = None,
) -> dict[str, Any]:
    """`inspect`'s data from the state after `batch`, however it was read (Spark's state
    readers, or the replay of `fast_state.py`)."""
    wanted = [parse_topic_partition(p) for p in partitions]
    rows = [_partition_row(records[k]) for k in sorted(records)]
    if wanted:
        rows = [r for r in rows if (r["topic"], r["partition"]) in set(wanted)]
    if broker is not None:
        rows = [r for r in rows if _on_broker(r, broker)]
    brokers = sorted(
        (
            _broker_row(int(k[len(BROKER_PREFIX) :]), v)
            for k, v in directory.items()
            if k.startswith(BROKER_PREFIX) and isinstance(v, BrokerRecord)
        ),
        key=lambda b: b["id"],
    )
    if broker is not None:
        brokers = [b for b in brokers if b["id"] == broker]
    sources = batch_sources(checkpoint, batch)
    return {
        "checkpoint": checkpoint,
        "batch": batch,
        "latest_committed": latest,
        "reflects": reflected_input(
            sources, pending.cause_offset if pending is not None else None, held
        ),
        "sources": sources,
        "partitions": rows,
        "brokers": brokers,
        "missing_partitions": [f"{t}-{p}" for t, p in wanted if (t, p) not in records],
        "missing_brokers": [broker] if broker is not None and not brokers else [],
    }


# --- rendering --------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [
        fmt.format(*header).rstrip(),
        fmt.format(*("-" * w for w in widths)).rstrip(),
        *(fmt.format(*r).rstrip() for r in rows),
    ]


def render_table(result: dict[str, Any]) -> str:
    out = [f"batch {result['batch']} (latest committed: {result['latest_committed']})"]
    if "reflects" in result:
        out.append(reflects_line(result["reflects"]))
    for s in result["sources"]:
        start = "its start" if s["start"] is None else json.dumps(s["start"])
        end = "no offset" if s["end"] is None else json.dumps(s["end"])
        out.append(
            f"  source {s['index']} {s['name']} ({s['kind']}): {start} -> {end}: "
            f"{s['reads'] or 'offsets of an unknown shape'}"
        )
    out.append("")
    rows = []
    for p in result["partitions"]:
        moving = (
            " ".join(
                [
                    *([f"+{ids_text(p['adding_replicas'])}"] if p["adding_replicas"] else []),
                    *([f"-{ids_text(p['removing_replicas'])}"] if p["removing_replicas"] else []),
                ]
            )
            or "-"
        )
        rows.append(
            [
                p["topic_partition"],
                p["state"],
                str(p["leader"]),
                str(p["leader_epoch"]),
                str(p["partition_epoch"]),
                ids_text(p["isr"]),
                ids_text(p["replicas"]),
                moving,
                p["leader_recovery_state"],
                " ".join(
                    f"{b}:{s}"
                    for b, s in sorted(p["replica_states"].items(), key=lambda kv: int(kv[0]))
                ),
            ]
        )
    out += _table(
        [
            "partition",
            "state",
            "leader",
            "leader_epoch",
            "partition_epoch",
            "isr",
            "replicas",
            "adding/removing",
            "recovery",
            "replica_states",
        ],
        rows,
    )
    for name in result["missing_partitions"]:
        out.append(f"{name}: no state at this batch")
    out.append("")
    out += _table(
        ["broker", "live", "shutting_down", "epoch"],
        [
            [
                str(b["id"]),
                "yes" if b["live"] else "no",
                "yes" if b["shutting_down"] else "no",
                "-" if b["epoch"] is None else str(b["epoch"]),
            ]
            for b in result["brokers"]
        ],
    )
    for b in result["missing_brokers"]:
        out.append(f"broker {b}: no broker record at this batch")
    return "\n".join(out) + "\n"


# --- the command line -------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    """Checks the arguments and the checkpoint's files before Spark starts. Its errors are
    reported here as well as by the CLI's main, since tests call it directly."""
    try:
        partitions = partition_names(args)
        checked_batch(args.checkpoint, args.batch)
        refuse_kraft(args.checkpoint, _mode(args.checkpoint))
        result = _inspect_replayed(args, partitions) or _inspect_with_spark(args, partitions)
        if args.topic and not partitions:
            _keep_topic(result, args.topic)
        if result["missing_partitions"]:
            raise InspectError(_not_found(", ".join(result["missing_partitions"]), result))
    except UsageError as exc:
        return report("inspect", exc)
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else render_table(result))
    return 0


def _inspect_replayed(args: argparse.Namespace, partitions: list[str]) -> dict[str, Any] | None:
    """`inspect` from the replay of the checkpoint's micro-batches (`fast_state.py`), or
    None when it cannot be used."""
    from .fast_state import replayed

    state = replayed(args.checkpoint, args.batch)
    if state is None:
        return None
    return inspect_state(
        args.checkpoint,
        state.batch,
        state.latest,
        state.partitions,
        state.directory,
        state.pending,
        [e.offset for e in state.buffered],
        tuple(partitions),
        args.broker,
    )


def _inspect_with_spark(args: argparse.Namespace, partitions: list[str]) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from streaming.job import spark_session
    from streaming.settings.schema import JobSettings

    shared = SparkSession.getActiveSession()
    spark = spark_session(
        JobSettings(input="", output="", checkpoint=args.checkpoint),
        app_name="shadow-controller-inspect",
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return inspect(spark, args.checkpoint, args.batch, tuple(partitions), args.broker)
    finally:
        if shared is None:
            spark.stop()


def _keep_topic(result: dict[str, Any], topic: str) -> None:
    topics = sorted({p["topic"] for p in result["partitions"]})
    result["partitions"] = [p for p in result["partitions"] if p["topic"] == topic]
    if not result["partitions"]:
        raise InspectError(
            f"{_not_found('topic ' + topic, result)} (its topics: {', '.join(topics) or 'none'})"
        )


def _not_found(what: str, result: dict[str, Any]) -> str:
    return (
        f"{what}: not in the checkpoint {result['checkpoint']} (no state after batch "
        f"{result['batch']})"
    )


def add_parser(subparsers: Any) -> None:
    """Register `inspect` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "inspect", help="the job's partition and broker state at one micro-batch"
    )
    p.add_argument(
        "--checkpoint", required=True, help="the job's checkpoint directory (job.checkpoint)"
    )
    p.add_argument("--batch", type=int, help="micro-batch id (default: the latest committed)")
    p.add_argument(
        "--topic", help="only this topic's partitions; with it, --partition is a partition number"
    )
    p.add_argument(
        "--partition",
        action="append",
        metavar="TOPIC-P",
        type=checked_partition,
        help="only this partition (repeatable); a number with --topic",
    )
    p.add_argument(
        "--broker",
        type=int,
        metavar="ID",
        help="only partitions with a replica on this broker, and its row",
    )
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    p.set_defaults(func=cmd_inspect)
