"""The job's two stateful operators: the only code Spark calls with state (the partition
stage hands its `GroupState` to the storage strategy, `storage.py`).

- The **sequencer** (`SequencerProcessor`, `transformWithStateInPandas` under the single
  key `SEQUENCER_KEY`): Kafka's controller is one event thread. Its state is the
  directory's records (MapState, in chunks of records, plus a stamp naming the version
  written last: `directory_store.py`), the events it holds back while a topic deletion waits for
  reports (ListState) and that pending deletion (ValueState). Per batch it decodes them, runs the
  core's `Sequencer` over the batch's events and deletion reports, writes back the chunks
  whose records changed, and sends each partition's work to its group (`storage.py`), packed,
  and Kafka's controller gauges to the sink through the direct group
  (`controller_metrics.py`): one row per batch that ran the sequencer.
  Its mirrors (`mirror_keys`, `SequencerProcessor._mirror`) get the same input under keys
  of the other shuffle partitions, keep no state and send nothing: each runs the batch on
  its Python worker's copy of the directory, so that every worker of the stage holds the
  directory the next batch needs.
- The **partition stage** (`partition_stage`, `applyInPandasWithState` keyed by group):
  the directory's own records are numbered in the group `DIRECT`; every other group is
  folded by the storage strategy, which holds its partitions' state. With file output in
  scale mode each group's decision runs go straight to its task's part file
  (`decision_parts.write_group`).

Both decode state, run the core, encode state and yield packed rows (`pipeline.py`,
`packing.py`); nothing else happens here. Each first sets the worker's collector thresholds
(`collect_less`) and runs its batch with the cyclic collector paused (`paused`). The
sequencer and its mirrors keep the directory they last left (`LastDirectory`). The
thresholds and the directory pay off when Spark reuses its Python workers between
micro-batches, and neither is needed for correctness: a fresh worker sets the thresholds
again and reads the directory from the state store (tests/cluster runs every task in a
fresh worker, on two executors), and a copy is used only under the stamp the state store
holds (`next_stamp`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.state import GroupState
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from state_machines.commands import DeletionReport, SummaryReport
from state_machines.events import DEFAULT_LIMITS, InputLimits
from state_machines.loop import DIRECT, Pending, RawEvent, Sequencer
from state_machines.model import ControllerConfig

from . import batch_gauges, codec, controller_metrics, decision_parts, directory_store
from .collector import collect_less, paused
from .packing import pack_groups, pack_metrics, pack_outputs, unpack_work
from .pipeline import read_feedback
from .spark_hash import shuffle_partition
from .storage import PartitionStorage, fold_group

# work and outputs between the operators are packed (packing.pack_groups, pack_outputs)
SEQUENCER_OUT = "grp string, rows string"
PARTITION_OUT = "rows string"
SEQUENCER_KEY = "controller"


class LastDirectory:
    """The directory as this Python worker last left it: its stamp, the micro-batch that left
    it, and the events held back and the pending deletion with it (for a mirror, below).

    Every micro-batch needs the whole directory, whose size grows with the cluster: reading
    and decoding it at 1,000,000 partitions took 0.8 to 1.9 s (timed inside the worker).
    Each write of the directory also writes a new stamp under `directory_store.STAMP_KEY`,
    a digest of the stamp before and of every chunk written (`next_stamp`), so that two
    versions under one stamp are the same directory however they were reached. A worker
    holding the directory under the stamp the state store holds now (Spark reuses Python
    workers between batches) takes a copy of its own instead of reading the map; a batch
    run again after a failure restores an older stamp, and reads the map."""

    def __init__(self) -> None:
        self.stamp: str | None = None
        self.directory: dict[str, Any] = {}
        self.batch: int | None = None
        self.pending: Pending | None = None
        self.buffered: list[RawEvent] = []
        self.reads = 0  # batches whose sequencer found no copy here and read its state

    def take(self, stamp: str | None) -> dict[str, Any] | None:
        """A copy (the sequencer changes it in place, and the batch may yet fail), or None
        if the worker's copy is not the stored version."""
        return dict(self.directory) if stamp is not None and stamp == self.stamp else None

    def leave(
        self,
        stamp: str,
        directory: dict[str, Any],
        batch: int | None = None,
        pending: Pending | None = None,
        buffered: list[RawEvent] | None = None,
    ) -> None:
        self.stamp, self.directory, self.batch = stamp, directory, batch
        self.pending, self.buffered = pending, list(buffered or ())

    def forget(self) -> None:
        self.stamp, self.directory, self.batch, self.pending, self.buffered = (
            None,
            {},
            None,
            None,
            [],
        )


