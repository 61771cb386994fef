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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from . import event_types as ev
from .commands import Command, PartitionSummary, SummaryReport
from .controller_events import directory_step
from .directory import CONTROLLER_KEY, ControllerRecord, DirectoryRecord, DirectoryResult
from .kraft.commands import KraftPartition, KraftResult
from .kraft.partition_step import guarded_kraft_partition_step, kraft_same_summary, kraft_summary_of
from .kraft.periodic_tasks import kraft_apply_summaries
from .kraft.quorum_controller import kraft_directory_step, kraft_reads_summaries
from .leader_balance import is_due
from .model import ControllerConfig
from .partition import PartitionResult, guarded_partition_step
from .partition_record import PartitionRecord
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


# A partition's state under a rule set: `PartitionRecord` (zk) or `KraftPartition` (kraft).
# Each rule set's steps agree on it; the loop, which serves both, sees `RuleSet[Any]`.
S = TypeVar("S", PartitionRecord, KraftPartition)
S_contra = TypeVar("S_contra", contravariant=True)


class DirectoryStep(Protocol):
    """One cause step against the directory (`controller_events.directory_step`)."""

    def __call__(
        self,
        view: Mapping[str, DirectoryRecord],
        event: ev.CauseStep,
        config: ControllerConfig,
        offset: int,
        cause_id: str | None = None,
        touched: frozenset[tuple[str, int]] = frozenset(),
        ts: int | None = None,
    ) -> DirectoryResult: ...


class PartitionStep(Protocol[S_contra]):
    """One command against one partition, guarded: the result and an error's description."""

    def __call__(
        self, state: S_contra | None, cmd: Command, config: ControllerConfig, /
    ) -> tuple[PartitionResult | KraftResult, str | None]: ...


class SummaryOf(Protocol[S_contra]):
    """What the directory keeps of a partition (`partition_summaries.summary_of`)."""

    def __call__(self, rec: S_contra | None, /) -> PartitionSummary | None: ...


class SameSummary(Protocol[S_contra]):
    """Whether two states of a partition have the same summary (a fast path)."""

    def __call__(self, a: S_contra | None, b: S_contra | None, /) -> bool: ...


class ReadsSummaries(Protocol):
    """Whether an event reads the partitions' summaries, so waits for them to settle."""

    def __call__(self, env: ev.Envelope, directory: Mapping[str, DirectoryRecord], /) -> bool: ...


class ApplySummaries(Protocol):
    """The partitions' summaries, applied to the directory."""

    def __call__(
        self,
        view: Mapping[str, DirectoryRecord],
        reports: Iterable[SummaryReport],
        config: ControllerConfig,
        offset: int,
        cause_id: str | None = None,
    ) -> DirectoryResult: ...


def _never(config: ControllerConfig) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class RuleSet(Generic[S]):
    """The seams where the two rule sets differ (the table above); `S` is the partition's
    state the set's partition step, summaries and fold agree on."""

    name: str
    directory_step: DirectoryStep
    partition_step: PartitionStep[S]
    summary_of: SummaryOf[S]
    same_summary: SameSummary[S]
    reads_summaries: ReadsSummaries
    apply_summaries: ApplySummaries
    # whether the directory's decisions read partition 0's summary (its replica count)
    reads_partition_zero: Callable[[ControllerConfig], bool] = _never


ZK: RuleSet[PartitionRecord] = RuleSet(
    "zk",
    directory_step,
    guarded_partition_step,
    summary_of,
    same_summary,
    _zk_reads_summaries,
    apply_summaries,
)
KRAFT: RuleSet[KraftPartition] = RuleSet(
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


def rules_for(config: ControllerConfig) -> RuleSet[Any]:
    return KRAFT if config.mode == "kraft" else ZK
