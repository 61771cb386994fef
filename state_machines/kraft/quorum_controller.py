"""KRaft's directory step: one input event as the quorum controller handles it, up to the
partitions.

Theory of operation
-------------------
`kraft_directory_step` is `QuorumController`'s write events (apache/kafka 3.9.0,
metadata/src/main/java/org/apache/kafka/controller/QuorumController.java) for the
contract's events, each mapped onto the request or timer that causes it on a KRaft cluster:

==========================  ===========================================================
event                       KRaft
==========================  ===========================================================
ControllerFailover          a new quorum leader: `claim`; it writes nothing
BrokerStartup               `registerBroker` (a new incarnation: RegisterBrokerRecord,
                            fenced; with ELR, `handleBrokerUncleanShutdown` first), then
                            the heartbeat that unfences it: `handleBrokerUnfenced`
BrokerFailure               the session timeout: `maybeFenceOneStaleBroker` ->
                            `handleBrokerFenced`
ControlledShutdown          a heartbeat asking to shut down: `processBrokerHeartbeat` with
                            `BrokerHeartbeatManager.calculateNextBrokerState`
TopicCreation               `createTopics` with a manual assignment
PartitionExpansion          `createPartitions` with a manual assignment
TopicDeletion               `deleteTopics`: one RemoveTopicRecord
PartitionReassignment       `alterPartitionReassignments`
AlterPartition              `alterPartition` (request version 3)
ReplicaLeaderElection       `electLeaders`
TopicConfigChange,          `incrementalAlterConfigs`: ConfigRecords
BrokerConfigChange
PartitionStateSnapshot      a standby's replay of the partition's record
ObservedPartitionState      shadow mode (shadow_rules.py)
==========================  ===========================================================

The directory holds the controller's record (active, epoch, topics, brokers, the cluster's
dynamic configs), each broker's `BrokerRegistration` (ClusterControlManager's registry)
under `broker-<id>`, and each topic's record (its partitions' brokers, configs and the
partitions' summaries, as in ZK mode). Records the directory writes itself (broker, topic
and config records) are `AppendedRecord`s; the partitions write their own.

Broker epochs are the contract's `broker_epoch` where given, else the offset of the event
(Kafka's epoch is the offset of the RegisterBrokerRecord). This module holds the dispatch,
the failover and the unmapped events; the handlers are by seam: the broker events in
broker_lifecycle.py, createTopics / createPartitions / deleteTopics in topic_requests.py,
incrementalAlterConfigs in config_requests.py, the requests that name partitions
(reassignment, AlterPartition, electLeaders, snapshots, observations) in
partition_requests.py; the view and the derived ids in kraft_view.py, the periodic tasks in
periodic_tasks.py.

Not mapped (the contract cannot express them): `StopReplicaResponse` (KRaft has no
StopReplica round trip) and `ReplicaDirFailure` (it names partitions; KRaft's
`handleDirectoriesOffline` needs directory ids) go to the dead letters with that reason.
The periodic tasks (`maybeBalancePartitionLeaders`, `maybeElectUncleanLeaders`) run on
event time before the event whose `ts` reaches their deadline (periodic_tasks.py);
`ControllerTick` moves time on in a quiet log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import assert_never

from .. import event_types as ev
from ..directory import CONTROLLER_KEY, ControllerRecord, DirectoryRecord, DirectoryResult
from ..event_types import KraftTask
from ..model import ControllerConfig
from . import cluster_control as cc
from . import periodic_tasks
from .broker_lifecycle import broker_failure, broker_startup, controlled_shutdown, forget_heartbeats
from .commands import BalanceLeader, ElectUnclean, KraftOp
from .config_requests import broker_config_change, topic_config_change
from .kraft_view import KraftView, fan_out
from .outputs import broker_record
from .partition_requests import (
    alter_partition,
    observed_partition_state,
    partition_reassignment,
    partition_state_snapshot,
    replica_leader_election,
)
from .records import ApiMessageAndVersion, RegisterBrokerRecord
from .schedule import TASKS_KEY
from .topic_requests import partition_expansion, topic_creation, topic_deletion


def _controller_failover(d: KraftView, e: ev.ControllerFailover) -> None:
    c = d.controller
    if c.active and e.controller_epoch <= c.controller_epoch:
        return
    # a new quorum leader replays the log it already has and writes nothing of its own; its
    # activation schedules the periodic tasks that have work (processBatchEndOffset)
    d.put(
        CONTROLLER_KEY,
        replace(c, active=True, controller_id=e.controller_id, controller_epoch=e.controller_epoch),
    )
    if c.controller_id is None:
        _registrations_before_activation(d)
    forget_heartbeats(d)
    now = d.ts if d.ts is not None else c.event_time
    d.put(TASKS_KEY, periodic_tasks.maybe_schedule(periodic_tasks.current(d), d.config, now, True))


def _registrations_before_activation(d: KraftView) -> None:
    """The first activation: the brokers that registered before it (their BrokerStartups
    loaded context, writing nothing) get the records their registrations made, so that the
    output holds every broker's RegisterBrokerRecord: in the order they registered (broker
    epochs), each a new incarnation's (fenced), then the unfence record if the broker is
    unfenced and the controlled-shutdown change if it is in one. A later failover writes
    nothing: the new leader already has the log."""
    registrations = [r for b in sorted(d.controller.brokers) if (r := d.registration(b))]
    for r in sorted(registrations, key=lambda r: (r.epoch, r.id)):
        record = RegisterBrokerRecord(
            r.id,
            r.epoch,
            r.incarnation_id,
            is_migrating_zk_broker=r.is_migrating_zk_broker,
            log_dirs=r.directories,
        )
        d.emit(broker_record(ApiMessageAndVersion(record, cc.register_broker_record_version(d.mv))))
        if not r.fenced:
            d.emit(broker_record(cc.unfence_broker_record(r.id, r.epoch, d.mv)))
        if r.in_controlled_shutdown:
            shutdown = cc.controlled_shutdown_record(cc.BrokerRegistry(), r.id, r.epoch, d.mv)
            if shutdown is not None:
                d.emit(broker_record(shutdown))


_NOT_MAPPED = {
    ev.StopReplicaResponse: "StopReplicaResponse has no meaning in kraft mode: KRaft deletes a "
    "topic with one RemoveTopicRecord, without a StopReplica round trip",
    ev.ReplicaDirFailure: "ReplicaDirFailure cannot be applied in kraft mode: it names "
    "partitions, and KRaft's handleDirectoriesOffline needs the failed directory ids, which the "
    "contract does not carry",
}


def kraft_directory_step(
    view: Mapping[str, DirectoryRecord],
    event: ev.CauseStep,
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
    touched: frozenset[tuple[str, int]] = frozenset(),
    ts: int | None = None,
) -> DirectoryResult:
    """One input event against the KRaft directory: (records, event) -> (changed records,
    commands, outputs)."""
    d = KraftView(view, config, offset, cause_id, touched, ts)
    c = d.controller
    if ts is not None and (c.event_time is None or ts > c.event_time):
        d.put(CONTROLLER_KEY, replace(c, event_time=ts))
    if not isinstance(event, KraftTask) and d.controller.active:
        due = periodic_tasks.due_tasks(periodic_tasks.current(d), ts)
        if due:
            # the deferred tasks whose deadline this event's time reaches run first, under its cause
            return d.result(followups=(*(KraftTask(name) for name in due), event))
    match event:
        case ev.StopReplicaResponse() | ev.ReplicaDirFailure():
            d.rejected = _NOT_MAPPED[type(event)]
        case ev.ControllerFailover():
            _controller_failover(d, event)
        case ev.BrokerStartup():
            broker_startup(d, event)
        case ev.BrokerFailure():
            broker_failure(d, event)
        case ev.ControlledShutdown():
            controlled_shutdown(d, event)
        case ev.TopicCreation():
            topic_creation(d, event)
        case ev.PartitionExpansion():
            partition_expansion(d, event)
        case ev.TopicDeletion():
            topic_deletion(d, event)
        case ev.PartitionReassignment():
            partition_reassignment(d, event)
        case ev.AlterPartition():
            alter_partition(d, event)
        case ev.ReplicaLeaderElection():
            replica_leader_election(d, event)
        case ev.TopicConfigChange():
            topic_config_change(d, event)
        case ev.BrokerConfigChange():
            broker_config_change(d, event)
        case ev.PartitionStateSnapshot():
            partition_state_snapshot(d, event)
        case ev.ObservedPartitionState():
            observed_partition_state(d, event)
        case KraftTask():
            targets, after = periodic_tasks.run(d, event)
            op: KraftOp = (
                BalanceLeader() if event.task == periodic_tasks.BALANCE else ElectUnclean()
            )
            fan_out(d, targets, op)
            if after is not None:
                d.sort_commands()
                return d.result(followups=(after,))
        case ev.ControllerTick() | ev.RebalanceCheck():
            pass  # time passed: what was due ran before this step
        case _:
            assert_never(event)
    d.sort_commands()
    return d.result()


def kraft_reads_summaries(env: ev.Envelope, directory: Mapping[str, DirectoryRecord]) -> bool:
    """Whether the event reads the partitions' summaries: unfencing elects every leaderless
    partition, a shutdown heartbeat asks whether the broker still leads, an expansion reads
    partition 0's replica count (`createPartitions`), activation and a due periodic task
    read the counts and the candidates."""
    if isinstance(
        env.event,
        (ev.BrokerStartup, ev.ControlledShutdown, ev.ControllerFailover, ev.PartitionExpansion),
    ):
        return True
    controller = directory.get(CONTROLLER_KEY)
    return (
        isinstance(controller, ControllerRecord)
        and controller.active
        and bool(periodic_tasks.due_tasks(periodic_tasks.tasks_of(directory), env.ts))
    )
