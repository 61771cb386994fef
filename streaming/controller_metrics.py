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

The values cross Spark as one JSON line (`encode`), from the sequencer to the sink.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from state_machines.directory import CONTROLLER_KEY, ControllerRecord, TopicRecord, topic_key
from state_machines.leader_balance import imbalance
from state_machines.loop import Pending
from state_machines.states import PartitionState, ReplicaState

# Kafka's names, in the order of KafkaController.updateMetrics
GAUGES = (
    "ActiveControllerCount", "OfflinePartitionsCount", "PreferredReplicaImbalanceCount", "GlobalTopicCount",
    "GlobalPartitionCount", "TopicsToDeleteCount", "ReplicasToDeleteCount", "TopicsIneligibleToDeleteCount",
    "ReplicasIneligibleToDeleteCount", "ControllerState",
)
IDLE, TOPIC_DELETION = 0, 4  # ControllerState.value (kafka/controller/ControllerState.scala)


def controller_metrics(directory: Mapping[str, Any], pending: Pending | None) -> dict[str, int]:
    """Kafka's controller gauges from the directory's records."""
    c = directory.get(CONTROLLER_KEY)
    out = dict.fromkeys(GAUGES, 0)
    if not isinstance(c, ControllerRecord) or not c.active:
        return out
    out["ActiveControllerCount"] = 1
    out["GlobalTopicCount"] = len(c.topics)
    summaries = []
    for topic in sorted(c.topics):
        rec = directory.get(topic_key(topic))
        if not isinstance(rec, TopicRecord):
            continue
        for p, s in rec.summaries:
            if s.leader is not None:
                out["GlobalPartitionCount"] += 1
            if s.state is PartitionState.OfflinePartition and not (rec.queued and rec.started):
                out["OfflinePartitionsCount"] += 1
            if not rec.queued:
                summaries.append((topic, p, s))
        if rec.queued:
            out["TopicsToDeleteCount"] += 1
            out["TopicsIneligibleToDeleteCount"] += rec.ineligible
            for _, mirror in rec.mirror:
                states = dict(mirror.replica_states)
                for r in mirror.replicas:
                    out["ReplicasToDeleteCount"] += states.get(r) is not ReplicaState.ReplicaDeletionSuccessful
                    out["ReplicasIneligibleToDeleteCount"] += states.get(r) is ReplicaState.ReplicaDeletionIneligible
    out["PreferredReplicaImbalanceCount"] = sum(len(b.not_preferred) for b in imbalance(summaries))
    if pending is not None and pending.expected > 0:
        out["ControllerState"] = TOPIC_DELETION
    return out


def encode(metrics: Mapping[str, int]) -> str:
    return json.dumps([metrics[k] for k in GAUGES], separators=(",", ":"))


def decode(text: str) -> dict[str, int]:
    return dict(zip(GAUGES, json.loads(text)))
