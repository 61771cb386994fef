"""The sink half of `kafka-py` (`source.py`): produce a DataFrame's rows to Kafka with
confluent-kafka.

Columns, as in Spark's Kafka sink: `value` (string or binary, required; null is a
tombstone), `key` (string or binary, optional), `topic` (string, optional; the `topic`
option overrides it), `partition` (int, optional; otherwise the producer's partitioner).
Every other `kafka.*` option goes to the producer unchanged (librdkafka names).

Delivery: each task produces its rows, flushes, and checks every delivery report before it
returns its commit message. Any failed or unconfirmed delivery raises, so the task and the
micro-batch fail and Spark replays the batch; a batch is never committed with a record
missing. That makes the sink at-least-once, like Spark's: a replayed batch can write a
record twice. Idempotence (on by default, `acks=all`) removes duplicates from the
producer's own retries within a task, not across replays. Tansu accepts idempotent and
transactional producers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from .errors import KafkaSinkError
from .producer import CheckedProducer, flush_timeout_s

log = logging.getLogger(__name__)

PRODUCER_DEFAULTS = {"enable.idempotence": True, "acks": "all"}


@dataclass(frozen=True, slots=True)
class KafkaWriteCommit(WriterCommitMessage):
    records: int


@dataclass(frozen=True, slots=True)
class SinkOptions:
    producer_config: tuple[tuple[str, str], ...]
    topic: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType) -> SinkOptions:
        opts = {k.lower(): v for k, v in options.items()}
        config = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
        if "bootstrap.servers" not in config:
            raise KafkaSinkError("option 'kafka.bootstrap.servers' is required")
        fields = {f.name: f.dataType for f in schema.fields}
        _check_column(fields, "value", (StringType, BinaryType), required=True)
        _check_column(fields, "key", (StringType, BinaryType), required=False)
        _check_column(fields, "topic", (StringType,), required=False)
        _check_column(fields, "partition", (IntegerType,), required=False)
        topic = opts.get("topic")
        if topic is None and "topic" not in fields:
            raise KafkaSinkError("no topic: set the 'topic' option or add a 'topic' column")
        return cls(producer_config=tuple(sorted(config.items())), topic=topic)

    def producer_settings(self) -> dict[str, Any]:
        return {**PRODUCER_DEFAULTS, **dict(self.producer_config)}

    def flush_timeout_s(self) -> float:
        return flush_timeout_s(dict(self.producer_config))


def _check_column(
    fields: Mapping[str, Any], name: str, types: tuple[type, ...], *, required: bool
) -> None:
    if name not in fields:
        if required:
            raise KafkaSinkError(f"required column {name!r} is missing")
        return
    if not isinstance(fields[name], types):
        allowed = " or ".join(t.typeName() for t in types)  # type: ignore[attr-defined]
        raise KafkaSinkError(
            f"column {name!r} must be {allowed}, not {fields[name].simpleString()}"
        )


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def produce_batches(options: SinkOptions, batches: Iterator[Any]) -> int:
    """Produce every row of the Arrow `batches`; return how many the broker confirmed.
    Raises `DeliveryFailed` unless every single record was confirmed."""
    producer = CheckedProducer(options.producer_settings())
    for batch in batches:
        names = batch.schema.names
        column = {
            name: batch.column(name).to_pylist()
            for name in ("value", "key", "topic", "partition")
            if name in names
        }
        for i in range(batch.num_rows):
            topic = options.topic or column["topic"][i]
            if topic is None:
                raise KafkaSinkError("a row has a null 'topic' and no 'topic' option is set")
            producer.send(
                topic,
                _as_bytes(column["value"][i]),
                key=_as_bytes(column["key"][i]) if "key" in column else None,
                partition=column["partition"][i] if "partition" in column else None,
            )
        if producer.failures:
            break  # the task fails anyway; stop producing more
    return producer.confirm(options.flush_timeout_s())


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> KafkaWriteCommit:
        return KafkaWriteCommit(produce_batches(self.options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        records = sum(m.records for m in messages if isinstance(m, KafkaWriteCommit))
        log.info("batch %d: %d records confirmed by Kafka", batchId, records)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Records already confirmed cannot be taken back; the replay writes them again.
        log.warning("batch %d aborted; it will be replayed (at-least-once)", batchId)


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> KafkaWriteCommit:
        return KafkaWriteCommit(produce_batches(self.options, iterator))
