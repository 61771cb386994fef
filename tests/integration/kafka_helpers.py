"""Reading a topic back in broker tests."""

from __future__ import annotations

import time


def consume_all(bootstrap: str, topic: str, expected: int = 0, deadline_s: float = 60.0) -> list:
    """Every record of partition 0 of `topic`: read until `expected` records arrived and then
    until a poll comes back empty, so extra records would be seen too."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{topic}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    records = []
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            msg = consumer.poll(1.0)
            if msg is None:
                if len(records) >= expected:
                    break
                continue
            assert msg.error() is None, msg.error()
            records.append(msg)
    finally:
        consumer.close()
    return records
