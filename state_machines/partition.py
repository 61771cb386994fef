"""The partition step: Kafka's partition and replica state machines for one topic-partition.

Theory of operation
-------------------
State (`PartitionRecord`) is what Kafka's controller holds for one partition: the replica
assignment (with the KIP-455 adding/removing sets), the partition state, the stored
leader-and-ISR (the partition-state znode, whose version is the partition epoch), the state
of each replica, and a view of the brokers hosting its replicas.

    NonExistentPartition -> NewPartition -> OnlinePartition <-> OfflinePartition -> NonExistentPartition
    NonExistentReplica -> NewReplica -> OnlineReplica <-> OfflineReplica
        -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful -> NonExistentReplica
        (ReplicaDeletionIneligible from Offline/DeletionStarted, back to Online/Offline)

Every `Command` runs the slice of a KafkaController flow that touches this partition, in
Kafka's order. Each `handleStateChanges` call of either state machine is one request batch
(`ControllerBrokerRequestBatch`): LeaderAndIsr and StopReplica requests are collected per
broker, a later request for the same broker replaces an earlier one (isNew and
deletePartition are OR-ed), and the batch is flushed into output records at its end.

What Kafka only logs becomes a record: `StateChangeFailed` for an invalid transition or a
failed election, `PartitionStateChange`/`ReplicaStateChange` for transitions that change
the state (a transition to the same state, which Kafka logs at trace level, emits nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .commands import (
    PartitionContext,
    AlterIsr, BrokersFailed, BrokersStarted, Command, CompleteTopicDeletion, CreatePartition,
    DeletionReport, Elect, Failover, LoadPartition, MarkQueued, Reassign, ReplicaDeletionResponse,
    Observe, ResumeDeletion, ShutdownBroker, TriggerOnline,
)
from . import shadow
from .election import (
    ElectionOutcome, elect_for_controlled_shutdown, elect_for_offline_partition,
    elect_for_reassigned_partition, elect_preferred_replica,
)
from .model import (
    EPOCH_DURING_DELETE, NO_EPOCH, NO_LEADER, UNKNOWN_BROKER, BrokerFact, ControllerConfig, LeaderAndIsr,
    ReplicaAssignment,
)
from .outputs import (
    AlterPartitionResultRecord, ElectionResultRecord, LeaderAndIsrRecord, Output,
    PartitionStateChangeRecord, ReplicaStateChangeRecord, StateChangeFailedRecord, StillLeads,
    StopReplicaRecord,
)
from .states import LeaderRecoveryState, PartitionState, ReplicaState
from .values import quick_init

P = PartitionState
R = ReplicaState


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


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionResult:
    state: PartitionRecord | None
    outputs: tuple[Output, ...]
    report: DeletionReport | None


# Election strategies (`PartitionLeaderElectionStrategy`) and the label each puts on its
# LeaderAndIsr record.
OFFLINE = "offline"
REASSIGN = "reassign"
PREFERRED = "preferred"
CONTROLLED_SHUTDOWN = "controlled_shutdown"


# What one LeaderAndIsr request carries for this partition: the leadership, the
# assignment (replicas, adding, removing) and the election label.
_LairPayload = tuple[LeaderAndIsr, tuple[int, ...], tuple[int, ...], tuple[int, ...], str | None]


class _ElectionFailed(Exception):
    """Raised inside a flow where Kafka throws (e.g. updateLeaderEpoch with no state)."""


class _Batch:
    """One ControllerBrokerRequestBatch, restricted to this partition."""

    def __init__(self) -> None:
        self.lair: dict[int, tuple[_LairPayload, bool]] = {}
        self.stop: dict[int, tuple[bool, int]] = {}

    def add_lair(self, brokers: Iterable[int], payload: _LairPayload, is_new: bool) -> None:
        for b in brokers:
            if b < 0:
                continue
            already_new = self.lair.get(b, ((), False))[1]
            self.lair[b] = (payload, is_new or already_new)

    def add_stop(self, broker: int, delete: bool, leader_epoch: int) -> None:
        if broker < 0:
            return
        already = self.stop.get(broker, (False, 0))[0]
        self.stop[broker] = (delete or already, leader_epoch)


class _Txn:
    """Working copy of one partition while a command runs; `freeze` makes the new record."""

    def __init__(self, rec: PartitionRecord, cmd: Command, config: ControllerConfig) -> None:
        self.topic = rec.topic
        self.partition = rec.partition
        self.assignment = rec.assignment
        self.state = rec.state
        self.leadership = rec.leadership
        self.replica_states: dict[int, ReplicaState] = dict(rec.replica_states)
        self.brokers: dict[int, BrokerFact] = dict(rec.brokers)
        self.brokers.update(cmd.ctx.brokers)
        self.being_reassigned = rec.being_reassigned
        self.ctx = cmd.ctx
        self.config = config
        self.out: list[Output] = []
        self.mark_ineligible = False
        self.resume_deletion = False
        self.removed = False

    # -- facts ---------------------------------------------------------------------------

    def fact(self, broker: int) -> BrokerFact:
        return self.brokers.get(broker, UNKNOWN_BROKER)

    def is_online(self, broker: int) -> bool:
        return self.fact(broker).live

    def is_online_or_shutting_down(self, broker: int) -> bool:
        return self.fact(broker).registered

    def shutting_down(self) -> frozenset[int]:
        return frozenset(b for b, f in self.brokers.items() if f.registered and f.shutting_down)

    @property
    def queued(self) -> bool:
        return self.ctx.queued_for_deletion

    def stop_replica_epoch(self) -> int:
        # ControllerContext.leaderEpoch: -2 overrides everything while the topic is queued
        # for deletion; -1 when there is no leadership info.
        if self.queued:
            return EPOCH_DURING_DELETE
        return self.leadership.leader_epoch if self.leadership else NO_EPOCH

    # -- records ---------------------------------------------------------------------------

    def failed(self, target: str, reason: str, broker: int | None = None) -> None:
        self.out.append(StateChangeFailedRecord(self.topic, self.partition, broker, target, reason))

    def lair_payload(self, election: str | None) -> _LairPayload:
        la = self.leadership
        assert la is not None
        a = self.assignment
        return (la, a.replicas, a.adding_replicas, a.removing_replicas, election)

    def flush(self, batch: _Batch) -> None:
        # Kafka sends each broker its LeaderAndIsr requests, then its StopReplica requests.
        # Brokers sent the same request share one record. Usually every entry holds the
        # same payload object, and grouping by value (which hashes it) can be skipped.
        items = list(batch.lair.items())
        groups: list[tuple[_LairPayload, bool, list[int]]] = []
        if items:
            first_payload, first_new = items[0][1]
            if all(p is first_payload and n == first_new for _, (p, n) in items):
                groups.append((first_payload, first_new, [b for b, _ in items]))
            else:
                by_value: dict[tuple[_LairPayload, bool], list[int]] = {}
                for broker, key in items:
                    by_value.setdefault(key, []).append(broker)
                groups.extend((p, n, recipients) for (p, n), recipients in by_value.items())
        for (la, replicas, adding, removing, election), is_new, recipients in groups:
            self.out.append(LeaderAndIsrRecord(
                self.topic, self.partition, la.leader, la.leader_epoch, la.isr, la.partition_epoch,
                la.controller_epoch, replicas, adding, removing, la.leader_recovery_state.value, is_new,
                tuple(recipients), election,
            ))
        for broker, (delete, epoch) in batch.stop.items():
            self.out.append(StopReplicaRecord(self.topic, self.partition, broker, delete, epoch))

    def write(self, new_state: LeaderAndIsr) -> None:
        """A successful conditional write of the partition-state znode: PE+1."""
        self.leadership = new_state.written(self.ctx.controller_epoch)

    def newer_controller_wrote(self) -> bool:
        return self.leadership is not None and self.leadership.controller_epoch > self.ctx.controller_epoch

    # -- replica state machine -----------------------------------------------------------

    def set_replica_state(self, broker: int, target: ReplicaState) -> None:
        current = self.replica_states.get(broker, R.NonExistentReplica)
        self.replica_states[broker] = target
        if current != target:
            self.out.append(ReplicaStateChangeRecord(self.topic, self.partition, broker, current.value, target.value))

    def rsm(self, brokers: Sequence[int], target: ReplicaState) -> None:
        """`ZkReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`."""
        if not brokers:
            return
        batch = _Batch()
        for broker in dict.fromkeys(brokers):
            # putReplicaStateIfNotExists(NonExistentReplica), then validate
            current = self.replica_states.setdefault(broker, R.NonExistentReplica)
            if current not in target.valid_previous_states:
                self.failed(target.value, f"invalid transition from {current.value}", broker)
                continue
            self._enter_replica_state(broker, target, batch)
        self.flush(batch)

    def _enter_replica_state(self, broker: int, target: ReplicaState, batch: _Batch) -> None:
        current = self.replica_states[broker]
        if target is R.NewReplica:
            if self.leadership is not None:
                if self.leadership.leader == broker:
                    # Kafka logs this failure naming OfflineReplica as the target state.
                    self.failed(R.NewReplica.value, "replica is being requested to become leader", broker)
                    return
                batch.add_lair((broker,), self.lair_payload(None), is_new=True)
            self.set_replica_state(broker, target)
        elif target is R.OnlineReplica:
            if current is R.NewReplica:
                if broker not in self.assignment.replicas:
                    # Kafka logs an error and appends the replica to the assignment.
                    self.assignment = replace(self.assignment, replicas=self.assignment.replicas + (broker,))
            elif self.leadership is not None:
                batch.add_lair((broker,), self.lair_payload(None), is_new=False)
            self.set_replica_state(broker, target)
        elif target is R.OfflineReplica:
            batch.add_stop(broker, False, self.stop_replica_epoch())
            if self.leadership is not None:
                if self.newer_controller_wrote():
                    self.failed(target.value, "leader and isr path written by a newer controller", broker)
                    return
                la = self.leadership
                if broker in la.isr:
                    # removeReplicasFromIsr: the ISR is never emptied (its last member stays)
                    # and the write bumps the leader epoch (newLeaderAndIsr).
                    leader = NO_LEADER if la.leader == broker else la.leader
                    isr = la.isr if len(la.isr) == 1 else tuple(r for r in la.isr if r != broker)
                    self.write(la.new_leader_and_isr(leader, isr))
                if not self.queued:
                    recipients = [r for r in self.assignment.replicas if r != broker]
                    batch.add_lair(recipients, self.lair_payload(None), is_new=False)
            self.set_replica_state(broker, target)
        elif target is R.ReplicaDeletionStarted:
            self.set_replica_state(broker, target)
            batch.add_stop(broker, True, self.stop_replica_epoch())
        elif target in (R.ReplicaDeletionSuccessful, R.ReplicaDeletionIneligible):
            self.set_replica_state(broker, target)
        elif target is R.NonExistentReplica:
            self.assignment = self.assignment.remove_replica(broker)
            del self.replica_states[broker]
            self.out.append(ReplicaStateChangeRecord(
                self.topic, self.partition, broker, current.value, R.NonExistentReplica.value))

    # -- partition state machine ---------------------------------------------------------

    def set_partition_state(self, target: PartitionState) -> None:
        current = self.state or P.NonExistentPartition
        self.state = target
        if current != target:
            self.out.append(PartitionStateChangeRecord(self.topic, self.partition, current.value, target.value))

    def psm(self, target: PartitionState, strategy: str | None = None, allow_unclean: bool = False) -> str | None:
        """`ZkPartitionStateMachine.handleStateChanges` for this partition.

        Returns None on success, else the failure reason (already recorded)."""
        batch = _Batch()
        if self.state is None:
            self.state = P.NonExistentPartition  # putPartitionStateIfNotExists
        current = self.state
        if current not in target.valid_previous_states:
            refusal = f"invalid transition from {current.value}"
            self.failed(target.value, refusal)
            return refusal
        reason: str | None = None
        if target is P.OnlinePartition:
            if current is P.NewPartition:
                reason = self._initialize_leader_and_isr(batch)
            else:
                if strategy is None:
                    # IllegalArgumentException, caught: every partition reported as failed
                    reason = "election strategy is a required field when the target state is OnlinePartition"
                else:
                    reason = self._elect_leader(batch, strategy, allow_unclean)
            if reason is None:
                self.set_partition_state(P.OnlinePartition)
            else:
                self.failed(target.value, reason)
        else:
            self.set_partition_state(target)
        self.flush(batch)
        return reason

    def _initialize_leader_and_isr(self, batch: _Batch) -> str | None:
        live = tuple(r for r in self.assignment.replicas if self.is_online(r))
        if not live:
            return "no assigned replica is alive"
        if self.leadership is not None:
            # createTopicPartitionStatesRaw answers NODEEXISTS: only logged, the stored state
            # is untouched and the partition stays New.
            return "NODEEXISTS: the partition state already exists"
        # The znode is created (version 0): leader epoch and partition epoch both start at 0.
        self.leadership = LeaderAndIsr.initial(live[0], live, self.ctx.controller_epoch)
        batch.add_lair(self.leadership.isr, self.lair_payload("initial"), is_new=True)
        return None

    def _elect_leader(self, batch: _Batch, strategy: str, allow_unclean: bool) -> str | None:
        la = self.leadership
        if la is None:
            return "leader and isr information does not exist"
        if self.newer_controller_wrote():
            return "leader and isr path already written by a newer controller"
        replicas = self.assignment.replicas
        outcome: ElectionOutcome
        if strategy == OFFLINE:
            # collectUncleanLeaderElectionState: the unclean flag matters only when no ISR
            # member is online; an admin UNCLEAN election allows it without reading config.
            has_live_isr = any(self.is_online(r) for r in la.isr)
            unclean = False if has_live_isr else (allow_unclean or self.ctx.unclean_leader_election_enable)
            outcome = elect_for_offline_partition(
                la, replicas, self.is_online, unclean, self.config.leader_recovery_supported)
        elif strategy == REASSIGN:
            outcome = elect_for_reassigned_partition(la, self.assignment.target_replicas, self.is_online)
        elif strategy == PREFERRED:
            outcome = elect_preferred_replica(la, replicas, self.is_online)
        elif strategy == CONTROLLED_SHUTDOWN:
            outcome = elect_for_controlled_shutdown(
                la, replicas, self.is_online_or_shutting_down, self.shutting_down())
        else:  # pragma: no cover - programming error
            raise ValueError(strategy)
        if outcome.leader_and_isr is None:
            return f"failed to elect leader under strategy {strategy}"
        self.write(outcome.leader_and_isr)
        label = "unclean" if outcome.unclean else strategy
        batch.add_lair(outcome.recipients, self.lair_payload(label), is_new=False)
        return None

    def trigger_online(self) -> None:
        """`triggerOnlinePartitionStateChange` restricted to this partition."""
        if self.state in (P.NewPartition, P.OfflinePartition) and not self.queued:
            self.psm(P.OnlinePartition, OFFLINE)

    # -- reassignment (KafkaController.onPartitionReassignment) --------------------------

    def update_leader_epoch_and_send(self, assignment: ReplicaAssignment) -> None:
        if self.leadership is None:
            raise _ElectionFailed("cannot update leader epoch: leader and isr path is empty")
        if self.newer_controller_wrote():
            raise _ElectionFailed("leader and isr path written by a newer controller")
        self.write(self.leadership.new_epoch())
        batch = _Batch()
        payload = self.lair_payload(None)
        batch.add_lair(assignment.origin_replicas, payload, is_new=False)
        batch.add_lair(assignment.adding_replicas, payload, is_new=True)
        self.flush(batch)

    def stop_removed_replicas(self, removed: Sequence[int]) -> None:
        for target in (R.OfflineReplica, R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful,
                       R.NonExistentReplica):
            self.rsm(removed, target)

    def is_reassignment_complete(self, assignment: ReplicaAssignment) -> bool:
        if not assignment.is_being_reassigned:
            return True
        if self.leadership is None:
            return False
        return set(assignment.target_replicas) <= set(self.leadership.isr)

    def on_partition_reassignment(self, reassignment: ReplicaAssignment) -> None:
        if self.queued:
            self.mark_ineligible = True  # step 0: "topic reassignment in progress"
        current = self.assignment
        if current != reassignment:
            self.assignment = reassignment
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                self.stop_removed_replicas(unneeded)
        self.being_reassigned = True
        adding, removing = reassignment.adding_replicas, reassignment.removing_replicas
        if not self.is_reassignment_complete(reassignment):
            # Phase A: bump the epoch so the new assignment reaches the replicas, then start
            # the new replicas one call each.
            self.update_leader_epoch_and_send(reassignment)
            for replica in adding:
                self.rsm((replica,), R.NewReplica)
            return
        # Phase B
        self.rsm(adding, R.OnlineReplica)
        completed = ReplicaAssignment(reassignment.target_replicas)
        self.assignment = completed
        leader = self.leadership.leader if self.leadership else NO_LEADER
        if leader not in completed.replicas:
            self.psm(P.OnlinePartition, REASSIGN)
        elif self.is_online(leader):
            self.update_leader_epoch_and_send(completed)
        else:
            self.psm(P.OnlinePartition, REASSIGN)
        self.stop_removed_replicas(removing)
        self.being_reassigned = False
        if self.queued:
            self.resume_deletion = True

    def maybe_complete_reassignment(self) -> None:
        if self.is_reassignment_complete(self.assignment):
            self.run_reassignment(self.assignment)

    def run_reassignment(self, reassignment: ReplicaAssignment) -> str | None:
        """onPartitionReassignment with Kafka's exception handling: what ran before the
        exception stays, the caller gets UNKNOWN_SERVER_ERROR."""
        try:
            self.on_partition_reassignment(reassignment)
        except _ElectionFailed as exc:
            self.failed("PartitionReassignment", f"UNKNOWN_SERVER_ERROR: {exc}")
            return "UNKNOWN_SERVER_ERROR"
        return None

    # -- result --------------------------------------------------------------------------

    def freeze(self) -> PartitionRecord | None:
        if self.removed:
            return None
        return PartitionRecord(
            self.topic, self.partition, self.assignment, self.state, self.leadership,
            tuple(sorted(self.replica_states.items())),
            tuple(sorted(self.brokers.items())),
            self.being_reassigned,
        )

    def report(self) -> DeletionReport:
        return DeletionReport(
            self.topic, self.partition, self.assignment.replicas,
            tuple(sorted(self.replica_states.items())), self.being_reassigned,
            self.mark_ineligible, self.resume_deletion, self.removed,
        )


# ---------------------------------------------------------------------------------------
# flows


def _failover(t: _Txn) -> None:
    # The new controller starts from an empty context (resetContext on resignation) and
    # reads assignments and leader-and-ISR from the store.
    t.replica_states.clear()
    t.state = None
    t.being_reassigned = t.assignment.is_being_reassigned
    replicas = t.assignment.replicas
    # ReplicaStateMachine.startup: online replicas start Online, the others
    # ReplicaDeletionIneligible (recorded directly, no transition); then Online -> Online
    # (LeaderAndIsr to each) and Ineligible -> Offline.
    online = [r for r in replicas if t.is_online(r)]
    offline = [r for r in replicas if not t.is_online(r)]
    for r in replicas:
        t.replica_states[r] = R.OnlineReplica if t.is_online(r) else R.ReplicaDeletionIneligible
    t.rsm(online, R.OnlineReplica)
    t.rsm(offline, R.OfflineReplica)
    # PartitionStateMachine.startup
    if t.leadership is None:
        t.state = P.NewPartition
    elif t.is_online(t.leadership.leader):
        t.state = P.OnlinePartition
    else:
        t.state = P.OfflinePartition
    t.trigger_online()
    # initializePartitionReassignments
    if t.being_reassigned:
        t.run_reassignment(t.assignment)


def _create(t: _Txn, replicas: tuple[int, ...]) -> None:
    t.psm(P.NewPartition)
    t.rsm(replicas, R.NewReplica)
    t.psm(P.OnlinePartition, OFFLINE)
    t.rsm(replicas, R.OnlineReplica)


def _brokers_started(t: _Txn, new_brokers: tuple[int, ...]) -> None:
    hosted = [b for b in new_brokers if b in t.assignment.replicas]
    t.rsm(hosted, R.OnlineReplica)
    t.trigger_online()
    # maybeResumeReassignments: a reassignment whose target includes a new broker
    if t.being_reassigned and any(b in new_brokers for b in t.assignment.target_replicas):
        t.run_reassignment(t.assignment)


def _brokers_failed(t: _Txn, dead: tuple[int, ...]) -> None:
    hosted = [b for b in dead if b in t.assignment.replicas]
    # onReplicasBecomeOffline: partitions whose leader is not online go Offline, then every
    # New/Offline partition is elected *before* the dead replicas leave the ISR.
    if t.leadership is not None and not t.queued and not t.is_online(t.leadership.leader):
        t.psm(P.OfflinePartition)
    t.trigger_online()
    if t.queued:
        # failReplicaDeletion
        t.rsm(hosted, R.ReplicaDeletionIneligible)
    else:
        # handleStateChanges groups by broker: one ISR write (one epoch bump) per broker
        t.rsm(hosted, R.OfflineReplica)


def _controlled_shutdown(t: _Txn, broker: int) -> None:
    acts = (
        broker in t.assignment.replicas and len(t.assignment.replicas) > 1
        and t.leadership is not None and not t.queued
    )
    if acts:
        assert t.leadership is not None
        if t.leadership.leader == broker:
            t.psm(P.OnlinePartition, CONTROLLED_SHUTDOWN)
        else:
            batch = _Batch()
            batch.add_stop(broker, False, t.stop_replica_epoch())
            t.flush(batch)
            t.rsm((broker,), R.OfflineReplica)
    # partitionLeadersOnBroker: the broker's reply lists what it still leads
    la = t.leadership
    if la is not None and la.leader == broker and len(t.assignment.replicas) > 1 and not t.queued:
        t.out.append(StillLeads(broker, t.topic, t.partition))


def _reassign(t: _Txn, target: tuple[int, ...] | None, known: bool) -> None:
    """processApiPartitionReassignment for one partition, with Kafka's validation order."""
    error = None
    if target is not None:
        if not target:
            error = "INVALID_REPLICA_ASSIGNMENT: empty replica list specified in partition reassignment"
        elif len(set(target)) != len(target):
            error = f"INVALID_REPLICA_ASSIGNMENT: duplicate replica ids in partition reassignment replica list: {list(target)}"
        elif any(r < 0 for r in target):
            error = f"INVALID_REPLICA_ASSIGNMENT: invalid broker id in replica list: {list(target)}"
        else:
            adding = t.assignment.reassign_to(target).adding_replicas
            if not all(t.is_online(r) for r in adding):
                error = f"INVALID_REPLICA_ASSIGNMENT: replica assignment has brokers that are not alive: {list(adding)}"
    reassignment = None
    if error is None:
        # maybeBuildReassignment: a cancellation reverts to the origin replicas
        if t.assignment.is_being_reassigned:
            reassignment = t.assignment.reassign_to(target if target is not None else t.assignment.origin_replicas)
        elif target is not None:
            reassignment = t.assignment.reassign_to(target)
        else:
            error = "NO_REASSIGNMENT_IN_PROGRESS"
    if error is None and (t.queued or not known or not t.assignment.replicas):
        error = "UNKNOWN_TOPIC_OR_PARTITION: the partition does not exist"
    if error is not None:
        t.failed("PartitionReassignment", error)
        return
    assert reassignment is not None
    t.run_reassignment(reassignment)


