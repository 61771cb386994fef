"""The directory step: one input event against the controller-wide facts, and its fan-out.

Theory of operation
-------------------
`directory_step` is `KafkaController.process` for one `ControllerEvent`, up to the point
where Kafka's controller walks partitions: each handler below updates the directory's
records (brokers, topics, the controller's own), answers what needs no partition (an
unknown partition, a stale broker epoch, a request to an inactive controller), and sends
one `Command` to every partition the event concerns. The partitions run the rest
(`partition.partition_step`). This module holds the dispatch, the failover and the
events that load or compare context (snapshots, observations); the broker events are in
`broker_events.py`, the topic and config events in `topic_events.py`, topic deletion's
events in `topic_deletion.py`, the admin and broker requests (reassignment,
AlterPartition, leader election) in `controller_requests.py`.

A broker change reaches every partition Kafka's `triggerOnlinePartitionStateChange` would
try to elect (New or Offline, of a topic not queued for deletion), as the partitions'
summaries tell the directory (partition_summaries.py), and every partition the cause
already reached; a partition that is not offline ignores the retry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import assert_never

from . import event_types as ev
from . import leader_balance
from .broker_events import broker_failure, broker_startup, controlled_shutdown, replica_dir_failure
from .commands import Failover, LoadPartition, Observe
from .controller_requests import alter_partition, partition_reassignment, replica_leader_election
from .directory import (
    CONTROLLER_KEY,
    Continuation,
    DirectoryRecord,
    DirectoryResult,
    DirectoryView,
    TopicRecord,
    topic_key,
)
from .errors import InvariantViolation
from .model import ControllerConfig, LeaderAndIsr, ReplicaAssignment
from .outputs import DivergenceRecord, ObservationOutcome, StateChangeFailedRecord
from .scala_hash import CallHints
from .states import LeaderRecoveryState
from .topic_deletion import on_stop_replica_response, on_topic_deletion
from .topic_events import (
    broker_config_change,
    partition_expansion,
    topic_config_change,
    topic_creation,
)


def _controller_failover(d: DirectoryView, e: ev.ControllerFailover) -> Continuation | None:
    c = d.controller
    if c.active and e.controller_epoch <= c.controller_epoch:
        return None  # a stale or repeated election: this controller already holds that epoch
    d.put(
        CONTROLLER_KEY,
        replace(c, active=True, controller_id=e.controller_id, controller_epoch=e.controller_epoch),
    )
    # initializeControllerContext clears shuttingDownBrokerIds, and a new controller knows
    # no failed log dirs
    for b in sorted(c.brokers):
        brec = d.broker(b)
        if brec.fact.shutting_down or brec.offline_dirs:
            d.put_broker(
                b, replace(brec, fact=replace(brec.fact, shutting_down=False), offline_dirs=())
            )
    leader_balance.schedule_at_failover(d)
    # UpdateMetadata to every broker before the state machines start (onControllerFailover)
    d.update_metadata(site=0)
    if c.active:
        # A controller move: onControllerResignation -> resetContext clears
        # topicsWithDeletionStarted and topicsIneligibleForDeletion; the new controller's
        # TopicDeletionManager.init marks ineligible again only the queued topics with an
        # offline replica or a reassignment (topic_deletion.after_reports, failover_init), and
        # its first resumeDeletions treats every queued topic as unseen (onTopicDeletion).
        for t in sorted(c.queued_topics):
            rec = d.topic(t)
            if rec is not None and (rec.started or rec.ineligible):
                d.put(topic_key(t), replace(rec, started=False, ineligible=False))
    if not d.config.delete_topic_enable:
        # TopicDeletionManager.init with deletion disabled drops the pending deletions
        for t in sorted(c.queued_topics):
            rec = d.topic(t)
            if rec is not None:
                d.put(
                    topic_key(t),
                    replace(rec, queued=False, started=False, ineligible=False, mirror=()),
                )
        d.put(CONTROLLER_KEY, replace(d.controller, queued_topics=frozenset()))
    # one op for every partition (ops are immutable): the job's codec writes a run of
    # commands sharing their op and context once
    op = Failover()
    topics = [(t, d.topic(t)) for t in sorted(d.controller.topics)]
    # ReplicaStateMachine.startup's two calls span every partition: their brokers' order
    # (groupBy, scala_hash.py) is over the cluster's online and offline replicas' brokers,
    # here every broker ever assigned to a partition (the directory keeps no more)
    hosting: set[int] = set()
    for _, rec in topics:
        assert rec is not None
        hosting.update(*[brokers for _, brokers in rec.partitions])
    online = {b for b in hosting if d.fact(b).live}
    hints = CallHints(online, hosting - online)
    for t, rec in topics:
        assert rec is not None
        for p, brokers in rec.partitions:
            order = hints(brokers) if hints.needed else ()
            d.send(t, p, Failover(order) if order else op, brokers)
    return Continuation(failover_init=True, resume=True)


def _partition_state_snapshot(d: DirectoryView, e: ev.PartitionStateSnapshot) -> None:
    if d.controller.active:
        d.outputs.append(
            StateChangeFailedRecord(
                e.topic,
                e.partition,
                None,
                "PartitionStateSnapshot",
                "ignored: snapshots load context while the controller is inactive",
            )
        )
        return
    rec = d.topic(e.topic)
    if rec is None:
        d.put(topic_key(e.topic), TopicRecord())
        c = d.controller
        d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    d.remember_brokers(e.topic, e.partition, (*e.replicas, *e.isr))
    leadership = LeaderAndIsr(
        e.leader,
        e.leader_epoch,
        e.isr,
        e.partition_epoch,
        LeaderRecoveryState(e.leader_recovery_state),
        e.controller_epoch,
    )
    assignment = ReplicaAssignment(e.replicas, e.adding_replicas, e.removing_replicas)
    d.send(e.topic, e.partition, LoadPartition(assignment, leadership, overwrite=True), e.replicas)


def _observed_partition_state(d: DirectoryView, e: ev.ObservedPartitionState) -> None:
    """Shadow mode (see shadow.py): the partition compares the cluster's state with its own."""
    if not d.controller.active:
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        observed = {"leader": e.leader, "leader_epoch": e.leader_epoch, "isr": list(e.isr)}
        d.outputs.append(
            DivergenceRecord(
                e.topic,
                e.partition,
                {"leader": -1, "leader_epoch": None, "isr": []},
                observed,
                "benign",
                "the shadow does not know this partition",
            )
        )
        d.outputs.append(ObservationOutcome("benign"))
        return
    d.send(
        e.topic,
        e.partition,
        Observe(e.leader, e.leader_epoch, e.isr, e.partition_epoch, e.controller_epoch),
        (e.leader, *e.isr),
    )


