"""What the directory knows of each partition's state, as the partitions report it.

Theory of operation
-------------------
Some of Kafka's rules look at every partition at once, reading its state and leader from
the one `ControllerContext`: `triggerOnlinePartitionStateChange` elects every New or
Offline partition on each broker change (PartitionStateMachine.scala), and
`checkAndTriggerAutoLeaderRebalance` compares every partition's leader with its preferred
replica (KafkaController.scala). Here those facts live with each partition. A partition
whose `PartitionSummary` changed during its fold reports it (`loop.fold_partition`), and the
directory keeps the summaries with each topic (`TopicRecord.summaries`), so that a broker
change can reach every partition that may be offline, not only those its broker hosts.

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
    "PartitionSummary", "SummaryReport", "apply_summaries", "interned_summary", "offline_partitions", "summary_of",
]


# Summaries take few values (a state, a preferred replica, a leader): one object per value,
# shared by every partition that has it, rather than one per partition for the cyclic
# collector to walk.
_SUMMARIES: dict[tuple[PartitionState | None, int, int | None], PartitionSummary] = {}


def summary_of(rec: PartitionRecord | None) -> PartitionSummary | None:
    if rec is None:
        return None
    replicas = rec.assignment.replicas
    la = rec.leadership
    return interned_summary(rec.state, replicas[0] if replicas else -1, la.leader if la is not None else None)


def interned_summary(state: PartitionState | None, preferred: int, leader: int | None) -> PartitionSummary:
    """The one summary object of these values."""
    key = (state, preferred, leader)
    summary = _SUMMARIES.get(key)
    if summary is None:
        if len(_SUMMARIES) > 65536:  # as streaming/codec.py's cache: bounded for any cluster
            _SUMMARIES.clear()
        summary = _SUMMARIES[key] = PartitionSummary(*key)
    return summary


def apply_summaries(view: Mapping[str, DirectoryRecord], reports: Iterable[SummaryReport], config: ControllerConfig,
                    offset: int, cause_id: str | None = None) -> DirectoryResult:
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
        pairs = [pair for pair in rec.summaries if pair[0] not in reported]
        pairs.extend((partition, summary) for partition, summary in reported.items() if summary is not None)
        merged = tuple(sorted(pairs))
        if merged != rec.summaries:
            d.put(topic_key(topic), replace(rec, summaries=merged))
    return d.result()


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