def _alter_isr(t: _Txn, op: AlterIsr) -> None:
    """tryProcessAlterPartition's per-partition checks (the broker-epoch check ran in the
    directory), then maybeCompleteReassignment for partitions being reassigned."""
    la = t.leadership

    def result(error: str | None, state: LeaderAndIsr | None = None) -> None:
        t.out.append(AlterPartitionResultRecord(
            t.topic, t.partition, op.broker_id, error,
            state.leader if state else None, state.leader_epoch if state else None,
            state.isr if state else None, state.partition_epoch if state else None,
        ))

    if la is None:
        result("UNKNOWN_TOPIC_OR_PARTITION")
        return
    requested = LeaderRecoveryState(op.leader_recovery_state)
    if op.partition_epoch > la.partition_epoch or op.leader_epoch > la.leader_epoch:
        result("NOT_CONTROLLER")
        return
    if op.leader_epoch < la.leader_epoch:
        result("FENCED_LEADER_EPOCH")
        return
    success = True
    if (op.broker_id == la.leader and op.isr == la.isr and requested == la.leader_recovery_state
            and op.partition_epoch <= la.partition_epoch):
        # equalsAllowStalePartitionEpoch: an idempotent retry gets the current state
        result(None, la)
    elif op.partition_epoch < la.partition_epoch:
        result("INVALID_UPDATE_VERSION")
        success = False
    elif requested is LeaderRecoveryState.RECOVERING and len(op.isr) > 1:
        result("INVALID_REQUEST")
        success = False
    elif la.leader_recovery_state is LeaderRecoveryState.RECOVERED and requested is LeaderRecoveryState.RECOVERING:
        result("INVALID_REQUEST")
        success = False
    elif any(not t.is_online(r) for r in op.isr):
        # AlterPartition v2+ answers INELIGIBLE_REPLICA (v0-1: OPERATION_NOT_ATTEMPTED).
        result("INELIGIBLE_REPLICA")
        success = False
    else:
        # The stored state takes the sender as leader and keeps the leader epoch: only
        # controller writes bump it. Kafka does not check that the sender is the leader.
        t.write(LeaderAndIsr(op.broker_id, op.leader_epoch, op.isr, la.partition_epoch, requested,
                             la.controller_epoch))
        result(None, t.leadership)
    if success and t.being_reassigned:
        t.maybe_complete_reassignment()


