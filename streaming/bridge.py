"""`shadow-controller bridge`: a live cluster's metadata, turned into contract events.

Theory of operation. Every `--interval` seconds the bridge takes a `ClusterView` of the live
cluster (brokers, the controller id, every partition's replicas, leader, leader epoch and
ISR), compares it with the last view it emitted, and produces what changed to the events
topic as contract v1 events. `diff(previous, current)` is the pure part: the view it
emitted last and the view it sees now in, the events out. The shell around it only reads,
produces and saves.

First poll (no state file): the bootstrap, what a newly elected Kafka controller reads from
its store: `BrokerStartup` for every broker and a `PartitionStateSnapshot` for every
partition (loaded while the shadow is inactive), then `ControllerFailover`.

Later polls, in this order (KafkaController.processBrokerChange starts new brokers before it
fails dead ones): `BrokerStartup` for brokers that joined, `BrokerFailure` for brokers that
left, `ControllerFailover` when the controller id changed, `TopicDeletion`, `TopicCreation`
(a topic whose id changed is a deletion then a creation), `PartitionExpansion`, and last an
`ObservedPartitionState` for every partition that is new or whose leader, ISR (as a set) or
leader epoch changed. A poll where nothing changed emits nothing.

What the admin API shows and what stands in for what it does not:

* Brokers, the controller id and the cluster id come from confluent-kafka's
  `AdminClient.describe_cluster`.
* Partitions come from one Metadata response read with kafka-python
  (`KafkaAdminClient.describe_topics`), because confluent-kafka's `PartitionMetadata` and
  `TopicPartitionInfo` have no leader epoch while Metadata v7+ carries it; leader, ISR and
  epoch therefore come from the same response and agree with each other.
  If the broker answers an older Metadata version (or -1), the leader epoch is a stand-in:
  0 for a new partition, +1 whenever the observed leader changes.
* The partition epoch (ZK znode version / KRaft partition epoch) is not exposed by any admin
  API: `ObservedPartitionState` omits it (the shadow then compares leader, epoch and ISR),
  and `PartitionStateSnapshot` carries the stand-in `SNAPSHOT_PARTITION_EPOCH` (0).
* The controller epoch is not exposed either: 1 for the first controller seen, +1 whenever
  the observed controller id changes to another broker. Snapshots carry the current one.
* Broker epochs are not exposed: `BrokerStartup` omits `broker_epoch`, so a broker that
  restarts between two polls is not seen as a bounce.

Position. The state file holds the last emitted view. It is written atomically, and only
after every event of the poll was confirmed delivered, so a restart emits nothing for what
was already emitted, and a crash between produce and save re-emits at most that one poll.

Failures. An unreachable cluster (or events cluster) is one log line per failed attempt,
with the error and the next retry time, and a capped exponential backoff; it never raises.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from state_machines.errors import ShadowControllerError

from . import exits
from .kafka.errors import DeliveryFailed as ProducerDeliveryFailed
from .kafka.producer import CheckedProducer

log = logging.getLogger(__name__)

NO_LEADER = -1
NO_CONTROLLER = -1
SNAPSHOT_PARTITION_EPOCH = 0  # stand-in: the partition epoch is not observable through the admin API
FIRST_CONTROLLER_EPOCH = 1  # stand-in: the controller epoch is not observable either
STATE_VERSION = 1


# ---------------------------------------------------------------------------------------
# the view (pure values)


@dataclass(frozen=True, slots=True)
class PartitionView:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]
    # None: the cluster did not report it (Metadata < v7, or -1); `settle` fills a stand-in.
    leader_epoch: int | None


@dataclass(frozen=True, slots=True)
class TopicView:
    partitions: tuple[tuple[int, PartitionView], ...]  # sorted by partition number
    topic_id: str | None = None

    def partition_map(self) -> dict[int, PartitionView]:
        return dict(self.partitions)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the bridge saw of the cluster in one poll (and, once settled, what it emitted)."""

    brokers: frozenset[int]
    controller_id: int
    topics: tuple[tuple[str, TopicView], ...]  # sorted by name
    controller_epoch: int | None = None  # None until `settle`
    cluster_id: str | None = None

    def topic_map(self) -> dict[str, TopicView]:
        return dict(self.topics)

    @staticmethod
    def of(brokers: Iterable[int], controller_id: int | None,
           topics: Mapping[str, Mapping[int, PartitionView] | TopicView], *,
           cluster_id: str | None = None, controller_epoch: int | None = None) -> ClusterView:
        """Build a view from plain mappings (sorted here, so equal clusters give equal views)."""
        items = []
        for name, value in topics.items():
            tv = value if isinstance(value, TopicView) else TopicView(tuple(sorted(value.items())))
            items.append((name, replace(tv, partitions=tuple(sorted(tv.partitions)))))
        return ClusterView(frozenset(brokers), NO_CONTROLLER if controller_id is None else controller_id,
                           tuple(sorted(items)), controller_epoch, cluster_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "brokers": sorted(self.brokers),
            "controller_id": self.controller_id,
            "controller_epoch": self.controller_epoch,
            "topics": {
                name: {"topic_id": tv.topic_id,
                       "partitions": {str(p): {"replicas": list(pv.replicas), "leader": pv.leader,
                                               "leader_epoch": pv.leader_epoch, "isr": list(pv.isr)}
                                      for p, pv in tv.partitions}}
                for name, tv in self.topics
            },
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> ClusterView:
        topics = {
            name: TopicView(
                tuple(sorted((int(p), PartitionView(tuple(pv["replicas"]), pv["leader"], tuple(pv["isr"]),
                                                    pv["leader_epoch"]))
                             for p, pv in t["partitions"].items())),
                t.get("topic_id"))
            for name, t in doc["topics"].items()
        }
        return ClusterView.of(doc["brokers"], doc["controller_id"], topics,
                              cluster_id=doc.get("cluster_id"), controller_epoch=doc["controller_epoch"])


def settle(previous: ClusterView | None, current: ClusterView) -> ClusterView:
    """Fill what the cluster does not show from the previous emitted view: the controller
    epoch (1 first, +1 when the controller id changes to another broker) and any missing
    leader epoch (0 for a new partition, +1 when the leader changed)."""
    if previous is None or previous.controller_epoch is None:
        epoch = FIRST_CONTROLLER_EPOCH
    elif current.controller_id != NO_CONTROLLER and current.controller_id != previous.controller_id:
        epoch = previous.controller_epoch + 1
    else:
        epoch = previous.controller_epoch
    before = previous.topic_map() if previous is not None else {}
    topics = []
    for name, tv in current.topics:
        old = before.get(name)
        old_parts = old.partition_map() if old is not None and old.topic_id == tv.topic_id else {}
        parts = []
        for p, pv in tv.partitions:
            if pv.leader_epoch is None:
                prev = old_parts.get(p)
                if prev is None or prev.leader_epoch is None:
                    stand_in = 0
                else:
                    stand_in = prev.leader_epoch + (1 if prev.leader != pv.leader else 0)
                pv = replace(pv, leader_epoch=stand_in)
            parts.append((p, pv))
        topics.append((name, replace(tv, partitions=tuple(parts))))
    return replace(current, controller_epoch=epoch, topics=tuple(topics))


# ---------------------------------------------------------------------------------------
# the diff (pure)


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, **fields}


