"""The Spark job in Kafka mode on a real broker (the embedded Tansu) against `simulate`.

Events are produced in multi-record batches (linger), so the reader's handling of Tansu's
watermark fault is on the path; decisions are read back from the decisions topic. Each
scenario log runs in the Kafka shell `scenario_runs` deals it, or in file mode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from state_machines.outputs import contract_key
from streaming.settings.schema import JobSettings
from tests.integration.kafka_helpers import consume_all
from tests.property.generator import generate_log
from tests.streaming.scenario_runs import scenario_params
from tests.streaming.spark_helpers import assert_same_multiset, run_to_end, simulate_records

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def run_kafka_job(
    spark,
    bootstrap,
    new_topic,
    produce,
    tmp_path: Path,
    lines: list[bytes],
    max_offsets: int | None = None,
    buckets: int = 0,
):
    events = new_topic(prefix="events")
    decisions = new_topic(prefix="decisions")
    from shadow_controller.broker import create_topics

    create_topics(bootstrap, {f"{events}.dlq": 1})
    produce(events, [(None, line) for line in lines], linger_ms=50)
    settings = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint=str(tmp_path / "ckpt"),
        bootstrap_servers=bootstrap,
        events_topic=events,
        decisions_topic=decisions,
        max_offsets_per_trigger=max_offsets,
        partition_buckets=buckets,
    )
    return settings, run_to_end(spark, settings)


@pytest.mark.parametrize(("log", "buckets"), scenario_params("kafka"))
def test_scenario_log_same_decisions_as_simulate(
    spark, bootstrap, new_topic, produce, tmp_path, log: Path, buckets: int
):
    lines = log.read_bytes().splitlines()
    expected = simulate_records(lines)
    settings, _ = run_kafka_job(
        spark, bootstrap, new_topic, produce, tmp_path, lines, buckets=buckets
    )
    got = consume_all(bootstrap, settings.decisions_topic, len(expected))
    for msg in got:
        record = json.loads(msg.value())
        key = contract_key(record)
        assert msg.key().decode() == key
    assert_same_multiset([json.loads(m.value()) for m in got], expected)


# Generated logs hold every kind of event, the controller-wide ones (ticks, cluster config
# changes, log-dir failures) included; one run per keying.
@pytest.mark.parametrize(("seed", "buckets"), [(5, 0), (17, 4)], ids=["per-partition", "buckets-4"])
def test_generated_log_over_many_micro_batches(
    spark, bootstrap, new_topic, produce, tmp_path, seed: int, buckets: int
):
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=50)]
    expected = simulate_records(lines)
    settings, sink = run_kafka_job(
        spark, bootstrap, new_topic, produce, tmp_path, lines, max_offsets=8, buckets=buckets
    )
    assert len(sink.stats) >= len(lines) // 8
    got = consume_all(bootstrap, settings.decisions_topic, len(expected))
    assert_same_multiset([json.loads(m.value()) for m in got], expected)


def test_bad_records_land_in_the_dlq_topic_with_reason_and_coordinates(
    spark, bootstrap, new_topic, produce, tmp_path
):
    lines = [
        b'{"v":1,"type":"BrokerStartup","broker_id":1,"broker_epoch":1}',
        b"\x00\x01 not json",
        b'{"v":1,"type":"ControllerFailover","controller_id":1,"controller_epoch":1}',
        b'{"v":1,"type":"TopicCreation","topic":"bad name!","partitions":{"0":[1]}}',
        b'{"v":1,"type":"TopicCreation","topic":"ok","partitions":{"0":[1]}}',
    ]
    expected = simulate_records(lines)
    settings, _ = run_kafka_job(spark, bootstrap, new_topic, produce, tmp_path, lines)
    dlq = consume_all(bootstrap, settings.dlq_topic, 2)
    assert [m.value() for m in dlq] == [lines[1], lines[3]]
    headers = [dict(m.headers()) for m in dlq]
    assert b"not UTF-8" in headers[0]["dlq.reason"] or b"not JSON" in headers[0]["dlq.reason"]
    assert b"topic" in headers[1]["dlq.reason"]
    assert [h["dlq.source"].decode() for h in headers] == [
        f"{settings.events_topic}:0:1",
        f"{settings.events_topic}:0:3",
    ]
    got = consume_all(bootstrap, settings.decisions_topic, len(expected))
    assert_same_multiset([json.loads(m.value()) for m in got], expected)
