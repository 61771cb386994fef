"""Kafka's controller metrics, computed from the shadow's state at the end of every
micro-batch, under Kafka's names.

The gauges are `KafkaController.updateMetrics` (apache/kafka 3.9.0), each read from the
directory the sequencer holds once its batch is done (every value is 0 while the
controller is not active, as in Kafka):

- `ActiveControllerCount`: 1 if the controller is active.
- `OfflinePartitionsCount`: partitions in `OfflinePartition` of topics whose deletion has
  not started (`ControllerContext.updatePartitionStateMetrics` skips
  `isTopicDeletionInProgress`), from the partitions' summaries.
- `PreferredReplicaImbalanceCount`: partitions with a stored leader that is not their
  preferred replica, of topics not queued for deletion: the count
  `leader_balance.imbalance` gives the rebalance and `health` (one computation). Kafka does
  not count a reassigning partition whose preferred replica is adding and not yet in the
  ISR; the summaries do not carry the ISR, so the shadow counts it (a deviation while such
  a reassignment lasts).
- `GlobalTopicCount`: `allTopics.size`.
- `GlobalPartitionCount`: `partitionWithLeadersCount`, the partitions with a stored
  leader-and-ISR (a summary with a leader).
- `TopicsToDeleteCount`, `TopicsIneligibleToDeleteCount`: topics queued for deletion, and
  those of them ineligible.
- `ReplicasToDeleteCount`, `ReplicasIneligibleToDeleteCount`: the replicas of queued topics
  not in `ReplicaDeletionSuccessful`, and those in `ReplicaDeletionIneligible`, from each
  partition's last deletion report (`TopicRecord.mirror`).
- `ControllerState`: Kafka's `ControllerState.value` of what the controller is doing when
  the batch ends: `Idle` (0), or `TopicDeletion` (4) while a deletion waits for the
  partitions' reports. A cause held for any other reason reads as Idle.

Beside them, Kafka's broker-side replica metrics (`kafka.server:type=ReplicaManager`),
summed over the brokers as a dashboard sums them, from the partitions' summaries. Each
broker counts the partitions it leads (`leaderPartitionsIterator`): here the partitions
with a leader (>= 0) of topics whose deletion has not started (their replicas got
StopReplica with delete, so no broker leads them). These count whether or not this
controller is active: they are the brokers' metrics, not the controller's.

- `UnderReplicatedPartitions`: ISR size < replication factor.
- `UnderMinIsrPartitionCount`: ISR size < effective min ISR.
- `AtMinIsrPartitionCount`: ISR size == effective min ISR.

The effective min ISR is the topic's `min.insync.replicas` (`ControllerConfig.min_isr_for`:
topic config, cluster dynamic default, static setting) capped by the replicas the leader
knows. A summary decoded from a build that kept no ISR size is in none of the three until
its partition reports again.

The values cross Spark as one JSON line (`encode`), from the sequencer to the sink.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from state_machines.commands import PartitionSummary
from state_machines.directory import CONTROLLER_KEY, ControllerRecord, TopicRecord, topic_key
from state_machines.kraft.cluster_control import BrokerRegistration
from state_machines.leader_balance import imbalance
from state_machines.loop import Pending
from state_machines.model import ControllerConfig
from state_machines.states import PartitionState, ReplicaState

# Kafka's names, in the order of KafkaController.updateMetrics
GAUGES = (
    "ActiveControllerCount", "OfflinePartitionsCount", "PreferredReplicaImbalanceCount", "GlobalTopicCount",
    "GlobalPartitionCount", "TopicsToDeleteCount", "ReplicasToDeleteCount", "TopicsIneligibleToDeleteCount",
    "ReplicasIneligibleToDeleteCount", "ControllerState",
)
# Kafka's names (ReplicaManager's gauges)
REPLICA_GAUGES = ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount")
# KRaft's own (ControllerMetadataMetrics, 3.9.0), served in kraft mode only
KRAFT_GAUGES = ("FencedBrokerCount", "ActiveBrokerCount", "MigratingZkBrokerCount")
# the ZK controller's gauges that KRaft's quorum controller does not have
ZK_ONLY = ("TopicsToDeleteCount", "ReplicasToDeleteCount", "TopicsIneligibleToDeleteCount",
           "ReplicasIneligibleToDeleteCount", "ControllerState")
ALL = GAUGES + REPLICA_GAUGES + KRAFT_GAUGES
IDLE, TOPIC_DELETION = 0, 4  # ControllerState.value (kafka/controller/ControllerState.scala)


def replica_metrics(s: PartitionSummary, min_isr: int) -> tuple[bool, bool, bool]:
    """(under-replicated, under min ISR, at min ISR) of a partition its leader counts, as
    kafka/cluster/Partition.scala (3.9.0) defines them on the leader:

        def isUnderReplicated = isLeader && (assignmentState.replicationFactor - partitionState.isr.size) > 0
        def isUnderMinIsr = leaderLogIfLocal.exists { partitionState.isr.size < effectiveMinIsr(_) } && isLeader
        def isAtMinIsr = leaderLogIfLocal.exists { partitionState.isr.size == effectiveMinIsr(_) }
        def effectiveMinIsr(leaderLog) = leaderLog.config.minInSyncReplicas.min(remoteReplicasMap.size + 1)

    During a reassignment `replicationFactor` is `OngoingReassignmentState`'s, the replicas
    less the adding ones (the original count), while `effectiveMinIsr`'s cap counts every
    replica, adding ones too (`PartitionSummary.replica_count`)."""
    isr = s.isr_size
    if isr is None or s.replication_factor is None or s.replica_count is None:
        return False, False, False
    effective = min(min_isr, s.replica_count)
    return s.replication_factor - isr > 0, isr < effective, isr == effective


def controller_metrics(directory: Mapping[str, Any], pending: Pending | None, config: ControllerConfig) -> dict[str, int]:
    """Kafka's controller gauges and the brokers' replica gauges from the directory's
    records, in one pass over the partitions' summaries."""
    if config.mode == "kraft":
        return kraft_metrics(directory, config)
    c = directory.get(CONTROLLER_KEY)
    out = dict.fromkeys(GAUGES + REPLICA_GAUGES, 0)
    if not isinstance(c, ControllerRecord):
        return out
    active = c.active
    summaries = []
    under = under_min = at_min = 0
    for topic in sorted(c.topics):
        rec = directory.get(topic_key(topic))
        if not isinstance(rec, TopicRecord):
            continue
        started = rec.queued and rec.started
        min_isr = config.min_isr_for(rec.configs, c.dynamic_configs)[0]
        for p, s in rec.summaries:
            if s.leader is not None:
                out["GlobalPartitionCount"] += 1
                if s.leader >= 0 and not started:
                    u, b, a = replica_metrics(s, min_isr)
                    under += u
                    under_min += b
                    at_min += a
            if s.state is PartitionState.OfflinePartition and not started:
                out["OfflinePartitionsCount"] += 1
            if active and not rec.queued:
                summaries.append((topic, p, s))
        if rec.queued:
            out["TopicsToDeleteCount"] += 1
            out["TopicsIneligibleToDeleteCount"] += rec.ineligible
            for _, mirror in rec.mirror:
                states = dict(mirror.replica_states)
                for r in mirror.replicas:
                    out["ReplicasToDeleteCount"] += states.get(r) is not ReplicaState.ReplicaDeletionSuccessful
                    out["ReplicasIneligibleToDeleteCount"] += states.get(r) is ReplicaState.ReplicaDeletionIneligible
    replicas = dict(zip(REPLICA_GAUGES, (under, under_min, at_min)))
    if not active:
        # the controller's gauges are 0 while it is not active; the brokers' are not its
        return {**dict.fromkeys(GAUGES, 0), **replicas}
    out.update(replicas)
    out["ActiveControllerCount"] = 1
    out["GlobalTopicCount"] = len(c.topics)
    out["PreferredReplicaImbalanceCount"] = sum(len(b.not_preferred) for b in imbalance(summaries))
    if pending is not None and pending.expected > 0:
        out["ControllerState"] = TOPIC_DELETION
    return out