def _snapshot(topic: str, p: int, pv: PartitionView, controller_epoch: int) -> dict[str, Any]:
    return _event("PartitionStateSnapshot", topic=topic, partition=p, replicas=list(pv.replicas), leader=pv.leader,
                  leader_epoch=pv.leader_epoch, isr=list(pv.isr), partition_epoch=SNAPSHOT_PARTITION_EPOCH,
                  controller_epoch=controller_epoch)


def _observed(topic: str, p: int, pv: PartitionView) -> dict[str, Any]:
    # partition_epoch and controller_epoch are left out: the cluster does not show them.
    return _event("ObservedPartitionState", topic=topic, partition=p, leader=pv.leader,
                  leader_epoch=pv.leader_epoch, isr=list(pv.isr), replicas=list(pv.replicas))


def _assignment(parts: Iterable[tuple[int, PartitionView]]) -> dict[str, list[int]]:
    return {str(p): list(pv.replicas) for p, pv in parts}


def _changed(old: PartitionView, new: PartitionView) -> bool:
    return (old.leader != new.leader or old.leader_epoch != new.leader_epoch
            or frozenset(old.isr) != frozenset(new.isr))


def bootstrap(current: ClusterView) -> list[dict[str, Any]]:
    """The first poll: brokers and partition states loaded while inactive, then the failover."""
    _require_settled(current)
    events = [_event("BrokerStartup", broker_id=b) for b in sorted(current.brokers)]
    for name, tv in current.topics:
        events.extend(_snapshot(name, p, pv, current.controller_epoch) for p, pv in tv.partitions)
    if current.controller_id != NO_CONTROLLER:
        events.append(_event("ControllerFailover", controller_id=current.controller_id,
                             controller_epoch=current.controller_epoch))
    return events


