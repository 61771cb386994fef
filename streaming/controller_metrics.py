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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_, is_not, itemgetter
from typing import Any

from state_machines.commands import PartitionSummary
from state_machines.directory import (
    CONTROLLER_KEY,
    BrokerRecord,
    ControllerRecord,
    TopicRecord,
    broker_key,
    topic_key,
)
from state_machines.kraft.cluster_control import BrokerRegistration
from state_machines.leader_balance import led_by_another
from state_machines.loop import Pending
from state_machines.model import ControllerConfig
from state_machines.states import PartitionState, ReplicaState

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
_second = itemgetter(1)


def replica_metrics(s: PartitionSummary, min_isr: int) -> tuple[bool, bool, bool]:
    """(under-replicated, under min ISR, at min ISR) of a partition its leader counts, as
    kafka/cluster/Partition.scala (3.9.0) defines them on the leader:

        def isUnderReplicated = isLeader && (assignmentState.replicationFactor - partitionState.isr.size) > 0
        def isUnderMinIsr = leaderLogIfLocal.exists { partitionState.isr.size < effectiveMinIsr(_) } && isLeader
        def isAtMinIsr = leaderLogIfLocal.exists { partitionState.isr.size == effectiveMinIsr(_) }
        def effectiveMinIsr(leaderLog) = leaderLog.config.minInSyncReplicas.min(remoteReplicasMap.size + 1)

    During a reassignment `replicationFactor` is `OngoingReassignmentState`'s, the replicas
    less the adding ones (the original count), while `effectiveMinIsr`'s cap counts every
    replica, adding ones too (`PartitionSummary.replica_count`)."""  # noqa: E501  Kafka's lines verbatim
    isr = s.isr_size
    if isr is None or s.replication_factor is None or s.replica_count is None:
        return False, False, False
    effective = min(min_isr, s.replica_count)
    return s.replication_factor - isr > 0, isr < effective, isr == effective


# Each topic's share of the gauges, kept with the record it was counted from: a record is
# immutable, so a topic whose record (and effective min ISR, and the controller's activity)
# is the one counted last time adds its share again without a pass over its partitions.
# A batch that changes a few topics of a million partitions recounts those topics only,
# and of a topic whose record changed only in some summaries (a batch of the partitions'
# summaries after a broker event changes every topic's, a tenth of each with 30 brokers)
# only those summaries (`_changed_summaries`). A fresh worker, or a tool, counts every
# topic once. Only the shares of the topics of the last call are kept.
_SHARES: dict[str, tuple[Any, int, bool, Any, tuple[int, ...]]] = {}


def _zk_summary_counts(
    pairs: Iterable[tuple[int, PartitionSummary]],
    min_isr: int,
    started: bool,
    count_imbalance: bool,
) -> tuple[int, ...]:
    """(GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
    UnderReplicated, UnderMinIsr, AtMinIsr) of these (partition, summary) pairs of a topic.
    The imbalance counts the partitions `leader_balance.imbalance` lists as not preferred
    (`led_by_another`), of topics not queued for deletion."""
    return _summed(pairs, _zk_counts_of, min_isr, started, count_imbalance)


def _zk_counts_of(
    s: PartitionSummary, min_isr: int, started: bool, count_imbalance: bool
) -> tuple[int, ...]:
    """`_zk_summary_counts` of one partition whose summary is `s`."""
    partitions = offline = imbalanced = under = under_min = at_min = 0
    leader = s.leader
    if leader is not None:
        partitions = 1
        if leader >= 0 and not started:
            under, under_min, at_min = replica_metrics(s, min_isr)
        if count_imbalance and led_by_another(s):
            imbalanced = 1
    if s.state is PartitionState.OfflinePartition and not started:
        offline = 1
    return partitions, offline, imbalanced, int(under), int(under_min), int(at_min)


# A summary's own counts, by the counting (its function and arguments) and the summary's
# id, with the summary (held, so that its id is not another object's while the entry lives).
_COUNTS_OF: dict[tuple[Any, ...], dict[int, tuple[PartitionSummary, tuple[int, ...]]]] = {}


