"""The state a metadata log replays to, as the quorum controller's managers keep it.

Source (apache/kafka 3.9.0, metadata/src/main/java/org/apache/kafka/controller/):
`QuorumController.replay` dispatches each record to its manager:

* `FeatureControlManager.replay(FeatureLevelRecord)`: metadata.version and
  eligible.leader.replicas.version (4.0), the settings the rules read;
* `ClusterControlManager.replay`: the broker registrations (the KRaft rules'
  `BrokerRegistry.replay`);
* `ReplicationControlManager.replay`: topics (TopicRecord, RemoveTopicRecord), partitions
  (PartitionRecord, PartitionChangeRecord: `PartitionRegistration.merge`), 4.0's
  ClearElrRecord, and the indexes `BrokersToIsrs` (partitions by ISR member, and those
  without a leader) and `BrokersToElrs` that the handlers iterate;
* `ConfigurationControlManager.replay(ConfigRecord)`: configs, resolved for a topic as
  `getTopicConfig` does: the topic's, then the active controller's node config, then the
  cluster default (resource name ""), then the static config (not in the log: Kafka's
  defaults unless the caller says otherwise).

The log state is always the log's: a prediction that differs from the log never enters it,
so one divergence does not make the next event diverge.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShadowControllerError
from ..kraft.cluster_control import BrokerRegistry, ClusterControlError
from ..kraft.metadata_version import MetadataVersion
from ..kraft.partition_registration import PartitionRegistration
from ..kraft.records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    BrokerRegistrationChangeRecord,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)
from ..kraft.replication_control import TopicContext, effective_min_isr
from ..model import NO_LEADER
from .entries import LogEntry, broker_record, partition_change_record, partition_record

TopicPartition = tuple[str, int]  # (topic id, partition id)

MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
METADATA_VERSION = "metadata.version"
ELR_VERSION = "eligible.leader.replicas.version"


class ReplayError(ShadowControllerError):
    """A record Kafka's replay refuses (an unknown broker epoch, a partition of no topic):
    the log broke an invariant."""


@dataclass(frozen=True, slots=True)
class StaticConfig:
    """The controller's own server.properties, which the log does not hold: Kafka's
    defaults (ServerLogConfigs, ReplicationConfigs)."""

    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False


@dataclass
class LogState:
    static: StaticConfig = field(default_factory=StaticConfig)
    # before any FeatureLevelRecord: the oldest KRaft version (MINIMUM_KRAFT_VERSION)
    mv: MetadataVersion = MetadataVersion.IBP_3_0_IV1
    mv_seen: bool = False
    elr_version: int = 0
    registry: BrokerRegistry = field(default_factory=BrokerRegistry)
    topic_names: dict[str, str] = field(default_factory=dict)  # id -> name
    topic_ids: dict[str, str] = field(default_factory=dict)  # name -> id
    partitions: dict[str, dict[int, PartitionRegistration]] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    controller_id: int | None = None
    isr_index: dict[int, set[TopicPartition]] = field(default_factory=dict)
    elr_index: dict[int, set[TopicPartition]] = field(default_factory=dict)
    leaderless: set[TopicPartition] = field(default_factory=set)
    _contexts: dict[str, TopicContext] = field(default_factory=dict)

    # -- reading ---------------------------------------------------------------------

    def partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        parts = self.partitions.get(topic_id)
        return None if parts is None else parts.get(partition_id)

    def name_of(self, topic_id: str) -> str:
        return self.topic_names.get(topic_id, topic_id)

    def label(self, tp: TopicPartition) -> str:
        return f"{self.name_of(tp[0])}-{tp[1]}"

    def with_broker_in_isr(self, broker_id: int) -> list[TopicPartition]:
        return sorted(self.isr_index.get(broker_id, ()))

    def with_broker_in_elr(self, broker_id: int) -> list[TopicPartition]:
        return sorted(self.elr_index.get(broker_id, ()))

    def without_leader(self) -> list[TopicPartition]:
        return sorted(self.leaderless)

    def _config(self, name: str, topic: str) -> str | None:
        for key in (
            (CONFIG_RESOURCE_TOPIC, topic),
            (CONFIG_RESOURCE_BROKER, str(self.controller_id)),
            (CONFIG_RESOURCE_BROKER, ""),
        ):
            value = self.configs.get(key, {}).get(name)
            if value is not None:
                return value
        return None

    def unclean_allowed(self, topic: str) -> bool:
        """`uncleanLeaderElectionEnabledForTopic`: Boolean.parseBoolean, untrimmed."""
        value = self._config(UNCLEAN_LEADER_ELECTION_ENABLE, topic)
        if value is None:
            return self.static.unclean_leader_election_enable
        return value.lower() == "true"

    def context(self, topic_id: str) -> TopicContext:
        """What ReplicationControlManager looks up for the topic (`getTopicEffectiveMinIsr`:
        min.insync.replicas capped at partition 0's replication factor)."""
        made = self._contexts.get(topic_id)
        if made is not None:
            return made
        name = self.name_of(topic_id)
        value = self._config(MIN_INSYNC_REPLICAS, name)
        try:
            min_isr = int(value.strip()) if value is not None else self.static.min_insync_replicas
        except ValueError:
            min_isr = self.static.min_insync_replicas
        zero = self.partition(topic_id, 0)
        if zero is not None and zero.replicas:
            min_isr = effective_min_isr(min_isr, len(zero.replicas))
        made = self._contexts[topic_id] = TopicContext(
            topic_id=topic_id,
            metadata_version=self.mv,
            min_isr=min_isr,
            unclean_leader_election=self.unclean_allowed(name),
            eligible_leader_replicas_enabled=self.elr_version >= 1,
            name=name,
        )
        return made

    # -- replay ----------------------------------------------------------------------

    def set_partition(
        self, tp: TopicPartition, old: PartitionRegistration | None, new: PartitionRegistration
    ) -> None:
        """The partition's new registration, with `BrokersToIsrs`/`BrokersToElrs` kept."""
        self.partitions.setdefault(tp[0], {})[tp[1]] = new
        if tp[1] == 0:
            self._contexts.pop(tp[0], None)  # partition 0's replication factor
        old_isr = old.isr if old is not None else ()
        if old_isr != new.isr:
            for b in old_isr:
                members = self.isr_index.get(b)
                if members is not None:
                    members.discard(tp)
            for b in new.isr:
                self.isr_index.setdefault(b, set()).add(tp)
        old_elr = old.elr if old is not None else ()
        if old_elr != new.elr:
            for b in old_elr:
                members = self.elr_index.get(b)
                if members is not None:
                    members.discard(tp)
            for b in new.elr:
                self.elr_index.setdefault(b, set()).add(tp)
        if new.leader == NO_LEADER:
            self.leaderless.add(tp)
        elif old is None or old.leader == NO_LEADER:
            self.leaderless.discard(tp)

    def _remove_partition(self, tp: TopicPartition, reg: PartitionRegistration) -> None:
        for b in reg.isr:
            self.isr_index.get(b, set()).discard(tp)
        for b in reg.elr:
            self.elr_index.get(b, set()).discard(tp)
        self.leaderless.discard(tp)

    def replay(self, e: LogEntry) -> None:
        """`QuorumController.replay` of one record; records the rules do not read (quotas,
        ACLs, producer ids, no-ops, ...) change nothing here."""
        name, f = e.name, e.fields
        try:
            if name == "PartitionChangeRecord":
                self.replay_change(partition_change_record(f))
            elif name == "PartitionRecord":
                self.replay_partition(partition_record(f))
            elif name == "TopicRecord":
                topic_id, topic = str(f["topic_id"]), str(f["name"])
                self.topic_names[topic_id] = topic
                self.topic_ids[topic] = topic_id
                self.partitions.setdefault(topic_id, {})
            elif name == "RemoveTopicRecord":
                self._remove_topic(str(f["topic_id"]))
            elif name == "ConfigRecord":
                self._replay_config(f)
            elif name == "FeatureLevelRecord":
                self._replay_feature(str(f["name"]), int(f["feature_level"]))
            elif name == "ClearElrRecord":
                self.replay_clear_elr(str(f.get("topic_name") or ""))
            elif name == "LeaderChange" and e.control:
                leader = int(f.get("leader_id", -1))
                if leader != self.controller_id:
                    self.controller_id = leader
                    self._contexts.clear()
            else:
                record = broker_record(name, f)
                if isinstance(record, BrokerRegistrationChangeRecord) and (
                    record.fenced not in (-1, 0, 1) or record.in_controlled_shutdown not in (0, 1)
                ):
                    # ClusterControlManager.replay: BrokerRegistrationFencingChange.fromValue
                    # and BrokerRegistrationInControlledShutdownChange.fromValue throw
                    raise ReplayError(f"unknown value for fenced or inControlledShutdown: {record}")
                if record is not None:
                    self.registry = self.registry.replay(record)
        except ReplayError:
            raise
        except (ClusterControlError, ShadowControllerError) as exc:
            raise ReplayError(str(exc)) from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise ReplayError(f"{name} at offset {e.offset}: {exc!r}") from exc

    def replay_partition(self, r: MetadataPartitionRecord) -> None:
        tp = (r.topic_id, r.partition_id)
        if r.topic_id not in self.topic_names:
            raise ReplayError(f"PartitionRecord of unknown topic id {r.topic_id}")
        self.set_partition(tp, self.partition(*tp), PartitionRegistration.from_record(r))

    def replay_change(self, r: PartitionChangeRecord) -> PartitionRegistration:
        tp = (r.topic_id, r.partition_id)
        old = self.partition(*tp)
        if old is None:
            raise ReplayError(
                f"PartitionChangeRecord of unknown partition {r.topic_id}:{r.partition_id}"
            )
        new = old.merge(r)
        self.set_partition(tp, old, new)
        return new

    def replay_clear_elr(self, topic: str) -> None:
        """4.0's `ReplicationControlManager.replay(ClearElrRecord)` (`removeTopicElrs`): a
        partition with an ELR or last known ELR has both emptied (a merge: its partition
        epoch moves); "" means every topic."""
        ids = [self.topic_ids[topic]] if topic in self.topic_ids else []
        if not topic:
            ids = list(self.partitions)
        for topic_id in ids:
            for pid, reg in list(self.partitions.get(topic_id, {}).items()):
                if reg.elr or reg.last_known_elr:
                    change = PartitionChangeRecord(
                        topic_id, pid, eligible_leader_replicas=(), last_known_elr=()
                    )
                    self.set_partition((topic_id, pid), reg, reg.merge(change))

    def _remove_topic(self, topic_id: str) -> None:
        name = self.topic_names.pop(topic_id, None)
        if name is None:
            raise ReplayError(f"RemoveTopicRecord of unknown topic id {topic_id}")
        self.topic_ids.pop(name, None)
        for pid, reg in self.partitions.pop(topic_id, {}).items():
            self._remove_partition((topic_id, pid), reg)
        self.configs.pop((CONFIG_RESOURCE_TOPIC, name), None)
        self._contexts.pop(topic_id, None)

    def _replay_config(self, f: Mapping[str, Any]) -> None:
        key = (int(f["resource_type"]), str(f["resource_name"]))
        values = self.configs.setdefault(key, {})
        if f.get("value") is None:
            values.pop(str(f["name"]), None)
        else:
            values[str(f["name"])] = str(f["value"])
        self._contexts.clear()

    def _replay_feature(self, name: str, level: int) -> None:
        if name == METADATA_VERSION:
            for mv in MetadataVersion:
                if mv.feature_level == level:
                    self.mv, self.mv_seen = mv, True
                    break
            else:
                raise ReplayError(f"metadata.version feature level {level} is not known here")
        elif name == ELR_VERSION:
            self.elr_version = level
        self._contexts.clear()

    def partitions_of(self, topic_id: str) -> Iterator[tuple[int, PartitionRegistration]]:
        yield from sorted(self.partitions.get(topic_id, {}).items())
