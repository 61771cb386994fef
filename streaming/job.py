"""The Spark Structured Streaming job.

    events --+                                           (one query, output mode Append)
             +--> sequencer: transformWithStateInPandas, one key, RocksDB state
    feedback +        directory records (MapState), buffered events (ListState), pending cause
                  --> partitions: applyInPandasWithState keyed by topic-partition
                  --> foreachBatch: decisions and dead letters out, deletion reports to feedback

Every stage calls the functions of `streaming/pipeline.py`; this module only moves rows
and state between Spark and them.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from state_machines.commands import DeletionReport
from state_machines.model import ControllerConfig
from state_machines.events import DEFAULT_LIMITS, InputLimits

from . import codec
from .file_source import EventFilesSource, FeedbackSource, feedback_file
from .pipeline import (
    DIRECT, PartitionSlot, Pending, RawEvent, Sequencer, assemble_batch, bucket_stage, direct_stage, group_of,
    pack_outputs, pack_work, partition_stage_rows, unpack_outputs, unpack_work,
)
from .settings.schema import JobSettings

log = logging.getLogger("shadow_controller.job")

# work and outputs between the operators are packed (pipeline.pack_work, pack_outputs)
SEQUENCER_OUT = "grp string, rows string"
PARTITION_OUT = "rows string"
PARTITION_STATE = "record string, seq_cause long, seq_next long"
# scale mode: a bucket's partitions, one line each (codec.bucket_text)
BUCKET_STATE = "slots string"
SEQUENCER_KEY = "controller"


# Directory records this Python worker has decoded, by key, with the text they came from.
# A record whose stored text is unchanged is not decoded again. Records are immutable, so
# sharing one between batches (or queries) is safe.
_DECODED: dict[str, tuple[str, Any]] = {}

# Python runs a young-generation pass of its cyclic collector every 700 net allocations of
# container objects. A fan-out to tens of thousands of partitions allocates millions of
# them, nearly all freed at once by reference counting, and the passes find nothing while
# they promote what is still in use towards full collections of the worker's whole heap.
# The job's processes run the pass every 20,000 instead: measured in-process on the
# 100,000-partition benchmark's batches, the shutdown fold is 9% faster and the preferred
# election's 22%.
GC_THRESHOLDS = (20_000, 10, 10)


def collect_less() -> None:
    """Set this process's collector thresholds (each stage calls it: Spark's Python workers
    run no code of ours before)."""
    if gc.get_threshold() != GC_THRESHOLDS:
        gc.set_threshold(*GC_THRESHOLDS)


class LastDirectory:
    """The directory as this Python worker last left it, and its stamp.

    Every micro-batch needs the whole directory, whose size grows with the cluster: reading
    the map of 1,000 topics took 0.12 s, mostly the state client's per-entry transfer.
    Each write of the directory also writes a fresh stamp under `DIRECTORY_STAMP_KEY`. A
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

    def __init__(self, config: ControllerConfig, buckets: int = 0, shuffle_partitions: int = 1,
                 limits: InputLimits = DEFAULT_LIMITS, dlq_max_value_bytes: int = 900_000):
        self.config = config
        self.limits = limits
        self.dlq_max_value_bytes = dlq_max_value_bytes
        self.buckets = buckets
        self.shuffle_partitions = shuffle_partitions

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.records = handle.getMapState("directory", "key string", "value string")
        self.buffer = handle.getListState("buffer", "offset long, value binary, source string")
        self.pending = handle.getValueState("pending", "value string")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        collect_less()
        events: list[RawEvent] = []
        reports: list[DeletionReport] = []
        for pdf in rows:
            for kind, offset, value, source, payload in pdf[["kind", "offset", "value", "source", "payload"]].itertuples(index=False):
                if kind == "event":
                    # a null value (a tombstone) stays None, for the dead letters to say so
                    events.append(RawEvent(int(offset), None if value is None else bytes(value), str(source)))
                else:
                    reports.append(codec.loads(payload, DeletionReport))
        stamped = self.records.getValue((codec.DIRECTORY_STAMP_KEY,))
        stamp = stamped[0] if stamped else None
        directory = _LAST_DIRECTORY.take(stamp)
        if directory is None:
            directory = _load_directory(self.records.iterator())
        pending = codec.loads(self.pending.get()[0], Pending) if self.pending.exists() else None
        buffered = [RawEvent(int(o), None if v is None else bytes(v), s) for o, v, s in self.buffer.get()] if self.buffer.exists() else []
        seq = Sequencer(directory, self.config, self.limits)
        pending, rest = seq.run(pending, buffered, events, reports)
        for k in sorted(seq.changed):
            rec = directory.get(k)
            if rec is None:
                self.records.removeKey((k,))
            else:
                self.records.updateValue((k,), (codec.dumps(rec),))
        if seq.changed or stamp is None:
            stamp = uuid.uuid4().hex
            self.records.updateValue((codec.DIRECTORY_STAMP_KEY,), (stamp,))
        _LAST_DIRECTORY.leave(stamp, directory)
        if pending is None:
            self.pending.clear()
        else:
            self.pending.update((codec.dumps(pending),))
        if rest:
            self.buffer.put([(e.offset, e.value, e.source) for e in rest])
        else:
            self.buffer.clear()
        if seq.work:
            groups: dict[str, list[Any]] = {}
            for w in seq.work:
                groups.setdefault(group_of(w.target, self.buckets, self.shuffle_partitions), []).append(w)
            yield pd.DataFrame([(grp, text) for grp, work in groups.items()
                                for text in pack_work(work, self.dlq_max_value_bytes)], columns=["grp", "rows"])

    def close(self) -> None:
        pass


