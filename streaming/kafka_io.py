"""Writing the job's decisions and dead letters to Kafka (confluent-kafka, from the driver)."""

from __future__ import annotations

import base64
import logging
from typing import Any

from .job import JobSettings
from .kafka_sink import DeliveryFailed

log = logging.getLogger("shadow_controller.kafka")


def _client_config(settings: JobSettings) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": settings.bootstrap_servers}
    conf.update(settings.kafka_options)
    return conf


def produce_batch(settings: JobSettings, decisions: list[tuple[str, str]], dlq: list[dict[str, Any]],
                  timeout_s: float = 60.0) -> None:
    from confluent_kafka import Producer

    conf = _client_config(settings)
    conf.setdefault("acks", "all")
    conf.setdefault("linger.ms", 5)
    producer = Producer(conf)
    failures: list[str] = []
    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is not None:
            failures.append(f"{msg.topic()}: {err}")
        else:
            delivered += 1

    expected = 0
    for key, payload in decisions:
        _produce(producer, settings.decisions_topic, key.encode(), payload.encode(), None, on_delivery)
        expected += 1
    for d in dlq:
        headers = [("dlq.reason", d["reason"].encode()), ("dlq.source", str(d["source"]).encode()),
                   ("dlq.offset", str(d["offset"]).encode())]
        _produce(producer, settings.dlq_topic, None, base64.b64decode(d["value_base64"]), headers, on_delivery)
        expected += 1
    remaining = producer.flush(timeout_s)
    if failures or remaining or delivered != expected:
        raise DeliveryFailed(
            f"{expected - delivered} of {expected} records not delivered"
            + (f"; first error: {failures[0]}" if failures else f"; {remaining} still queued after {timeout_s}s"))


def _produce(producer: Any, topic: str, key: bytes | None, value: bytes, headers: Any, callback: Any) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key, headers=headers, on_delivery=callback)
            return
        except BufferError:
            producer.poll(0.5)  # local queue full: serve delivery reports, then retry


def warn_if_several_partitions(settings: JobSettings) -> None:
    if settings.input != "kafka":
        return
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_client_config(settings))
    meta = admin.list_topics(settings.events_topic, timeout=15)
    topic = meta.topics.get(settings.events_topic)
    if topic is not None and topic.error is None and len(topic.partitions) > 1:
        log.warning(
            "the events topic %s has %d partitions: controller events need one total order; "
            "the job orders each micro-batch by (offset) within its input and cannot order across partitions",
            settings.events_topic, len(topic.partitions))
