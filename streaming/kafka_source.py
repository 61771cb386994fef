"""`kafka-py`: a Kafka source (and, through `kafka_sink`, a sink) on Spark's Python Data
Source API, built on confluent-kafka because Spark's JVM Kafka connector is not available.

Options (Spark's names): `kafka.bootstrap.servers`; one of `subscribe` (comma list),
`subscribePattern` (full-match regex) or `assign` (`{"topic": [0, 1]}`); `startingOffsets`
(`earliest` | `latest` | `{"topic": {"0": offset}}` naming every partition, -2 earliest, -1
latest; default latest, earliest for batch reads); `endingOffsets` (batch only, default
latest); `maxOffsetsPerTrigger`; `failOnDataLoss` (default true); `kafkaConsumer.pollTimeoutMs`
(no-progress deadline of a read while the broker answers, default 120000; see "Broker
outages"). Every other `kafka.*` option goes to
confluent-kafka as is, so it must be a librdkafka property (`kafka.security.protocol`,
`kafka.sasl.mechanism`, `kafka.sasl.username`, `kafka.ssl.ca.location`, ...; Java-only
settings such as `sasl.jaas.config` are rejected by librdkafka). Extra: `endOffsetProbeTimeoutMs`
(default 10000; also the limit of each metadata and offset query); `shadow.pauseFile` (while
this file exists no new data is admitted: the job's stop) and `shadow.outageFile` (where an
outage is reported; default `BROKER_OUTAGE` next to the pause file). Refused: `minOffsetsPerTrigger`, `maxTriggerDelay`, `includeHeaders`,
`minPartitions`, the `*ByTimestamp` offsets.

Theory of operation
-------------------
Offsets are Spark's Kafka source offsets: `{"topic": {"partition": next offset}}`, topics and
partitions in a fixed order so that equal positions serialise to equal JSON (Spark compares
offsets as JSON strings; a reordered dict would look like new data forever).

The driver-side stream reader lives in one Python process for the life of the query, so it
keeps one confluent-kafka consumer for metadata and offset queries. Per micro-batch:

- `latestOffset(start, limit)` finds the partitions of the subscription, their end offsets,
  and cuts the range down to `limit` (`maxOffsetsPerTrigger` → `ReadMaxRows`). A partition
  missing from `start` is new and starts at 0, as in Spark (`read` reports data loss if the
  log no longer starts there).
- `partitions(start, end)` makes one input partition per non-empty topic-partition range.
- `read(partition)` runs on an executor: assign, seek to `start`, consume until the position
  reaches `end`, with a progress deadline. It returns exactly the records in `[start, end)`
  on every call, which is what makes restarts from a checkpoint exact.
- `prepareForTriggerAvailableNow` pins the end offsets once; `latestOffset` never goes past
  them, so `Trigger.AvailableNow` finishes.

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
the maximum never points past committed data. If the probe gets no answer before its
deadline the ListOffsets answer is used: nothing is lost, the tail just waits for a later
batch.

Broker outages
--------------
A broker that does not answer (a timeout, a refused or dropped connection) is waited for,
however long, and never fails the query; only answers that cannot change by waiting
(authorisation, authentication, a bad setting, data loss) do.

- Planning (`latestOffset`, on the driver): a query that gets no answer admits nothing new,
  so Spark plans no batch, and is retried with backoff (1 s doubling to 30 s) on later
  triggers. `initialOffset` and `prepareForTriggerAvailableNow` must return offsets, so they
  wait in place, until the broker answers or the pause file appears.
- Reading (`read`, on an executor): a planned range must be read as planned (a task that
  fails is retried a few times at most, then the query fails), so a read waits as long as
  the broker is away. After `min(pollTimeoutMs, 10 s)` without a record it asks the broker
  for the partition's offsets: no answer is an outage, re-asked with backoff; an answer
  means the broker is there, and the read fails once it has gone `pollTimeoutMs` without a
  record (counted afresh from the end of an outage).

Whoever waits writes the outage file (JSON: `since`, `servers`, `where`, `error`; the
earliest `since` is kept) and removes it once the broker answers; the job's runner reads
it to log the outage once a minute and to apply `job.on_broker_outage`. Without an outage
file the connector logs a warning once a minute instead. A stop stays quick: the planning
waits check the pause file, and a waiting read is a task Spark cancels.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from state_machines.errors import ShadowControllerError

log = logging.getLogger(__name__)

SHORT_NAME = "kafka-py"

SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)

EARLIEST = -2
LATEST = -1
# Spark's own Kafka source options this one refuses rather than silently ignores.
UNSUPPORTED_OPTIONS = ("minoffsetspertrigger", "maxtriggerdelay", "includeheaders", "minpartitions",
                       "startingoffsetsbytimestamp", "endingoffsetsbytimestamp")
# Client settings the connector owns: offsets are tracked by Spark, never by the group.
FORBIDDEN_KAFKA_OPTIONS = ("auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store",
                           "enable.partition.eof")
READ_BATCH_ROWS = 8192


def _permanent_errors() -> frozenset[int]:
    from confluent_kafka import KafkaError as E

    return frozenset({E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED,
                      E.SASL_AUTHENTICATION_FAILED, E._AUTHENTICATION, E._SSL, E._INVALID_ARG, E._UNKNOWN_PARTITION})


PERMANENT_ERRORS = _permanent_errors()


def _outage_errors() -> frozenset[int]:
    from confluent_kafka import KafkaError as E

    return frozenset({E._TIMED_OUT, E._TIMED_OUT_QUEUE, E._TRANSPORT, E._ALL_BROKERS_DOWN, E._RESOLVE,
                      E.REQUEST_TIMED_OUT, E.NETWORK_EXCEPTION, E.BROKER_NOT_AVAILABLE, E.LEADER_NOT_AVAILABLE,
                      E.NOT_LEADER_FOR_PARTITION})


# what a query gets from a broker that is away (or has no leader yet): waited out
OUTAGE_ERRORS = _outage_errors()

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


class KafkaSourceError(ShadowControllerError):
    """Bad options, or a Kafka read that cannot return the range it was asked for."""


class BrokerUnavailable(KafkaSourceError):
    """The broker did not answer in time (a timeout, a transport error): an outage, which
    is waited out, never a reason to fail."""


class DataLossError(KafkaSourceError):
    """Records the query should read no longer exist (retention, a deleted or recreated
    topic, a truncated log). Raised only with `failOnDataLoss=true` (the default)."""


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def offsets_from_json(value: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(topic, int(p)): int(o) for topic, parts in value.items() for p, o in parts.items()}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    kafka_config: tuple[tuple[str, str], ...]
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[TopicPartition, ...] = ()
    starting_offsets: str = "latest"
    ending_offsets: str = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    poll_timeout_s: float = 120.0
    probe_timeout_s: float = 10.0
    # the job's stop request (streaming.runner): while this file exists, no new data is admitted
    pause_file: str | None = None
    # where a broker outage is reported for the job (see "Broker outages")
    outage_file: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = {k.lower(): v for k, v in options.items()}
        for name in UNSUPPORTED_OPTIONS:
            if name in opts:
                raise KafkaSourceError(f"option {name!r} is not supported by {SHORT_NAME}")
        config = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
        if "bootstrap.servers" not in config:
            raise KafkaSourceError("option 'kafka.bootstrap.servers' is required")
        for name in FORBIDDEN_KAFKA_OPTIONS:
            if name in config:
                raise KafkaSourceError(f"option 'kafka.{name}' is managed by {SHORT_NAME}; remove it")
        strategies = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
        if len(strategies) != 1:
            raise KafkaSourceError("exactly one of 'subscribe', 'subscribePattern' or 'assign' is required")
        subscribe = tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip())
        if "subscribe" in opts and not subscribe:
            raise KafkaSourceError("option 'subscribe' names no topic")
        assign: tuple[TopicPartition, ...] = ()
        if "assign" in opts:
            parsed = _json_option("assign", opts["assign"])
            assign = tuple(sorted((t, int(p)) for t, ps in parsed.items() for p in ps))
        max_offsets = opts.get("maxoffsetspertrigger")
        if max_offsets is not None and int(max_offsets) <= 0:
            raise KafkaSourceError("option 'maxOffsetsPerTrigger' must be positive")
        return cls(
            kafka_config=tuple(sorted(config.items())),
            subscribe=subscribe,
            subscribe_pattern=opts.get("subscribepattern"),
            assign=assign,
            starting_offsets=opts.get("startingoffsets", "latest" if streaming else "earliest").strip(),
            ending_offsets=opts.get("endingoffsets", "latest").strip(),
            max_offsets_per_trigger=int(max_offsets) if max_offsets is not None else None,
            fail_on_data_loss=opts.get("failondataloss", "true").strip().lower() != "false",
            poll_timeout_s=int(opts.get("kafkaconsumer.polltimeoutms", "120000")) / 1000.0,
            pause_file=opts.get("shadow.pausefile"),
            outage_file=opts.get("shadow.outagefile") or (
                outage_file_for(opts["shadow.pausefile"]) if opts.get("shadow.pausefile") else None),
            probe_timeout_s=int(opts.get("endoffsetprobetimeoutms", "10000")) / 1000.0,
        )

    @property
    def servers(self) -> str:
        return dict(self.kafka_config)["bootstrap.servers"]

    def paused(self) -> bool:
        return bool(self.pause_file) and os.path.exists(self.pause_file)  # type: ignore[arg-type]

    def consumer_config(self, **overrides: Any) -> dict[str, Any]:
        config: dict[str, Any] = {"group.id": f"spark-kafka-py-{uuid.uuid4()}", **dict(self.kafka_config)}
        config.update({"enable.auto.commit": False, "enable.auto.offset.store": False,
                       "enable.partition.eof": True, "auto.offset.reset": "error"})
        config.update(overrides)
        return quiet(config)


# librdkafka logs every failed connection attempt and timed-out request (many lines a
# second while a broker is away) on stderr; the connector reports an outage itself
# ("Broker outages"), so the clients' log goes to this logger, silent unless lowered.
# A client configured with `debug` keeps librdkafka's own log.
CLIENT_LOG = logging.getLogger("kafka_py.librdkafka")
CLIENT_LOG.setLevel(logging.CRITICAL)
CLIENT_LOG.propagate = False


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with librdkafka's log sent to CLIENT_LOG."""
    return config if "debug" in config or "logger" in config else {**config, "logger": CLIENT_LOG}