def _elect(t: _Txn, op: Elect) -> None:
    """processReplicaLeaderElection for one known partition of a topic not being deleted."""

    def result(error: str | None, leader: int | None = None) -> None:
        t.out.append(ElectionResultRecord(t.topic, t.partition, op.election_type, error, leader))

    la = t.leadership
    if la is None:
        result("UNKNOWN_SERVER_ERROR")
        return
    if op.election_type == "PREFERRED":
        needed = not t.assignment.replicas or la.leader != t.assignment.replicas[0]
    else:
        needed = la.leader == NO_LEADER or not t.is_online(la.leader)
    if not needed:
        result("ELECTION_NOT_NEEDED")
        return
    if op.election_type == "PREFERRED":
        failure = t.psm(P.OnlinePartition, PREFERRED)
        error = "PREFERRED_LEADER_NOT_AVAILABLE"
    else:
        failure = t.psm(P.OnlinePartition, OFFLINE, allow_unclean=op.allow_unclean)
        error = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    if failure is None:
        assert t.leadership is not None
        result(None, t.leadership.leader)
    elif failure.startswith("invalid transition"):
        result("UNKNOWN_SERVER_ERROR")
    else:
        result(error)


def _resume_deletion(t: _Txn, op: ResumeDeletion) -> None:
    if op.retry:
        # retryDeletionForIneligibleReplicas
        t.rsm([b for b, s in sorted(t.replica_states.items()) if s is R.ReplicaDeletionIneligible], R.OfflineReplica)
    if op.start:
        if op.first:
            t.psm(P.OfflinePartition)
            t.psm(P.NonExistentPartition)
        # onPartitionDeletion
        replicas = t.assignment.replicas
        dead = [r for r in replicas if not t.is_online(r)]
        retry = [r for r in replicas if t.is_online(r) and t.replica_states.get(r) is not R.ReplicaDeletionSuccessful]
        t.rsm(dead, R.ReplicaDeletionIneligible)
        t.rsm(retry, R.OfflineReplica)
        t.rsm(retry, R.ReplicaDeletionStarted)


