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

__all__ = ["PartitionSummary", "SummaryReport", "apply_summaries", "offline_partitions", "summary_of"]


def summary_of(rec: PartitionRecord | None) -> PartitionSummary | None:
    if rec is None:
        return None
    replicas = rec.assignment.replicas
    la = rec.leadership
    return PartitionSummary(rec.state, replicas[0] if replicas else -1, la.leader if la is not None else None)


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
        summaries = dict(rec.summaries)
        for partition, summary in by_topic[topic].items():
            if summary is None:
                summaries.pop(partition, None)
            else:
                summaries[partition] = summary
        merged = tuple(sorted(summaries.items()))
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
        out.extend((topic, p) for p, s in rec.summaries if s.offline)
    return out
