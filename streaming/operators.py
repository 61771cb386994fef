"""The job's two stateful operators: the only code Spark calls with state (the partition
stage hands its `GroupState` to the storage strategy, `storage.py`).

- The **sequencer** (`SequencerProcessor`, `transformWithStateInPandas` under the single
  key `SEQUENCER_KEY`): Kafka's controller is one event thread. Its state is the
  directory's records (MapState, in chunks of records, plus a stamp naming the version
  written last: `directory_store.py`), the events it holds back while a topic deletion waits for reports
  (ListState) and that pending deletion (ValueState). Per batch it decodes them, runs the
  core's `Sequencer` over the batch's events and deletion reports, writes back the chunks
  whose records changed, and sends each partition's work to its group (`storage.py`), packed,
  and Kafka's controller gauges to the sink through the direct group
  (`controller_metrics.py`): one row per batch that ran the sequencer.
- The **partition stage** (`partition_stage`, `applyInPandasWithState` keyed by group):
  the directory's own records are numbered in the group `DIRECT`; every other group is
  folded by the storage strategy, which holds its partitions' state. With file output in
  scale mode each group's decision runs go straight to its task's part file
  (`decision_parts.write_group`).

Both decode state, run the core, encode state and yield packed rows (`pipeline.py`,
`packing.py`); nothing else happens here. Each first sets the worker's collector thresholds
(`collect_less`) and runs its batch with the cyclic collector paused (`paused`). The
sequencer keeps the directory it last wrote (`LastDirectory`). The thresholds and the
directory pay off when Spark reuses its Python workers between micro-batches, and neither
is needed for correctness: a fresh worker sets the thresholds again and reads the
directory from the state store (tests/cluster runs every task in a fresh worker, on two
executors).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from state_machines.events import DEFAULT_LIMITS, InputLimits
from state_machines.loop import DIRECT, Pending, RawEvent, Sequencer
from state_machines.model import ControllerConfig

from . import codec, controller_metrics, decision_parts, directory_store
from .collector import collect_less, paused
from .packing import pack_groups, pack_metrics, pack_outputs, unpack_work
from .pipeline import read_feedback
from .storage import PartitionStorage, fold_group

# work and outputs between the operators are packed (packing.pack_groups, pack_outputs)
SEQUENCER_OUT = "grp string, rows string"
PARTITION_OUT = "rows string"
SEQUENCER_KEY = "controller"


class LastDirectory:
    """The directory as this Python worker last left it, and its stamp.

    Every micro-batch needs the whole directory, whose size grows with the cluster: reading
    and decoding it at 1,000,000 partitions took 0.8 to 1.9 s (timed inside the worker).
    Each write of the directory also writes a fresh stamp under `directory_store.STAMP_KEY`. A
    worker holding the directory under the stamp the state store holds now (Spark reuses
    Python workers between batches) takes a copy of its own instead of reading the map; a
    batch run again after a failure restores an older stamp, and reads the map."""

    def __init__(self) -> None:
        self.stamp: str | None = None
        self.directory: dict[str, Any] = {}

    def take(self, stamp: str | None) -> dict[str, Any] | None:
        """A copy (the sequencer changes it in place, and the batch may yet fail), or None
        if the worker's copy is not the stored version."""
        return dict(self.directory) if stamp is not None and stamp == self.stamp else None

    def leave(self, stamp: str, directory: dict[str, Any]) -> None:
        self.stamp, self.directory = stamp, directory


_LAST_DIRECTORY = LastDirectory()


