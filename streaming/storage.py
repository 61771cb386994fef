"""Where the partition stage keeps each partition's state between micro-batches: the one
place that knows whether the job runs in scale mode.

A storage strategy answers two questions for the query:

- `group(target)`: the Spark group (the key of `applyInPandasWithState`) a partition's
  work goes to, and `state_schema`, the state Spark keeps per group;
- `fold(state, work, config)`: load the slots of the partitions the work touches from the
  group's state, fold the core's `fold_partition` over them (`pipeline.py` encodes the
  replies), and store them back. `fold_group` sends the directory's own group (`DIRECT`)
  past the storage.

`PerPartition` (the default) keys by topic-partition: the group's state is the partition's
record and sequence numbers. `Buckets` (scale mode, `job.partition_buckets = N`) packs
partitions into N groups by a stable hash, so Spark's per-group cost (about 0.6 ms a key
a batch) is paid per bucket: a bucket's state holds its partitions one line each
(`codec.bucket_text`), and only the lines of touched partitions are decoded. Every
partition runs through the same fold either way, so the decisions are the same bytes.

`state` is anything shaped like Spark's `GroupState` (`exists`, `get`, `update`,
`remove`); `batches.py` passes one kept in memory. `stored_records` reads a group's
state back from a checkpoint, in either layout. The strategy is chosen once, by
`partition_storage`, and is frozen into a checkpoint (`settings/checkpoint.py`).
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol

from state_machines.fold import PartitionSlot
from state_machines.loop import DIRECT, Work
from state_machines.model import ControllerConfig
from state_machines.partition import PartitionRecord

from . import codec
from .packing import OutputRow
from .pipeline import bucket_stage, direct_stage, partition_stage_rows
from .spark_hash import balanced_labels


class GroupStateLike(Protocol):
    @property
    def exists(self) -> bool: ...

    @property
    def get(self) -> tuple[Any, ...]: ...

    def update(self, newValue: tuple[Any, ...]) -> None: ...

    def remove(self) -> None: ...


class PerPartition:
    """One Spark group per topic-partition."""

    state_schema = "record string, seq_cause long, seq_next long"

    def group(self, target: str) -> str:
        return target

    def fold(
        self, state: GroupStateLike, work: list[Work], config: ControllerConfig
    ) -> list[OutputRow]:
        slot = before = PartitionSlot(None)
        text = ""
        if state.exists:
            text, seq_cause, seq_next = state.get
            slot = before = PartitionSlot(
                codec.loads(text, codec.PartitionRecordType), int(seq_cause), int(seq_next)
            )
        slot, out = partition_stage_rows(slot, work, config)
        if slot.record is None:
            if state.exists:
                state.remove()
        else:
            # a record the batch left as it was (the same object: records are immutable)
            # keeps its text rather than being encoded again
            state.update(
                (
                    text if slot.record is before.record else codec.dumps(slot.record),
                    slot.seq_cause,
                    slot.seq_next,
                )
            )
        return out

    @staticmethod
    def records(state: dict[str, Any]) -> list[PartitionRecord]:
        return [codec.loads(state["record"], codec.PartitionRecordType)]


class Buckets:
    """Scale mode: partitions packed into `buckets` groups, labelled so that each of the
    `shuffle_partitions` gets the same number of them (`spark_hash`)."""

    state_schema = "slots string"

    def __init__(self, buckets: int, shuffle_partitions: int) -> None:
        self.buckets = buckets
        self.labels = balanced_labels(buckets, shuffle_partitions)

    def group(self, target: str) -> str:
        if target == DIRECT:
            return target
        return self.labels[zlib.crc32(target.encode()) % self.buckets]

    def fold(
        self, state: GroupStateLike, work: list[Work], config: ControllerConfig
    ) -> list[OutputRow]:
        entries = codec.bucket_entries(state.get[0] if state.exists else None)
        touched = {w.target for w in work}
        slots = {
            k: PartitionSlot(*codec.bucket_entry_in(entries[k])) for k in touched if k in entries
        }
        before = {k: sl.record for k, sl in slots.items()}
        out = bucket_stage(slots, work, config)
        for k in touched:
            if k in slots:
                sl = slots[k]
                if sl.record is before.get(k):
                    # the batch left the record as it was (the same object: records are
                    # immutable): its text is kept, only the sequence numbers are written
                    entries[k] = codec.bucket_entry_seq(entries[k], sl.seq_cause, sl.seq_next)
                else:
                    entries[k] = codec.bucket_entry_out(sl.record, sl.seq_cause, sl.seq_next)
            else:
                entries.pop(k, None)
        state.update((codec.bucket_text(entries),))
        return out

    @staticmethod
    def records(state: dict[str, Any]) -> list[PartitionRecord]:
        return [
            codec.bucket_entry_in(entry)[0]
            for entry in codec.bucket_entries(state["slots"]).values()
        ]


PartitionStorage = PerPartition | Buckets


def partition_storage(buckets: int, shuffle_partitions: int) -> PartitionStorage:
    """Scale mode with `buckets` groups, or one group per partition when it is 0."""
    return Buckets(buckets, shuffle_partitions) if buckets else PerPartition()


def stored_records(state: dict[str, Any]) -> list[PartitionRecord]:
    """The partitions in one group's state as a checkpoint holds it (`state_reader`), by
    the fields of its layout: a reader of a checkpoint needs no settings."""
    return Buckets.records(state) if "slots" in state else PerPartition.records(state)


def fold_group(
    storage: PartitionStorage,
    key: str,
    state: GroupStateLike,
    work: list[Work],
    config: ControllerConfig,
) -> list[OutputRow]:
    """One group's work in the partition stage: the directory's own records are numbered
    (the group `DIRECT`, which keeps no state); any other group is folded by `storage`."""
    return direct_stage(work) if key == DIRECT else storage.fold(state, work, config)
