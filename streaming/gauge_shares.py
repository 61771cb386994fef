"""The counts behind the controller and replica gauges (controller_metrics.py): each
topic's share, kept with the record it was counted from, so that a batch recounts only the
topics, and of them only the summaries, it changed.

What is counted is Kafka's: a partition's `isUnderReplicated`, `isUnderMinIsr` and
`isAtMinIsr` (kafka/cluster/Partition.scala, apache/kafka 3.9.0: `replica_metrics`); the
ZK controller's offline, imbalance and deletion counts (`KafkaController.updateMetrics`,
`ControllerContext.updatePartitionStateMetrics`); KRaft's from the metadata image
(`ControllerMetadataMetricsPublisher`). How it is counted (a share per topic, a count per
distinct summary object) is this project's, for a million partitions per batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import compress, repeat
from operator import is_, is_not, itemgetter
from typing import Any

from state_machines.commands import PartitionSummary
from state_machines.directory import ControllerRecord, TopicRecord, topic_key
from state_machines.leader_balance import led_by_another
from state_machines.model import ControllerConfig
from state_machines.states import PartitionState, ReplicaState

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


def zk_share(rec: TopicRecord, min_isr: int, active: bool) -> tuple[int, ...]:
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
    """`zk_share` of `rec` from the share `before` of a record that differed from it only
    in the pairs `gone`, which `rec` holds as `came` (`_changed_summaries`)."""
    started, count_imbalance = rec.queued and rec.started, active and not rec.queued
    minus = _zk_summary_counts(gone, min_isr, started, count_imbalance)
    plus = _zk_summary_counts(came, min_isr, started, count_imbalance)
    partitions, offline, imbalanced, under, under_min, at_min = (
        b - m + p for b, m, p in zip(before[:3] + before[7:], minus, plus, strict=False)
    )
    return (partitions, offline, imbalanced, *before[3:7], under, under_min, at_min)


def kraft_share(rec: TopicRecord, min_isr: int, active: bool) -> tuple[int, ...]:
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
    """`kraft_share` of `rec` from the share `before`, as `_zk_changed`."""
    minus, plus = _kraft_summary_counts(gone, min_isr), _kraft_summary_counts(came, min_isr)
    return tuple(b - m + p for b, m, p in zip(before, minus, plus, strict=False))


# for each share, its count from the share of a record that differed only in some summaries
_CHANGED: dict[Any, Any] = {zk_share: _zk_changed, kraft_share: _kraft_changed}


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


def topic_shares(
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


def summary_counts(
    s: PartitionSummary, min_isr: int, started: bool, count_imbalance: bool, kraft: bool
) -> tuple[int, ...]:
    """(GlobalPartitionCount, OfflinePartitionsCount, PreferredReplicaImbalanceCount,
    UnderReplicated, UnderMinIsr, AtMinIsr) of one partition whose summary is `s`, as the
    topic shares count it (`batch_gauges.settle` counts a batch's reported summaries)."""
    if kraft:
        return _kraft_counts_of(s, min_isr)
    return _zk_counts_of(s, min_isr, started, count_imbalance)
