"""The `kafka-py` source and sink against a real Kafka-protocol broker (embedded Tansu).

Every query runs to a condition: `Trigger.AvailableNow` plus `awaitTermination`, or
`processAllAvailable` on a running query. Nothing waits on a clock.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import Counter

import pytest

pytestmark = pytest.mark.broker

QUERY_TIMEOUT_S = 120
_query_ids = itertools.count()


def source_options(bootstrap: str, topic: str, **extra: object) -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "kafkaConsumer.pollTimeoutMs": "30000",
    }
    options.update({k: str(v) for k, v in extra.items()})
    return options


def run_available_now(spark, options: dict[str, str], checkpoint: str):
    """Run a query with Trigger.AvailableNow, collecting its rows on the driver (foreachBatch
    recovers from a checkpoint, the memory sink does not); return the rows sorted by topic,
    partition and offset, and the numInputRows of every batch that read something."""
    collected = []
    query = (
        spark.readStream.format("kafka-py")
        .options(**options)
        .load()
        .writeStream.foreachBatch(lambda df, _batch_id: collected.extend(df.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    rows = sorted(collected, key=lambda r: (r.topic, r.partition, r.offset))
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    return rows, sizes


def records(n: int, prefix: str = "v") -> list[tuple[bytes, bytes]]:
    return [(f"k{i}".encode(), f"{prefix}{i}".encode()) for i in range(n)]


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record of `topic` as (partition, offset, key, value), read with a plain consumer
    until it reports end-of-partition for every partition."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{topic}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        at_end: set[int] = set()
        out = []
        deadline = time.monotonic() + 30
        while len(at_end) < len(partitions):
            assert time.monotonic() < deadline, (
                f"no end-of-partition for {set(partitions) - at_end}"
            )
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            out.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
        return sorted(out)
    finally:
        consumer.close()


# -- source: starting offsets ----------------------------------------------------------------


def test_earliest_reads_every_record_with_kafka_columns(
    spark, bootstrap, new_topic, produce, checkpoint
):
    topic = new_topic()
    produce(topic, [(None, b"no-key")] + records(9), linger_ms=50)

    rows, _ = run_available_now(
        spark, source_options(bootstrap, topic, startingOffsets="earliest"), checkpoint
    )

    assert [(r.key, r.value) for r in rows] == [(None, b"no-key")] + records(9)
    assert [r.offset for r in rows] == list(range(10))
    assert {(r.topic, r.partition) for r in rows} == {(topic, 0)}
    assert all(r.timestamp is not None for r in rows)
    schema = (
        spark.readStream.format("kafka-py")
        .options(**source_options(bootstrap, topic))
        .load()
        .schema
    )
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
    ]


def test_latest_reads_only_records_produced_after_the_query_started(
    spark, bootstrap, new_topic, produce, checkpoint
):
    topic = new_topic()
    # One multi-record batch: on Tansu a watermark query alone would place "latest" inside
    # it and the query would wrongly read its tail as new data.
    produce(topic, records(5, "old"), linger_ms=50)
    name = f"latest_{next(_query_ids)}"
    query = (
        spark.readStream.format("kafka-py")
        .options(**source_options(bootstrap, topic, startingOffsets="latest"))
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    try:
        query.processAllAvailable()
        assert spark.table(name).count() == 0
        produce(topic, records(3, "new"), linger_ms=50)
        query.processAllAvailable()
        rows = sorted(spark.table(name).collect(), key=lambda r: r.offset)
    finally:
        query.stop()
    assert [(r.offset, r.value) for r in rows] == [(5, b"new0"), (6, b"new1"), (7, b"new2")]


def test_json_starting_offsets_per_partition(spark, bootstrap, new_topic, produce, tmp_path):
    topic = new_topic(partitions=3)
    for partition in range(3):
        produce(topic, records(6, f"p{partition}-"), partition=partition, linger_ms=20)

    starting = json.dumps({topic: {"0": 4, "1": -2, "2": -1}})
    rows, _ = run_available_now(
        spark, source_options(bootstrap, topic, startingOffsets=starting), str(tmp_path / "cp")
    )

    assert [(r.partition, r.offset) for r in rows] == [(0, 4), (0, 5)] + [(1, o) for o in range(6)]
    assert rows[0].value == b"p0-4"


def test_json_starting_offsets_must_name_every_partition(spark, bootstrap, new_topic, checkpoint):
    topic = new_topic(partitions=2)
    query = (
        spark.readStream.format("kafka-py")
        .options(**source_options(bootstrap, topic, startingOffsets=json.dumps({topic: {"0": 0}})))
        .load()
        .writeStream.format("memory")
        .queryName(f"bad_{next(_query_ids)}")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="every subscribed partition"):
        query.awaitTermination(QUERY_TIMEOUT_S)


# -- source: admission control and Trigger.AvailableNow --------------------------------------


def test_max_offsets_per_trigger_bounds_every_batch(
    spark, bootstrap, new_topic, produce, checkpoint
):
    topic = new_topic()
    produce(topic, records(25), linger_ms=50)

    rows, sizes = run_available_now(
        spark,
        source_options(bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger=10),
        checkpoint,
    )

    assert sizes == [10, 10, 5]
    assert [r.offset for r in rows] == list(range(25))


def test_max_offsets_per_trigger_is_shared_across_partitions(
    spark, bootstrap, new_topic, produce, checkpoint
):
    topic = new_topic(partitions=3)
    produce(topic, records(20, "a"), partition=0, linger_ms=20)
    produce(topic, records(2, "b"), partition=1, linger_ms=20)

    rows, sizes = run_available_now(
        spark,
        source_options(bootstrap, topic, startingOffsets="earliest", maxOffsetsPerTrigger=7),
        checkpoint,
    )

    assert sizes == [7, 7, 7, 1]
    assert Counter(r.partition for r in rows) == {0: 20, 1: 2}


def test_available_now_reads_the_tail_of_multi_record_batches(
    spark, bootstrap, new_topic, produce, checkpoint
):
    from confluent_kafka import Consumer, TopicPartition

    topic = new_topic(partitions=3)
    for partition in range(3):
        produce(topic, records(20, f"p{partition}-"), partition=partition, linger_ms=100)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    listed = [
        probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)
    ]
    probe.close()
    # Tansu's ListOffsets under-reports (base offset of the last batch + 1); real Kafka
    # answers 20. Either way the source must read all 60 records.
    assert all(1 <= high <= 20 for high in listed), listed

    rows, _ = run_available_now(
        spark, source_options(bootstrap, topic, startingOffsets="earliest"), checkpoint
    )

    assert [(r.partition, r.offset) for r in rows] == [(p, o) for p in range(3) for o in range(20)]
    assert [r.value for r in rows if r.partition == 2][-1] == b"p2-19"


def test_restart_from_checkpoint_reads_only_new_records(
    spark, bootstrap, new_topic, produce, checkpoint
):
    topic = new_topic(partitions=2)
    produce(topic, records(8, "first"), linger_ms=50)
    options = source_options(bootstrap, topic, startingOffsets="earliest")
    first, _ = run_available_now(spark, options, checkpoint)

    produce(topic, records(5, "second"), linger_ms=50)
    second, _ = run_available_now(spark, options, checkpoint)

    assert len(first) == 8
    assert sorted(r.value for r in second) == sorted(v for _, v in records(5, "second"))


def test_batch_read_between_offsets(spark, bootstrap, new_topic, produce):
    topic = new_topic(partitions=2)
    produce(topic, records(6), partition=0, linger_ms=20)
    produce(topic, records(4), partition=1, linger_ms=20)

    everything = spark.read.format("kafka-py").options(**source_options(bootstrap, topic)).load()
    ending = json.dumps({topic: {"0": 3, "1": -1}})
    some = (
        spark.read.format("kafka-py")
        .options(
            **source_options(bootstrap, topic, startingOffsets="earliest", endingOffsets=ending)
        )
        .load()
    )

    assert everything.count() == 10
    assert sorted((r.partition, r.offset) for r in some.collect()) == [(0, 0), (0, 1), (0, 2)] + [
        (1, o) for o in range(4)
    ]


def test_assign_and_subscribe_pattern_choose_partitions(spark, bootstrap, new_topic, produce):
    topic = new_topic(partitions=2, prefix="pattern")
    produce(topic, records(6), partition=0, linger_ms=20)
    produce(topic, records(4), partition=1, linger_ms=20)
    base = {"kafka.bootstrap.servers": bootstrap}

    assigned = spark.read.format("kafka-py").options(**base, assign=json.dumps({topic: [1]})).load()
    matched = (
        spark.read.format("kafka-py")
        .options(**base, subscribePattern=topic.replace("pattern", "patt.rn"))
        .load()
    )

    assert sorted((r.partition, r.offset) for r in assigned.collect()) == [(1, o) for o in range(4)]
    assert matched.count() == 10


# -- sink --------------------------------------------------------------------------------------


def test_sink_round_trip(spark, bootstrap, new_topic, produce, checkpoint):
    source, target = new_topic(partitions=2), new_topic(partitions=2)
    produce(source, records(30), linger_ms=50)

    query = (
        spark.readStream.format("kafka-py")
        .options(**source_options(bootstrap, source, startingOffsets="earliest"))
        .load()
        .selectExpr("key", "upper(cast(value as string)) as value")
        .writeStream.format("kafka-py")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", target)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None

    written = consume_all(bootstrap, target)
    assert sorted((k, v) for _, _, k, v in written) == sorted(
        (k, v.upper()) for k, v in records(30)
    )
    # The default partitioner hashes keys: same key, same partition.
    assert len({(k, p) for p, _, k, _ in written}) == 30


def test_sink_routes_by_topic_column(spark, bootstrap, new_topic, checkpoint):
    first, second = new_topic(), new_topic()
    rows = [(f"k{i}", f"v{i}", first if i % 2 else second) for i in range(10)]
    spark.createDataFrame(rows, "key string, value string, topic string").write.format(
        "kafka-py"
    ).option("kafka.bootstrap.servers", bootstrap).mode("append").save()

    # Two tasks write concurrently, so only per-task order holds: compare as sets.
    assert sorted((k, v) for _, _, k, v in consume_all(bootstrap, first)) == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(1, 10, 2)
    ]
    assert len(consume_all(bootstrap, second)) == 5


def test_sink_failed_delivery_fails_the_batch(spark, bootstrap, new_topic, produce, checkpoint):
    source, target = new_topic(), new_topic(partitions=1)
    produce(source, records(3), linger_ms=20)

    query = (
        spark.readStream.format("kafka-py")
        .options(**source_options(bootstrap, source, startingOffsets="earliest"))
        .load()
        .selectExpr("key", "value", "7 as partition")  # the target has only partition 0
        .writeStream.format("kafka-py")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", target)
        .option("kafka.message.timeout.ms", "5000")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="DeliveryFailed|failed and"):
        query.awaitTermination(QUERY_TIMEOUT_S)
    assert not os.path.exists(os.path.join(checkpoint, "commits", "0")), (
        "a failed batch was committed"
    )
    assert consume_all(bootstrap, target) == []


def test_unconfirmed_deliveries_raise_instead_of_being_dropped():
    # Nothing listens on this port, so every record times out in the producer and comes
    # back as a failed delivery report (the path a broker outage takes).
    import socket

    import pyarrow as pa
    from pyspark.sql.types import StringType, StructField, StructType

    from streaming.kafka.errors import DeliveryFailed
    from streaming.kafka.sink import SinkOptions, produce_batches

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    schema = StructType([StructField("value", StringType())])
    options = SinkOptions.parse(
        {
            "kafka.bootstrap.servers": dead,
            "topic": "nowhere",
            "kafka.message.timeout.ms": "1000",
            "kafka.log_level": "0",
        },
        schema,
    )
    batch = pa.RecordBatch.from_pydict({"value": ["a", "b", "c"]})

    with pytest.raises(DeliveryFailed, match="3 of 3 records failed"):
        produce_batches(options, iter([batch]))
