"""Partition reassignment (KIP-455) for one partition: `KafkaController.onPartitionReassignment`
and the request that starts or cancels it (`processApiPartitionReassignment`).

Theory of operation
-------------------
A reassignment is the assignment `ReplicaAssignment(full, adding, removing)`. Phase A
(the target replicas are not all in the ISR yet) writes the new assignment, bumps the
leader epoch so that every replica learns it (`updateLeaderEpochAndSendRequest`) and starts
the adding replicas one call each. Phase B (every target replica is in the ISR, checked
again after each AlterPartition by `maybeCompleteReassignment`) brings the adding replicas
online, writes the target assignment, moves leadership if the leader is leaving or
offline (the reassign election), and stops and deletes the removed replicas.

Where Kafka throws inside `onPartitionReassignment` (no stored state to bump), what ran
before stays and the request answers UNKNOWN_SERVER_ERROR, as Kafka's
`maybeTriggerPartitionReassignment` catches it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .election import REASSIGN
from .errors import ShadowControllerError
from .flow import Run
from .kafka_errors import Errors
from .model import NO_LEADER, ReplicaAssignment
from .partition_record import PartitionRecord
from .replica_state_machine import partition_state_for
from .requests import RequestBatch
from .states import PartitionState, ReplicaState

P = PartitionState
R = ReplicaState


class _LeaderEpochNotUpdated(ShadowControllerError):
    """Kafka's `updateLeaderEpoch` fails (IllegalStateException): caught by `run_reassignment`."""


def request(run: Run, target: tuple[int, ...] | None, known: bool) -> None:
    """`processApiPartitionReassignment` for one partition, with Kafka's validation order:
    `validateReplicas`, `maybeBuildReassignment`, then the partition lookup. `target` None
    cancels."""
    a = run.rec.assignment
    error = None
    if target is not None:
        if not target:
            error = (
                "INVALID_REPLICA_ASSIGNMENT: empty replica list specified in partition reassignment"
            )
        elif len(set(target)) != len(target):
            error = (
                "INVALID_REPLICA_ASSIGNMENT: duplicate replica ids in partition reassignment "
                f"replica list: {list(target)}"
            )
        elif any(r < 0 for r in target):
            error = f"INVALID_REPLICA_ASSIGNMENT: invalid broker id in replica list: {list(target)}"
        else:
            adding = a.reassign_to(target).adding_replicas
            # `addingReplicas.toSet.subsetOf(controllerContext.liveBrokerIds)`
            if not all(run.facts.is_live_broker(r) for r in adding):
                error = (
                    "INVALID_REPLICA_ASSIGNMENT: replica assignment has brokers that are not "
                    f"alive: {list(adding)}"
                )
    reassignment = None
    if error is None:
        # maybeBuildReassignment: a cancellation reverts to the origin replicas
        if a.is_being_reassigned:
            reassignment = a.reassign_to(target if target is not None else a.origin_replicas)
        elif target is not None:
            reassignment = a.reassign_to(target)
        else:
            error = Errors.NO_REASSIGNMENT_IN_PROGRESS
    if error is None and (run.facts.queued or not known or not a.replicas):
        error = "UNKNOWN_TOPIC_OR_PARTITION: the partition does not exist"
    if error is not None:
        run.failed("PartitionReassignment", error)
        return
    assert reassignment is not None
    run_reassignment(run, reassignment)


def maybe_mark_started(
    run: Run, before: PartitionRecord, cause_offset: int, ts: int | None
) -> None:
    """Not Kafka's: remember when the reassignment now in progress was asked for (a new
    target, or a cancellation, restarts the clock), for the operator's tools. A completed
    reassignment forgets it (`PartitionRecord.with_being_reassigned`)."""
    a = run.rec.assignment
    if run.rec.being_reassigned and (
        not before.being_reassigned or a.target_replicas != before.assignment.target_replicas
    ):
        run.rec = run.rec.with_reassignment_started((cause_offset, ts))


