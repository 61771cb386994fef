"""The job's decision writer: one producer across micro-batches, every record confirmed."""

from __future__ import annotations

import base64

import pytest

from streaming.kafka.decisions import DecisionWriter
from streaming.kafka.errors import DeliveryFailed
from streaming.settings.schema import JobSettings
from tests.integration.kafka_helpers import consume_all


def _settings(
    bootstrap: str, decisions: str, events: str = "controller-events", **kafka: str
) -> JobSettings:
    return JobSettings(
        input="kafka",
        output="kafka",
        checkpoint="unused",
        bootstrap_servers=bootstrap,
        events_topic=events,
        decisions_topic=decisions,
        kafka_options=dict(kafka),
    )


def test_batches_land_in_order_with_their_keys_and_dead_letters(bootstrap, new_topic):
    from shadow_controller.broker import create_topics

    decisions, events = new_topic(), new_topic()
    dlq = f"{events}.dlq"
    create_topics(bootstrap, {dlq: 1})
    writer = DecisionWriter(_settings(bootstrap, decisions, events))
    first = [(f"topic-a-{i}", f'{{"seq":{i}}}') for i in range(2500)]
    second = [(f"topic-b-{i}", f'{{"seq":{2500 + i}}}') for i in range(10)]
    bad = {
        "reason": "not JSON",
        "source": "controller-events:0:7",
        "offset": 7,
        "value_base64": base64.b64encode(b"\xff{").decode(),
    }
    writer.write(first, [])
    writer.write(second, [bad])
    got = consume_all(bootstrap, decisions, expected=len(first) + len(second))
    assert [(m.key().decode(), m.value().decode()) for m in got] == first + second
    [letter] = consume_all(bootstrap, dlq, expected=1)
    assert letter.value() == b"\xff{"
    assert dict(letter.headers()) == {
        "dlq.reason": b"not JSON",
        "dlq.source": b"controller-events:0:7",
        "dlq.offset": b"7",
    }


def test_an_unconfirmed_batch_fails_and_the_next_one_starts_afresh():
    writer = DecisionWriter(
        _settings("127.0.0.1:1", "nowhere", **{"message.timeout.ms": "1500", "log_level": "0"})
    )
    for _attempt in range(2):
        with pytest.raises(DeliveryFailed, match=r"3 of 3 records failed"):
            writer.write([("k", "{}")] * 3, [])
