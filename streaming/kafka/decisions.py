"""Writing the job's decisions and dead letters to Kafka (confluent-kafka, from the driver),
for the batch sink (`streaming/sink.py`)."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

from ..packing import truncated
from ..settings.schema import JobSettings
from .client import quiet
from .outage import clear_outage, outage_file_for, report_outage
from .producer import CheckedProducer

log = logging.getLogger("shadow_controller.kafka")

# The decisions' order on a partition is the contract's order, so one request is in flight
# at a time: a retried request cannot overtake the next one. A retry after a lost
# acknowledgement can write a request's records twice, as exact copies next to each other,
# which consumers already handle (a replayed micro-batch does the same). Idempotence would
# remove those copies, at a cost: on the embedded broker it makes a 90,000-record batch take
# 0.65 s instead of 0.2 s. `kafka.options` can set `enable.idempotence = true`.
# A broker that is away is waited for however long (`message.timeout.ms = 0`: librdkafka
# retries without a limit); what ends the wait is a stop or `job.on_broker_outage = "exit"`,
# through the writer's `cancel` event (streaming.runner).
WRITER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": False,
    "max.in.flight.requests.per.connection": 1,
    "linger.ms": 5,
    "message.timeout.ms": 0,
}


# room left for a dead letter's headers and the record's framing
DLQ_HEADROOM_BYTES = 16_384


def dlq_record(doc: dict[str, Any], limit: int) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """A dead-letter document as a Kafka record: the original bytes (a prefix of at most
    `limit` bytes when they do not fit, then `dlq.truncated`, `dlq.original.size` and
    `dlq.original.sha256` say so) and `dlq.*` headers."""
    encoded = doc.get("value_base64")
    value = None if encoded is None else base64.b64decode(encoded)
    headers = [
        ("dlq.reason", doc["reason"].encode()),
        ("dlq.source", str(doc["source"]).encode()),
        ("dlq.offset", str(doc["offset"]).encode()),
    ]
    size, digest = doc.get("original_size"), doc.get("original_sha256")
    if value is not None:
        value, original = truncated(value, limit)
        if original is not None and size is None:  # a letter already cut keeps its original's facts
            size, digest = original
    if size is not None:
        headers += [
            ("dlq.truncated", b"true"),
            ("dlq.original.size", str(size).encode()),
            ("dlq.original.sha256", str(digest).encode()),
        ]
    return value, headers


def _client_config(settings: JobSettings) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": settings.bootstrap_servers}
    conf.update(settings.kafka_options)
    return conf


class DecisionWriter:
    """The job's decisions and dead letters, produced from the driver.

    One producer serves every micro-batch: a new one per batch would pay a connection, a
    metadata round trip (and with idempotence a producer id) each time. `write` raises
    `DeliveryFailed` (failing the batch, which Spark replays) unless every record of the
    batch was confirmed; after a failure the producer is discarded with anything it still
    queues, and the next batch starts a new one.

    While the broker confirms nothing, the writer reports an outage (the file the runner
    watches, `outage.outage_file_for`) and goes on waiting; setting `cancel` ends the
    wait within half a second with `WriteAbandoned` (the batch does not commit)."""

    def __init__(self, settings: JobSettings, cancel: threading.Event | None = None) -> None:
        self.settings = settings
        self.cancel = cancel if cancel is not None else threading.Event()
        self._producer: CheckedProducer | None = None
        self._outage_file = outage_file_for(settings.pause_file)
        self._stalled = False

    def _on_stall(self, since: float) -> None:
        self._stalled = True
        report_outage(
            self._outage_file,
            since,
            self.settings.bootstrap_servers,
            f"writing decisions to {self.settings.decisions_topic}",
            "no record confirmed",
        )

    def _config(self) -> dict[str, Any]:
        conf = _client_config(self.settings)
        for k, v in WRITER_DEFAULTS.items():
            conf.setdefault(k, v)
        return quiet(conf)

    def write(self, decisions: list[tuple[str, str]], dlq: list[dict[str, Any]]) -> None:
        if self._producer is None:
            self._producer = CheckedProducer(
                self._config(), cancel=self.cancel, on_stall=self._on_stall
            )
        producer = self._producer
        try:
            producer.send_all(self.settings.decisions_topic, decisions)
            limit = self._dlq_value_limit()
            for d in dlq:
                value, headers = dlq_record(d, limit)
                producer.send(self.settings.dlq_topic, value, headers=headers)
            producer.confirm()
        except BaseException:
            self.close()
            raise
        finally:
            if self._stalled:
                self._stalled = False
                clear_outage(self._outage_file)

    def _dlq_value_limit(self) -> int:
        """What of a dead record's bytes fits one produce request: the setting, and never
        more than the producer's message.max.bytes less room for the headers."""
        max_message = int(self._config().get("message.max.bytes", 1_000_000))
        return max(0, min(self.settings.dlq_max_value_bytes, max_message - DLQ_HEADROOM_BYTES))

    def close(self) -> None:
        """Drop the producer; records it still queues are discarded, not sent later."""
        if self._producer is not None:
            self._producer.discard()
            self._producer = None


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
            "the job orders each micro-batch by (offset) within its input and cannot order "
            "across partitions",
            settings.events_topic,
            len(topic.partitions),
        )