def diff(previous: ClusterView | None, current: ClusterView) -> list[dict[str, Any]]:
    """The contract events that take the shadow from `previous` (the last emitted view, None
    before the first poll) to `current` (a settled view). Nothing changed: no events."""
    if previous is None:
        return bootstrap(current)
    _require_settled(current)
    events = [_event("BrokerStartup", broker_id=b) for b in sorted(current.brokers - previous.brokers)]
    events += [_event("BrokerFailure", broker_id=b) for b in sorted(previous.brokers - current.brokers)]
    controller_moved = current.controller_id != previous.controller_id
    if controller_moved and current.controller_id != NO_CONTROLLER:
        events.append(_event("ControllerFailover", controller_id=current.controller_id,
                             controller_epoch=current.controller_epoch))
    before, after = previous.topic_map(), current.topic_map()
    recreated = {n for n in before.keys() & after.keys() if before[n].topic_id != after[n].topic_id}
    events += [_event("TopicDeletion", topic=n) for n in sorted(before.keys() - after.keys() | recreated)]
    created = sorted(after.keys() - before.keys() | recreated)
    events += [_event("TopicCreation", topic=n, partitions=_assignment(after[n].partitions)) for n in created]
    observed: list[dict[str, Any]] = []
    for name, tv in current.topics:
        if name in created:
            observed += [_observed(name, p, pv) for p, pv in tv.partitions]
            continue
        old = before[name].partition_map()
        added = [(p, pv) for p, pv in tv.partitions if p not in old]
        if added:
            events.append(_event("PartitionExpansion", topic=name, partitions=_assignment(added)))
        observed += [_observed(name, p, pv) for p, pv in tv.partitions if p not in old or _changed(old[p], pv)]
    return events + observed


def event_key(event: Mapping[str, Any]) -> str:
    """The record key: the entity the event is about."""
    if "partition" in event:
        return f"{event['topic']}-{event['partition']}"
    if "topic" in event:
        return f"topic-{event['topic']}"
    if "broker_id" in event:
        return f"broker-{event['broker_id']}"
    return "controller"


def _require_settled(view: ClusterView) -> None:
    if view.controller_epoch is None or any(pv.leader_epoch is None for _, tv in view.topics for _, pv in tv.partitions):
        raise ValueError("diff needs a settled view (see settle)")


# ---------------------------------------------------------------------------------------
# the IO shell


class BridgeError(ShadowControllerError):
    """Base of the bridge's errors."""


class ClusterUnreachable(BridgeError):
    """The live cluster did not answer."""


class DeliveryFailed(BridgeError):
    """Some events of a poll were not confirmed by the events cluster."""


class StateMismatch(BridgeError):
    """The state file belongs to another cluster."""


@dataclass
class BridgeSettings:
    bootstrap_servers: str
    events_bootstrap_servers: str | None = None
    topic: str = "controller-events"
    state: str = "bridge-state.json"
    interval_s: float = 10.0
    once: bool = False
    request_timeout_s: float = 10.0
    max_retries: int | None = None  # consecutive failed attempts before giving up; None: never
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    extra: dict[str, str] = field(default_factory=dict)


class ClusterReader:
    """Reads a raw (unsettled) ClusterView. confluent-kafka for the cluster, kafka-python for
    the partitions with their leader epochs (see the module docstring)."""

    def __init__(self, bootstrap_servers: str, timeout_s: float):
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._admin: Any = None
        self._metadata: Any = None

    def read(self) -> ClusterView:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            # log_level 0: librdkafka's own connection chatter would repeat every failure.
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0,
                                       "client.id": "shadow-controller-bridge"})
        try:
            cluster = self._admin.describe_cluster(request_timeout=self.timeout_s).result(timeout=self.timeout_s + 5)
        except (KafkaException, TimeoutError) as exc:
            raise ClusterUnreachable(f"describe_cluster failed: {exc}") from None
        brokers = [node.id for node in cluster.nodes]
        controller = cluster.controller.id if cluster.controller is not None else None
        topics = self._read_topics()
        return ClusterView.of(brokers, controller, topics, cluster_id=cluster.cluster_id)

    def _read_topics(self) -> dict[str, TopicView]:
        import kafka.errors

        timeout_ms = int(self.timeout_s * 1000)
        try:
            if self._metadata is None:
                from kafka import KafkaAdminClient

                self._metadata = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,
                                                  client_id="shadow-controller-bridge",
                                                  request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms)
            described = self._metadata.describe_topics()
        except kafka.errors.KafkaError as exc:
            self._close_metadata()
            raise ClusterUnreachable(f"Metadata request failed: {exc!r}") from None
        return topics_from_metadata(described)

    def _close_metadata(self) -> None:
        if self._metadata is not None:
            try:
                self._metadata.close()
            except Exception:  # noqa: BLE001 - closing a broken client must not hide the real error
                pass
            self._metadata = None

    def close(self) -> None:
        self._close_metadata()
        self._admin = None


