"""The two rule sets the loop runs: the ZK controller's and the KRaft quorum controller's.

A rule set is what differs between them at the loop's seams (loop.py): the directory step
(one event against the controller-wide facts, and its fan-out), the partition step (one
command against one partition), the partitions' summaries the directory keeps, and which
events read those summaries. The loop, the values, the election algorithms and the shell
are shared; `ControllerConfig.mode` chooses the set once.

=====================  ==========================================  ===========================
seam                   zk (KafkaController, 3.9.0)                 kraft (QuorumController)
=====================  ==========================================  ===========================
directory step         controller_events.directory_step            kraft.quorum_controller
partition step         partition.guarded_partition_step            kraft.partition_step
partition state        partition_record.PartitionRecord            kraft.commands.KraftPartition
summary                partition_summaries.summary_of              kraft_summary_of
reads summaries        broker changes, a due rebalance check       unfencing, a shutdown heartbeat,
                                                                   an expansion, activation, a due
                                                                   periodic task
applying summaries     partition_summaries.apply_summaries         kraft.periodic_tasks (counts and
                                                                   the periodic tasks' schedule)
=====================  ==========================================  ===========================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import event_types as ev
from .commands import PartitionSummary
from .controller_events import directory_step
from .directory import CONTROLLER_KEY, ControllerRecord
from .kraft.partition_step import guarded_kraft_partition_step, kraft_same_summary, kraft_summary_of
from .kraft.periodic_tasks import kraft_apply_summaries
from .kraft.quorum_controller import kraft_directory_step, kraft_reads_summaries
from .leader_balance import is_due
from .model import ControllerConfig
from .partition import guarded_partition_step
from .partition_summaries import apply_summaries, same_summary, summary_of


def _zk_reads_summaries(env: ev.Envelope, directory: Mapping[str, Any]) -> bool:
    """A broker change or a cluster config change may retry every offline partition, and a
    due rebalance check reads every partition's leader."""
    if isinstance(
        env.event, (ev.BrokerStartup, ev.BrokerFailure, ev.BrokerConfigChange, ev.ReplicaDirFailure)
    ):
        return True
    controller = directory.get(CONTROLLER_KEY)
    return isinstance(controller, ControllerRecord) and is_due(controller, env.ts)


@dataclass(frozen=True, slots=True)
class RuleSet:
    name: str
    directory_step: Callable[..., Any]
    partition_step: Callable[[Any, Any, ControllerConfig], tuple[Any, str | None]]
    summary_of: Callable[[Any], PartitionSummary | None]
    same_summary: Callable[[Any, Any], bool]
    reads_summaries: Callable[[ev.Envelope, Mapping[str, Any]], bool]
    apply_summaries: Callable[..., Any]
    # whether the directory's decisions read partition 0's summary (its replica count)
    reads_partition_zero: Callable[[ControllerConfig], bool] = lambda config: False


ZK = RuleSet(
    "zk",
    directory_step,
    guarded_partition_step,
    summary_of,
    same_summary,
    _zk_reads_summaries,
    apply_summaries,
)
KRAFT = RuleSet(
    "kraft",
    kraft_directory_step,
    guarded_kraft_partition_step,
    kraft_summary_of,
    kraft_same_summary,
    kraft_reads_summaries,
    kraft_apply_summaries,
    # with ELR, the effective min ISR is capped by partition 0's replica count
    lambda config: config.eligible_leader_replicas_version >= 1,
)


def rules_for(config: ControllerConfig) -> RuleSet:
    return KRAFT if config.mode == "kraft" else ZK
