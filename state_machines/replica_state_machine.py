"""Kafka's replica state machine (`ZkReplicaStateMachine`, ReplicaStateMachine.scala), for
the replicas of one partition.

Theory of operation
-------------------
    NonExistentReplica -> NewReplica -> OnlineReplica <-> OfflineReplica
        -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful -> NonExistentReplica
        (ReplicaDeletionIneligible from Offline/DeletionStarted, back to Online/Offline)

`handle_state_changes` is `handleStateChanges`: it opens one request batch, runs the
transition of each named replica in the order Kafka's `groupBy` visits their brokers (a
Scala 2.13 HashMap: scala_hash.py), and sends the batch at the end. A transition
(`doHandleStateChanges`, one case per target state) reads the partition as the previous
transitions left it and adds its requests to the open batch, as Kafka's cases do; it
returns the replica's new state, the stored leader-and-ISR and assignment after it, or why
it failed. The machine alone applies what it returns.

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
from .requests import LeaderAndIsrPartitionState, RequestBatch
from .scala_hash import visit_order
from .states import VALID_PREVIOUS_REPLICA_STATES, ReplicaState

R = ReplicaState
# each state's name, read without the enum's `value` property (a Python call per read)
_NAME: dict[ReplicaState, str] = {s: s.value for s in ReplicaState}

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
# leader-and-ISR and the assignment after it, and why it failed (then the state is
# unchanged). Its requests go into the machine call's open batch, as Kafka's cases call
# `controllerBrokerRequestBatch.add...` (a failed transition may have added some). A plain
# tuple: a fan-out makes one per replica, and a named tuple costs several times as much to
# build.
Transition = tuple[ReplicaState | None, LeaderAndIsr | None, ReplicaAssignment, str | None]

# The last partition state built, by identity of its inputs: the transitions of one machine
# call usually send the same leadership and assignment, and equal states that are the same
# object let the batch group recipients without hashing (RequestBatch.records).
_last_state: list[object] = [None, None, None]


def partition_state_for(
    leadership: LeaderAndIsr, assignment: ReplicaAssignment, election: str | None = None
) -> LeaderAndIsrPartitionState:
    last = _last_state
    if election is None and last[0] is leadership and last[1] is assignment:
        return last[2]  # type: ignore[return-value]
    state = LeaderAndIsrPartitionState(
        leadership,
        assignment.replicas,
        assignment.adding_replicas,
        assignment.removing_replicas,
        election,
    )
    if election is None:
        last[0], last[1], last[2] = leadership, assignment, state
    return state


def handle_state_changes(
    rec: PartitionRecord,
    facts: Facts,
    brokers: Sequence[int],
    target: ReplicaState,
    call_order: Sequence[int] = (),
) -> Step:
    """`ReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`.

    Kafka visits the brokers in the order of `replicas.groupBy(_.replica)`, a Scala 2.13
    `immutable.HashMap` over the brokers of every replica in its call (scala_hash.py):
    `call_order` is that order when the call spans other partitions whose brokers change
    it, else empty (the call's brokers are these)."""
    if not brokers:
        return Step(rec, [])
    topic, partition = rec.topic, rec.partition
    states = dict(rec.replica_states)
    added = False
    changed = False  # a replica's state changed (if none did, the record may be reused: below)
    leadership, assignment = rec.leadership, rec.assignment
    out: list[Output] = []
    batch = RequestBatch()
    transition = _TRANSITIONS[target]
    valid = VALID_PREVIOUS_REPLICA_STATES[target]  # target.valid_previous_states
    name = _NAME
    for broker in visit_order(brokers, call_order):
        # putReplicaStateIfNotExists(NonExistentReplica), then validate
        current = states.get(broker)
        if current is None:
            current = states[broker] = R.NonExistentReplica
            added = True
        if current not in valid:
            out.append(
                StateChangeFailedRecord(
                    topic,
                    partition,
                    broker,
                    target.value,
                    f"invalid transition from {current.value}",
                )
            )
            continue
        new_state, leadership, assignment, failure = transition(
            broker, current, leadership, assignment, facts, batch
        )
        if failure is not None:
            # ZkReplicaStateMachine.doHandleStateChanges logs a refused NewReplica naming
            # OfflineReplica as the target state (logFailedStateChange(..., OfflineReplica, ...)).
            logged = R.OfflineReplica.value if target is R.NewReplica else target.value
            out.append(StateChangeFailedRecord(topic, partition, broker, logged, failure))
        elif new_state is None:
            del states[broker]
            changed = True
            out.append(
                ReplicaStateChangeRecord(
                    topic, partition, broker, name[current], name[R.NonExistentReplica]
                )
            )
        elif current is not new_state:
            states[broker] = new_state
            changed = True
            out.append(
                ReplicaStateChangeRecord(topic, partition, broker, name[current], name[new_state])
            )
    if batch.leader_and_isr or batch.stop_replica:
        out.extend(batch.records(topic, partition, facts.is_registered))
    if not (added or changed) and leadership is rec.leadership and assignment is rec.assignment:
        # Online -> Online at failover, or every transition refused: the same record
        return Step(rec, out, batch.update_metadata)
    pairs = _PAIRS
    items = sorted(states.items()) if added else states.items()
    replica_states = tuple([pairs[s].get(b) or _pair(b, s) for b, s in items])
    new = PartitionRecord(
        topic,
        partition,
        assignment,
        rec.state,
        leadership,
        replica_states,
        rec.brokers,
        rec.being_reassigned,
        rec.offline_dirs,
        rec.reassignment_started,
    )
    return Step(new, out, batch.update_metadata)


# -- transitions: doHandleStateChanges, one case per target state --------------------------


def _to_new(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    if la is None:
        return R.NewReplica, la, a, None
    if la.leader == broker:
        return current, la, a, "replica is being requested to become leader"
    batch.add_leader_and_isr((broker,), partition_state_for(la, a), True)
    return R.NewReplica, la, a, None


def _to_online(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    if current is R.NewReplica:
        if broker not in a.replicas:
            # Kafka logs an error and appends the replica to the assignment.
            a = ReplicaAssignment(a.replicas + (broker,), a.adding_replicas, a.removing_replicas)
        return R.OnlineReplica, la, a, None
    if la is not None:
        batch.add_leader_and_isr((broker,), partition_state_for(la, a), False)
    return R.OnlineReplica, la, a, None


def _to_offline(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    batch.add_stop_replica(broker, False, facts.stop_replica_epoch(la))
    if la is None:
        # replicasWithoutLeadershipInfo: UpdateMetadata for the partition all the same
        # (ZkReplicaStateMachine.doHandleStateChanges, OfflineReplica)
        batch.update_metadata = True
        return R.OfflineReplica, la, a, None
    if facts.newer_controller_wrote(la):
        return current, la, a, "leader and isr path written by a newer controller"
    if broker in la.isr:
        # removeReplicasFromIsr: the ISR is never emptied (its last member stays) and the
        # write bumps the leader epoch (newLeaderAndIsr).
        leader = NO_LEADER if la.leader == broker else la.leader
        isr = la.isr if len(la.isr) == 1 else tuple([r for r in la.isr if r != broker])
        # la.new_leader_and_isr(leader, isr).written(facts.controller_epoch), built once
        la = LeaderAndIsr(
            leader,
            la.leader_epoch + 1,
            isr,
            la.partition_epoch + 1,
            la.leader_recovery_state,
            facts.controller_epoch,
        )
    if not facts.queued:
        others = tuple([r for r in a.replicas if r != broker])
        batch.add_leader_and_isr(others, partition_state_for(la, a), False)
    return R.OfflineReplica, la, a, None


def _to_deletion_started(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    batch.add_stop_replica(broker, True, facts.stop_replica_epoch(la))
    return R.ReplicaDeletionStarted, la, a, None


def _to_deletion_successful(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    return R.ReplicaDeletionSuccessful, la, a, None


def _to_deletion_ineligible(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    return R.ReplicaDeletionIneligible, la, a, None


def _to_nonexistent(
    broker: int,
    current: ReplicaState,
    la: LeaderAndIsr | None,
    a: ReplicaAssignment,
    facts: Facts,
    batch: RequestBatch,
) -> Transition:
    return None, la, a.remove_replica(broker), None


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
    states = {
        r: R.OnlineReplica if is_online(r) else R.ReplicaDeletionIneligible
        for r in rec.assignment.replicas
    }
    pairs = _PAIRS
    return tuple([pairs[s].get(b) or _pair(b, s) for b, s in sorted(states.items())])