def _observe(t: _Txn, op: Observe) -> None:
    outputs, outcome = shadow.compare(
        t.topic, t.partition, t.leadership, t.assignment.replicas, op, t.is_online_or_shutting_down,
        t.ctx.unclean_leader_election_enable,
    )
    t.out.extend(outputs)
    if outcome != "match" and t.config.shadow_follow and t.leadership is not None:
        t.leadership = shadow.adopt(t.leadership, op)
        t.state = shadow.followed_state(t.state, op.leader)


def _complete_topic_deletion(t: _Txn) -> None:
    t.rsm([b for b, s in sorted(t.replica_states.items()) if s is R.ReplicaDeletionSuccessful], R.NonExistentReplica)
    t.removed = True


def partition_step(state: PartitionRecord | None, cmd: Command, config: ControllerConfig) -> PartitionResult:
    """Apply one command to one partition: (state or None, command) -> (new state or None, outputs)."""
    op = cmd.op
    if isinstance(op, LoadPartition):
        if state is not None and not op.overwrite:
            return PartitionResult(state, (), None)
        base = state or PartitionRecord(cmd.topic, cmd.partition, op.assignment)
        new = replace(
            base, assignment=op.assignment, leadership=op.leadership if op.overwrite else base.leadership,
            brokers=tuple(sorted({**dict(base.brokers), **dict(cmd.ctx.brokers)}.items())),
        )
        return PartitionResult(new, (), None)

    known = state is not None
    if state is None:
        if not isinstance(op, (CreatePartition, Reassign)):
            # Broker fan-out may reach a partition that no longer exists (the directory's
            # broker index is a superset); there is nothing to do.
            return PartitionResult(None, (), None)
        replicas = op.replicas if isinstance(op, CreatePartition) else ()
        state = PartitionRecord(cmd.topic, cmd.partition, ReplicaAssignment(replicas))
    t = _Txn(state, cmd, config)

    if isinstance(op, Failover):
        _failover(t)
    elif isinstance(op, CreatePartition):
        _create(t, op.replicas)
    elif isinstance(op, BrokersStarted):
        _brokers_started(t, op.broker_ids)
    elif isinstance(op, BrokersFailed):
        _brokers_failed(t, op.broker_ids)
    elif isinstance(op, ShutdownBroker):
        _controlled_shutdown(t, op.broker_id)
    elif isinstance(op, Reassign):
        _reassign(t, op.target_replicas, known)
    elif isinstance(op, AlterIsr):
        _alter_isr(t, op)
    elif isinstance(op, Elect):
        _elect(t, op)
    elif isinstance(op, TriggerOnline):
        t.trigger_online()
    elif isinstance(op, ReplicaDeletionResponse):
        if t.queued:
            target = R.ReplicaDeletionIneligible if op.error else R.ReplicaDeletionSuccessful
            t.rsm((op.broker_id,), target)
    elif isinstance(op, ResumeDeletion):
        _resume_deletion(t, op)
    elif isinstance(op, CompleteTopicDeletion):
        _complete_topic_deletion(t)
    elif isinstance(op, MarkQueued):
        pass
    elif isinstance(op, Observe):
        _observe(t, op)
    else:  # pragma: no cover - programming error
        raise TypeError(f"unknown op {op!r}")

    new_state = t.freeze() if known or t.state is not None else None
    report = t.report() if cmd.ctx.queued_for_deletion else None
    return PartitionResult(new_state, tuple(t.out), report)


