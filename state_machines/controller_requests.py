"""The directory step of the requests the controller answers: KafkaController's
`ApiPartitionReassignment`, `AlterPartitionReceived` and `ReplicaLeaderElection` events
(core/src/main/scala/kafka/controller/KafkaController.scala, 3.9.0), up to the partitions.

Each answers what needs no partition (an inactive controller answers nothing; an unknown
partition, a stale broker epoch or a topic queued for deletion is answered here) and sends
the partition its command (`Reassign`, `AlterIsr`, `Elect`); the partition step runs the
rest and answers the request (partition.py). `controller_events.directory_step` dispatches
to them.
"""

from __future__ import annotations

from . import event_types as ev
from .commands import AlterIsr, Elect, Reassign
from .directory import DirectoryView
from .kafka_errors import Errors
from .outputs import AlterPartitionResultRecord, ElectionResultRecord, StateChangeFailedRecord


def partition_reassignment(d: DirectoryView, e: ev.PartitionReassignment) -> None:
    if not d.controller.active:
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        error = _unknown_partition_reassignment_error(d, e.target_replicas)
        d.outputs.append(
            StateChangeFailedRecord(e.topic, e.partition, None, "PartitionReassignment", error)
        )
        return
    targets = [r for r in (e.target_replicas or ()) if isinstance(r, int) and r >= 0]
    d.remember_brokers(e.topic, e.partition, targets)
    d.send(e.topic, e.partition, Reassign(e.target_replicas, d.ts), targets)


def _unknown_partition_reassignment_error(d: DirectoryView, target: tuple[int, ...] | None) -> str:
    # validateReplicas runs first against an empty current assignment, so every target
    # replica is "adding" and must be live; then maybeBuildReassignment, then the lookup.
    if target is not None:
        if not target:
            return (
                "INVALID_REPLICA_ASSIGNMENT: empty replica list specified in partition reassignment"
            )
        if len(set(target)) != len(target):
            return (
                "INVALID_REPLICA_ASSIGNMENT: duplicate replica ids in partition reassignment "
                f"replica list: {list(target)}"
            )
        if any(r < 0 for r in target):
            return f"INVALID_REPLICA_ASSIGNMENT: invalid broker id in replica list: {list(target)}"
        if not all(d.fact(r).live for r in target):
            return (
                "INVALID_REPLICA_ASSIGNMENT: replica assignment has brokers that are not alive: "
                f"{list(target)}"
            )
        return "UNKNOWN_TOPIC_OR_PARTITION: the partition does not exist"
    return Errors.NO_REASSIGNMENT_IN_PROGRESS


def alter_partition(d: DirectoryView, e: ev.AlterPartition) -> None:
    if not d.controller.active:
        return
    fact = d.fact(e.broker_id)

    def refuse(error: Errors) -> None:
        d.outputs.append(
            AlterPartitionResultRecord(
                e.topic, e.partition, e.broker_id, error, None, None, None, None
            )
        )

    # the request-level check: unknown broker or a broker epoch other than the cached one
    if not fact.registered:
        refuse(Errors.STALE_BROKER_EPOCH)
        return
    if (
        e.broker_epoch is not None
        and fact.broker_epoch is not None
        and e.broker_epoch != fact.broker_epoch
    ):
        refuse(Errors.STALE_BROKER_EPOCH)
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        refuse(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if rec is not None:
            # a known topic: the partition is in partitionsToAlter, and the UpdateMetadata
            # after the writes goes out without its state (it has no leadership)
            d.update_metadata(site=1)
        return
    mentioned = (e.broker_id, *e.isr)
    d.remember_brokers(e.topic, e.partition, mentioned)
    d.send(
        e.topic,
        e.partition,
        AlterIsr(e.broker_id, e.leader_epoch, e.partition_epoch, e.isr, e.leader_recovery_state),
        mentioned,
    )


def replica_leader_election(d: DirectoryView, e: ev.ReplicaLeaderElection) -> None:
    if not d.controller.active:
        return
    if e.partitions is None:
        wanted = [(t, p) for t in sorted(d.controller.topics) for p in d.topic(t).partition_ids()]  # type: ignore[union-attr]
    else:
        wanted = list(e.partitions)
    # Kafka allows an unclean election without reading the topic config only when an admin
    # asked for it (AdminClientTriggered).
    allow_unclean = e.election_type == "UNCLEAN" and e.trigger == "admin"
    elect = Elect(e.election_type, allow_unclean)  # one op for every partition (ops are immutable)
    known: dict[
        str, frozenset[int]
    ] = {}  # each topic's partitions, read once (not once a partition)
    for t, p in wanted:
        rec = d.topic(t)
        if rec is not None and t not in known:
            known[t] = frozenset(rec.partition_ids())
        if rec is None or p not in known[t]:
            d.outputs.append(
                ElectionResultRecord(t, p, e.election_type, Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            )
        elif rec.queued:
            d.outputs.append(
                ElectionResultRecord(t, p, e.election_type, Errors.INVALID_TOPIC_EXCEPTION, None)
            )
        else:
            d.send(t, p, elect)
