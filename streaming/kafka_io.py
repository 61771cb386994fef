"""Writing the job's decisions and dead letters to Kafka (confluent-kafka, from the driver)."""

from __future__ import annotations

import base64
import logging
from typing import Any

from .job import JobSettings
from .kafka_producer import CheckedProducer
from .kafka_sink import PRODUCER_DEFAULTS

log = logging.getLogger("shadow_controller.kafka")


def _client_config(settings: JobSettings) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": settings.bootstrap_servers}
    conf.update(settings.kafka_options)
    return conf


def produce_batch(settings: JobSettings, decisions: list[tuple[str, str]], dlq: list[dict[str, Any]]) -> None:
    """A micro-batch's decisions, then its dead letters; raises DeliveryFailed (failing the
    batch, which Spark replays) unless every record was confirmed."""
    conf = _client_config(settings)
    for k, v in PRODUCER_DEFAULTS.items():
        conf.setdefault(k, v)
    conf.setdefault("linger.ms", 5)
    producer = CheckedProducer(conf)
    for key, payload in decisions:
        producer.send(settings.decisions_topic, payload.encode(), key=key.encode())
    for d in dlq:
        headers = [("dlq.reason", d["reason"].encode()), ("dlq.source", str(d["source"]).encode()),
                   ("dlq.offset", str(d["offset"]).encode())]
        producer.send(settings.dlq_topic, base64.b64decode(d["value_base64"]), headers=headers)
    producer.confirm()


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
