"""What the directory knows of each partition's state, as the partitions report it.

Theory of operation
-------------------
Some of Kafka's rules look at every partition at once, reading its state and leader from
the one `ControllerContext`: `triggerOnlinePartitionStateChange` elects every New or
Offline partition on each broker change (PartitionStateMachine.scala), and
`checkAndTriggerAutoLeaderRebalance` compares every partition's leader with its preferred
replica (KafkaController.scala). Here those facts live with each partition. A partition
whose `PartitionSummary` changed during its fold reports it (`fold.fold_partition`), and the
directory keeps the summaries with each topic (`TopicRecord.summaries`), so that a broker
change can reach every partition that may be offline, not only those its broker hosts. A
summary also carries the counts Kafka's replica metrics read (`UnderReplicatedPartitions`
and the min-ISR counts: the ISR size and the replica counts), which no decision reads.

When the summaries are read: the in-process engine applies a cause's reports before the
next event. The Spark job applies them in the next micro-batch, and holds back an event
that reads them until every earlier cause's reports are in (`loop.Sequencer`), so both see
the same summaries at the same point of the log. Within one cause (a bounced broker's
failure, then its startup) the partitions the cause already reached are retried as well:
a retry of a partition that is not offline does nothing and emits nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from .commands import PartitionSummary, SummaryReport
from .directory import DirectoryRecord, DirectoryResult, DirectoryView, topic_key
from .model import ControllerConfig
from .partition_record import PartitionRecord
from .states import PartitionState

_NEW, _OFFLINE = PartitionState.NewPartition, PartitionState.OfflinePartition

__all__ = [
    "PartitionSummary",
    "SummaryReport",
    "apply_summaries",
    "interned_summary",
    "offline_partitions",
    "partitions_with_offline_leader",
    "replica_count",
    "same_summary",
    "summary_of",
]


# Summaries take few values (a state, a preferred replica, a leader, three small counts):
# one object per value, shared by every partition that has it, rather than one per
# partition for the cyclic collector to walk.
_SUMMARIES: dict[
    tuple[PartitionState | None, int, int | None, int, int, int], PartitionSummary
] = {}


def summary_of(rec: PartitionRecord | None) -> PartitionSummary | None:
    if rec is None:
        return None
    a = rec.assignment
    replicas = a.replicas
    la = rec.leadership
    leader = la.leader if la is not None else None
    return interned_summary(
        rec.state,
        replicas[0] if replicas else -1,
        leader,
        len(la.isr) if la is not None else 0,
        len(replicas) - len(a.adding_replicas),
        replica_count(replicas, leader),
    )


def interned_summary(
    state: PartitionState | None,
    preferred: int,
    leader: int | None,
    isr_size: int,
    replication_factor: int,
    replica_count: int,
) -> PartitionSummary:
    """The one summary object of these values."""
    key = (state, preferred, leader, isr_size, replication_factor, replica_count)
    summary = _SUMMARIES.get(key)
    if summary is None:
        if len(_SUMMARIES) > 65536:  # as streaming/record_codec.py's cache: bounded for any cluster
            _SUMMARIES.clear()
        summary = _SUMMARIES[key] = PartitionSummary(*key)
    return summary


def replica_count(replicas: tuple[int, ...], leader: int | None) -> int:
    """`remoteReplicasMap.size + 1` on the leader (Partition.updateAssignmentAndIsr keeps
    every replica but itself as a follower): the cap of `effectiveMinIsr`."""
    return len(replicas) + (leader is not None and leader >= 0 and leader not in replicas)


def same_summary(a: PartitionRecord | None, b: PartitionRecord | None) -> bool:
    """`summary_of(a) == summary_of(b)`, without building either."""
    if a is None or b is None:
        return a is b
    if a.state is not b.state:
        return False
    la, lb = a.leadership, b.leadership
    aa, ab = a.assignment, b.assignment
    if la is lb and aa is ab:
        return True
    leader = None if la is None else la.leader
    if leader != (None if lb is None else lb.leader):
        return False
    if (0 if la is None else len(la.isr)) != (0 if lb is None else len(lb.isr)):
        return False
    if aa is ab:
        return True
    ra, rb = aa.replicas, ab.replicas
    return (
        (ra[0] if ra else -1) == (rb[0] if rb else -1)
        and len(ra) - len(aa.adding_replicas) == len(rb) - len(ab.adding_replicas)
        and replica_count(ra, leader) == replica_count(rb, leader)
    )


def apply_summaries(
    view: Mapping[str, DirectoryRecord],
    reports: Iterable[SummaryReport],
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
) -> DirectoryResult:
    """Fold reports into the topics' summaries; a later report of a partition wins."""
    d = DirectoryView(view, config, offset, cause_id)
    by_topic: dict[str, dict[int, PartitionSummary | None]] = {}
    for r in reports:
        by_topic.setdefault(r.topic, {})[r.partition] = r.summary
    for topic in sorted(by_topic):
        rec = d.topic(topic)
        if rec is None:
            continue  # deleted since: its partitions' last reports do not matter
        # the topic's (partition, summary) pairs, with only the reported ones made anew
        reported = by_topic[topic]
        merged = _replaced(rec.summaries, reported)
        if merged is None:
            pairs = [pair for pair in rec.summaries if pair[0] not in reported]
            pairs.extend(
                (partition, summary)
                for partition, summary in reported.items()
                if summary is not None
            )
            merged = tuple(sorted(pairs))
        if merged != rec.summaries:
            d.put(topic_key(topic), replace(rec, summaries=merged))
    return d.result()