# ---------------------------------------------------------------------------------------
# Kafka's state machine entry points, one partition at a time (what Kafka's unit tests call)


def _standalone(state: PartitionRecord, ctx: "PartitionContext", config: ControllerConfig) -> _Txn:
    return _Txn(state, Command(state.topic, state.partition, -1, None, ctx, MarkQueued()), config)


def handle_replica_state_changes(
    state: PartitionRecord,
    brokers: Sequence[int],
    target: ReplicaState,
    ctx: "PartitionContext",
    config: ControllerConfig = ControllerConfig(),
) -> PartitionResult:
    """`ReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`."""
    t = _standalone(state, ctx, config)
    t.rsm(brokers, target)
    return PartitionResult(t.freeze(), tuple(t.out), None)


def handle_partition_state_changes(
    state: PartitionRecord,
    target: PartitionState,
    ctx: "PartitionContext",
    strategy: str | None = None,
    allow_unclean: bool = False,
    config: ControllerConfig = ControllerConfig(),
) -> PartitionResult:
    """`PartitionStateMachine.handleStateChanges(partitions, target, strategy)` for one partition.
    `strategy` is one of OFFLINE, REASSIGN, PREFERRED, CONTROLLED_SHUTDOWN (or None)."""
    t = _standalone(state, ctx, config)
    t.psm(target, strategy, allow_unclean)
    return PartitionResult(t.freeze(), tuple(t.out), None)


