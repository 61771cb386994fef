"""Kafka's partition state machine (`ZkPartitionStateMachine`, PartitionStateMachine.scala),
for one partition.

Theory of operation
-------------------
    NonExistentPartition -> NewPartition -> OnlinePartition <-> OfflinePartition
                                                                -> NonExistentPartition

`handle_state_changes` is `handleStateChanges`: one request batch, the partition's
transition, the batch sent at the end. The transition to OnlinePartition is the one with
work in it, and is a pure function returning the new stored leader-and-ISR and its
requests, or why it failed:

* from NewPartition, `initializeLeaderAndIsrForPartitions`: the first live replica leads,
  the live replicas are the ISR, and the znode is created (leader and partition epoch 0);
* from Offline or Online, `electLeaderForPartitions` under an `ElectionStrategy` value
  (election.py), then the conditional write (partition epoch + 1).

A failure is a `Refusal` value that says whether the transition itself was invalid (the
admin election answers UNKNOWN_SERVER_ERROR then) or the election found no leader; callers
never read the text. What Kafka only logs becomes a record: `StateChangeFailed` for a
refused change, `PartitionStateChange` for a change of state.

`startup` is `PartitionStateMachine.startup`'s `initializePartitionState`: the state is
recorded directly, without a transition.
"""

from __future__ import annotations

from typing import NamedTuple

from .election import (
    ControlledShutdownElection,
    ElectionOutcome,
    ElectionStrategy,
    OfflineElection,
    PreferredElection,
    ReassignElection,
    elect_for_controlled_shutdown,
    elect_for_offline_partition,
    elect_for_reassigned_partition,
    elect_preferred_replica,
)
from .model import LeaderAndIsr
from .outputs import Output, PartitionStateChangeRecord, StateChangeFailedRecord
from .partition_record import Facts, PartitionRecord
from .replica_state_machine import partition_state_for
from .requests import RequestBatch
from .states import VALID_PREVIOUS_PARTITION_STATES, PartitionState

P = PartitionState
# each state's name, read without the enum's `value` property (a Python call per read)
_NAME: dict[PartitionState, str] = {s: s.value for s in PartitionState}


class Refusal(NamedTuple):
    """Why a partition state change failed; `invalid_transition` when its current state
    does not allow the target (`logInvalidTransition`)."""

    reason: str
    invalid_transition: bool = False


class PartitionStep(NamedTuple):
    """What `handle_state_changes` returns: the new record, its outputs, and the refusal."""

    record: PartitionRecord
    outputs: list[Output]
    refusal: Refusal | None
    # the batch asked for UpdateMetadata for this partition (requests.RequestBatch)
    update_metadata: bool = False


def handle_state_changes(
    rec: PartitionRecord,
    facts: Facts,
    target: PartitionState,
    strategy: ElectionStrategy | None = None,
) -> PartitionStep:
    """`PartitionStateMachine.handleStateChanges(partitions, target, strategy)` for one
    partition."""
    topic, partition = rec.topic, rec.partition
    current = rec.state or P.NonExistentPartition  # putPartitionStateIfNotExists
    out: list[Output] = []
    if current not in VALID_PREVIOUS_PARTITION_STATES[target]:  # target.valid_previous_states
        refusal = Refusal(f"invalid transition from {current.value}", invalid_transition=True)
        out.append(StateChangeFailedRecord(topic, partition, None, target.value, refusal.reason))
        return PartitionStep(rec.with_state(current) if rec.state is None else rec, out, refusal)
    if target is not P.OnlinePartition:
        if current is not target:
            out.append(PartitionStateChangeRecord(topic, partition, _NAME[current], _NAME[target]))
        return PartitionStep(rec.with_state(target), out, None, False)
    batch = RequestBatch()
    if current is P.NewPartition:
        leadership, failure = _initialize_leader_and_isr(rec, facts, batch)
    elif strategy is None:
        # IllegalArgumentException, caught: every partition reported as failed
        leadership, failure = (
            None,
            "election strategy is a required field when the target state is OnlinePartition",
        )
    else:
        leadership, failure = _elect_leader(rec, facts, strategy, batch)
    if failure is not None:
        out.append(StateChangeFailedRecord(topic, partition, None, target.value, failure))
        new = rec.with_state(current) if rec.state is None else rec
    else:
        if current is not P.OnlinePartition:
            out.append(
                PartitionStateChangeRecord(
                    topic, partition, _NAME[current], _NAME[P.OnlinePartition]
                )
            )
        new = PartitionRecord(
            topic,
            partition,
            rec.assignment,
            P.OnlinePartition,
            leadership,
            rec.replica_states,
            rec.brokers,
            rec.being_reassigned,
            rec.offline_dirs,
            rec.reassignment_started,
        )
    out.extend(batch.records(topic, partition, facts.is_registered))
    return PartitionStep(
        new, out, None if failure is None else Refusal(failure), batch.update_metadata
    )


