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

from .model import NO_LEADER, LeaderAndIsr, ReplicaAssignment
from .outputs import Output, ReplicaStateChangeRecord, StateChangeFailedRecord
from .partition_record import Facts, PartitionRecord, Step
from .requests import (
    UPDATE_METADATA, LeaderAndIsrPartitionState, LeaderAndIsrRequest, Request, RequestBatch, StopReplicaRequest,
)
from .states import VALID_PREVIOUS_REPLICA_STATES, ReplicaState

R = ReplicaState
# each state's name, read without the enum's `value` property (a Python call per read)
_NAME: dict[ReplicaState, str] = {s: s.value for s in ReplicaState}
_new_tuple = tuple.__new__

# The (broker, state) pairs of every partition's `replica_states`, one object per value:
# a hundred thousand partitions hold three each, and pairs made anew for each record are
# objects the cyclic collector walks on every full collection.
_PAIRS: dict[ReplicaState, dict[int, tuple[int, ReplicaState]]] = {s: {} for s in ReplicaState}


def _pair(broker: int, state: ReplicaState) -> tuple[int, ReplicaState]:
    pairs = _PAIRS[state]
    pair = pairs.get(broker)
    if pair is None:
        pair = pairs[broker] = (broker, state)
    return pair


# One replica's transition: its new state (None: the replica is forgotten), the stored
# leader-and-ISR and the assignment after it, its requests, and why it failed (then the
# state is unchanged). A plain tuple: a fan-out makes one per replica, and a named tuple
# costs several times as much to build.
Transition = tuple[ReplicaState | None, LeaderAndIsr | None, ReplicaAssignment, tuple[Request, ...], str | None]
_NO_REQUESTS: tuple[Request, ...] = ()

# The last partition state built, by identity of its inputs: the transitions of one machine
# call usually send the same leadership and assignment, and equal states that are the same
# object let the batch group recipients without hashing (RequestBatch.records).
_last_state: list[object] = [None, None, None]


def partition_state_for(leadership: LeaderAndIsr, assignment: ReplicaAssignment,
                        election: str | None = None) -> LeaderAndIsrPartitionState:
    last = _last_state
    if election is None and last[0] is leadership and last[1] is assignment:
        return last[2]  # type: ignore[return-value]
    state = LeaderAndIsrPartitionState(leadership, assignment.replicas, assignment.adding_replicas,
                                       assignment.removing_replicas, election)
    if election is None:
        last[0], last[1], last[2] = leadership, assignment, state
    return state


def handle_state_changes(rec: PartitionRecord, facts: Facts, brokers: Sequence[int], target: ReplicaState) -> Step:
    """`ReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`."""
    if not brokers:
        return Step(rec, [])
    topic, partition = rec.topic, rec.partition
    states = dict(rec.replica_states)
    added = False
    leadership, assignment = rec.leadership, rec.assignment
    out: list[Output] = []
    batch: RequestBatch | None = None  # opened by the first request (most transitions send none)
    transition = _TRANSITIONS[target]
    valid = VALID_PREVIOUS_REPLICA_STATES[target]  # target.valid_previous_states
    name = _NAME
    for broker in (brokers if len(brokers) == 1 else dict.fromkeys(brokers)):
        # putReplicaStateIfNotExists(NonExistentReplica), then validate
        current = states.get(broker)
        if current is None:
            current = states[broker] = R.NonExistentReplica
            added = True
        if current not in valid:
            out.append(StateChangeFailedRecord(topic, partition, broker, target.value,
                                               f"invalid transition from {current.value}"))
            continue
        new_state, leadership, assignment, requests, failure = transition(broker, current, leadership, assignment,
                                                                          facts)
        if requests:
            if batch is None:
                batch = RequestBatch()
            batch.add_all(requests)
        if failure is not None:
            # ZkReplicaStateMachine.doHandleStateChanges logs a refused NewReplica naming
            # OfflineReplica as the target state (logFailedStateChange(..., OfflineReplica, ...)).
            logged = R.OfflineReplica.value if target is R.NewReplica else target.value
            out.append(StateChangeFailedRecord(topic, partition, broker, logged, failure))
        elif new_state is None:
            del states[broker]
            out.append(ReplicaStateChangeRecord(topic, partition, broker, name[current], name[R.NonExistentReplica]))
        else:
            states[broker] = new_state
            if current is not new_state:
                out.append(ReplicaStateChangeRecord(topic, partition, broker, name[current], name[new_state]))
    if batch is not None:
        out.extend(batch.records(topic, partition, facts.is_registered))
    pairs = _PAIRS
    items = sorted(states.items()) if added else states.items()
    replica_states = tuple([pairs[s].get(b) or _pair(b, s) for b, s in items])
    new = PartitionRecord(topic, partition, assignment, rec.state, leadership, replica_states, rec.brokers,
                          rec.being_reassigned, rec.offline_dirs, rec.reassignment_started)
    # Step(new, out, ...), without the named tuple's Python-level __new__
    return _new_tuple(Step, (new, out, batch is not None and batch.update_metadata))