def guarded_partition_step(
    state: PartitionRecord | None, cmd: Command, config: ControllerConfig
) -> tuple[PartitionResult, str | None]:
    """`partition_step`, with an exception turned into a value: the partition keeps its
    state, the command has no outputs, and the error's one-line description comes back.
    An exception here is a bug of this project, not bad input; raised inside a Spark task
    it would fail the batch, and the restart would replay the same event forever. A
    partition of a topic queued for deletion still reports back (its unchanged state), or
    the directory would wait for its report for good."""
    try:
        return partition_step(state, cmd, config), None
    except Exception as exc:  # noqa: BLE001 - the boundary of the core: nothing may escape
        report = None
        if cmd.ctx.queued_for_deletion:
            if state is None:
                report = DeletionReport(cmd.topic, cmd.partition, (), (), False, removed=True)
            else:
                report = _Txn(state, cmd, config).report()
        return PartitionResult(state, (), report), describe_error(exc, f"partition {cmd.topic}-{cmd.partition}")


def describe_error(exc: BaseException, where: str) -> str:
    """The dead-letter reason for an exception the controller raised."""
    text = str(exc).replace("\n", " ")
    if len(text) > 200:
        text = text[:200] + "..."
    return f"controller error in {where}: {type(exc).__name__}: {text}"

