"""Poison records on the events topic, in Kafka mode on a real broker: the job reaches the
end of the log, every bad record is in the dead-letter topic with a reason, and the
decisions are exactly those of the clean log.

The poisons are the five records that used to stop the job for good (a tombstone, deep
nesting, a 5,000-digit integer, 1 MiB of garbage, a valid event with a 1 MiB id), a few
more, and a fuzzed stream of random bytes and mutated valid events (`tests/poison.py`).
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from shadow_controller.broker import create_topics
from streaming.settings.schema import JobSettings
from tests.integration.kafka_helpers import consume_all
from tests.poison import fuzzed, named_poisons, poisoned_log, remap
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import assert_same_multiset, run_to_end, simulate_records

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def produce_large(bootstrap: str, topic: str, values: list[bytes | None]) -> None:
    """Produce in order, allowing records of a few MiB (the poisons), every one confirmed."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "message.max.bytes": 4 * 1024 * 1024,
            "enable.idempotence": True,
            "linger.ms": 20,
        }
    )
    errors: list[object] = []
    for value in values:
        producer.produce(
            topic, value=value, on_delivery=lambda err, _msg: errors.append(err) if err else None
        )
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors


def test_poison_records_go_to_the_dead_letters_and_the_decisions_are_the_clean_logs(
    spark, bootstrap, new_topic, tmp_path
):
    clean = [json.dumps(e).encode() for e in generate_log(23, n_events=60)]
    log = poisoned_log(clean, named_poisons() + fuzzed(random.Random(4), clean, 40), seed=9)
    events, decisions = new_topic(prefix="events"), new_topic(prefix="decisions")
    create_topics(bootstrap, {f"{events}.dlq": 1})
    produce_large(bootstrap, events, log.lines)

    settings = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint=str(tmp_path / "ckpt"),
        bootstrap_servers=bootstrap,
        events_topic=events,
        decisions_topic=decisions,
        max_offsets_per_trigger=16,
    )
    sink = run_to_end(spark, settings)
    assert sum(s["dlq"] for s in sink.stats.values()) == len(log.bad)

    # every bad record, in offset order, with its reason and its bytes (or their prefix)
    letters = consume_all(bootstrap, settings.dlq_topic, len(log.bad))
    headers = [dict(m.headers()) for m in letters]
    assert [int(h["dlq.offset"]) for h in headers] == sorted(log.bad)
    for msg, h in zip(letters, headers, strict=True):
        what, original = log.bad[int(h["dlq.offset"])]
        assert h["dlq.reason"], what
        assert h["dlq.source"].decode() == f"{events}:0:{int(h['dlq.offset'])}"
        if original is None:
            assert msg.value() is None and b"tombstone" in h["dlq.reason"], what
        elif "dlq.truncated" in h:
            assert len(original) > settings.dlq_max_value_bytes, what
            assert (
                original.startswith(msg.value())
                and len(msg.value()) <= settings.dlq_max_value_bytes
            )
            assert int(h["dlq.original.size"]) == len(original)
            assert h["dlq.original.sha256"].decode() == hashlib.sha256(original).hexdigest()
        else:
            assert msg.value() == original, what
    reasons = {log.bad[int(h["dlq.offset"])][0]: h["dlq.reason"].decode() for h in headers}
    assert "tombstone" in reasons["tombstone"]
    assert "nested deeper" in reasons["deep nesting"]
    assert "5000 digits" in reasons["5000-digit integer"]
    assert "'id'" in reasons["valid event with a 1 MiB id"]
    assert "contract version" in reasons["float version"]

    # the decisions are the clean log's, once renumbered to the clean log's offsets
    got = [json.loads(m.value()) for m in consume_all(bootstrap, decisions, 1)]
    assert got, "the clean log decides something"
    assert_same_multiset([remap(r, log) for r in got], simulate_records(clean))
    assert all(len(m) < 10_000 for m in map(json.dumps, got)), "no decision echoes a huge input"
