"""Reading one planned range on an executor: `read_range` assigns the partition, seeks to
the range's start and consumes until its position reaches the end, yielding Arrow
batches in `SCHEMA`. It returns exactly the records of `[start, end)` on every call,
which is what makes restarts from a checkpoint exact.

A broker that does not answer is waited for as long as it is away (`outage.py`); the read
fails only when the broker answers and still no record comes for `pollTimeoutMs`, or for
an answer that cannot change by waiting (`client.PERMANENT_ERRORS`, data loss).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .client import PERMANENT_ERRORS, READ_BATCH_ROWS, answer, next_messages
from .errors import BrokerUnavailable, KafkaSourceError
from .offsets import KafkaInputPartition
from .options import SourceOptions, report_data_loss
from .outage import READ_PROBE_AFTER_S, READ_PROBE_TIMEOUT_S, Outage

SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)


def read_range(options: SourceOptions, split: KafkaInputPartition) -> Iterator[Any]:
    """Yield Arrow record batches holding exactly the records of `split`'s `[start, end)`.
    Offsets without a record (compaction, transaction markers) are skipped. Waits out a
    broker that does not answer; fails when the consumer makes no progress for
    `kafkaConsumer.pollTimeoutMs` while the broker answers (`outage.py`)."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as KafkaTP
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(SCHEMA, timezone="UTC")
    columns: list[list[Any]] = [[], [], []]  # key, value, offset; timestamps separately
    timestamps: list[int | None] = []

    def flush() -> Any:
        n = len(timestamps)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(columns[0], pa.binary()),
                pa.array(columns[1], pa.binary()),
                pa.array([split.topic] * n, pa.string()),
                pa.array([split.partition] * n, pa.int32()),
                pa.array(columns[2], pa.int64()),
                pa.array(timestamps, pa.timestamp("us", tz="UTC")),
            ],
            schema=arrow_schema,
        )
        for column in columns:
            column.clear()
        timestamps.clear()
        return batch

    position = split.start
    last_error = None
    outage = Outage(
        options.outage_file, options.servers, f"reading {split.topic}-{split.partition}"
    )
    probe_after = min(options.poll_timeout_s, READ_PROBE_AFTER_S)
    consumer = Consumer(options.consumer_config())
    try:
        consumer.assign([KafkaTP(split.topic, split.partition, position)])
        last_progress = time.monotonic()
        next_probe = last_progress + probe_after
        while position < split.end:
            now = time.monotonic()
            if now >= next_probe:
                try:
                    answer(
                        "ListOffsets",
                        lambda: consumer.get_watermark_offsets(
                            KafkaTP(split.topic, split.partition),
                            timeout=min(options.probe_timeout_s, READ_PROBE_TIMEOUT_S),
                            cached=False,
                        ),
                    )
                except BrokerUnavailable as exc:
                    outage.failed(last_error or exc, since=time.time() - (now - last_progress))
                    next_probe = outage.next_try
                    continue
                now = time.monotonic()
                if outage.waiting:
                    outage.recovered()
                    last_progress = now  # the no-progress deadline starts afresh after an outage
                elif now - last_progress > options.poll_timeout_s:
                    raise KafkaSourceError(
                        f"{split.topic}-{split.partition}: no records for "
                        f"{options.poll_timeout_s:.0f}s while "
                        f"reading [{split.start}, {split.end}) although the broker "
                        "answers; stuck at offset "
                        f"{position}; last client error: {last_error} (raise "
                        "kafkaConsumer.pollTimeoutMs if "
                        "the broker is just slow)"
                    )
                next_probe = now + min(
                    probe_after, max(0.5, last_progress + options.poll_timeout_s - now)
                )
            for msg in next_messages(consumer, 1.0):
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        # Everything below the EOF offset has been delivered: reaching `end`
                        # this way also covers offsets with no record (compaction, markers).
                        if msg.offset() < split.end:
                            report_data_loss(
                                options,
                                f"{split.topic}-{split.partition}: log ends at "
                                f"{msg.offset()}, before the planned end {split.end}",
                            )
                        position = split.end
                        break
                    if error.code() == KafkaError._AUTO_OFFSET_RESET:
                        position = _restart_after_out_of_range(consumer, options, split, position)
                        last_progress = time.monotonic()
                        break
                    if error.fatal() or error.code() in PERMANENT_ERRORS:
                        raise KafkaSourceError(f"{split.topic}-{split.partition}: {error}")
                    last_error = error  # transient (disconnects): librdkafka retries
                    continue
                offset = msg.offset()
                if offset >= split.end:
                    position = split.end
                    break
                if offset < position:  # librdkafka trims batches, but never trust it
                    continue
                ts_type, ts = msg.timestamp()
                columns[0].append(msg.key())
                columns[1].append(msg.value())
                columns[2].append(offset)
                timestamps.append(ts * 1000 if ts_type != 0 and ts >= 0 else None)
                position = offset + 1
                last_progress = time.monotonic()
                next_probe = last_progress + probe_after
                if outage.waiting:
                    outage.recovered()
                if len(timestamps) >= READ_BATCH_ROWS:
                    yield flush()
    finally:
        consumer.close()
    if timestamps:
        yield flush()


def _restart_after_out_of_range(
    consumer: Any, options: SourceOptions, split: KafkaInputPartition, position: int
) -> int:
    from confluent_kafka import TopicPartition as KafkaTP

    low: int
    low, _ = consumer.get_watermark_offsets(
        KafkaTP(split.topic, split.partition), timeout=options.probe_timeout_s
    )
    if low <= position:
        raise KafkaSourceError(
            f"{split.topic}-{split.partition}: offset {position} reported out of range "
            f"but the log starts at {low}"
        )
    report_data_loss(
        options,
        f"{split.topic}-{split.partition}: offsets [{position}, {low}) were deleted "
        "before they were read",
    )
    resume = min(low, split.end)
    if resume < split.end:
        consumer.assign([KafkaTP(split.topic, split.partition, resume)])
    return resume