def _summed(
    pairs: Iterable[tuple[int, PartitionSummary]], counts_of: Any, *args: Any
) -> tuple[int, ...]:
    """The column sums of `counts_of(summary, *args)` over the pairs' summaries.

    A partition's counts depend on its summary alone, and a cluster has few distinct ones,
    which the sequencer holds as one object each (`directory_codec.summary_of`): each
    object is counted once, and its counts are found for each pair by its id, then summed,
    without a Python step per partition (a worker that counts a million partitions from
    scratch, or a batch of summaries after a broker event that recounts 200,000). Equal
    summaries that are distinct objects are counted apart: the same sums."""
    summaries = list(map(_second, pairs))
    if not summaries:
        return (0,) * 6
    counting = (counts_of, *args)
    table = _COUNTS_OF.get(counting)
    if table is None or len(table) >= 65536:
        table = _COUNTS_OF[counting] = {}
    kept = list(map(table.get, map(id, summaries)))
    for i in compress(range(len(kept)), map(is_, kept, repeat(None))):
        s = summaries[i]
        kept[i] = table[id(s)] = (s, counts_of(s, *args))
    # no None left
    return tuple(map(sum, zip(*map(_second, kept), strict=False)))  # type: ignore[arg-type]


def _zk_share(rec: TopicRecord, min_isr: int, active: bool) -> tuple[int, ...]:
    """(GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
    TopicsToDeleteCount, ReplicasToDeleteCount, TopicsIneligibleToDeleteCount,
    ReplicasIneligibleToDeleteCount, UnderReplicated, UnderMinIsr, AtMinIsr) of one topic."""
    partitions, offline, imbalanced, under, under_min, at_min = _zk_summary_counts(
        rec.summaries, min_isr, rec.queued and rec.started, active and not rec.queued
    )
    to_delete = ineligible_replicas = 0
    if rec.queued:
        for _, mirror in rec.mirror:
            states = dict(mirror.replica_states)
            for r in mirror.replicas:
                to_delete += states.get(r) is not ReplicaState.ReplicaDeletionSuccessful
                ineligible_replicas += states.get(r) is ReplicaState.ReplicaDeletionIneligible
    return (
        partitions,
        offline,
        imbalanced,
        int(rec.queued),
        to_delete,
        int(rec.queued and rec.ineligible),
        ineligible_replicas,
        under,
        under_min,
        at_min,
    )


def _zk_changed(
    before: tuple[int, ...],
    gone: list[Any],
    came: list[Any],
    rec: TopicRecord,
    min_isr: int,
    active: bool,
) -> tuple[int, ...]:
    """`_zk_share` of `rec` from the share `before` of a record that differed from it only
    in the pairs `gone`, which `rec` holds as `came` (`_changed_summaries`)."""
    started, count_imbalance = rec.queued and rec.started, active and not rec.queued
    minus = _zk_summary_counts(gone, min_isr, started, count_imbalance)
    plus = _zk_summary_counts(came, min_isr, started, count_imbalance)
    partitions, offline, imbalanced, under, under_min, at_min = (
        b - m + p for b, m, p in zip(before[:3] + before[7:], minus, plus, strict=False)
    )
    return (partitions, offline, imbalanced, *before[3:7], under, under_min, at_min)


def _kraft_share(rec: TopicRecord, min_isr: int, active: bool) -> tuple[int, ...]:
    """(GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
    UnderReplicated, UnderMinIsr, AtMinIsr) of one topic, as `kraft_metrics` counts them."""
    return _kraft_summary_counts(rec.summaries, min_isr)


def _kraft_summary_counts(
    pairs: Iterable[tuple[int, PartitionSummary]], min_isr: int
) -> tuple[int, ...]:
    return _summed(pairs, _kraft_counts_of, min_isr)


def _kraft_counts_of(s: PartitionSummary, min_isr: int) -> tuple[int, ...]:
    """`_kraft_summary_counts` of one partition whose summary is `s`."""
    leader = s.leader
    under = under_min = at_min = False
    if leader is not None and leader >= 0:
        under, under_min, at_min = replica_metrics(s, min_isr)
    return (
        1,
        int(leader == -1),
        int(leader != s.preferred),
        int(under),
        int(under_min),
        int(at_min),
    )


def _kraft_changed(
    before: tuple[int, ...],
    gone: list[Any],
    came: list[Any],
    rec: TopicRecord,
    min_isr: int,
    active: bool,
) -> tuple[int, ...]:
    """`_kraft_share` of `rec` from the share `before`, as `_zk_changed`."""
    minus, plus = _kraft_summary_counts(gone, min_isr), _kraft_summary_counts(came, min_isr)
    return tuple(b - m + p for b, m, p in zip(before, minus, plus, strict=False))