def _replaced(
    summaries: tuple[tuple[int, PartitionSummary], ...],
    reported: dict[int, PartitionSummary | None],
) -> tuple[tuple[int, PartitionSummary], ...] | None:
    """The summaries with the reported ones in their places, when each reported partition
    has a summary and holds the place of its number (a topic's partitions are numbered
    from 0, so they do unless one has none): a fan-out reports a few partitions of each of
    thousands of topics, and sorting every topic's summaries again would cost more than
    the reports. None otherwise."""
    merged = list(summaries)
    n = len(merged)
    for partition, summary in reported.items():
        if summary is None or partition >= n or merged[partition][0] != partition:
            return None
        merged[partition] = (partition, summary)
    return tuple(merged)


def offline_partitions(d: DirectoryView) -> list[tuple[str, int]]:
    """`partitionsInStates(OfflinePartition, NewPartition)` of topics not queued for
    deletion, as the summaries say: what `triggerOnlinePartitionStateChange` elects."""
    out: list[tuple[str, int]] = []
    for topic in sorted(d.controller.topics):
        rec = d.topic(topic)
        if rec is None or rec.queued:
            continue
        # `s.offline` written out (a property, and a hashed enum, for every partition)
        out.extend((topic, p) for p, s in rec.summaries if s.state is _NEW or s.state is _OFFLINE)
    return out


def partitions_with_offline_leader(d: DirectoryView) -> list[tuple[str, int, int]]:
    """`ControllerContext.partitionsWithOfflineLeader`, as the summaries say: (topic,
    partition, leader) of every partition with a stored leader that is not online
    (`isReplicaOnline(leader, partition)`: leader -1 never is, nor a broker that is not
    live, shutting down included, nor one holding the partition on a failed log dir), of
    topics not queued for deletion. `onReplicasBecomeOffline` moves each to OfflinePartition,
    wherever it is: a partition the failed broker never hosted among them."""
    out: list[tuple[str, int, int]] = []
    # each leader's liveness and failed dirs, looked up once
    status: dict[int, tuple[bool, frozenset[tuple[str, int]]]] = {}
    for topic in sorted(d.controller.topics):
        rec = d.topic(topic)
        if rec is None or rec.queued:
            continue
        for p, s in rec.summaries:
            leader = s.leader
            if leader is None:
                continue
            known = status.get(leader)
            if known is None:
                brec = d.broker(leader)
                known = status[leader] = (brec.fact.live, frozenset(brec.offline_dirs))
            if not known[0] or (topic, p) in known[1]:
                out.append((topic, p, leader))
    return out
