"""The Spark Structured Streaming job: the session, the sources, and one query wiring the
operators to the sink.

    events --+                                           (one query, output mode Append)
             +--> sequencer: transformWithStateInPandas, one key, RocksDB state
    feedback +        directory records (MapState), buffered events (ListState), pending cause
                  --> partitions: applyInPandasWithState keyed by group (storage.py: a
                      topic-partition, or in scale mode a bucket of them)
                  --> foreachBatch: decisions and dead letters out, deletion reports to feedback

The operators are `operators.py`, the sink `sink.py`; where partition state is kept is
chosen once, here, by `storage.partition_storage`. Every stage calls the functions of
`pipeline.py`, which drive the core loop; this module only builds the query.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from .class_archive import OPTION, with_archive
from .decision_parts import stage_parts_base
from .file_source import EventFilesSource, FeedbackSource
from .metadata_log_source import MetadataLogSource, state_dir, verdicts_dir
from .operators import (
    PARTITION_OUT,
    SEQUENCER_KEY,
    SEQUENCER_OUT,
    SequencerProcessor,
    mirror_keys,
    partition_stage,
)
from .settings.schema import JobSettings
from .sink import BatchSink
from .spark_log import jvm_output
from .storage import partition_storage

# How Spark writes the checkpoint's files (the offsets, the commits, the state stores'
# changelogs and snapshots); `spark_session` says why this one, docs/deployment.md what it
# gives up. A user's own setting of it wins.
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
FILE_SYSTEM_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def spark_session(
    settings: JobSettings,
    app_name: str = "kafka-shadow-controller",
    master: str | None = None,
    extra: dict[str, str] | None = None,
    own_session: bool = False,
    announce: Callable[[Path], None] | None = None,
) -> SparkSession:
    """The job's session. A JVM this call starts writes to a log file, not the terminal
    (`spark_log.py`, which says why); in a session of its own if `own_session`; `announce`
    is told the log's path (default: one line on stderr)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # launched by spark-submit, whose JVM already holds its --master: that decides, not
        # the settings' spark.master (conf/shadow-controller.toml says local[2])
        pass
    elif master or not os.environ.get("SPARK_MASTER"):
        builder = builder.master(master or os.environ.get("SPARK_MASTER", "local[2]"))
    conf = {
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # Arrow batches of 1,000 packed rows (16 MiB at most, packing.PACK_CHARS) instead of
        # Spark's 10,000: every Python stage holds one batch at a time, and at a million
        # partitions the workers' resident memory at one moment went from 5.0 to 3.7 GiB
        # (bench/job_bench.py --spark-conf, one run each), with no step slower
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        # transformWithStateInPandas needs RocksDB; it also keeps large partition state off-heap
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # The checkpoint is always a POSIX path (docs/deployment.md), so Hadoop's local file
        # system. Spark's default manager renames through FileContext, whose local
        # implementation runs `readlink` as a process for each path it renames (Hadoop's
        # FileUtil.readLink): about 50 processes a micro-batch here, a third of the JVM's
        # CPU on a small batch. The FileSystem manager renames with rename(2), as atomic on
        # a local or NFS path; it checks that a batch's file is absent just before renaming,
        # not in the same call.
        CHECKPOINT_MANAGER: FILE_SYSTEM_MANAGER,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The sink collects each batch's decisions through Arrow, uncompressed: a creation
        # of 100,000 partitions (900,000 records) needs more than the 1g default heap.
        # Only takes effect when this call starts the JVM (local runs, tests).
        "spark.driver.memory": "2g",
    }
    conf.update(extra or {})
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # a JVM this call starts (class_archive.py)
        java_options = with_archive(conf.get(OPTION))
        if java_options:
            conf[OPTION] = java_options
    for k, v in conf.items():
        builder = builder.config(k, v)
    with jvm_output(app_name, own_session, announce):
        spark = builder.getOrCreate()
    spark.dataSource.register(EventFilesSource)
    spark.dataSource.register(FeedbackSource)
    spark.dataSource.register(MetadataLogSource)
    try:
        from .kafka.source import KafkaDataSource

        spark.dataSource.register(KafkaDataSource)
    except ImportError:  # pragma: no cover - the Kafka connector is optional in file mode
        pass
    return spark