def run_reassignment(run: Run, reassignment: ReplicaAssignment) -> None:
    """onPartitionReassignment with Kafka's exception handling: what ran before the
    exception stays, and the failure is recorded (UNKNOWN_SERVER_ERROR)."""
    # onPartitionReassignment runs per partition: its batches are this partition's alone
    run.scope = f"{run.rec.topic}-{run.rec.partition}"
    try:
        _on_partition_reassignment(run, reassignment)
    except _LeaderEpochNotUpdated as exc:
        run.failed("PartitionReassignment", f"UNKNOWN_SERVER_ERROR: {exc}")
    finally:
        run.scope = ""


def maybe_complete(run: Run) -> None:
    """`maybeCompleteReassignment`, after a successful AlterPartition."""
    if _is_complete(run, run.rec.assignment):
        run_reassignment(run, run.rec.assignment)


def _is_complete(run: Run, assignment: ReplicaAssignment) -> bool:
    """`isReassignmentComplete`: every target replica is in the stored ISR."""
    if not assignment.is_being_reassigned:
        return True
    la = run.rec.leadership
    if la is None:
        return False
    return set(assignment.target_replicas) <= set(la.isr)


def _update_leader_epoch_and_send(run: Run, assignment: ReplicaAssignment, site: int) -> None:
    """`updateLeaderEpochAndSendRequest`: bump the leader epoch (a conditional write), then
    LeaderAndIsr to the origin replicas and, as new, to the adding ones."""
    la = run.rec.leadership
    if la is None:
        raise _LeaderEpochNotUpdated("cannot update leader epoch: leader and isr path is empty")
    if run.facts.newer_controller_wrote(la):
        raise _LeaderEpochNotUpdated("leader and isr path written by a newer controller")
    written = la.new_epoch().written(run.facts.controller_epoch)
    run.rec = run.rec.with_leadership(written)
    batch = RequestBatch()
    state = partition_state_for(written, run.rec.assignment)
    batch.add_leader_and_isr(assignment.origin_replicas, state, False)
    batch.add_leader_and_isr(assignment.adding_replicas, state, True)
    run.send(batch, site)


def _stop_removed_replicas(run: Run, removed: Sequence[int], site: int) -> None:
    """`stopRemovedReplicasOfReassignedPartition`: four batches, at `site` and after."""
    for i, target in enumerate(
        (
            R.OfflineReplica,
            R.ReplicaDeletionStarted,
            R.ReplicaDeletionSuccessful,
            R.NonExistentReplica,
        )
    ):
        run.replicas(removed, target, site + i)


def _on_partition_reassignment(run: Run, reassignment: ReplicaAssignment) -> None:
    if run.facts.queued:
        run.mark_ineligible = True  # step 0: "topic reassignment in progress"
    current = run.rec.assignment
    if current != reassignment:
        # updateCurrentReassignment
        run.rec = run.rec.with_assignment(reassignment)
        unneeded = [r for r in current.replicas if r not in reassignment.replicas]
        if unneeded:
            _stop_removed_replicas(run, unneeded, site=1)
    run.rec = run.rec.with_being_reassigned(True)
    adding, removing = reassignment.adding_replicas, reassignment.removing_replicas
    if not _is_complete(run, reassignment):
        # Phase A: bump the epoch so the new assignment reaches the replicas, then start
        # the new replicas one call each.
        _update_leader_epoch_and_send(run, reassignment, site=5)
        for i, replica in enumerate(adding):
            run.replicas((replica,), R.NewReplica, site=6 + i)
        return
    # Phase B
    run.replicas(adding, R.OnlineReplica, site=5)
    completed = ReplicaAssignment(reassignment.target_replicas)
    run.rec = run.rec.with_assignment(completed)
    la = run.rec.leadership
    leader = la.leader if la else NO_LEADER
    if leader not in completed.replicas:
        run.partition(P.OnlinePartition, REASSIGN, site=6)
    elif run.facts.is_online(leader):
        _update_leader_epoch_and_send(run, completed, site=6)
    else:
        run.partition(P.OnlinePartition, REASSIGN, site=6)
    _stop_removed_replicas(run, removing, site=7)
    run.rec = run.rec.with_being_reassigned(False)
    # B8: UpdateMetadata for the partition to every broker
    run.update_metadata(site=11)
    if run.facts.queued:
        run.resume_deletion = True
