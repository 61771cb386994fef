"""Reading the job's state back from a checkpoint with Spark's state data source readers
(`state-metadata`, `statestore`). They are documented as experimental, so every use of
them is here."""

from __future__ import annotations

import os
from typing import Any

from state_machines.loop import Pending, RawEvent
from state_machines.model import ControllerConfig
from state_machines.partition import PartitionRecord

from . import codec, directory_store
from .controller_metrics import controller_metrics
from .storage import stored_records

PARTITION_OPERATOR = "applyInPandasWithState"
SEQUENCER_OPERATOR = "transformWithStateInPandasExec"


def _query_dir(checkpoint: str) -> str:
    return os.path.join(checkpoint, "query")


def operators(spark: Any, checkpoint: str) -> dict[str, Any]:
    """Operator name -> its state-metadata row (operatorId, minBatchId, maxBatchId, ...)."""
    return {
        r["operatorName"]: r
        for r in spark.read.format("state-metadata").load(_query_dir(checkpoint)).collect()
    }


def _reader(
    spark: Any,
    checkpoint: str,
    operator: str,
    batch_id: int | None,
    meta: dict[str, Any] | None = None,
    **options: str,
) -> Any:
    """`meta`: what `operators` returned, when the caller has read it already (each read
    is a Spark job)."""
    meta = (meta or operators(spark, checkpoint))[operator]
    reader = spark.read.format("statestore").option("operatorId", meta["operatorId"])
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(_query_dir(checkpoint))


def partition_records(
    spark: Any, checkpoint: str, batch_id: int | None = None, meta: dict[str, Any] | None = None
) -> dict[tuple[str, int], PartitionRecord]:
    """Every partition's state after micro-batch `batch_id` (default: the last committed)."""
    out = {}
    for row in _reader(spark, checkpoint, PARTITION_OPERATOR, batch_id, meta).collect():
        for record in stored_records(row["value"]["groupState"].asDict()):
            out[(record.topic, record.partition)] = record
    return out


def _map_value(row: Any) -> str:
    d = row.asDict(recursive=True)
    for name in ("user_map_value", "value"):
        if name in d:
            v = d[name]
            text: str = v["value"] if isinstance(v, dict) else v
            return text
    raise KeyError(f"no map value in {sorted(d)}")


def directory_records(
    spark: Any, checkpoint: str, batch_id: int | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The sequencer's directory after micro-batch `batch_id` (default: the last committed),
    by record key: "controller", "broker-<id>", "topic-<name>", from its MapState in either
    layout (`directory_store.py`).

    The statestore reader returns a TWS MapState as (key = the grouping key, user_map_key,
    user_map_value); the map's own key is `user_map_key`."""
    df = _reader(spark, checkpoint, SEQUENCER_OPERATOR, batch_id, meta, stateVarName="directory")
    texts, _ = directory_store.stored_texts(
        (row["user_map_key"][0], _map_value(row)) for row in df.collect()
    )
    return {key: codec.loads(text, codec.DirectoryRecord) for key, text in texts.items()}


def sequencer_pending(
    spark: Any, checkpoint: str, batch_id: int | None = None, meta: dict[str, Any] | None = None
) -> Pending | None:
    """The cause the sequencer holds after micro-batch `batch_id` (a topic deletion waiting
    for its reports, or a cause waiting for a fold), or None."""
    rows = _reader(
        spark, checkpoint, SEQUENCER_OPERATOR, batch_id, meta, stateVarName="pending"
    ).collect()
    return codec.loads(rows[0]["value"]["value"], Pending) if rows else None


def sequencer_buffer(
    spark: Any, checkpoint: str, batch_id: int | None = None, meta: dict[str, Any] | None = None
) -> list[RawEvent]:
    """The events the sequencer read but holds behind a waiting cause, in offset order."""
    rows = _reader(
        spark, checkpoint, SEQUENCER_OPERATOR, batch_id, meta, stateVarName="buffer"
    ).collect()
    events = [
        RawEvent(
            int(e["offset"]), None if e["value"] is None else bytes(e["value"]), str(e["source"])
        )
        for e in (row["list_element"] for row in rows)
    ]
    return sorted(events, key=lambda e: e.offset)


def checkpointed_metrics(
    spark: Any, checkpoint: str, config: ControllerConfig
) -> dict[str, int] | None:
    """The controller's gauges (`controller_metrics`) as the last committed micro-batch left
    them, computed again from its directory and pending cause: what the sequencer sent the
    sink at the end of that batch. None for a checkpoint without a committed batch. Three
    small reads (state metadata, the directory map, the pending cause); the partitions'
    state is not read."""
    commits = os.path.join(_query_dir(checkpoint), "commits")
    if not os.path.isdir(commits) or not any(name.isdigit() for name in os.listdir(commits)):
        return None
    meta = operators(spark, checkpoint)
    if SEQUENCER_OPERATOR not in meta:
        return None
    directory = directory_records(spark, checkpoint, None, meta)
    return controller_metrics(directory, sequencer_pending(spark, checkpoint, None, meta), config)