class SequencerProcessor(StatefulProcessor):
    """The directory, under a single key: Kafka's controller is one event thread."""

    def __init__(self, config: ControllerConfig, storage: PartitionStorage, limits: InputLimits = DEFAULT_LIMITS,
                 dlq_max_value_bytes: int = 900_000):
        self.config = config
        self.limits = limits
        self.dlq_max_value_bytes = dlq_max_value_bytes
        self.storage = storage

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.records = handle.getMapState("directory", "key string", "value string")
        self.buffer = handle.getListState("buffer", "offset long, value binary, source string")
        self.pending = handle.getValueState("pending", "value string")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        collect_less()
        # the whole batch without cyclic collection: its passes walked what the batch
        # decodes and sends (collector.py)
        with paused():
            packed = self._batch(rows)
        yield pd.DataFrame(packed, columns=["grp", "rows"])

    def _batch(self, rows: Iterator[pd.DataFrame]) -> list[tuple[str, str]]:
        events: list[RawEvent] = []
        feedback: list[str] = []
        for pdf in rows:
            for kind, offset, value, source, payload in pdf[["kind", "offset", "value", "source", "payload"]].itertuples(index=False):
                if kind == "event":
                    # a null value (a tombstone) stays None, for the dead letters to say so
                    events.append(RawEvent(int(offset), None if value is None else bytes(value), str(source)))
                else:
                    feedback.extend(payload.split("\n"))  # file_source.FeedbackReader joins lines
        reports, summaries = read_feedback(feedback)
        stamped = self.records.getValue((directory_store.STAMP_KEY,))
        stamp = stamped[0] if stamped else None
        directory, former = _LAST_DIRECTORY.take(stamp), []
        if directory is None:
            directory, former = directory_store.load(self.records.iterator())
        pending = codec.loads(self.pending.get()[0], Pending) if self.pending.exists() else None
        buffered = [RawEvent(int(o), None if v is None else bytes(v), s) for o, v, s in self.buffer.get()] if self.buffer.exists() else []
        seq = Sequencer(directory, self.config, self.limits)
        pending, rest = seq.run(pending, buffered, events, reports, summaries)
        updates, removals = directory_store.writes(directory, seq.changed, former)
        for k in removals:
            self.records.removeKey((k,))
        for k, text in updates:
            self.records.updateValue((k,), (text,))
        if updates or removals or stamp is None:
            stamp = uuid.uuid4().hex
            self.records.updateValue((directory_store.STAMP_KEY,), (stamp,))
        _LAST_DIRECTORY.leave(stamp, directory)
        if pending is None:
            self.pending.clear()
        else:
            self.pending.update((codec.dumps(pending),))
        if rest:
            self.buffer.put([(e.offset, e.value, e.source) for e in rest])
        else:
            self.buffer.clear()
        groups = pack_groups(seq.work, self.storage.group, self.dlq_max_value_bytes)
        packed = [(grp, text) for grp, texts in groups.items() for text in texts]
        # the controller's gauges as this batch leaves them, to the sink (controller_metrics)
        gauges = controller_metrics.controller_metrics(directory, pending, self.config)
        packed.append((DIRECT, pack_metrics(controller_metrics.encode(gauges))))
        return packed

    def close(self) -> None:
        pass


def partition_stage(config: ControllerConfig, storage: PartitionStorage, parts_base: str | None = None):
    """The partition stage's function. With `parts_base` (file output in scale mode,
    `decision_parts.stage_parts_base`), each group's decision runs go to its task's part
    under the batch's parts directory, and only the other rows leave the stage."""
    def apply(key: tuple, pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        collect_less()
        with paused():
            work = unpack_work(text for pdf in pdfs for text in pdf["rows"].tolist())
            out = fold_group(storage, key[0], state, work, config)
            if parts_base is not None:
                batch_id, task = _task_attempt()
                out = decision_parts.write_group(out, decision_parts.parts_dir(parts_base, batch_id), task)
            packed = pack_outputs(out)
        yield pd.DataFrame({"rows": pd.Series(packed, dtype=object)})

    return apply


def _task_attempt() -> tuple[int, str]:
    """The micro-batch's id (the local property Spark's MicroBatchExecution sets on the
    query's thread, which its tasks inherit) and the task attempt, as a part's name says it:
    partition, attempt number and the attempt's id, unique in the application."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    batch = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    if ctx is None or batch is None:
        raise RuntimeError("the partition stage writes its decision parts only in a micro-batch's task")
    return int(batch), f"{ctx.partitionId():05d}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}"