def kraft_metrics(directory: Mapping[str, Any], config: ControllerConfig) -> dict[str, int]:
    """KRaft's gauges, as `ControllerMetadataMetricsPublisher.publishSnapshot` (3.9.0)
    computes them from the metadata image, on every controller (standbys too), plus the
    active controller's `ActiveControllerCount` and the brokers' replica gauges:

    - `FencedBrokerCount`, `ActiveBrokerCount`: registered brokers fenced, and not fenced
      (a broker in controlled shutdown is active); `MigratingZkBrokerCount`: registered as
      migrating from ZooKeeper (none here);
    - `GlobalTopicCount`, `GlobalPartitionCount`: every topic and partition;
    - `OfflinePartitionsCount`: partitions without a leader (`!hasLeader()`);
    - `PreferredReplicaImbalanceCount`: partitions whose leader is not their first replica
      (`!hasPreferredLeader()`, leaderless ones included; unlike the ZK controller's, no
      exception for reassignments).

    KRaft has no TopicsToDelete or ControllerState gauges: they are not served."""
    c = directory.get(CONTROLLER_KEY)
    out = dict.fromkeys((*(g for g in GAUGES if g not in ZK_ONLY), *REPLICA_GAUGES, *KRAFT_GAUGES), 0)
    if not isinstance(c, ControllerRecord):
        return out
    out["ActiveControllerCount"] = int(c.active)
    out["GlobalTopicCount"] = len(c.topics)
    for b in c.brokers:
        reg = directory.get(f"broker-{b}")
        if isinstance(reg, BrokerRegistration):
            out["FencedBrokerCount" if reg.fenced else "ActiveBrokerCount"] += 1
            out["MigratingZkBrokerCount"] += reg.is_migrating_zk_broker
    under = under_min = at_min = 0
    for topic in sorted(c.topics):
        rec = directory.get(topic_key(topic))
        if not isinstance(rec, TopicRecord):
            continue
        min_isr = config.min_isr_for(rec.configs, c.dynamic_configs)[0]
        for _, s in rec.summaries:
            out["GlobalPartitionCount"] += 1
            out["OfflinePartitionsCount"] += s.leader == -1
            out["PreferredReplicaImbalanceCount"] += s.leader != s.preferred
            if s.leader is not None and s.leader >= 0:
                u, b, a = replica_metrics(s, min_isr)
                under += u
                under_min += b
                at_min += a
    out.update(zip(REPLICA_GAUGES, (under, under_min, at_min)))
    return out


def encode(metrics: Mapping[str, int]) -> str:
    """The gauges by position in `ALL`; null for one the rule set does not serve."""
    return json.dumps([metrics.get(k) for k in ALL], separators=(",", ":"))


def decode(text: str) -> dict[str, int]:
    return {k: v for k, v in zip(ALL, json.loads(text)) if v is not None}
