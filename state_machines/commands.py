"""What the directory step tells one partition, and what a partition reports back.

A `Command` carries the cause (the input event's offset and id), a `PartitionContext`
snapshot of the controller-wide facts the partition needs at that moment, and one `Op`.
The partition step never reads anything global: liveness, the controller epoch, the
topic's effective unclean setting and its deletion status all arrive here.

Two things flow back. A partition of a topic queued for deletion reports its replica
states after every command (`DeletionReport`), because Kafka's TopicDeletionManager decides
on all replicas of a topic at once. And a partition whose state, preferred replica,
leader, ISR size or replica counts changed reports its new `PartitionSummary`
(`SummaryReport`), because some of Kafka's rules, and its replica metrics, read those of
every partition (partition_summaries.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .kraft.commands import KraftContext, KraftOp
from .model import BrokerFact, LeaderAndIsr, ReplicaAssignment
from .speed import quick_init
from .states import PartitionState, ReplicaState


@dataclass(frozen=True, slots=True)
class PartitionContext:
    active: bool
    controller_epoch: int
    unclean_leader_election_enable: bool
    queued_for_deletion: bool = False
    # facts of the brokers this command may need; merged into the partition's own view
    brokers: tuple[tuple[int, BrokerFact], ...] = ()


# -- ops -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadPartition:
    """Inactive context loading: the assignment (and, from a snapshot, the stored state)."""

    assignment: ReplicaAssignment
    leadership: LeaderAndIsr | None = None
    overwrite: bool = False


@dataclass(frozen=True, slots=True)
class Failover:
    """`onControllerFailover` for this partition: reset, RSM/PSM startup, resume reassignment."""

    # the order of this partition's brokers in Kafka's handleStateChanges calls, when the
    # brokers of the calls' other partitions change it (scala_hash.hint_for); () otherwise
    order: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CreatePartition:
    """`onNewPartitionCreation`."""

    replicas: tuple[int, ...]
    # the order of this partition's brokers in Kafka's handleStateChanges calls, when the
    # brokers of the calls' other partitions change it (scala_hash.hint_for); () otherwise
    order: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokersStarted:
    broker_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BrokersFailed:
    broker_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShutdownBroker:
    """`doControlledShutdown` after its request-level checks passed."""

    broker_id: int


@dataclass(frozen=True, slots=True)
class Reassign:
    target_replicas: tuple[int, ...] | None
    # the request's event time, kept with when the reassignment started (not Kafka's)
    ts: int | None = None


@dataclass(frozen=True, slots=True)
class AlterIsr:
    broker_id: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: str


@dataclass(frozen=True, slots=True)
class Elect:
    election_type: str  # PREFERRED | UNCLEAN
    allow_unclean: bool


@dataclass(frozen=True, slots=True)
class TriggerOnline:
    """`triggerOnlinePartitionStateChange(topic)` after unclean election was enabled."""


@dataclass(frozen=True, slots=True)
class ReplicaDeletionResponse:
    broker_id: int
    error: str | None


@dataclass(frozen=True, slots=True)
class MarkQueued:
    """The topic was queued for deletion; nothing changes but the partition reports."""


@dataclass(frozen=True, slots=True)
class ResumeDeletion:
    """This partition's share of `TopicDeletionManager.resumeDeletions`."""

    retry: bool
    start: bool
    first: bool  # deletion not yet started for the topic: PSM Offline -> NonExistent first
    # the order of this partition's brokers in Kafka's handleStateChanges calls, when the
    # brokers of the calls' other partitions change it (scala_hash.hint_for); () otherwise
    order: tuple[int, ...] = ()
    # the same for retryDeletionForIneligibleReplicas' call
    retry_order: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Observe:
    """Shadow mode: what the real cluster shows for this partition."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int | None = None
    controller_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class LogDirFailure:
    """The partition's share of a log-dir failure of `broker_id` (`onBrokerLogDirFailure`,
    then `processLeaderAndIsrResponseReceived`): `newly_failed` when this partition's replica
    on it is newly on a failed dir; `offline_step` when `onReplicasBecomeOffline` ran (some
    replica of the broker newly failed), which reaches partitions cluster-wide."""

    broker_id: int
    newly_failed: bool
    offline_step: bool


@dataclass(frozen=True, slots=True)
class AutoRebalance:
    """`checkAndTriggerAutoLeaderRebalance` chose this partition: its leader is not its
    preferred replica, on a broker over the imbalance ratio."""


@dataclass(frozen=True, slots=True)
class CompleteTopicDeletion:
    """`completeDeleteTopic`: successful replicas become NonExistent and the partition goes."""

    # the order of this partition's brokers in Kafka's handleStateChanges calls, when the
    # brokers of the calls' other partitions change it (scala_hash.hint_for); () otherwise
    order: tuple[int, ...] = ()


Op = (
    LoadPartition
    | Failover
    | CreatePartition
    | BrokersStarted
    | BrokersFailed
    | ShutdownBroker
    | Reassign
    | AlterIsr
    | Elect
    | TriggerOnline
    | ReplicaDeletionResponse
    | MarkQueued
    | ResumeDeletion
    | CompleteTopicDeletion
    | Observe
    | LogDirFailure
    | AutoRebalance
)


@quick_init
@dataclass(frozen=True, slots=True)
class Command:
    topic: str
    partition: int
    cause_offset: int
    cause_id: str | None
    ctx: PartitionContext | KraftContext  # a KraftContext and a KraftOp in kraft mode
    op: Op | KraftOp


@dataclass(frozen=True, slots=True)
class DeletionReport:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    replica_states: tuple[tuple[int, ReplicaState], ...]
    being_reassigned: bool
    # onPartitionReassignment ran: markTopicIneligibleForDeletion ("reassignment in progress")
    mark_ineligible: bool = False
    # a reassignment completed: resumeDeletionForTopics
    resume_deletion: bool = False
    removed: bool = False


_MAY_BE_ELECTED = frozenset({PartitionState.NewPartition, PartitionState.OfflinePartition})


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionSummary:
    """One partition's state, preferred replica (the head of its assignment, -1 without
    replicas) and leader (None: no stored leader-and-ISR), and what Kafka's replica metrics
    read (kafka/cluster/Partition.scala): the ISR size, the replication factor
    (`AssignmentState.replicationFactor`: the replicas less the adding ones) and the
    replicas the leader counts in `effectiveMinIsr` (its followers and itself). None in a
    summary decoded from a build that did not keep them."""

    state: PartitionState | None
    preferred: int
    leader: int | None
    isr_size: int | None = None
    replication_factor: int | None = None
    replica_count: int | None = None

    @property
    def offline(self) -> bool:
        """In New or Offline state: `triggerOnlinePartitionStateChange` tries to elect it."""
        return self.state in _MAY_BE_ELECTED


@quick_init
@dataclass(frozen=True, slots=True)
class SummaryReport:
    """A partition's new summary (None: the partition is gone), made by its fold of the
    commands up to `cause_offset`: of two reports of a partition, the later cause's wins."""

    topic: str
    partition: int
    summary: PartitionSummary | None
    cause_offset: int = -1
    # kraft mode: the cause's event time, which schedules KRaft's periodic tasks
    ts: int | None = None
    # the summary the directory holds for the partition until this report is applied: its
    # record's when the fold began, or None if it was new or went away during the fold (a
    # topic deleted and made again: its topic record is a new one, without that summary).
    # Not compared: the job's sink settles the batch's gauges with it (streaming/batch_gauges.py)
    before: PartitionSummary | None = field(default=None, compare=False)
