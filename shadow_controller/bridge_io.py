"""The bridge's I/O: reading a live cluster (`ClusterReader`), producing a poll's events
(`EventsWriter`) and keeping the bridge's position (`load_state`, `save_state`).

* Brokers, the controller id and the cluster id come from confluent-kafka's
  `AdminClient.describe_cluster`.
* The controller's rule set comes from kafka-python's ApiVersions answer
  (`KafkaAdminClient.describe_features` for the finalized features, `api_versions` for the
  API keys); `cluster_rules.detect` reads it.
* Partitions come from one Metadata response read with kafka-python
  (`KafkaAdminClient.describe_topics`), because confluent-kafka's `PartitionMetadata` and
  `TopicPartitionInfo` have no leader epoch while Metadata v7+ carries it; leader, ISR and
  epoch therefore come from the same response and agree with each other. What no admin
  API shows gets a stand-in (`cluster_view.settle`).
* Events go to partition 0 of the events topic (the contract wants one ordered log), each
  delivery confirmed, or `streaming.kafka.errors.DeliveryFailed`.
* The state file holds the last emitted view, written atomically (write, fsync, rename).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from streaming.kafka.errors import DeliveryFailed
from streaming.kafka.producer import CheckedProducer

from .cluster_rules import ClusterRules, detect
from .cluster_view import ClusterView, PartitionView, TopicView, event_key
from .errors import BridgeError, ClusterUnreachable

STATE_VERSION = 1
# ApiKeys.API_VERSIONS
API_VERSIONS_KEY = 18


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
            self._admin = AdminClient(
                {
                    "bootstrap.servers": self.bootstrap_servers,
                    "log_level": 0,
                    "client.id": "shadow-controller-bridge",
                }
            )
        try:
            cluster = self._admin.describe_cluster(request_timeout=self.timeout_s).result(
                timeout=self.timeout_s + 5
            )
        except (KafkaException, TimeoutError) as exc:
            raise ClusterUnreachable(f"describe_cluster failed: {exc}") from None
        brokers = [node.id for node in cluster.nodes]
        controller = cluster.controller.id if cluster.controller is not None else None
        topics = self._read_topics()
        return ClusterView.of(brokers, controller, topics, cluster_id=cluster.cluster_id)

    def read_rules(self) -> ClusterRules:
        """Which controller the cluster runs, from one broker's ApiVersions answer."""
        import kafka.errors

        try:
            admin = self._kafka_admin()
            versions = {int(key): span for key, span in admin.api_versions().items()}
            # ApiVersions v3 (Kafka 2.4, KIP-584) is the first to carry features
            features = (
                admin.describe_features() if versions.get(API_VERSIONS_KEY, (0, 0))[1] >= 3 else {}
            )
        except kafka.errors.KafkaError as exc:
            self._close_metadata()
            raise ClusterUnreachable(f"ApiVersions request failed: {exc!r}") from None
        return detect(finalized_levels(features), versions)

    def _kafka_admin(self) -> Any:
        if self._metadata is None:
            from kafka import KafkaAdminClient

            timeout_ms = int(self.timeout_s * 1000)
            self._metadata = KafkaAdminClient(
                bootstrap_servers=self.bootstrap_servers,
                client_id="shadow-controller-bridge",
                request_timeout_ms=timeout_ms,
                bootstrap_timeout_ms=timeout_ms,
            )
        return self._metadata

    def _read_topics(self) -> dict[str, TopicView]:
        import kafka.errors

        try:
            described = self._kafka_admin().describe_topics()
        except kafka.errors.KafkaError as exc:
            self._close_metadata()
            raise ClusterUnreachable(f"Metadata request failed: {exc!r}") from None
        return topics_from_metadata(described)

    def _close_metadata(self) -> None:
        if self._metadata is not None:
            with contextlib.suppress(Exception):
                self._metadata.close()
            self._metadata = None

    def close(self) -> None:
        self._close_metadata()
        self._admin = None


def finalized_levels(features: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """{feature: finalized max version level} of kafka-python's `describe_features` answer
    (`{name: {"supported": (min, max), "finalized": (min, max), ...}}`)."""
    return {
        name: int(f["finalized"][1])
        for name, f in features.items()
        if f.get("finalized") is not None
    }


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
                tuple(p["replica_nodes"]),
                int(p["leader_id"]),
                tuple(p["isr_nodes"]),
                None if epoch is None or epoch < 0 else int(epoch),
            )
        topic_id = t.get("topic_id")
        # the all-zero UUID is Metadata's "no topic id" (before v10, or an old cluster)
        topic_id = (
            None
            if topic_id is None or (isinstance(topic_id, uuid.UUID) and topic_id.int == 0)
            else str(topic_id)
        )
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
        self._producer = CheckedProducer(
            {
                "bootstrap.servers": bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "log_level": 0,
                "client.id": "shadow-controller-bridge",
                "message.timeout.ms": int(max(timeout_s, 1) * 1000),
            }
        )

    def write(self, events: list[dict[str, Any]], ts_ms: int) -> None:
        self._maybe_create_topic()
        try:
            for event in events:
                # an event that carries its own time (the ZooKeeper bridge's: the znode's
                # mtime) keeps it
                value = json.dumps(
                    {**event, "ts": event.get("ts", ts_ms)}, separators=(",", ":")
                ).encode()
                self._producer.send(self.topic, value, key=event_key(event).encode(), partition=0)
            self._producer.confirm(self.timeout_s + 1)
        except DeliveryFailed as exc:
            raise DeliveryFailed(f"events to {self.topic!r} not confirmed: {exc}") from None

    def _maybe_create_topic(self) -> None:
        """Create the events topic with one partition if it is missing: an auto-created topic
        gets the broker's default partition count, and the contract wants one ordered log."""
        if self._topic_ready:
            return
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient({"bootstrap.servers": self._bootstrap_servers, "log_level": 0})
        future = admin.create_topics([NewTopic(self.topic, 1)], request_timeout=self.timeout_s)[
            self.topic
        ]
        try:
            future.result(timeout=self.timeout_s + 5)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise DeliveryFailed(
                    f"cannot create the events topic {self.topic!r}: {exc.args[0]}"
                ) from None
        except TimeoutError:
            raise DeliveryFailed(
                f"cannot create the events topic {self.topic!r}: timed out"
            ) from None
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