def topics_from_metadata(described: Iterable[Mapping[str, Any]]) -> dict[str, TopicView]:
    """Metadata response topics (kafka-python dicts) as TopicViews. A topic without
    partitions yet (still being created) is left out until it has them."""
    topics: dict[str, TopicView] = {}
    for t in described:
        if not t.get("name") or not t.get("partitions"):
            continue
        parts = {}
        for p in t["partitions"]:
            epoch = p.get("leader_epoch")
            parts[int(p["partition_index"])] = PartitionView(
                tuple(p["replica_nodes"]), int(p["leader_id"]), tuple(p["isr_nodes"]),
                None if epoch is None or epoch < 0 else int(epoch))
        topic_id = t.get("topic_id")
        # the all-zero UUID is Metadata's "no topic id" (before v10, or an old cluster)
        topic_id = None if topic_id is None or (isinstance(topic_id, uuid.UUID) and topic_id.int == 0) else str(topic_id)
        topics[t["name"]] = TopicView(tuple(sorted(parts.items())), topic_id)
    return topics


class EventsWriter:
    """Produces a poll's events to partition 0 of the events topic (the contract wants one
    ordered log) and confirms every delivery, or raises DeliveryFailed."""

    def __init__(self, bootstrap_servers: str, topic: str, timeout_s: float):
        self.topic = topic
        self.timeout_s = timeout_s
        self._bootstrap_servers = bootstrap_servers
        self._topic_ready = False
        self._producer = CheckedProducer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True,
                                          "acks": "all", "log_level": 0, "client.id": "shadow-controller-bridge",
                                          "message.timeout.ms": int(max(timeout_s, 1) * 1000)})

    def write(self, events: list[dict[str, Any]], ts_ms: int) -> None:
        self._maybe_create_topic()
        try:
            for event in events:
                value = json.dumps({**event, "ts": ts_ms}, separators=(",", ":")).encode()
                self._producer.send(self.topic, value, key=event_key(event).encode(), partition=0)
            self._producer.confirm(self.timeout_s + 1)
        except ProducerDeliveryFailed as exc:
            raise DeliveryFailed(f"events to {self.topic!r} not confirmed: {exc}") from None


    def _maybe_create_topic(self) -> None:
        """Create the events topic with one partition if it is missing: an auto-created topic
        gets the broker's default partition count, and the contract wants one ordered log."""
        if self._topic_ready:
            return
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self._bootstrap_servers, "log_level": 0})
        future = admin.create_topics([NewTopic(self.topic, 1)], request_timeout=self.timeout_s)[self.topic]
        try:
            future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise DeliveryFailed(f"cannot create the events topic {self.topic!r}: {exc.args[0]}") from None
        except TimeoutError:
            raise DeliveryFailed(f"cannot create the events topic {self.topic!r}: timed out") from None
        self._topic_ready = True


def load_state(path: str) -> ClusterView | None:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return None
    if doc.get("version") != STATE_VERSION:
        raise BridgeError(f"{path}: unsupported bridge state version {doc.get('version')!r}")
    return ClusterView.from_json(doc["view"])