def _maybe_advance_event_time(d: DirectoryView) -> None:
    """Keep the latest event time seen (not Kafka's: the tools read it as "now")."""
    c = d.controller
    if d.ts is not None and (c.event_time is None or d.ts > c.event_time):
        d.put(CONTROLLER_KEY, replace(c, event_time=d.ts))


def directory_step(
    view: Mapping[str, DirectoryRecord],
    event: ev.CauseStep,
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
    touched: frozenset[tuple[str, int]] = frozenset(),
    ts: int | None = None,
) -> DirectoryResult:
    """One input event against the directory: (records, event) -> (changed records, commands,
    outputs). `touched`: the partitions earlier steps of the same cause reached; `ts`: the
    cause's event time."""
    d = DirectoryView(view, config, offset, cause_id, touched, ts)
    _maybe_advance_event_time(d)
    if not isinstance(event, ev.RebalanceCheck) and leader_balance.due_check(d):
        # a due check runs first, under this event's cause; the event comes back after it
        return d.result(None, (ev.RebalanceCheck(), event))
    cont: Continuation | None = None
    followups: tuple[ev.CauseStep, ...] = ()
    match event:
        case ev.ControllerFailover():
            cont = _controller_failover(d, event)
        case ev.BrokerStartup():
            cont, followups = broker_startup(d, event)
        case ev.BrokerFailure():
            cont = broker_failure(d, event)
        case ev.ControlledShutdown():
            controlled_shutdown(d, event)
        case ev.TopicCreation():
            topic_creation(d, event)
        case ev.PartitionExpansion():
            partition_expansion(d, event)
        case ev.TopicDeletion():
            cont = on_topic_deletion(d, event)
        case ev.StopReplicaResponse():
            cont = on_stop_replica_response(d, event)
        case ev.PartitionReassignment():
            partition_reassignment(d, event)
        case ev.AlterPartition():
            alter_partition(d, event)
        case ev.ReplicaLeaderElection():
            replica_leader_election(d, event)
        case ev.TopicConfigChange():
            topic_config_change(d, event)
        case ev.PartitionStateSnapshot():
            _partition_state_snapshot(d, event)
        case ev.ObservedPartitionState():
            _observed_partition_state(d, event)
        case ev.BrokerConfigChange():
            broker_config_change(d, event)
        case ev.ReplicaDirFailure():
            cont = replica_dir_failure(d, event)
        case ev.ControllerTick():
            pass  # time passed: what was due ran before this step
        case ev.RebalanceCheck():
            leader_balance.check(d)
        case ev.KraftTask():  # the KRaft rules' periodic tasks; ZK mode never schedules one
            raise InvariantViolation(f"a KRaft task in the ZooKeeper rules: {event!r}")
        case _:
            assert_never(event)
    d.commands.sort(key=lambda cmd: (cmd.topic, cmd.partition))
    return d.result(cont, followups)
