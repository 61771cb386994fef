"""KRaft's partition requests: the events that name partitions, as the quorum controller
handles them, each routed to the partitions as a `KraftOp`.

Source: apache/kafka 3.9.0, metadata/src/main/java/org/apache/kafka/controller/
ReplicationControlManager.java: `alterPartitionReassignments` (PartitionReassignment),
`alterPartition` v3 (AlterPartition), `electLeaders` (ReplicaLeaderElection); a standby's
replay of a PartitionRecord (PartitionStateSnapshot); and shadow mode's observations
(ObservedPartitionState, compared by shadow_rules.py). The handlers are cases of
`kraft_directory_step` (quorum_controller.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from .. import event_types as ev
from ..commands import Observe
from ..directory import CONTROLLER_KEY, TopicRecord, topic_key
from ..kafka_errors import Errors
from ..outputs import (
    AlterPartitionResultRecord,
    DivergenceRecord,
    ElectionResultRecord,
    ObservationOutcome,
    StateChangeFailedRecord,
)
from ..states import LeaderRecoveryState
from .alter_partition import unknown_topic_error
from .commands import AlterIsrData, AlterReassignment, ElectLeader, LoadRegistration
from .kraft_view import ALTER_PARTITION_VERSION, KraftView
from .partition_registration import PartitionRegistration
from .replication_control import cluster_describer_default_dir


def _known(d: KraftView, topic: str, partition: int) -> bool:
    rec = d.topic(topic)
    return rec is not None and partition in rec.partition_ids()


def partition_reassignment(d: KraftView, e: ev.PartitionReassignment) -> None:
    if not d.controller.active:
        return
    if not _known(d, e.topic, e.partition):
        d.emit(
            StateChangeFailedRecord(
                e.topic,
                e.partition,
                None,
                "PartitionReassignment",
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
            )
        )
        return
    targets = [r for r in (e.target_replicas or ()) if isinstance(r, int) and r >= 0]
    d.remember_brokers(e.topic, e.partition, targets)
    d.ksend(e.topic, e.partition, AlterReassignment(e.target_replicas))


def alter_partition(d: KraftView, e: ev.AlterPartition) -> None:
    if not d.controller.active:
        return

    def refuse(error: str) -> None:
        d.emit(
            AlterPartitionResultRecord(
                e.topic, e.partition, e.broker_id, error, None, None, None, None
            )
        )

    reg = d.registration(e.broker_id)
    epoch = e.broker_epoch if e.broker_epoch is not None else (reg.epoch if reg is not None else -1)
    stale = d.registry([e.broker_id]).check_broker_epoch(e.broker_id, epoch)
    if stale is not None:
        refuse(stale)
        return
    rec = d.topic(e.topic)
    if rec is None:
        refuse(unknown_topic_error(ALTER_PARTITION_VERSION))
        return
    if e.partition not in rec.partition_ids():
        refuse(Errors.UNKNOWN_TOPIC_OR_PARTITION)  # validateAlterPartitionData: no such partition
        return
    d.remember_brokers(e.topic, e.partition, (e.broker_id, *e.isr))
    d.ksend(
        e.topic,
        e.partition,
        AlterIsrData(
            e.broker_id,
            ALTER_PARTITION_VERSION,
            e.leader_epoch,
            e.partition_epoch,
            e.isr,
            e.leader_recovery_state,
        ),
    )


def replica_leader_election(d: KraftView, e: ev.ReplicaLeaderElection) -> None:
    if not d.controller.active:
        return
    listed = e.partitions is not None
    if e.partitions is None:
        wanted = [
            (t, p)
            for t in sorted(d.controller.topics)
            for p in cast(TopicRecord, d.topic(t)).partition_ids()
        ]
    else:
        wanted = list(e.partitions)
    known: dict[
        str, frozenset[int]
    ] = {}  # each topic's partitions, read once (not once a partition)
    for t, p in wanted:
        if t not in known:
            rec = d.topic(t)
            known[t] = frozenset(rec.partition_ids()) if rec is not None else frozenset()
        if p not in known[t]:
            d.emit(
                ElectionResultRecord(t, p, e.election_type, Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            )
        else:
            d.ksend(t, p, ElectLeader(e.election_type, listed))


def partition_state_snapshot(d: KraftView, e: ev.PartitionStateSnapshot) -> None:
    if d.controller.active:
        d.emit(
            StateChangeFailedRecord(
                e.topic,
                e.partition,
                None,
                "PartitionStateSnapshot",
                "ignored: snapshots load context while the controller is inactive",
            )
        )
        return
    if d.topic(e.topic) is None:
        d.put(topic_key(e.topic), TopicRecord())
        c = d.controller
        d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    d.remember_brokers(e.topic, e.partition, (*e.replicas, *e.isr))
    default_dir = cluster_describer_default_dir(d.registry(), d.mv)
    registration = PartitionRegistration(
        replicas=e.replicas,
        directories=tuple(default_dir(r) for r in e.replicas),
        isr=e.isr,
        leader=e.leader,
        leader_epoch=e.leader_epoch,
        partition_epoch=e.partition_epoch,
        leader_recovery_state=LeaderRecoveryState(e.leader_recovery_state),
        removing_replicas=e.removing_replicas,
        adding_replicas=e.adding_replicas,
    )
    d.ksend(e.topic, e.partition, LoadRegistration(registration))


def observed_partition_state(d: KraftView, e: ev.ObservedPartitionState) -> None:
    if not d.controller.active:
        return
    if not _known(d, e.topic, e.partition):
        observed = {"leader": e.leader, "leader_epoch": e.leader_epoch, "isr": list(e.isr)}
        d.append_output(
            DivergenceRecord(
                e.topic,
                e.partition,
                {"leader": -1, "leader_epoch": None, "isr": []},
                observed,
                "benign",
                "the shadow does not know this partition",
            )
        )
        d.append_output(ObservationOutcome("benign"))
        return
    d.remember_brokers(e.topic, e.partition, (e.leader, *e.isr))
    d.ksend(
        e.topic,
        e.partition,
        Observe(e.leader, e.leader_epoch, e.isr, e.partition_epoch, e.controller_epoch),
    )