def next_stamp(stamp: str | None, updates: list[tuple[str, str]], removals: list[str]) -> str:
    """The stamp of the version a batch writes: a digest of the stamp it started from and of
    every chunk it wrote or removed. Equal stamps therefore name equal directories: the first
    version writes every chunk (`stamp` None), and each later one the chunks that changed,
    whole. A mirror (`SequencerProcessor`) that reaches the same chunks from the same
    version computes the same stamp; one that does not, another."""
    digest = hashlib.blake2b(digest_size=16)

    def field(kind: bytes, text: str) -> None:  # length-prefixed: no two lists give one digest
        data = text.encode()
        digest.update(kind + len(data).to_bytes(8, "big") + data)

    field(b"s", stamp or "")
    for key, text in updates:
        field(b"k", key)
        field(b"t", text)
    for key in removals:
        field(b"r", key)
    return digest.hexdigest()


_LAST_DIRECTORY = LastDirectory()


class SequencerProcessor(StatefulProcessor):
    """The directory, under a single key: Kafka's controller is one event thread."""

    def __init__(
        self,
        config: ControllerConfig,
        storage: PartitionStorage,
        limits: InputLimits = DEFAULT_LIMITS,
        dlq_max_value_bytes: int = 900_000,
    ):
        self.config = config
        self.limits = limits
        self.dlq_max_value_bytes = dlq_max_value_bytes
        self.storage = storage

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.records = handle.getMapState("directory", "key string", "value string")
        self.buffer = handle.getListState("buffer", "offset long, value binary, source string")
        self.pending = handle.getValueState("pending", "value string")

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        collect_less()
        # the whole batch without cyclic collection: its passes walked what the batch
        # decodes and sends (collector.py)
        with paused():
            if key[0] != SEQUENCER_KEY:
                self._mirror(rows)
                return
            packed = self._batch(rows)
        yield pd.DataFrame(packed, columns=["grp", "rows"])

    def _batch(self, rows: Iterator[pd.DataFrame]) -> list[tuple[str, str]]:
        events, reports, summaries = _inputs(rows)
        stamped = self.records.getValue((directory_store.STAMP_KEY,))
        stamp = stamped[0] if stamped else None
        last = self.worker_copy()
        former: list[Any] = []
        directory = last.take(stamp)
        if directory is None:
            directory, former = directory_store.load(self.records.iterator())
            last.reads += 1
        held = self.pending.get() if self.pending.exists() else None
        pending = None if held is None else codec.loads(held[0], Pending)
        buffered = (
            [RawEvent(int(o), None if v is None else bytes(v), s) for o, v, s in self.buffer.get()]
            if self.buffer.exists()
            else []
        )
        seq = Sequencer(directory, self.config, self.limits)
        pending, rest = seq.run(pending, buffered, events, reports, summaries)
        # the first stamp covers every chunk (next_stamp)
        updates, removals = directory_store.writes(
            directory, seq.changed if stamp is not None else set(directory), former
        )
        for k in removals:
            self.records.removeKey((k,))
        for k, text in updates:
            self.records.updateValue((k,), (text,))
        if updates or removals or stamp is None:
            stamp = next_stamp(stamp, updates, removals)
            self.records.updateValue((directory_store.STAMP_KEY,), (stamp,))
        last.leave(stamp, directory, self.batch_id(), pending, rest)
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
        # the controller's gauges as this batch leaves the directory, and the events it
        # applied, to the sink, which settles them with the batch's summaries (batch_gauges)
        applied = batch_gauges.applied_events(buffered, events, rest)
        line = batch_gauges.sequencer_text(directory, pending, self.config, seq.changed, applied)
        packed.append((DIRECT, pack_metrics(line)))
        return packed

    def _mirror(self, rows: Iterator[pd.DataFrame]) -> None:
        """A mirror key's batch (`mirror_keys`): the sequencer's own events and feedback, run
        over this worker's copy of the directory if the batch before left it, its work and
        gauges dropped, its directory left under the stamp the sequencer writes for the same
        chunks (`next_stamp`). The sequencer's stage has a task per shuffle partition and
        each takes an idle Python worker, in whichever order the tasks ask; a mirror in every
        partition but the sequencer's keeps each of those workers' copies current, so the
        next batch finds its directory in whichever it gets. Writes no state and sends
        nothing: a copy the sequencer cannot use (another stamp) only costs a read."""
        last, batch = self.worker_copy(), self.batch_id()
        if batch is None or last.stamp is None or last.batch != batch - 1:
            for _ in rows:  # nothing to advance
                pass
            return
        events, reports, summaries = _inputs(rows)
        try:
            directory = dict(last.directory)
            seq = Sequencer(directory, self.config, self.limits)
            pending, rest = seq.run(last.pending, last.buffered, events, reports, summaries)
            updates, removals = directory_store.writes(directory, seq.changed)
            stamp = next_stamp(last.stamp, updates, removals) if updates or removals else last.stamp
            # the worker's counts of the summaries (controller_metrics._summed), as the
            # sequencer's batch leaves them
            controller_metrics.controller_metrics(directory, pending, self.config)
        except Exception:  # a copy from another query's history may not take these events
            last.forget()
            return
        last.leave(stamp, directory, batch, pending, rest)

    def worker_copy(self) -> LastDirectory:
        """This Python worker's copy of the directory."""
        return _LAST_DIRECTORY

    def batch_id(self) -> int | None:
        return _batch_id()

    def close(self) -> None:
        pass