def _load_directory(entries: Iterator[tuple[tuple[str], tuple[str]]]) -> dict[str, Any]:
    directory = {}
    seen = set()
    for (key,), (text,) in entries:
        if key == codec.DIRECTORY_STAMP_KEY:
            continue
        seen.add(key)
        cached = _DECODED.get(key)
        if cached is None or cached[0] != text:
            cached = _DECODED[key] = (text, codec.loads(text, codec.DirectoryRecord))
        directory[key] = cached[1]
    for key in _DECODED.keys() - seen:
        del _DECODED[key]
    return directory


def partition_stage(config: ControllerConfig, buckets: int = 0):
    def apply(key: tuple, pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        collect_less()
        gkey = key[0]
        work = unpack_work(text for pdf in pdfs for text in pdf["rows"].tolist())
        if gkey == DIRECT:
            out = direct_stage(work)
        elif buckets:
            entries = codec.bucket_entries(state.get[0] if state.exists else None)
            touched = {w.target for w in work}
            slots = {k: PartitionSlot(*codec.bucket_entry_in(entries[k])) for k in touched if k in entries}
            out = bucket_stage(slots, work, config)
            for k in touched:
                if k in slots:
                    sl = slots[k]
                    entries[k] = codec.bucket_entry_out(sl.record, sl.seq_cause, sl.seq_next)
                else:
                    entries.pop(k, None)
            state.update((codec.bucket_text(entries),))
        else:
            slot = PartitionSlot(None)
            if state.exists:
                record, seq_cause, seq_next = state.get
                slot = PartitionSlot(codec.loads(record, codec.PartitionRecordType), int(seq_cause), int(seq_next))
            slot, out = partition_stage_rows(slot, work, config)
            if slot.record is None:
                if state.exists:
                    state.remove()
            else:
                state.update((codec.dumps(slot.record), slot.seq_cause, slot.seq_next))
        yield pd.DataFrame({"rows": pd.Series(pack_outputs(out), dtype=object)})

    return apply


def spark_session(settings: JobSettings, app_name: str = "kafka-shadow-controller", master: str | None = None,
                  extra: dict[str, str] | None = None) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master or not os.environ.get("SPARK_MASTER"):
        builder = builder.master(master or os.environ.get("SPARK_MASTER", "local[2]"))
    conf = {
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # transformWithStateInPandas needs RocksDB; it also keeps large partition state off-heap
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The sink collects each batch's decisions through Arrow, uncompressed: a creation
        # of 100,000 partitions (900,000 records) needs more than the 1g default heap.
        # Only takes effect when this call starts the JVM (local runs, tests).
        "spark.driver.memory": "2g",
    }
    conf.update(extra or {})
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.dataSource.register(EventFilesSource)
    spark.dataSource.register(FeedbackSource)
    try:
        from .kafka_source import KafkaDataSource  # type: ignore[attr-defined]

        spark.dataSource.register(KafkaDataSource)
    except ImportError:  # pragma: no cover - the Kafka connector is optional in file mode
        pass
    return spark


def events_frame(spark: SparkSession, settings: JobSettings) -> DataFrame:
    """Raw events as (kind, offset, value, source, payload)."""
    if settings.input.startswith("file:"):
        reader = (spark.readStream.format("shadow-files").option("path", settings.input[5:])
                  .option("shadow.pauseFile", settings.pause_file))
        if settings.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
        raw = reader.load()
        events = raw.select(F.lit("event").alias("kind"), "offset", "value", "source")
    else:
        fmt = "kafka" if settings.use_jvm_kafka else "kafka-py"
        reader = (
            spark.readStream.format(fmt)
            .option("kafka.bootstrap.servers", settings.bootstrap_servers)
            .option("subscribe", settings.events_topic)
            .option("startingOffsets", settings.starting_offsets)
        )
        if not settings.use_jvm_kafka:
            reader = reader.option("shadow.pauseFile", settings.pause_file)
        for k, v in settings.kafka_options.items():
            reader = reader.option(f"kafka.{k}", v)
        if settings.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
        raw = reader.load()
        events = raw.select(
            F.lit("event").alias("kind"),
            F.col("offset"),
            F.col("value"),
            F.concat_ws(":", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")).alias("source"),
        )
    events = events.withColumn("payload", F.lit(None).cast("string"))
    feedback = (
        spark.readStream.format("shadow-feedback").option("path", settings.feedback_dir).load()
        .select(
            F.lit("report").alias("kind"), F.lit(-1).cast("long").alias("offset"),
            F.lit(None).cast("binary").alias("value"), F.lit(None).cast("string").alias("source"),
            F.col("payload"),
        )
    )
    return events.unionByName(feedback)


def decisions_frame(spark: SparkSession, settings: JobSettings) -> DataFrame:
    inputs = events_frame(spark, settings).withColumn("k", F.lit(SEQUENCER_KEY))
    commands = inputs.groupBy("k").transformWithStateInPandas(
        statefulProcessor=SequencerProcessor(settings.controller, settings.partition_buckets, settings.shuffle_partitions,
                                             settings.limits, settings.dlq_max_value_bytes),
        outputStructType=SEQUENCER_OUT,
        outputMode="Append",
        timeMode="None",
    )
    return commands.groupBy("grp").applyInPandasWithState(
        partition_stage(settings.controller, settings.partition_buckets),
        outputStructType=PARTITION_OUT,
        stateStructType=BUCKET_STATE if settings.partition_buckets else PARTITION_STATE,
        outputMode="Append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )


class BatchSink:
    """foreachBatch: write the batch's decisions and dead letters, then the deletion reports
    the next batch will read. A failed write fails the batch, which Spark then retries from
    the checkpoint; file outputs are named by batch id, so a retried batch overwrites them.

    A stop (streaming.runner) may end a batch before it commits: `stopping()`, then, past
    the stop's bound, `abandon()`, which makes a write waiting for the broker give up
    within half a second. The batch then ends as a batch that `query.stop()` interrupted
    (see `_await_interrupt`), which a restart replays, rather than as a failed one."""

    def __init__(self, settings: JobSettings):
        self.settings = settings
        self.stats: dict[int, dict[str, int]] = {}
        # shadow mode: observed states that matched ours or diverged, by severity, this run
        self.observations: dict[str, int] = {}
        self._kafka: Any = None  # kafka_io.DecisionWriter, made on the first Kafka write
        self._stopping = threading.Event()
        self._cancel = threading.Event()  # the Kafka writer's: give up waiting for the broker

    def stopping(self) -> None:
        self._stopping.set()

    def abandon(self) -> None:
        self._stopping.set()
        self._cancel.set()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._write_batch(df, batch_id)
        except Exception as exc:
            if not self._stopping.is_set():
                raise
            log.debug("batch %d abandoned by the stop: %s", batch_id,
                     (str(exc).strip().splitlines() or [type(exc).__name__])[0])
            _await_interrupt(df, self.settings.stop_timeout_s)
            raise

    def _write_batch(self, df: DataFrame, batch_id: int) -> None:
        collect_less()
        out = assemble_batch(_collect(df))
        for d in out.dlq:
            if d["reason"].startswith("controller error"):
                log.error("batch %d: event at %s dead-lettered: %s", batch_id, d["source"] or d["offset"], d["reason"])
        if out.observations.get("safety"):
            log_safety_divergences(batch_id, out.decisions)
        if self.settings.output.startswith("file:"):
            base = self.settings.output[5:]
            _write_lines(os.path.join(base, f"decisions-{batch_id:012d}.jsonl"), [p for _, p in out.decisions])
            if out.dlq:
                _write_lines(os.path.join(base, "dlq", f"dlq-{batch_id:012d}.jsonl"), out.dlq)
        else:
            if self._kafka is None:
                from .kafka_io import DecisionWriter

                self._kafka = DecisionWriter(self.settings, cancel=self._cancel)
            self._kafka.write(out.decisions, out.dlq)
        if out.reports:
            os.makedirs(self.settings.feedback_dir, exist_ok=True)
            _atomic_write(feedback_file(self.settings.feedback_dir, batch_id), "".join(r + "\n" for r in out.reports))
        self.stats[batch_id] = {"decisions": len(out.decisions), "dlq": len(out.dlq), "reports": len(out.reports),
                                **{f"shadow_{k}": v for k, v in out.observations.items()}}
        for k, v in out.observations.items():
            self.observations[k] = self.observations.get(k, 0) + v


def log_safety_divergences(batch_id: int, decisions: list[tuple[str, str]]) -> None:
    """One WARN line per safety divergence, naming the partition, the cause offset and
    the reason (only records that can be one are decoded)."""
    for key, text in decisions:
        if '"Divergence"' in text and '"safety"' in text:
            d = json.loads(text)
            if d.get("type") == "Divergence" and d.get("severity") == "safety":
                log.warning("safety divergence on %s at cause offset %s (batch %d): %s", key, d["cause_offset"],
                            batch_id, d["reason"])


class BatchInterrupted(Exception):
    """The batch's thread was interrupted by `query.stop()` (see `_await_interrupt`)."""


# Spark recognises a Python foreachBatch function interrupted by a stop by this text in
# the error the function returns (StreamExecution.PROXY_ERROR, SPARK-39218). Its regex
# recurses once per character after the match's start, so the JVM's own error (the whole
# stack of the query's thread follows it) overflows the stack; this short text does not.
INTERRUPTED = ("py4j.protocol.Py4JJavaError: An error occurred while calling Thread.sleep: "
               "java.lang.InterruptedException (the query was stopped)")


def _await_interrupt(df: DataFrame, timeout_s: float) -> None:
    """Wait, in the JVM, for `query.stop()` to interrupt the query's thread, then raise
    BatchInterrupted. The batch's Python code runs on that thread (py4j's pinned threads),
    so the JVM's sleep is what the stop interrupts; Spark then counts the batch as
    interrupted by the stop: the query ends stopped, not failed, and logs no error.
    Returns if no stop comes within `timeout_s`."""
    from py4j.protocol import Py4JJavaError

    try:
        df.sparkSession._jvm.java.lang.Thread.sleep(int(timeout_s * 1000))  # type: ignore[union-attr]
    except Py4JJavaError as exc:
        if "java.lang.InterruptedException" not in str(exc.java_exception):
            raise
        raise BatchInterrupted(INTERRUPTED) from None


def _collect(df: DataFrame) -> list[tuple[str, int, str, int, str]]:
    """The batch's outputs on the driver, collected through Arrow and unpacked."""
    return unpack_outputs(df.toArrow().column("rows").to_pylist())


def _write_lines(path: str, docs: list[dict[str, Any]] | list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = (d if isinstance(d, str) else json.dumps(d, separators=(",", ":")) for d in docs)
    _atomic_write(path, "".join(line + "\n" for line in lines))


def _atomic_write(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def start(spark: SparkSession, settings: JobSettings, available_now: bool = False, sink: BatchSink | None = None):
    sink = sink or BatchSink(settings)
    writer = (
        decisions_frame(spark, settings).writeStream
        .foreachBatch(sink)
        .outputMode("append")
        .option("checkpointLocation", os.path.join(settings.checkpoint, "query"))
        .queryName("shadow-controller")
    )
    if available_now:
        # The deletion feedback appears while the query runs, so "available now" is run as
        # processAllAvailable over a fast trigger by the caller, not Trigger.AvailableNow.
        writer = writer.trigger(processingTime="0 seconds")
    else:
        writer = writer.trigger(processingTime=settings.trigger_interval)
    return writer.start(), sink