# for each share, its count from the share of a record that differed only in some summaries
_CHANGED: dict[Any, Any] = {_zk_share: _zk_changed, _kraft_share: _kraft_changed}


def _changed_summaries(before: TopicRecord, rec: TopicRecord) -> tuple[list[Any], list[Any]] | None:
    """The (partition, summary) pairs `before` held and `rec` holds instead, if the two
    records differ only there: the same partitions in the same order, and the same other
    fields the shares read. None otherwise, or if more than half the pairs changed (a
    whole count is then the cheaper)."""
    old, new = before.summaries, rec.summaries
    if (
        len(old) != len(new)
        or before.queued != rec.queued
        or before.started != rec.started
        or before.ineligible != rec.ineligible
        or before.mirror != rec.mirror
    ):
        return None
    # a batch's summaries keep the pairs they did not report (`apply_summaries`)
    moved = list(map(is_not, old, new))
    gone, came = list(compress(old, moved)), list(compress(new, moved))
    if 2 * len(gone) > len(new) or [p for p, _ in gone] != [p for p, _ in came]:
        return None
    return gone, came


def _topic_shares(
    directory: Mapping[str, Any],
    c: ControllerRecord,
    config: ControllerConfig,
    share: Any,
    active: bool,
) -> list[int]:
    """The column sums of each topic's share, each share counted anew only if its topic's
    record, min ISR or the controller's activity changed since the last call."""
    global _SHARES
    kept = _SHARES
    shares: dict[str, tuple[Any, int, bool, Any, tuple[int, ...]]] = {}
    totals: list[int] | None = None
    for topic in c.topics:
        rec = directory.get(topic_key(topic))
        if not isinstance(rec, TopicRecord):
            continue
        min_isr = config.min_isr_for(rec.configs, c.dynamic_configs)[0]
        last = kept.get(topic)
        counts = None
        if last is not None and last[1] == min_isr and last[2] == active and last[3] is share:
            if last[0] is rec:
                counts = last[4]
            else:
                # a batch that moved some leaders: count only the summaries it changed
                changed = _changed_summaries(last[0], rec)
                if changed is not None:
                    counts = _CHANGED[share](last[4], *changed, rec, min_isr, active)
        if counts is None:
            counts = share(rec, min_isr, active)
        shares[topic] = (rec, min_isr, active, share, counts)
        totals = (
            list(counts)
            if totals is None
            else [t + n for t, n in zip(totals, counts, strict=False)]
        )
    _SHARES = shares
    return totals or [0] * 10


def controller_metrics(
    directory: Mapping[str, Any], pending: Pending | None, config: ControllerConfig
) -> dict[str, int]:
    """Kafka's controller gauges and the brokers' replica gauges from the directory's
    records: the sums of the topics' shares (`_zk_share`)."""
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
    ) = _topic_shares(directory, c, config, _zk_share, active)
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
    partitions, offline, imbalanced, under, under_min, at_min = _topic_shares(
        directory, c, config, _kraft_share, False
    )[:6]
    out.update(
        GlobalPartitionCount=partitions,
        OfflinePartitionsCount=offline,
        PreferredReplicaImbalanceCount=imbalanced,
    )
    out.update(zip(REPLICA_GAUGES, (under, under_min, at_min), strict=True))
    return out


def summary_counts(
    s: PartitionSummary, min_isr: int, started: bool, count_imbalance: bool, kraft: bool
) -> tuple[int, ...]:
    """(GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
    UnderReplicated, UnderMinIsr, AtMinIsr) of one partition whose summary is `s`, as the
    topic shares count it (`batch_gauges.settle` counts a batch's reported summaries)."""
    if kraft:
        return _kraft_counts_of(s, min_isr)
    return _zk_counts_of(s, min_isr, started, count_imbalance)


def encode(metrics: Mapping[str, int]) -> str:
    """The gauges by position in `ALL`; null for one the rule set does not serve."""
    return json.dumps([metrics.get(k) for k in ALL], separators=(",", ":"))


def decode(text: str) -> dict[str, int]:
    return {k: v for k, v in zip(ALL, json.loads(text), strict=False) if v is not None}
