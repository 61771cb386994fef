"""A confluent-kafka producer that accounts for every record.

Everything this project writes to Kafka (the connector's sink tasks, the job's decisions
and dead letters, the bridge's events) must be confirmed record by record before it counts
as written: a batch is not committed, or a bridge position not saved, with a record
missing. `send` queues a record, serving delivery reports while the local queue is full;
`confirm` flushes and raises `DeliveryFailed` unless the broker confirmed every record sent
since the previous `confirm`.

Waiting is bounded from outside: a producer given a `cancel` event checks it at least every
`SLICE_S` while it waits (a full local queue in `send`, a flush in `confirm`); once it is
set, the producer drops what it has not confirmed and raises `WriteAbandoned`. When the
broker confirms nothing for `stall_s` while records wait, `on_stall(since)` is called
(wall-clock time of the last confirmation) on every slice until the records move again.

librdkafka reports failures only (`delivery.report.only.error`): once `flush` has emptied
the queue, every record sent was either confirmed by the broker or reported as failed, so
the confirmed count is the sent count less the failures. A success report per record
would cost a Python call each, which at 100,000 records is a noticeable part of a batch.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import DeliveryFailed, WriteAbandoned

# librdkafka's default message.timeout.ms: every message gets a delivery report by then.
DEFAULT_MESSAGE_TIMEOUT_MS = 300_000
MAX_REPORTED_FAILURES = 5
# serve callbacks (failure reports, client errors) every this many records; a full local
# queue is served at once
POLL_EVERY = 1000
# longest wait between two looks at the cancel event
SLICE_S = 0.5
# no record confirmed for this long while some wait: the broker is not answering
STALL_S = 10.0


def flush_timeout_s(config: Mapping[str, Any]) -> float:
    """Past message.timeout.ms every message has a report; the margin covers the last poll.
    `message.timeout.ms = 0` (librdkafka: no limit) waits as long as the records do."""
    timeout_ms = int(config.get("message.timeout.ms", DEFAULT_MESSAGE_TIMEOUT_MS))
    return math.inf if timeout_ms == 0 else timeout_ms / 1000.0 + 30.0


class CheckedProducer:
    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        cancel: threading.Event | None = None,
        on_stall: Callable[[float], None] | None = None,
        stall_s: float = STALL_S,
    ) -> None:
        from confluent_kafka import Producer

        self.config = dict(config)
        self._producer = Producer(
            {**self.config, "delivery.report.only.error": True, "on_delivery": self._report}
        )
        self.failures: list[str] = []
        self.sent = 0
        self.cancel = cancel
        self.on_stall = on_stall
        self.stall_s = stall_s
        # (records waiting, monotonic time that number last went down)
        self._waiting = (0, time.monotonic())

    def _report(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
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
                self._wait(
                    self._producer.poll
                )  # local queue full: serve delivery reports, then retry
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
                        self._wait(poll)  # local queue full: serve delivery reports, then retry
                sent += 1
                if sent % POLL_EVERY == 0:
                    poll(0)
        except KafkaException as exc:
            raise DeliveryFailed(f"cannot produce to {topic!r}: {exc.args[0]}") from exc
        finally:
            self.sent += sent

    def _wait(self, serve: Callable[[float], int], timeout_s: float = SLICE_S) -> int:
        """One slice of waiting for the broker: serve callbacks, then look at `cancel` and
        at whether any record was confirmed lately. Returns what `serve` returned."""
        result = serve(timeout_s)
        if self.cancel is not None and self.cancel.is_set():
            self.discard()
            raise WriteAbandoned(
                "the write was abandoned before the broker confirmed it; "
                "its records are dropped (a replay writes them again)"
            )
        waiting, since = self._waiting
        now = time.monotonic()
        left = len(self._producer)
        if left == 0 or waiting == 0 or left < waiting:
            since = now
        self._waiting = (left, since)
        if left and now - since >= self.stall_s and self.on_stall is not None:
            self.on_stall(time.time() - (now - since))
        return result

    def confirm(self, timeout_s: float | None = None) -> int:
        """Flush; return how many records the broker confirmed since the last call, or raise."""
        timeout_s = flush_timeout_s(self.config) if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        self._waiting = (len(self._producer), time.monotonic())
        remaining = self._wait(self._producer.flush, min(SLICE_S, timeout_s))
        while remaining and time.monotonic() < deadline:
            remaining = self._wait(self._producer.flush, min(SLICE_S, deadline - time.monotonic()))
        sent, failures = self.sent, self.failures
        self.sent, self.failures = 0, []
        if failures or remaining:
            shown = "; ".join(failures[:MAX_REPORTED_FAILURES])
            raise DeliveryFailed(
                f"{len(failures)} of {sent} records failed and {remaining} are unconfirmed after "
                f"{timeout_s:.0f}s. First failures: {shown or 'none'}"
            )
        return sent

    def discard(self) -> None:
        """Drop every record not yet confirmed (queued or in flight): after a failed
        `confirm` they belong to a write that will be retried as a whole."""
        self._producer.purge()
        self._producer.flush(0)
        self.sent, self.failures = 0, []
