"""What the controller holds for one partition, and what one command lets it read.

`PartitionRecord` is the partition's share of Kafka's `ControllerContext` and of the
store: the replica assignment (with the KIP-455 adding and removing sets), the partition
state, the stored leader-and-ISR (the partition-state znode, whose version is the
partition epoch), the state of each replica, and a view of the brokers hosting its
replicas. It is immutable: the state machines (`replica_state_machine.py`,
`partition_state_machine.py`) and the flows' named writes (`with_*`) return new records.

`Facts` is what one command may read of the rest of the controller: the brokers' liveness,
the controller epoch, the topic's unclean setting and whether it is queued for deletion.

`Step` is what a state machine returns: the new record and its outputs, in Kafka's order
(the state-change log first, then the requests of the batch it sent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .commands import PartitionContext
from .model import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    UNKNOWN_BROKER,
    BrokerFact,
    ControllerConfig,
    LeaderAndIsr,
    ReplicaAssignment,
)
from .outputs import Output
from .speed import quick_init
from .states import PartitionState, ReplicaState


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionRecord:
    topic: str
    partition: int
    assignment: ReplicaAssignment
    state: PartitionState | None = None
    leadership: LeaderAndIsr | None = None
    replica_states: tuple[tuple[int, ReplicaState], ...] = ()
    brokers: tuple[tuple[int, BrokerFact], ...] = ()
    being_reassigned: bool = False
    # brokers whose replica of this partition sits on a failed log dir
    # (`ControllerContext.replicasOnOfflineDirs`): not online while the broker lives
    offline_dirs: tuple[int, ...] = ()
    # Not Kafka's: (cause offset, event time or None) of the request that started the
    # reassignment in progress, for the operator's tools (`health`); None when none is in
    # progress or it was loaded from a snapshot
    reassignment_started: tuple[int, int | None] | None = None

    # Named writes: the constructor rather than dataclasses.replace, which looks the
    # fields up on every call (these run for every decision).

    def with_assignment(self, assignment: ReplicaAssignment) -> PartitionRecord:
        """`updateReplicaAssignmentForPartition`: the assignment znode and the context."""
        return PartitionRecord(
            self.topic,
            self.partition,
            assignment,
            self.state,
            self.leadership,
            self.replica_states,
            self.brokers,
            self.being_reassigned,
            self.offline_dirs,
            self.reassignment_started,
        )

    def with_leadership(self, leadership: LeaderAndIsr | None) -> PartitionRecord:
        """A successful conditional write of the partition-state znode (or, in shadow mode,
        the state adopted from the cluster)."""
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            self.state,
            leadership,
            self.replica_states,
            self.brokers,
            self.being_reassigned,
            self.offline_dirs,
            self.reassignment_started,
        )

    def with_state(self, state: PartitionState | None) -> PartitionRecord:
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            state,
            self.leadership,
            self.replica_states,
            self.brokers,
            self.being_reassigned,
            self.offline_dirs,
            self.reassignment_started,
        )

    def with_replica_states(
        self, replica_states: tuple[tuple[int, ReplicaState], ...]
    ) -> PartitionRecord:
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            self.state,
            self.leadership,
            replica_states,
            self.brokers,
            self.being_reassigned,
            self.offline_dirs,
            self.reassignment_started,
        )

    def with_being_reassigned(self, being_reassigned: bool) -> PartitionRecord:
        """`controllerContext.partitionsBeingReassigned` gains or loses this partition (and,
        losing it, when its reassignment started)."""
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            self.state,
            self.leadership,
            self.replica_states,
            self.brokers,
            being_reassigned,
            self.offline_dirs,
            self.reassignment_started if being_reassigned else None,
        )

    def with_offline_dirs(self, offline_dirs: tuple[int, ...]) -> PartitionRecord:
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            self.state,
            self.leadership,
            self.replica_states,
            self.brokers,
            self.being_reassigned,
            offline_dirs,
            self.reassignment_started,
        )

    def with_reassignment_started(self, started: tuple[int, int | None] | None) -> PartitionRecord:
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            self.state,
            self.leadership,
            self.replica_states,
            self.brokers,
            self.being_reassigned,
            self.offline_dirs,
            started,
        )

    def reset_for_failover(
        self, replica_states: tuple[tuple[int, ReplicaState], ...]
    ) -> PartitionRecord:
        """What a new controller holds after `resetContext` and reading the store: the
        assignment and the leader-and-ISR, no partition state, `replica_states` (its replica
        state machine's startup), being reassigned as the stored assignment says, and no
        failed log dirs. When the reassignment it resumes started stays known."""
        resumed = self.assignment.is_being_reassigned
        return PartitionRecord(
            self.topic,
            self.partition,
            self.assignment,
            None,
            self.leadership,
            replica_states,
            self.brokers,
            resumed,
            (),
            self.reassignment_started if resumed else None,
        )


class Facts:
    """What one command may read beyond its partition: its context and the brokers' facts
    (the partition's own view, updated by the command's), and which of its replicas sit on
    failed log dirs.

    Kafka asks about liveness in three ways, and each rule uses the one Kafka's code does:
    `is_live_broker` (`liveBrokerIds`: registered, not shutting down), `is_registered`
    (`liveOrShuttingDownBrokerIds`: where requests can go) and `is_online` /
    `is_online_or_shutting_down` (`isReplicaOnline`: the broker, and this partition's replica
    on it, which a failed log dir takes offline).

    `brokers` may be shared by every partition that holds the same view (`partition._VIEWS`):
    it is read, never written to."""

    __slots__ = ("ctx", "config", "brokers", "offline_dirs")

    def __init__(
        self,
        ctx: PartitionContext,
        config: ControllerConfig,
        brokers: dict[int, BrokerFact],
        offline_dirs: tuple[int, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.config = config
        self.brokers = brokers
        self.offline_dirs = offline_dirs

    # The predicates read `BrokerFact.live` written out: they run several times for every
    # partition a fan-out reaches, and a property is a Python call.

    def is_live_broker(self, broker: int) -> bool:
        """`controllerContext.liveBrokerIds.contains` (a shutting-down broker is not live)."""
        fact = self.brokers.get(broker, UNKNOWN_BROKER)
        return fact.registered and not fact.shutting_down

    def is_registered(self, broker: int) -> bool:
        """`controllerContext.liveOrShuttingDownBrokerIds.contains`."""
        return self.brokers.get(broker, UNKNOWN_BROKER).registered

    def is_online(self, broker: int) -> bool:
        """`controllerContext.isReplicaOnline(broker, partition)`."""
        fact = self.brokers.get(broker, UNKNOWN_BROKER)
        return fact.registered and not fact.shutting_down and broker not in self.offline_dirs

    def is_online_or_shutting_down(self, broker: int) -> bool:
        """`isReplicaOnline(broker, partition, includeShuttingDownBrokers = true)`."""
        return (
            self.brokers.get(broker, UNKNOWN_BROKER).registered and broker not in self.offline_dirs
        )

    def shutting_down(self) -> frozenset[int]:
        return frozenset(b for b, f in self.brokers.items() if f.registered and f.shutting_down)

    @property
    def queued(self) -> bool:
        """`topicDeletionManager.isTopicQueuedUpForDeletion`."""
        return self.ctx.queued_for_deletion

    @property
    def controller_epoch(self) -> int:
        return self.ctx.controller_epoch

    def stop_replica_epoch(self, leadership: LeaderAndIsr | None) -> int:
        """`ControllerContext.leaderEpoch`: -2 overrides everything while the topic is queued
        for deletion; -1 when there is no leadership info."""
        if self.ctx.queued_for_deletion:
            return EPOCH_DURING_DELETE
        return leadership.leader_epoch if leadership else NO_EPOCH

    def newer_controller_wrote(self, leadership: LeaderAndIsr | None) -> bool:
        """The stored state was written by a controller with a higher epoch: Kafka's
        conditional write fails and the controller resigns."""
        return leadership is not None and leadership.controller_epoch > self.ctx.controller_epoch


class Step(NamedTuple):
    """What one state machine call returns: the new record and its outputs in order."""

    record: PartitionRecord
    outputs: list[Output]
    # the batch asked for UpdateMetadata for this partition (requests.RequestBatch)
    update_metadata: bool = False