# -- transitions: doHandleStateChanges, one case per target state --------------------------


def _to_new(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
            facts: Facts) -> Transition:
    if la is None:
        return R.NewReplica, la, a, _NO_REQUESTS, None
    if la.leader == broker:
        return current, la, a, _NO_REQUESTS, "replica is being requested to become leader"
    return R.NewReplica, la, a, (LeaderAndIsrRequest((broker,), partition_state_for(la, a), True),), None


def _to_online(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
               facts: Facts) -> Transition:
    if current is R.NewReplica:
        if broker not in a.replicas:
            # Kafka logs an error and appends the replica to the assignment.
            a = ReplicaAssignment(a.replicas + (broker,), a.adding_replicas, a.removing_replicas)
        return R.OnlineReplica, la, a, _NO_REQUESTS, None
    if la is None:
        return R.OnlineReplica, la, a, _NO_REQUESTS, None
    return R.OnlineReplica, la, a, (LeaderAndIsrRequest((broker,), partition_state_for(la, a), False),), None


def _to_offline(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                facts: Facts) -> Transition:
    stop = StopReplicaRequest(broker, False, facts.stop_replica_epoch(la))
    if la is None:
        # replicasWithoutLeadershipInfo: UpdateMetadata for the partition all the same
        # (ZkReplicaStateMachine.doHandleStateChanges, OfflineReplica)
        return R.OfflineReplica, la, a, (stop, UPDATE_METADATA), None
    if facts.newer_controller_wrote(la):
        return current, la, a, (stop,), "leader and isr path written by a newer controller"
    if broker in la.isr:
        # removeReplicasFromIsr: the ISR is never emptied (its last member stays) and the
        # write bumps the leader epoch (newLeaderAndIsr).
        leader = NO_LEADER if la.leader == broker else la.leader
        isr = la.isr if len(la.isr) == 1 else tuple([r for r in la.isr if r != broker])
        # la.new_leader_and_isr(leader, isr).written(facts.controller_epoch), built once
        la = LeaderAndIsr(leader, la.leader_epoch + 1, isr, la.partition_epoch + 1, la.leader_recovery_state,
                          facts.controller_epoch)
    if facts.queued:
        return R.OfflineReplica, la, a, (stop,), None
    others = tuple([r for r in a.replicas if r != broker])
    return R.OfflineReplica, la, a, (stop, LeaderAndIsrRequest(others, partition_state_for(la, a), False)), None


def _to_deletion_started(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                         facts: Facts) -> Transition:
    return R.ReplicaDeletionStarted, la, a, (StopReplicaRequest(broker, True, facts.stop_replica_epoch(la)),), None


def _to_deletion_successful(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                            facts: Facts) -> Transition:
    return R.ReplicaDeletionSuccessful, la, a, _NO_REQUESTS, None


def _to_deletion_ineligible(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                            facts: Facts) -> Transition:
    return R.ReplicaDeletionIneligible, la, a, _NO_REQUESTS, None


def _to_nonexistent(broker: int, current: ReplicaState, la: LeaderAndIsr | None, a: ReplicaAssignment,
                    facts: Facts) -> Transition:
    return None, la, a.remove_replica(broker), _NO_REQUESTS, None


_TRANSITIONS = {
    R.NewReplica: _to_new,
    R.OnlineReplica: _to_online,
    R.OfflineReplica: _to_offline,
    R.ReplicaDeletionStarted: _to_deletion_started,
    R.ReplicaDeletionSuccessful: _to_deletion_successful,
    R.ReplicaDeletionIneligible: _to_deletion_ineligible,
    R.NonExistentReplica: _to_nonexistent,
}


def startup(rec: PartitionRecord, facts: Facts) -> tuple[tuple[int, ReplicaState], ...]:
    """`initializeReplicaState`: online replicas start Online, the others
    ReplicaDeletionIneligible, recorded directly (no transition, no record)."""
    is_online = facts.is_online
    states = {r: R.OnlineReplica if is_online(r) else R.ReplicaDeletionIneligible for r in rec.assignment.replicas}
    pairs = _PAIRS
    return tuple([pairs[s].get(b) or _pair(b, s) for b, s in sorted(states.items())])
