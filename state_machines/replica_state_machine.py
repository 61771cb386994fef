"""Kafka's replica state machine (`ZkReplicaStateMachine`, ReplicaStateMachine.scala), for
the replicas of one partition.

Theory of operation
-------------------
    NonExistentReplica -> NewReplica -> OnlineReplica <-> OfflineReplica
        -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful -> NonExistentReplica
        (ReplicaDeletionIneligible from Offline/DeletionStarted, back to Online/Offline)

`handle_state_changes` is `handleStateChanges`: it opens one request batch, runs the
transition of each named replica in order, and sends the batch at the end. A transition
(`doHandleStateChanges`, one case per target state) is a pure function of the partition as
the previous transitions left it: it returns the replica's new state, the stored
leader-and-ISR and assignment after it, its requests, or why it failed. The machine alone
applies what it returns and batches the requests.

What Kafka only logs becomes a record: `StateChangeFailed` for an invalid transition or a
failed one, `ReplicaStateChange` for a transition that changes the state (a transition to
the same state, which Kafka logs at trace level, emits nothing).

`startup` is `ReplicaStateMachine.startup`'s `initializeReplicaState`: states recorded
directly, without a transition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .model import NO_LEADER, LeaderAndIsr, ReplicaAssignment
from .outputs import Output, ReplicaStateChangeRecord, StateChangeFailedRecord
from .partition_record import Facts, PartitionRecord, Step
from .requests import LeaderAndIsrPartitionState, LeaderAndIsrRequest, Request, RequestBatch, StopReplicaRequest
from .states import ReplicaState

R = ReplicaState


class Transition(NamedTuple):
    """One replica's transition: its new state (None: the replica is forgotten), the stored
    leader-and-ISR and the assignment after it, its requests, or why it failed (then the
    state is unchanged)."""

    state: ReplicaState | None
    leadership: LeaderAndIsr | None
    assignment: ReplicaAssignment
    requests: tuple[Request, ...] = ()
    failure: str | None = None


def partition_state_for(leadership: LeaderAndIsr, assignment: ReplicaAssignment,
                        election: str | None = None) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(leadership, assignment.replicas, assignment.adding_replicas,
                                      assignment.removing_replicas, election)


def handle_state_changes(rec: PartitionRecord, facts: Facts, brokers: Sequence[int], target: ReplicaState) -> Step:
    """`ReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`."""
    if not brokers:
        return Step(rec, [])
    topic, partition = rec.topic, rec.partition
    states = dict(rec.replica_states)
    added = False
    leadership, assignment = rec.leadership, rec.assignment
    out: list[Output] = []
    batch = RequestBatch()
    for broker in dict.fromkeys(brokers):
        # putReplicaStateIfNotExists(NonExistentReplica), then validate
        current = states.get(broker)
        if current is None:
            current = states[broker] = R.NonExistentReplica
            added = True
        if current not in target.valid_previous_states:
            out.append(StateChangeFailedRecord(topic, partition, broker, target.value,
                                               f"invalid transition from {current.value}"))
            continue
        t = _TRANSITIONS[target](broker, current, leadership, assignment, facts)
        leadership, assignment = t.leadership, t.assignment
        batch.add_all(t.requests)
        if t.failure is not None:
            # ZkReplicaStateMachine.doHandleStateChanges logs a refused NewReplica naming
            # OfflineReplica as the target state (logFailedStateChange(..., OfflineReplica, ...)).
            logged = R.OfflineReplica.value if target is R.NewReplica else target.value
            out.append(StateChangeFailedRecord(topic, partition, broker, logged, t.failure))
        elif t.state is None:
            del states[broker]
            out.append(ReplicaStateChangeRecord(topic, partition, broker, current.value, R.NonExistentReplica.value))
        else:
            states[broker] = t.state
            if current is not t.state:
                out.append(ReplicaStateChangeRecord(topic, partition, broker, current.value, t.state.value))
    out.extend(batch.records(topic, partition, facts.is_registered))
    replica_states = tuple(sorted(states.items())) if added else tuple(states.items())
    new = PartitionRecord(topic, partition, assignment, rec.state, leadership, replica_states, rec.brokers,
                          rec.being_reassigned, rec.offline_dirs)
    return Step(new, out)


# -- transitions: doHandleStateChanges, one case per target state --------------------------


def _to_new(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
            facts: Facts) -> Transition:
    if la is None:
        return Transition(R.NewReplica, la, a)
    if la.leader == broker:
        return Transition(current, la, a, failure="replica is being requested to become leader")
    return Transition(R.NewReplica, la, a, (LeaderAndIsrRequest((broker,), partition_state_for(la, a), True),))


def _to_online(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
               facts: Facts) -> Transition:
    if current is R.NewReplica:
        if broker not in a.replicas:
            # Kafka logs an error and appends the replica to the assignment.
            a = ReplicaAssignment(a.replicas + (broker,), a.adding_replicas, a.removing_replicas)
        return Transition(R.OnlineReplica, la, a)
    if la is None:
        return Transition(R.OnlineReplica, la, a)
    return Transition(R.OnlineReplica, la, a, (LeaderAndIsrRequest((broker,), partition_state_for(la, a), False),))


def _to_offline(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                facts: Facts) -> Transition:
    stop = StopReplicaRequest(broker, False, facts.stop_replica_epoch(la))
    if la is None:
        return Transition(R.OfflineReplica, la, a, (stop,))
    if facts.newer_controller_wrote(la):
        return Transition(current, la, a, (stop,), "leader and isr path written by a newer controller")
    if broker in la.isr:
        # removeReplicasFromIsr: the ISR is never emptied (its last member stays) and the
        # write bumps the leader epoch (newLeaderAndIsr).
        leader = NO_LEADER if la.leader == broker else la.leader
        isr = la.isr if len(la.isr) == 1 else tuple(r for r in la.isr if r != broker)
        la = la.new_leader_and_isr(leader, isr).written(facts.controller_epoch)
    if facts.queued:
        return Transition(R.OfflineReplica, la, a, (stop,))
    others = tuple(r for r in a.replicas if r != broker)
    return Transition(R.OfflineReplica, la, a, (stop, LeaderAndIsrRequest(others, partition_state_for(la, a), False)))


def _to_deletion_started(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                         facts: Facts) -> Transition:
    return Transition(R.ReplicaDeletionStarted, la, a, (StopReplicaRequest(broker, True, facts.stop_replica_epoch(la)),))


def _to_deletion_successful(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                            facts: Facts) -> Transition:
    return Transition(R.ReplicaDeletionSuccessful, la, a)


def _to_deletion_ineligible(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                            facts: Facts) -> Transition:
    return Transition(R.ReplicaDeletionIneligible, la, a)


def _to_nonexistent(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                    facts: Facts) -> Transition:
    return Transition(None, la, a.remove_replica(broker))


_TRANSITIONS = {
    R.NewReplica: _to_new,
    R.OnlineReplica: _to_online,
    R.OfflineReplica: _to_offline,
    R.ReplicaDeletionStarted: _to_deletion_started,
    R.ReplicaDeletionSuccessful: _to_deletion_successful,
    R.ReplicaDeletionIneligible: _to_deletion_ineligible,
    R.NonExistentReplica: _to_nonexistent,
}


def startup(rec: PartitionRecord, facts: Facts) -> PartitionRecord:
    """`initializeReplicaState`: online replicas start Online, the others
    ReplicaDeletionIneligible, recorded directly (no transition, no record)."""
    states = {r: R.OnlineReplica if facts.is_online(r) else R.ReplicaDeletionIneligible for r in rec.assignment.replicas}
    return rec.with_replica_states(tuple(sorted(states.items())))