def events_frame(spark: SparkSession, settings: JobSettings) -> DataFrame:
    """Raw events as (kind, offset, value, source, payload)."""
    if settings.input.startswith("file:"):
        reader = (
            spark.readStream.format("shadow-files")
            .option("path", settings.input[5:])
            .option("shadow.pauseFile", settings.pause_file)
        )
        if settings.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
        raw = reader.load()
        events = raw.select(F.lit("event").alias("kind"), "offset", "value", "source")
    elif settings.input.startswith("metadata-log:"):
        c = settings.controller
        raw = (
            spark.readStream.format("shadow-metadata-log")
            .option("path", settings.input[13:])
            .option("shadow.pauseFile", settings.pause_file)
            .option("shadow.stateDir", state_dir(settings.checkpoint))
            .option("shadow.verdictsDir", verdicts_dir(settings))
            .option("shadow.minInsyncReplicas", str(c.min_insync_replicas))
            .option("shadow.uncleanLeaderElection", str(c.unclean_leader_election_enable).lower())
            .load()
        )
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
            F.concat_ws(
                ":",
                F.col("topic"),
                F.col("partition").cast("string"),
                F.col("offset").cast("string"),
            ).alias("source"),
        )
    events = events.withColumn("payload", F.lit(None).cast("string"))
    feedback = (
        spark.readStream.format("shadow-feedback")
        .option("path", settings.feedback_dir)
        .option("shadow.pauseFile", settings.pause_file)
        .load()
        .select(
            F.lit("report").alias("kind"),
            F.lit(-1).cast("long").alias("offset"),
            F.lit(None).cast("binary").alias("value"),
            F.lit(None).cast("string").alias("source"),
            F.col("payload"),
        )
    )
    return events.unionByName(feedback)


def decisions_frame(spark: SparkSession, settings: JobSettings) -> DataFrame:
    storage = partition_storage(settings.partition_buckets, settings.shuffle_partitions)
    keys = [
        SEQUENCER_KEY,
        *mirror_keys(settings.shuffle_partitions, sequencer_mirrors(spark, settings)),
    ]
    # every input row goes to the sequencer and to each of its mirrors
    inputs = events_frame(spark, settings).withColumn("k", F.explode(F.array(*map(F.lit, keys))))
    commands = inputs.groupBy("k").transformWithStateInPandas(
        statefulProcessor=SequencerProcessor(
            settings.controller, storage, settings.limits, settings.dlq_max_value_bytes
        ),
        outputStructType=SEQUENCER_OUT,
        outputMode="Append",
        timeMode="None",
    )
    return commands.groupBy("grp").applyInPandasWithState(
        partition_stage(
            settings.controller,
            storage,
            stage_parts_base(settings.output, settings.partition_buckets),
        ),
        outputStructType=PARTITION_OUT,
        stateStructType=storage.state_schema,
        outputMode="Append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )


def sequencer_mirrors(spark: SparkSession, settings: JobSettings) -> int:
    """`job.sequencer_mirrors`, or for "auto" one per other shuffle partition in local mode
    with a core for each shuffle partition, where one executor's Python workers serve every
    task of the sequencer's stage side by side, and none otherwise: on a cluster a mirror
    runs wherever its state store is, and with fewer cores than tasks a mirror could run
    before the sequencer in the worker it then gets (`operators.SequencerProcessor._mirror`)."""
    if settings.sequencer_mirrors is not None:
        return settings.sequencer_mirrors
    sc = spark.sparkContext
    local = (sc.master or "").startswith("local")
    return (
        settings.shuffle_partitions - 1
        if local and sc.defaultParallelism >= settings.shuffle_partitions
        else 0
    )


def start(
    spark: SparkSession,
    settings: JobSettings,
    available_now: bool = False,
    sink: BatchSink | None = None,
) -> tuple[StreamingQuery, BatchSink]:
    sink = sink or BatchSink(settings)
    writer = (
        decisions_frame(spark, settings)
        .writeStream.foreachBatch(sink)
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