def save_state(path: str, view: ClusterView) -> None:
    """Write-then-rename, with fsyncs, so the file is always a whole previous or new view."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"version": STATE_VERSION, "view": view.to_json()}, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def poll_once(reader: ClusterReader, writer: EventsWriter, state_path: str,
              clock: Callable[[], float] = time.time) -> list[dict[str, Any]]:
    """One poll: read, settle, diff, produce (confirmed), then save the position."""
    previous = load_state(state_path)
    raw = reader.read()
    if previous is not None and previous.cluster_id and raw.cluster_id and previous.cluster_id != raw.cluster_id:
        raise StateMismatch(f"{state_path} holds the position for cluster {previous.cluster_id!r}, "
                            f"but {reader.bootstrap_servers} is cluster {raw.cluster_id!r}")
    current = settle(previous, raw)
    events = diff(previous, current)
    if events:
        writer.write(events, int(clock() * 1000))
    if previous is None or events or current != previous:
        save_state(state_path, current)
    return events


def backoff_delay(failures: int, initial_s: float, max_s: float) -> float:
    """Capped exponential backoff after `failures` consecutive failed attempts (>= 1)."""
    return min(max_s, initial_s * 2 ** min(failures - 1, 62))


def run_bridge(settings: BridgeSettings, *, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.time, reader: ClusterReader | None = None) -> int:
    """The polling loop. Returns 0 after `--once` succeeded (or on Ctrl-C), 1 when
    `max_retries` consecutive attempts failed, 2 when the state file is for another cluster."""
    reader = reader or ClusterReader(settings.bootstrap_servers, settings.request_timeout_s)
    writer: EventsWriter | None = None
    failures = 0
    try:
        while True:
            try:
                if writer is None:
                    writer = EventsWriter(settings.events_bootstrap_servers or settings.bootstrap_servers,
                                          settings.topic, settings.request_timeout_s)
                events = poll_once(reader, writer, settings.state, clock)
            except StateMismatch as exc:
                log.error("bridge: %s; refusing to diff against it", exc)
                return 2
            except (ClusterUnreachable, DeliveryFailed) as exc:
                failures += 1
                if isinstance(exc, ClusterUnreachable):
                    reader.close()
                    what = f"cluster {settings.bootstrap_servers} unreachable"
                else:
                    what = "events not delivered, position not saved"
                if settings.max_retries is not None and failures > settings.max_retries:
                    log.error("bridge: %s (attempt %d): %s; giving up after %d retries",
                              what, failures, exc, settings.max_retries)
                    return 1
                delay = backoff_delay(failures, settings.backoff_initial_s, settings.backoff_max_s)
                at = datetime.fromtimestamp(clock() + delay).strftime("%H:%M:%S")
                log.warning("bridge: %s (attempt %d): %s; next retry at %s (in %.1fs)",
                            what, failures, exc, at, delay)
                sleep(delay)
                continue
            failures = 0
            log.info("bridge: %d events to %s%s", len(events), settings.topic,
                     "" if not events else ": " + ", ".join(_summary(events)))
            if settings.once:
                return 0
            sleep(settings.interval_s)
    except KeyboardInterrupt:
        return 0
    finally:
        reader.close()


def _summary(events: list[dict[str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    return [f"{n} {t}" for t, n in counts.items()]


# ---------------------------------------------------------------------------------------
# CLI


def cmd_bridge(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # kafka-python logs each connection failure itself; the bridge reports each failure once.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    settings = BridgeSettings(
        bootstrap_servers=args.bootstrap_servers, events_bootstrap_servers=args.events_bootstrap_servers,
        topic=args.topic, state=args.state, interval_s=args.interval, once=args.once,
        request_timeout_s=args.timeout, max_retries=args.max_retries,
        backoff_initial_s=args.backoff_initial, backoff_max_s=args.backoff_max,
    )
    return BRIDGE_EXIT_CODES.get(run_bridge(settings), exits.JOB_FAILED)


# run_bridge's outcomes: done, gave up after --max-retries failed attempts (the cluster or
# the events cluster did not answer), the state file is another cluster's
BRIDGE_EXIT_CODES = {0: exits.OK, 1: exits.UNREACHABLE, 2: exits.USAGE}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bridge", help="turn a live cluster's metadata changes into controller events")
    p.add_argument("--bootstrap-servers", "--bootstrap-server", dest="bootstrap_servers", required=True,
                   help="the live cluster to observe")
    p.add_argument("--events-bootstrap-servers", "--events-bootstrap-server", dest="events_bootstrap_servers",
                   help="where the events topic is (default: the live cluster)")
    p.add_argument("--topic", default="controller-events", help="events topic (default: controller-events)")
    p.add_argument("--state", default="bridge-state.json", help="the bridge's position (last emitted view)")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="poll interval (default 10)")
    p.add_argument("--once", action="store_true", help="poll once (retrying on failure), then exit")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="admin request timeout (default 10)")
    p.add_argument("--max-retries", type=int, default=None,
                   help="give up (exit 1) after this many consecutive failed attempts (default: never)")
    p.add_argument("--backoff-initial", type=float, default=1.0, metavar="SECONDS", help=argparse.SUPPRESS)
    p.add_argument("--backoff-max", type=float, default=60.0, metavar="SECONDS", help="backoff cap (default 60)")
    p.set_defaults(func=cmd_bridge)
    return p
