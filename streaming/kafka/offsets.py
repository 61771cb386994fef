"""Planning a read: the subscription's partitions and their offsets (`OffsetReader`, one
long-lived consumer on the driver), `startingOffsets`/`endingOffsets` resolved
(`resolve_offsets`), `maxOffsetsPerTrigger` applied (`rate_limit`), and a range cut into
one input partition per topic-partition (`plan_partitions`). A query the broker does not
answer raises `BrokerUnavailable` (`outage.py`).

End offsets
-----------
Real Kafka answers ListOffsets(latest) with the high watermark. Tansu answers with the *base
offset + 1* of the last record batch, so the rest of a multi-record batch is invisible to
that query, while a Fetch response carries the true high watermark. The end offset is
therefore `max(ListOffsets(latest), what a Fetch from there reveals)`: assign every partition
at its ListOffsets answer and consume until librdkafka reports end-of-partition, whose
offset is the high watermark of the Fetch response (or the last stable offset under
`read_committed`). On real Kafka the Fetch starts at the end and returns nothing, so this
costs one round trip (`fetch.wait.max.ms` is lowered for it); on Tansu it reads at most the
tail of the last batch. Every value taken is an offset some broker response vouched for, so
the maximum never points past committed data. A probe that gets no answer before its
deadline is BrokerUnavailable, like any query the broker does not answer: the ListOffsets
answer alone can be below what the query has read already (25 records in one batch give
1), which the source would take for data loss. A broker frozen between the two requests
did exactly that.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from .client import PERMANENT_ERRORS, answer, next_messages, sorted_error
from .errors import BrokerUnavailable, KafkaSourceError
from .options import (
    EARLIEST,
    LATEST,
    Offsets,
    SourceOptions,
    TopicPartition,
    json_option,
    offsets_from_json,
    report_data_loss,
)


class OffsetReader:
    """Driver-side metadata and offset queries over one long-lived consumer. A query the
    broker does not answer raises BrokerUnavailable."""

    def __init__(self, options: SourceOptions) -> None:
        from confluent_kafka import Consumer

        self.options = options
        self._consumer = Consumer(options.consumer_config(**{"fetch.wait.max.ms": 10}))

    def close(self) -> None:
        self._consumer.close()

    def topic_partitions(self) -> list[TopicPartition]:
        if self.options.assign:
            return list(self.options.assign)
        metadata = answer(
            "Metadata", lambda: self._consumer.list_topics(timeout=self.options.probe_timeout_s)
        )
        if self.options.subscribe:
            topics = [t for t in self.options.subscribe if t in metadata.topics]
        else:
            pattern = re.compile(self.options.subscribe_pattern or "")
            topics = [t for t in metadata.topics if not t.startswith("__") and pattern.fullmatch(t)]
        return sorted((t, p) for t in topics for p in metadata.topics[t].partitions)

    def _list_offsets(self, tps: Sequence[TopicPartition], spec: int) -> Offsets:
        from confluent_kafka import TopicPartition as KafkaTP

        if not tps:
            return {}
        # ListOffsets takes -2 (earliest) and -1 (latest) as timestamps, batched per leader.
        answers = answer(
            "ListOffsets",
            lambda: self._consumer.offsets_for_times(
                [KafkaTP(t, p, spec) for t, p in tps], timeout=self.options.probe_timeout_s
            ),
        )
        out: Offsets = {}
        for tp in answers:
            if tp.error is not None:
                raise sorted_error(f"ListOffsets for {tp.topic}-{tp.partition}", tp.error)
            out[(tp.topic, tp.partition)] = tp.offset
        return out

    def earliest(self, tps: Sequence[TopicPartition]) -> Offsets:
        return self._list_offsets(tps, EARLIEST)

    def latest(self, tps: Sequence[TopicPartition]) -> Offsets:
        """End offsets: max of ListOffsets(latest) and what a Fetch from there reveals (see
        the module docstring for why)."""
        from confluent_kafka import KafkaError
        from confluent_kafka import TopicPartition as KafkaTP

        listed = self._list_offsets(tps, LATEST)
        if not listed:
            return {}
        end = dict(listed)
        pending = set(listed)
        self._consumer.assign([KafkaTP(t, p, o) for (t, p), o in listed.items()])
        deadline = time.monotonic() + self.options.probe_timeout_s
        try:
            while pending and (remaining := deadline - time.monotonic()) > 0:
                for msg in next_messages(self._consumer, min(remaining, 1.0)):
                    tp = (msg.topic(), msg.partition())
                    error = msg.error()
                    if error is None:
                        end[tp] = max(end[tp], msg.offset() + 1)
                    elif error.code() == KafkaError._PARTITION_EOF:
                        end[tp] = max(end[tp], msg.offset())
                        pending.discard(tp)
                    elif error.fatal() or error.code() in PERMANENT_ERRORS:
                        raise KafkaSourceError(f"end-offset probe failed: {error}")
        finally:
            self._consumer.unassign()
        if pending:
            names = ", ".join(f"{t}-{p}" for t, p in sorted(pending))
            raise BrokerUnavailable(
                f"Fetch: no answer within {self.options.probe_timeout_s:g} s for the end of {names}"
            )
        return end


def rate_limit(start: Offsets, end: Offsets, max_rows: int) -> Offsets:
    """Cut `[start, end)` down to at most `max_rows` records in total. Every partition with a
    backlog gets one record first (no partition starves behind a big one), the rest is shared
    in proportion to backlog by largest remainder; ties go in (topic, partition) order."""
    backlog = {tp: end[tp] - start.get(tp, 0) for tp in sorted(end) if end[tp] > start.get(tp, 0)}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(end)
    take = {tp: 0 for tp in backlog}
    for tp in list(backlog)[:max_rows]:
        take[tp] = 1
    budget = max_rows - sum(take.values())
    rest = {tp: backlog[tp] - take[tp] for tp in backlog}
    rest_total = sum(rest.values())
    if budget and rest_total:
        shares = {tp: divmod(budget * n, rest_total) for tp, n in rest.items()}
        for tp, (whole, _) in shares.items():
            take[tp] += whole
        leftover = budget - sum(whole for whole, _ in shares.values())
        by_remainder = sorted(shares, key=lambda tp: -shares[tp][1])  # stable: ties keep order
        for tp in by_remainder[:leftover]:
            take[tp] += 1
    out = dict(end)
    for tp, n in take.items():
        out[tp] = start.get(tp, 0) + n
    return out


def resolve_offsets(
    spec: str, tps: Sequence[TopicPartition], offsets: OffsetReader, *, what: str
) -> Offsets:
    """`earliest`, `latest` or Spark's JSON `{"topic": {"0": offset}}` (-2 earliest, -1 latest)
    to concrete offsets for every partition in `tps`."""
    if spec.lower() == "earliest":
        return offsets.earliest(tps)
    if spec.lower() == "latest":
        return offsets.latest(tps)
    given = offsets_from_json(json_option(what, spec))
    if set(given) != set(tps):
        raise KafkaSourceError(
            f"{what} must give an offset for every subscribed partition (use -2 for "
            "earliest, -1 for "
            f"latest); missing {sorted(set(tps) - set(given))}, unknown "
            f"{sorted(set(given) - set(tps))}"
        )
    resolved = dict(given)
    resolved.update(offsets.earliest([tp for tp, o in given.items() if o == EARLIEST]))
    resolved.update(offsets.latest([tp for tp, o in given.items() if o == LATEST]))
    bad = {tp: o for tp, o in resolved.items() if o < 0}
    if bad:
        raise KafkaSourceError(f"{what}: invalid offsets {bad}")
    return resolved


@dataclass(frozen=True, slots=True)
class KafkaInputPartition(InputPartition):
    topic: str
    partition: int
    start: int
    end: int


def plan_partitions(
    start: Offsets, end: Offsets, options: SourceOptions
) -> list[KafkaInputPartition]:
    out = []
    for topic, partition in sorted(end):
        begin, until = start.get((topic, partition), 0), end[(topic, partition)]
        if until < begin:
            report_data_loss(
                options,
                f"{topic}-{partition}: end offset {until} is below start offset {begin} "
                "(topic recreated or log truncated)",
            )
        elif until > begin:
            out.append(KafkaInputPartition(topic, partition, begin, until))
    return out
