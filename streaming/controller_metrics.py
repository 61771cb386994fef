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
  `leader_balance.imbalance` gives the rebalance and `health` (one rule, `led_by_another`). Kafka
  does not count a reassigning partition whose preferred replica is adding and not yet in the
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
- `ActiveBrokerCount`: `liveOrShuttingDownBrokerIds.size`, the registered brokers, shutting
  down or not.
- `FencedBrokerCount`: 0. The ZK controller fences no broker, and Kafka 3.9.0 serves the
  gauge as a constant 0 beside KRaft's, so one dashboard reads both controllers.

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

The counting, each topic's share kept for the next batch, is gauge_shares.py's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from state_machines.directory import CONTROLLER_KEY, BrokerRecord, ControllerRecord, broker_key
from state_machines.kraft.cluster_control import BrokerRegistration
from state_machines.loop import Pending
from state_machines.model import ControllerConfig

from .gauge_shares import kraft_share, topic_shares, zk_share

# Kafka's names, in the order of KafkaController.updateMetrics
GAUGES = (
    "ActiveControllerCount",
    "OfflinePartitionsCount",
    "PreferredReplicaImbalanceCount",
    "GlobalTopicCount",
    "GlobalPartitionCount",
    "TopicsToDeleteCount",
    "ReplicasToDeleteCount",
    "TopicsIneligibleToDeleteCount",
    "ReplicasIneligibleToDeleteCount",
    "ControllerState",
    "ActiveBrokerCount",
    "FencedBrokerCount",
)
# Kafka's names (ReplicaManager's gauges)
REPLICA_GAUGES = (
    "UnderReplicatedPartitions",
    "UnderMinIsrPartitionCount",
    "AtMinIsrPartitionCount",
)
# KRaft's own (ControllerMetadataMetrics, 3.9.0), served in kraft mode only
KRAFT_GAUGES = ("FencedBrokerCount", "ActiveBrokerCount", "MigratingZkBrokerCount")
# the ZK controller's gauges that KRaft's quorum controller does not have
ZK_ONLY = (
    "TopicsToDeleteCount",
    "ReplicasToDeleteCount",
    "TopicsIneligibleToDeleteCount",
    "ReplicasIneligibleToDeleteCount",
    "ControllerState",
)
# every gauge either mode serves, once (the broker counts are both controllers')
ALL = tuple(dict.fromkeys(GAUGES + REPLICA_GAUGES + KRAFT_GAUGES))
IDLE, TOPIC_DELETION = 0, 4  # ControllerState.value (kafka/controller/ControllerState.scala)


def controller_metrics(
    directory: Mapping[str, Any], pending: Pending | None, config: ControllerConfig
) -> dict[str, int]:
    """Kafka's controller gauges and the brokers' replica gauges from the directory's
    records: the sums of the topics' shares (`zk_share`)."""
    if config.mode == "kraft":
        return kraft_metrics(directory, config)
    c = directory.get(CONTROLLER_KEY)
    out = dict.fromkeys(GAUGES + REPLICA_GAUGES, 0)
    if not isinstance(c, ControllerRecord):
        return out
    active = c.active
    (
        partitions,
        offline,
        imbalanced,
        to_delete,
        replicas_to_delete,
        ineligible,
        replicas_ineligible,
        under,
        under_min,
        at_min,
    ) = topic_shares(directory, c, config, zk_share, active)
    replicas = dict(zip(REPLICA_GAUGES, (under, under_min, at_min), strict=True))
    if not active:
        # the controller's gauges are 0 while it is not active; the brokers' are not its
        return {**dict.fromkeys(GAUGES, 0), **replicas}
    out.update(replicas)
    out.update(
        ActiveControllerCount=1,
        OfflinePartitionsCount=offline,
        PreferredReplicaImbalanceCount=imbalanced,
        GlobalTopicCount=len(c.topics),
        GlobalPartitionCount=partitions,
        TopicsToDeleteCount=to_delete,
        ReplicasToDeleteCount=replicas_to_delete,
        TopicsIneligibleToDeleteCount=ineligible,
        ReplicasIneligibleToDeleteCount=replicas_ineligible,
        ActiveBrokerCount=sum(
            isinstance(b := directory.get(broker_key(i)), BrokerRecord) and b.fact.registered
            for i in c.brokers
        ),
    )
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
    out = dict.fromkeys(
        (*(g for g in GAUGES if g not in ZK_ONLY), *REPLICA_GAUGES, *KRAFT_GAUGES), 0
    )
    if not isinstance(c, ControllerRecord):
        return out
    out["ActiveControllerCount"] = int(c.active)
    out["GlobalTopicCount"] = len(c.topics)
    for b in c.brokers:
        reg = directory.get(f"broker-{b}")
        if isinstance(reg, BrokerRegistration):
            out["FencedBrokerCount" if reg.fenced else "ActiveBrokerCount"] += 1
            out["MigratingZkBrokerCount"] += reg.is_migrating_zk_broker
    # the image's counts do not depend on the controller's activity
    partitions, offline, imbalanced, under, under_min, at_min = topic_shares(
        directory, c, config, kraft_share, False
    )[:6]
    out.update(
        GlobalPartitionCount=partitions,
        OfflinePartitionsCount=offline,
        PreferredReplicaImbalanceCount=imbalanced,
    )
    out.update(zip(REPLICA_GAUGES, (under, under_min, at_min), strict=True))
    return out


def encode(metrics: Mapping[str, int]) -> str:
    """The gauges by position in `ALL`; null for one the rule set does not serve."""
    return json.dumps([metrics.get(k) for k in ALL], separators=(",", ":"))


def decode(text: str) -> dict[str, int]:
    return {k: v for k, v in zip(ALL, json.loads(text), strict=False) if v is not None}