def _json_option(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise KafkaSourceError(f"option {name!r} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise KafkaSourceError(f"option {name!r} must be a JSON object")
    return value


def report_data_loss(options: SourceOptions, message: str) -> None:
    if options.fail_on_data_loss:
        raise DataLossError(f"{message}. Some data may have been lost; set failOnDataLoss=false "
                            "to continue from what the broker still has")
    log.warning("%s; continuing because failOnDataLoss=false", message)


# -- broker outages (see the module docstring) ---------------------------------------------

OUTAGE_FILE = "BROKER_OUTAGE"
# retries after an unanswered query: the first after this long, doubling up to the cap
BACKOFF_S = (1.0, 30.0)
# a read that gets no record for this long (or pollTimeoutMs if shorter) asks the broker,
# and gives it this long (or endOffsetProbeTimeoutMs if shorter) to answer
READ_PROBE_AFTER_S = 10.0
READ_PROBE_TIMEOUT_S = 5.0
# without an outage file, one warning this often while waiting
OUTAGE_LOG_EVERY_S = 60.0


def outage_file_for(pause_file: str) -> str:
    """Where the connector reports an outage for a job whose pause file is `pause_file`."""
    return os.path.join(os.path.dirname(pause_file) or ".", OUTAGE_FILE)


def read_outage(path: str) -> dict[str, Any] | None:
    """The outage reported in `path`, or None (no file, or one being replaced)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("since"), (int, float)) else None


def report_outage(path: str, since: float, servers: str, where: str, error: str) -> None:
    """Write (atomically) that `servers` has not answered since `since` (epoch seconds);
    an outage already reported keeps its earlier start."""
    known = read_outage(path)
    if known is not None:
        since = min(since, float(known["since"]))
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"since": since, "servers": servers, "where": where, "error": error}, fh)
        os.replace(tmp, path)
    except OSError as exc:  # a report is a courtesy; never fail a read over it
        log.warning("cannot write the outage report %s: %s", path, exc)


def clear_outage(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class Outage:
    """One client's wait for a broker that does not answer: since when, when to ask again
    (backoff), and the report (the outage file, or a warning a minute without one)."""

    def __init__(self, options: SourceOptions, where: str) -> None:
        self.options = options
        self.where = where
        self.since: float | None = None  # epoch seconds
        self.next_try = 0.0  # monotonic
        self._delay = BACKOFF_S[0]
        self._logged = 0.0

    @property
    def waiting(self) -> bool:
        return self.since is not None

    def due(self) -> bool:
        return self.since is None or time.monotonic() >= self.next_try

    def failed(self, error: object, since: float | None = None) -> None:
        """A query got no answer; `since` (epoch seconds, default now) is when it was
        asked, the start of the outage unless one is already under way."""
        now = time.monotonic()
        if self.since is None:
            self.since = time.time() if since is None else since
            self._delay = BACKOFF_S[0]
        else:
            self._delay = min(self._delay * 2, BACKOFF_S[1])
        self.next_try = now + self._delay
        if self.options.outage_file:
            report_outage(self.options.outage_file, self.since, self.options.servers, self.where, str(error))
        elif now - self._logged >= OUTAGE_LOG_EVERY_S or not self._logged:
            self._logged = now
            log.warning("broker %s unreachable for %.0f s while %s (%s); waiting", self.options.servers,
                        time.time() - self.since, self.where, error)

    def recovered(self) -> None:
        if self.since is None:
            return
        if self.options.outage_file:
            clear_outage(self.options.outage_file)
        else:
            log.warning("broker %s answers again after %.0f s", self.options.servers, time.time() - self.since)
        self.since, self._logged = None, 0.0


def _answer(what: str, call: Any) -> Any:
    """`call()`, its client errors sorted: no answer is BrokerUnavailable, anything else
    KafkaSourceError."""
    from confluent_kafka import KafkaException

    try:
        return call()
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        raise _sorted_error(what, error) from None


def _sorted_error(what: str, error: Any) -> KafkaSourceError:
    code = error.code() if hasattr(error, "code") else None
    fatal = error.fatal() if hasattr(error, "fatal") else False
    if not fatal and code in OUTAGE_ERRORS:
        return BrokerUnavailable(f"{what}: {error}")
    return KafkaSourceError(f"{what}: {error}")


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
        metadata = _answer("Metadata", lambda: self._consumer.list_topics(timeout=self.options.probe_timeout_s))
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
        answers = _answer("ListOffsets", lambda: self._consumer.offsets_for_times(
            [KafkaTP(t, p, spec) for t, p in tps], timeout=self.options.probe_timeout_s))
        out: Offsets = {}
        for tp in answers:
            if tp.error is not None:
                raise _sorted_error(f"ListOffsets for {tp.topic}-{tp.partition}", tp.error)
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
            log.warning("end-offset probe got no Fetch answer for %s; using ListOffsets", sorted(pending))
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


def resolve_offsets(spec: str, tps: Sequence[TopicPartition], offsets: OffsetReader, *, what: str) -> Offsets:
    """`earliest`, `latest` or Spark's JSON `{"topic": {"0": offset}}` (-2 earliest, -1 latest)
    to concrete offsets for every partition in `tps`."""
    if spec.lower() == "earliest":
        return offsets.earliest(tps)
    if spec.lower() == "latest":
        return offsets.latest(tps)
    given = offsets_from_json(_json_option(what, spec))
    if set(given) != set(tps):
        raise KafkaSourceError(
            f"{what} must give an offset for every subscribed partition (use -2 for earliest, -1 for "
            f"latest); missing {sorted(set(tps) - set(given))}, unknown {sorted(set(given) - set(tps))}")
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


def plan_partitions(start: Offsets, end: Offsets, options: SourceOptions) -> list[KafkaInputPartition]:
    out = []
    for topic, partition in sorted(end):
        begin, until = start.get((topic, partition), 0), end[(topic, partition)]
        if until < begin:
            report_data_loss(options, f"{topic}-{partition}: end offset {until} is below start offset {begin} "
                                      "(topic recreated or log truncated)")
        elif until > begin:
            out.append(KafkaInputPartition(topic, partition, begin, until))
    return out


def read_range(options: SourceOptions, split: KafkaInputPartition) -> Iterator[Any]:
    """Yield Arrow record batches holding exactly the records of `split`'s `[start, end)`.
    Offsets without a record (compaction, transaction markers) are skipped. Waits out a
    broker that does not answer; fails when the consumer makes no progress for
    `kafkaConsumer.pollTimeoutMs` while the broker answers (module docstring, "Broker outages")."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as KafkaTP
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(SCHEMA, timezone="UTC")
    columns: list[list[Any]] = [[], [], []]  # key, value, offset; timestamps separately
    timestamps: list[int | None] = []

    def flush() -> Any:
        n = len(timestamps)
        batch = pa.RecordBatch.from_arrays(
            [pa.array(columns[0], pa.binary()), pa.array(columns[1], pa.binary()),
             pa.array([split.topic] * n, pa.string()), pa.array([split.partition] * n, pa.int32()),
             pa.array(columns[2], pa.int64()), pa.array(timestamps, pa.timestamp("us", tz="UTC"))],
            schema=arrow_schema)
        for column in columns:
            column.clear()
        timestamps.clear()
        return batch

    position = split.start
    last_error = None
    outage = Outage(options, f"reading {split.topic}-{split.partition}")
    probe_after = min(options.poll_timeout_s, READ_PROBE_AFTER_S)
    consumer = Consumer(options.consumer_config())
    try:
        consumer.assign([KafkaTP(split.topic, split.partition, position)])
        last_progress = time.monotonic()
        next_probe = last_progress + probe_after
        while position < split.end:
            now = time.monotonic()
            if now >= next_probe:
                try:
                    _answer("ListOffsets", lambda: consumer.get_watermark_offsets(
                        KafkaTP(split.topic, split.partition), timeout=min(options.probe_timeout_s,
                                                                           READ_PROBE_TIMEOUT_S), cached=False))
                except BrokerUnavailable as exc:
                    outage.failed(last_error or exc, since=time.time() - (now - last_progress))
                    next_probe = outage.next_try
                    continue
                now = time.monotonic()
                if outage.waiting:
                    outage.recovered()
                    last_progress = now  # the no-progress deadline starts afresh after an outage
                elif now - last_progress > options.poll_timeout_s:
                    raise KafkaSourceError(
                        f"{split.topic}-{split.partition}: no records for {options.poll_timeout_s:.0f}s while "
                        f"reading [{split.start}, {split.end}) although the broker answers; stuck at offset "
                        f"{position}; last client error: {last_error} (raise kafkaConsumer.pollTimeoutMs if "
                        "the broker is just slow)")
                next_probe = now + min(probe_after, max(0.5, last_progress + options.poll_timeout_s - now))
            for msg in next_messages(consumer, 1.0):
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        # Everything below the EOF offset has been delivered: reaching `end`
                        # this way also covers offsets with no record (compaction, markers).
                        if msg.offset() < split.end:
                            report_data_loss(options, f"{split.topic}-{split.partition}: log ends at "
                                                      f"{msg.offset()}, before the planned end {split.end}")
                        position = split.end
                        break
                    if error.code() == KafkaError._AUTO_OFFSET_RESET:
                        position = _restart_after_out_of_range(consumer, options, split, position)
                        last_progress = time.monotonic()
                        break
                    if error.fatal() or error.code() in PERMANENT_ERRORS:
                        raise KafkaSourceError(f"{split.topic}-{split.partition}: {error}")
                    last_error = error  # transient (disconnects): librdkafka retries
                    continue
                offset = msg.offset()
                if offset >= split.end:
                    position = split.end
                    break
                if offset < position:  # librdkafka trims batches, but never trust it
                    continue
                ts_type, ts = msg.timestamp()
                columns[0].append(msg.key())
                columns[1].append(msg.value())
                columns[2].append(offset)
                timestamps.append(ts * 1000 if ts_type != 0 and ts >= 0 else None)
                position = offset + 1
                last_progress = time.monotonic()
                next_probe = last_progress + probe_after
                if outage.waiting:
                    outage.recovered()
                if len(timestamps) >= READ_BATCH_ROWS:
                    yield flush()
    finally:
        consumer.close()
    if timestamps:
        yield flush()


def next_messages(consumer: Any, timeout_s: float) -> list[Any]:
    """What the consumer has now, or else the first message within `timeout_s`
    (`consume(n, timeout)` alone waits out the whole timeout unless `n` messages come)."""
    messages = consumer.consume(num_messages=READ_BATCH_ROWS, timeout=0)
    if messages:
        return messages
    message = consumer.poll(timeout_s)
    return [message] if message is not None else []


def _restart_after_out_of_range(consumer: Any, options: SourceOptions, split: KafkaInputPartition,
                                position: int) -> int:
    from confluent_kafka import TopicPartition as KafkaTP

    low, _ = consumer.get_watermark_offsets(KafkaTP(split.topic, split.partition),
                                            timeout=options.probe_timeout_s)
    if low <= position:
        raise KafkaSourceError(f"{split.topic}-{split.partition}: offset {position} reported out of range "
                               f"but the log starts at {low}")
    report_data_loss(options, f"{split.topic}-{split.partition}: offsets [{position}, {low}) were deleted "
                              "before they were read")
    resume = min(low, split.end)
    if resume < split.end:
        consumer.assign([KafkaTP(split.topic, split.partition, resume)])
    return resume


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._offsets: OffsetReader | None = None
        self._target: Offsets | None = None  # pinned by Trigger.AvailableNow
        self._outage = Outage(options, "planning a micro-batch")
        self._available: Offsets | None = None  # the end offsets last seen (reportLatestOffset)

    def __getstate__(self) -> dict[str, Any]:
        # `read` is shipped to executors with this object; clients stay on the driver.
        return {"options": self.options, "_offsets": None, "_target": None, "_outage": None, "_available": None}

    @property
    def offsets(self) -> OffsetReader:
        if self._offsets is None:
            self._offsets = OffsetReader(self.options)
        return self._offsets

    def _until_answered(self, query: Any) -> Any:
        """`query()`, asked again with backoff while the broker does not answer, for the
        calls that must return offsets. A stop (the pause file) ends the wait."""
        while True:
            asked = time.time()
            try:
                answer = query()
            except BrokerUnavailable as exc:
                self._outage.failed(exc, since=asked)
            else:
                self._outage.recovered()
                return answer
            while not self._outage.due():
                if self.options.paused():
                    raise KafkaSourceError(f"stopped while waiting for the broker {self.options.servers}")
                time.sleep(0.2)  # backoff between queries, watching the pause file

    def initialOffset(self) -> dict:
        return offsets_to_json(self._until_answered(lambda: resolve_offsets(
            self.options.starting_offsets, self.offsets.topic_partitions(), self.offsets, what="startingOffsets")))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._until_answered(lambda: self.offsets.latest(self.offsets.topic_partitions()))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.options.paused():
            return start  # the job is stopping (streaming.runner): admit nothing new
        begin = offsets_from_json(start)
        if self._target is not None:
            available = dict(self._target)
        elif not self._outage.due():
            return start  # the broker did not answer lately: no batch until the next try
        else:
            asked = time.time()
            try:
                available = self.offsets.latest(self.offsets.topic_partitions())
            except BrokerUnavailable as exc:
                self._outage.failed(exc, since=asked)  # unanswered since it was asked
                return start  # nothing new is admitted; the next trigger asks again
            self._outage.recovered()
            if self.options.paused():
                return start  # the stop came while the broker was asked
        self._available = available
        for tp in sorted(set(begin) - set(available)):
            report_data_loss(self.options, f"{tp[0]}-{tp[1]} is gone from the subscription")
        # Never step back on a partition Spark has read: a lower answer means data loss,
        # which plan_partitions reports; the limit applies only to what is ahead.
        ahead = {tp: max(o, begin.get(tp, 0)) for tp, o in available.items()}
        if isinstance(limit, ReadMaxRows):
            limited = rate_limit(begin, ahead, limit.max_rows)
        elif isinstance(limit, ReadAllAvailable):
            limited = ahead
        else:
            raise KafkaSourceError(f"read limit {limit!r} is not supported")
        end = {tp: (available[tp] if available[tp] < begin.get(tp, 0) else limited[tp]) for tp in available}
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict | None:
        # the progress's `latestOffset`: with `endOffset`, the job's lag
        return None if self._available is None else offsets_to_json(self._available)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return plan_partitions(offsets_from_json(start), offsets_from_json(end), self.options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        return read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        # Spark's checkpoint is the source of truth; nothing is committed to Kafka.
        pass

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


class KafkaBatchReader(DataSourceReader):
    """`spark.read.format("kafka-py")`: `startingOffsets` (default earliest) to
    `endingOffsets` (default latest), resolved once when the scan is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        offsets = OffsetReader(self.options)
        try:
            tps = offsets.topic_partitions()
            start = resolve_offsets(self.options.starting_offsets, tps, offsets, what="startingOffsets")
            end = resolve_offsets(self.options.ending_offsets, tps, offsets, what="endingOffsets")
        finally:
            offsets.close()
        return plan_partitions(start, end, self.options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaInputPartition)
        return read_range(self.options, partition)


class KafkaDataSource(DataSource):
    """Register with `spark.dataSource.register(KafkaDataSource)`, then use
    `format("kafka-py")` with Spark's Kafka option names."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from streaming.kafka_sink import KafkaBatchWriter, SinkOptions

        if overwrite:
            raise KafkaSourceError(f"{SHORT_NAME} appends to topics; overwrite is not supported")
        return KafkaBatchWriter(SinkOptions.parse(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from streaming.kafka_sink import KafkaStreamWriter, SinkOptions

        return KafkaStreamWriter(SinkOptions.parse(self.options, schema))


def register(spark: Any) -> None:
    """Make `format("kafka-py")` available in `spark`."""
    spark.dataSource.register(KafkaDataSource)