def _inputs(
    rows: Iterator[pd.DataFrame],
) -> tuple[list[RawEvent], list[DeletionReport], list[SummaryReport]]:
    """The batch's events, and the deletion reports and summaries of its feedback."""
    events: list[RawEvent] = []
    feedback: list[str] = []
    for pdf in rows:
        for kind, offset, value, source, payload in pdf[
            ["kind", "offset", "value", "source", "payload"]
        ].itertuples(index=False):
            if kind == "event":
                # a null value (a tombstone) stays None, for the dead letters to say so
                events.append(
                    RawEvent(int(offset), None if value is None else bytes(value), str(source))
                )
            else:
                feedback.extend(payload.split("\n"))  # file_source.FeedbackReader joins lines
    reports, summaries = read_feedback(feedback)
    return events, reports, summaries


def mirror_keys(partitions: int, mirrors: int) -> list[str]:
    """Keys for `mirrors` mirrors of the sequencer (`SequencerProcessor._mirror`), each in a
    shuffle partition of its own other than the sequencer's (`spark_hash.shuffle_partition`,
    Spark's `HashPartitioning`), the partitions after the sequencer's first."""
    home = shuffle_partition(SEQUENCER_KEY, partitions)
    wanted = [(home + i) % partitions for i in range(1, min(mirrors, partitions - 1) + 1)]
    found: dict[int, str] = {}
    n = 0
    while len(found) < len(wanted):
        key = f"{SEQUENCER_KEY}~{n}"
        partition = shuffle_partition(key, partitions)
        if partition in wanted and partition not in found:
            found[partition] = key
        n += 1
    return [found[p] for p in wanted]


def partition_stage(
    config: ControllerConfig, storage: PartitionStorage, parts_base: str | None = None
) -> Callable[[tuple[Any, ...], Iterator[pd.DataFrame], GroupState], Iterator[pd.DataFrame]]:
    """The partition stage's function. With `parts_base` (file output in scale mode,
    `decision_parts.stage_parts_base`), each group's decision runs go to its task's part
    under the batch's parts directory, and only the other rows leave the stage."""

    def apply(
        key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        collect_less()
        with paused():
            work = unpack_work(text for pdf in pdfs for text in pdf["rows"].tolist())
            out = fold_group(storage, key[0], state, work, config)
            if parts_base is not None:
                batch_id, task = _task_attempt()
                out = decision_parts.write_group(
                    out, decision_parts.parts_dir(parts_base, batch_id), task
                )
            packed = pack_outputs(out)
        yield pd.DataFrame({"rows": pd.Series(packed, dtype=object)})

    return apply


def _batch_id() -> int | None:
    """The micro-batch's id: the local property Spark's MicroBatchExecution sets on the
    query's thread, which its tasks inherit (None outside a micro-batch's task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    batch = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    return None if batch is None else int(batch)


def _task_attempt() -> tuple[int, str]:
    """The micro-batch's id (`_batch_id`) and the task attempt, as a part's name says it:
    partition, attempt number and the attempt's id, unique in the application."""
    from pyspark import TaskContext

    ctx, batch = TaskContext.get(), _batch_id()
    if ctx is None or batch is None:
        raise RuntimeError(
            "the partition stage writes its decision parts only in a micro-batch's task"
        )
    return batch, f"{ctx.partitionId():05d}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}"
