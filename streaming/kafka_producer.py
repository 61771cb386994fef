"""A confluent-kafka producer that accounts for every record.

Everything this project writes to Kafka (the connector's sink tasks, the job's decisions
and dead letters, the bridge's events) must be confirmed record by record before it counts
as written: a batch is not committed, or a bridge position not saved, with a record
missing. `send` queues a record, serving delivery reports while the local queue is full;
`confirm` flushes and raises `DeliveryFailed` unless the broker confirmed every record sent
since the previous `confirm`.

librdkafka reports failures only (`delivery.report.only.error`): once `flush` has emptied
the queue, every record sent was either confirmed by the broker or reported as failed, so
the confirmed count is the sent count less the failures. A success report per record
would cost a Python call each, which at 100,000 records is a noticeable part of a batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from state_machines.errors import ShadowControllerError

# librdkafka's default message.timeout.ms: every message gets a delivery report by then.
DEFAULT_MESSAGE_TIMEOUT_MS = 300_000
MAX_REPORTED_FAILURES = 5
# serve callbacks (failure reports, client errors) every this many records; a full local
# queue is served at once
POLL_EVERY = 1000


class DeliveryFailed(ShadowControllerError):
    """The broker did not confirm every record; whatever they belong to must not commit."""


def flush_timeout_s(config: Mapping[str, Any]) -> float:
    """Past message.timeout.ms every message has a report; the margin covers the last poll."""
    return int(config.get("message.timeout.ms", DEFAULT_MESSAGE_TIMEOUT_MS)) / 1000.0 + 30.0


class CheckedProducer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        from confluent_kafka import Producer

        self.config = dict(config)
        self._producer = Producer({**self.config, "delivery.report.only.error": True, "on_delivery": self._report})
        self.failures: list[str] = []
        self.sent = 0

    def _report(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
        from confluent_kafka import KafkaException

        kwargs: dict[str, Any] = {"value": value, "key": key}
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = headers
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:
                self._producer.poll(1.0)  # local queue full: serve delivery reports, then retry
            except KafkaException as exc:
                raise DeliveryFailed(f"cannot produce to {topic!r}: {exc.args[0]}") from exc
        self.sent += 1
        if self.sent % POLL_EVERY == 0:
            self._producer.poll(0)

    def send_all(self, topic: str, records: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        """`send` for many (key, value) records to one topic: the loop a decisions batch
        of 100,000 records runs, without the per-record call and keyword arguments.
        (librdkafka takes a str as its UTF-8 bytes.)"""
        from confluent_kafka import KafkaException

        produce, poll = self._producer.produce, self._producer.poll
        sent = 0
        try:
            for key, value in records:
                while True:
                    try:
                        produce(topic, value, key)
                        break
                    except BufferError:
                        poll(1.0)  # local queue full: serve delivery reports, then retry
                sent += 1
                if sent % POLL_EVERY == 0:
                    poll(0)
        except KafkaException as exc:
            raise DeliveryFailed(f"cannot produce to {topic!r}: {exc.args[0]}") from exc
        finally:
            self.sent += sent

    def confirm(self, timeout_s: float | None = None) -> int:
        """Flush; return how many records the broker confirmed since the last call, or raise."""
        timeout_s = flush_timeout_s(self.config) if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        remaining = self._producer.flush(timeout_s)
        while remaining and time.monotonic() < deadline:
            remaining = self._producer.flush(deadline - time.monotonic())
        sent, failures = self.sent, self.failures
        self.sent, self.failures = 0, []
        if failures or remaining:
            shown = "; ".join(failures[:MAX_REPORTED_FAILURES])
            raise DeliveryFailed(
                f"{len(failures)} of {sent} records failed and {remaining} are unconfirmed after "
                f"{timeout_s:.0f}s. First failures: {shown or 'none'}")
        return sent

    def discard(self) -> None:
        """Drop every record not yet confirmed (queued or in flight): after a failed
        `confirm` they belong to a write that will be retried as a whole."""
        self._producer.purge()
        self._producer.flush(0)
        self.sent, self.failures = 0, []
