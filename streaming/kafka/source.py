"""`kafka-py`: a Kafka source (and, through `sink.py`, a sink) on Spark's Python Data
Source API, built on confluent-kafka because Spark's JVM Kafka connector is not available.
Its options are Spark's (`options.py`).

Theory of operation
-------------------
Offsets are Spark's Kafka source offsets: `{"topic": {"partition": next offset}}`, topics and
partitions in a fixed order so that equal positions serialise to equal JSON (Spark compares
offsets as JSON strings; a reordered dict would look like new data forever).

The driver-side stream reader lives in one Python process for the life of the query, so it
keeps one confluent-kafka consumer for metadata and offset queries. Per micro-batch:

- `latestOffset(start, limit)` finds the partitions of the subscription, their end offsets,
  and cuts the range down to `limit` (`maxOffsetsPerTrigger` → `ReadMaxRows`). A partition
  missing from `start` is new and starts at 0, as in Spark (`read` reports data loss if the
  log no longer starts there).
- `partitions(start, end)` makes one input partition per non-empty topic-partition range.
- `read(partition)` runs on an executor: assign, seek to `start`, consume until the position
  reaches `end`, with a progress deadline. It returns exactly the records in `[start, end)`
  on every call, which is what makes restarts from a checkpoint exact.
- `prepareForTriggerAvailableNow` pins the end offsets once; `latestOffset` never goes past
  them, so `Trigger.AvailableNow` finishes.

The other modules: `offsets.py` plans (with why end offsets are probed), `reader.py`
reads, `outage.py` waits out a broker that does not answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from .errors import BrokerUnavailable, KafkaSourceError
from .offsets import KafkaInputPartition, OffsetReader, plan_partitions, rate_limit, resolve_offsets
from .options import (
    SHORT_NAME,
    Offsets,
    SourceOptions,
    offsets_from_json,
    offsets_to_json,
    report_data_loss,
)
from .outage import Outage
from .reader import SCHEMA, read_range
from .sink import KafkaBatchWriter, KafkaStreamWriter, SinkOptions


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._offsets: OffsetReader | None = None
        self._target: Offsets | None = None  # pinned by Trigger.AvailableNow
        self._outage = Outage(options.outage_file, options.servers, "planning a micro-batch")
        self._available: Offsets | None = None  # the end offsets last seen (reportLatestOffset)

    def __getstate__(self) -> dict[str, Any]:
        # `read` is shipped to executors with this object; clients stay on the driver.
        return {
            "options": self.options,
            "_offsets": None,
            "_target": None,
            "_outage": None,
            "_available": None,
        }

    @property
    def offsets(self) -> OffsetReader:
        if self._offsets is None:
            self._offsets = OffsetReader(self.options)
        return self._offsets

    def _until_answered(self, query: Any) -> Any:
        """`query()`, asked again with backoff while the broker does not answer, for the
        calls that must return offsets. A stop (the pause file) ends the wait."""
        while True:
            asked = time.time()
            try:
                answer = query()
            except BrokerUnavailable as exc:
                self._outage.failed(exc, since=asked)
            else:
                self._outage.recovered()
                return answer
            while not self._outage.due():
                if self.options.paused():
                    raise KafkaSourceError(
                        f"stopped while waiting for the broker {self.options.servers}"
                    )
                time.sleep(0.2)  # backoff between queries, watching the pause file

    def initialOffset(self) -> dict[str, Any]:
        return offsets_to_json(
            self._until_answered(
                lambda: resolve_offsets(
                    self.options.starting_offsets,
                    self.offsets.topic_partitions(),
                    self.offsets,
                    what="startingOffsets",
                )
            )
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._until_answered(
            lambda: self.offsets.latest(self.offsets.topic_partitions())
        )

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if self.options.paused():
            return start  # the job is stopping (streaming.runner): admit nothing new
        begin = offsets_from_json(start)
        if self._target is not None:
            available = dict(self._target)
        elif not self._outage.due():
            return start  # the broker did not answer lately: no batch until the next try
        else:
            asked = time.time()
            try:
                available = self.offsets.latest(self.offsets.topic_partitions())
            except BrokerUnavailable as exc:
                self._outage.failed(exc, since=asked)  # unanswered since it was asked
                return start  # nothing new is admitted; the next trigger asks again
            self._outage.recovered()
            if self.options.paused():
                return start  # the stop came while the broker was asked
        self._available = available
        for tp in sorted(set(begin) - set(available)):
            report_data_loss(self.options, f"{tp[0]}-{tp[1]} is gone from the subscription")
        # Never step back on a partition Spark has read: a lower answer means data loss,
        # which plan_partitions reports; the limit applies only to what is ahead.
        ahead = {tp: max(o, begin.get(tp, 0)) for tp, o in available.items()}
        if isinstance(limit, ReadMaxRows):
            limited = rate_limit(begin, ahead, limit.max_rows)
        elif isinstance(limit, ReadAllAvailable):
            limited = ahead
        else:
            raise KafkaSourceError(f"read limit {limit!r} is not supported")
        end = {
            tp: (available[tp] if available[tp] < begin.get(tp, 0) else limited[tp])
            for tp in available
        }
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        # the progress's `latestOffset`: with `endOffset`, the job's lag
        return None if self._available is None else offsets_to_json(self._available)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return plan_partitions(offsets_from_json(start), offsets_from_json(end), self.options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        return read_range(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        # Spark's checkpoint is the source of truth; nothing is committed to Kafka.
        pass

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


class KafkaBatchReader(DataSourceReader):
    """`spark.read.format("kafka-py")`: `startingOffsets` (default earliest) to
    `endingOffsets` (default latest), resolved once when the scan is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        offsets = OffsetReader(self.options)
        try:
            tps = offsets.topic_partitions()
            start = resolve_offsets(
                self.options.starting_offsets, tps, offsets, what="startingOffsets"
            )
            end = resolve_offsets(self.options.ending_offsets, tps, offsets, what="endingOffsets")
        finally:
            offsets.close()
        return plan_partitions(start, end, self.options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        return read_range(self.options, partition)


class KafkaDataSource(DataSource):
    """Register with `spark.dataSource.register(KafkaDataSource)`, then use
    `format("kafka-py")` with Spark's Kafka option names."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise KafkaSourceError(f"{SHORT_NAME} appends to topics; overwrite is not supported")
        return KafkaBatchWriter(SinkOptions.parse(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(SinkOptions.parse(self.options, schema))


def register(spark: Any) -> None:
    """Make `format("kafka-py")` available in `spark`."""
    spark.dataSource.register(KafkaDataSource)