def _initialize_leader_and_isr(
    rec: PartitionRecord, facts: Facts, batch: RequestBatch
) -> tuple[LeaderAndIsr | None, str | None]:
    """`initializeLeaderAndIsrForPartitions` for one partition."""
    live = tuple(r for r in rec.assignment.replicas if facts.is_online(r))
    if not live:
        return None, "no assigned replica is alive"
    if rec.leadership is not None:
        # createTopicPartitionStatesRaw answers NODEEXISTS: only logged, the stored state
        # is untouched and the partition stays New.
        return None, "NODEEXISTS: the partition state already exists"
    # The znode is created (version 0): leader epoch and partition epoch both start at 0.
    leadership = LeaderAndIsr.initial(live[0], live, facts.controller_epoch)
    batch.add_leader_and_isr(
        leadership.isr, partition_state_for(leadership, rec.assignment, "initial"), True
    )
    return leadership, None


def _elect_leader(
    rec: PartitionRecord, facts: Facts, strategy: ElectionStrategy, batch: RequestBatch
) -> tuple[LeaderAndIsr | None, str | None]:
    """`electLeaderForPartitions` for one partition, then the conditional write."""
    la = rec.leadership
    if la is None:
        return None, "leader and isr information does not exist"
    if facts.newer_controller_wrote(la):
        return None, "leader and isr path already written by a newer controller"
    replicas = rec.assignment.replicas
    outcome: ElectionOutcome
    if isinstance(strategy, OfflineElection):
        # collectUncleanLeaderElectionState: the unclean flag matters only when no ISR
        # member is online; an admin UNCLEAN election allows it without reading config.
        has_live_isr = any(facts.is_online(r) for r in la.isr)
        unclean = (
            False
            if has_live_isr
            else (strategy.allow_unclean or facts.ctx.unclean_leader_election_enable)
        )
        outcome = elect_for_offline_partition(
            la, replicas, facts.is_online, unclean, facts.config.leader_recovery_supported
        )
    elif isinstance(strategy, ReassignElection):
        outcome = elect_for_reassigned_partition(
            la, rec.assignment.target_replicas, facts.is_online
        )
    elif isinstance(strategy, PreferredElection):
        outcome = elect_preferred_replica(la, replicas, facts.is_online)
    else:
        assert isinstance(strategy, ControlledShutdownElection)
        outcome = elect_for_controlled_shutdown(
            la, replicas, facts.is_online_or_shutting_down, facts.shutting_down()
        )
    if outcome.leader_and_isr is None:
        return None, f"failed to elect leader under strategy {strategy.label}"
    written = outcome.leader_and_isr.written(facts.controller_epoch)
    label = "unclean" if outcome.unclean else strategy.label
    batch.add_leader_and_isr(
        outcome.recipients, partition_state_for(written, rec.assignment, label), False
    )
    return written, None


def startup(rec: PartitionRecord, facts: Facts) -> PartitionRecord:
    """`initializePartitionState`: New without a stored state, Online when the stored leader
    is online, Offline otherwise; recorded directly (no transition, no record)."""
    la = rec.leadership
    if la is None:
        return rec.with_state(P.NewPartition)
    return rec.with_state(P.OnlinePartition if facts.is_online(la.leader) else P.OfflinePartition)
