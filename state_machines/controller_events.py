"""The directory step: one input event against the controller-wide facts, and its fan-out.

Theory of operation
-------------------
`directory_step` is `KafkaController.process` for one `ControllerEvent`, up to the point
where Kafka's controller walks partitions: each handler below updates the directory's
records (brokers, topics, the controller's own), answers what needs no partition (an
unknown partition, a stale broker epoch, a request to an inactive controller), and sends
one `Command` to every partition the event concerns. The partitions run the rest
(`partition.partition_step`); topic deletion's events are in `topic_deletion.py`, the
admin and broker requests (reassignment, AlterPartition, leader election) in
`controller_requests.py`.

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
from .commands import (
    BrokersFailed,
    BrokersStarted,
    CreatePartition,
    Failover,
    LoadPartition,
    LogDirFailure,
    Observe,
    Op,
    ShutdownBroker,
    TriggerOnline,
)
from .controller_requests import alter_partition, partition_reassignment, replica_leader_election
from .directory import (
    CONTROLLER_KEY,
    BrokerRecord,
    Continuation,
    DirectoryRecord,
    DirectoryResult,
    DirectoryView,
    TopicRecord,
    topic_key,
)
from .errors import InvariantViolation
from .kafka_errors import Errors
from .model import BrokerFact, ControllerConfig, LeaderAndIsr, ReplicaAssignment, equals_ignore_case
from .outputs import (
    ControlledShutdownResultRecord,
    DivergenceRecord,
    ObservationOutcome,
    StateChangeFailedRecord,
)
from .partition_summaries import offline_partitions, partitions_with_offline_leader
from .scala_hash import CallHints
from .states import LeaderRecoveryState
from .topic_deletion import on_stop_replica_response, on_topic_deletion


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


def _broker_startup(
    d: DirectoryView, e: ev.BrokerStartup
) -> tuple[Continuation | None, tuple[ev.Event, ...]]:
    rec = d.broker(e.broker_id)
    fact = rec.fact
    if fact.registered:
        cached = fact.broker_epoch
        if (
            e.broker_epoch is not None
            and cached is not None
            and e.broker_epoch > cached
            and d.controller.active
        ):
            # A bounce (processBrokerChange): failure, then startup with the new epoch.
            return _broker_failure(d, ev.BrokerFailure(e.broker_id)), (e,)
        if e.broker_epoch is not None and (cached is None or e.broker_epoch > cached):
            d.put_broker(e.broker_id, replace(rec, fact=replace(fact, broker_epoch=e.broker_epoch)))
        return None, ()
    # onBrokerStartup: replicasOnOfflineDirs.remove(broker)
    d.put_broker(e.broker_id, BrokerRecord(BrokerFact(True, False, e.broker_epoch)))
    if not d.controller.active:
        return None, ()
    hosted = d.hosted(e.broker_id)
    # onBrokerStartup: UpdateMetadata to the existing brokers (no partitions), then to the
    # new one with every partition with leadership of a topic not queued for deletion
    # (partitionsWithLeaders); the new broker's replicas go online, then
    # triggerOnlinePartitionStateChange elects every New or Offline partition of the cluster
    d.update_metadata(site=0, recipients=[b for b in d.live_or_shutting_down() if b != e.broker_id])
    d.update_metadata(site=1, recipients=[e.broker_id])
    targets = _with_retries(d, hosted)
    if d.config.emit_update_metadata:
        targets = sorted({*targets, *_partitions_with_leaders(d)})
    started = BrokersStarted((e.broker_id,))
    for t, p in targets:
        d.send(t, p, started, (e.broker_id,))
    queued = frozenset(t for t, _ in hosted if t in d.controller.queued_topics)
    return (Continuation(resume_topics=queued) if queued else None), ()


def _broker_failure(d: DirectoryView, e: ev.BrokerFailure) -> Continuation | None:
    rec = d.broker(e.broker_id)
    if not rec.fact.registered:
        return None
    # onBrokerFailure also removes the broker from shuttingDownBrokerIds
    # onBrokerFailure also removes it from replicasOnOfflineDirs
    d.put_broker(e.broker_id, BrokerRecord(BrokerFact(False, False, None)))
    if not d.controller.active:
        return None
    targets = d.hosted(e.broker_id)
    # onReplicasBecomeOffline: partitionsWithOfflineLeader is cluster-wide (a leader that is
    # not online anywhere: -1, dead, shutting down, on a failed dir), then
    # triggerOnlinePartitionStateChange elects every New or Offline partition of the cluster.
    leaders = _offline_leaders(d)
    failed = BrokersFailed((e.broker_id,))
    for t, p in _with_retries(d, [*targets, *leaders]):
        leader = leaders.get((t, p), -1)
        d.send(t, p, failed, (e.broker_id, leader) if leader >= 0 else (e.broker_id,))
    # onReplicasBecomeOffline: when no partition changed leader or ISR (every election failed
    # and no replica outside a queued topic went offline), UpdateMetadata on its own
    d.update_metadata(site=5, unless_sites=(2, 3))
    queued = frozenset(t for t, p in d.hosted(e.broker_id) if t in d.controller.queued_topics)
    return Continuation(mark_topics=queued, resume=True) if queued else None


def _offline_leaders(d: DirectoryView) -> dict[tuple[str, int], int]:
    """`partitionsWithOfflineLeader` (partition_summaries.py): each partition's leader, whose
    fact its command carries (the partition may not have heard of that broker lately)."""
    return {(t, p): leader for t, p, leader in partitions_with_offline_leader(d)}


def _partitions_with_leaders(d: DirectoryView) -> list[tuple[str, int]]:
    """`partitionsWithLeaders`: partitions with leadership of topics not queued for
    deletion, as the partitions' summaries say."""
    out: list[tuple[str, int]] = []
    for topic in sorted(d.controller.topics):
        rec = d.topic(topic)
        if rec is not None and not rec.queued:
            out.extend((topic, p) for p, s in rec.summaries if s.leader is not None)
    return out


def _with_retries(d: DirectoryView, targets: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`targets`, with every partition `triggerOnlinePartitionStateChange` elects, in
    (topic, partition) order."""
    queued = d.controller.queued_topics
    more = [tp for tp in d.touched if tp[0] not in queued]
    # the distinct partitions, sorted: deduplicated in order, so that the sort meets a few
    # sorted runs (`targets` and the offline partitions come in order) instead of a set's
    return sorted(dict.fromkeys([*targets, *offline_partitions(d), *more]))


def _controlled_shutdown(d: DirectoryView, e: ev.ControlledShutdown) -> None:
    if not d.controller.active:
        return
    rec = d.broker(e.broker_id)

    def refuse(error: Errors) -> None:
        d.outputs.append(ControlledShutdownResultRecord(e.broker_id, (), error))

    if e.broker_epoch is not None and e.broker_epoch != -1:
        if not rec.fact.registered:
            # liveBrokerIdAndEpochs(id) throws for an unknown id before the availability check
            refuse(Errors.UNKNOWN_SERVER_ERROR)
            return
        if rec.fact.broker_epoch is not None and e.broker_epoch < rec.fact.broker_epoch:
            refuse(Errors.STALE_BROKER_EPOCH)
            return
    if not rec.fact.registered:
        refuse(Errors.BROKER_NOT_AVAILABLE)
        return
    d.put_broker(e.broker_id, replace(rec, fact=replace(rec.fact, shutting_down=True)))
    # the result's partitions_remaining is filled from the partitions' StillLeads
    d.outputs.append(ControlledShutdownResultRecord(e.broker_id, (), None))
    shutdown = ShutdownBroker(e.broker_id)
    for t, p in d.hosted(e.broker_id):
        d.send(t, p, shutdown, (e.broker_id,))


def _new_partitions(
    d: DirectoryView, topic: str, partitions: tuple[tuple[int, tuple[int, ...]], ...]
) -> None:
    active = d.controller.active
    d.remember_partitions(topic, partitions)
    # onNewPartitionCreation's replica calls span the new partitions: their brokers' order
    hints = CallHints(set().union(*[replicas for _, replicas in partitions])) if active else None
    ops: dict[tuple[int, ...], Op] = {}  # one op per assignment: partitions share it
    for p, replicas in partitions:
        op = ops.get(replicas)
        if op is None:
            op = ops[replicas] = (
                CreatePartition(replicas, hints(replicas) if hints.needed else ())
                if hints is not None
                else LoadPartition(ReplicaAssignment(replicas))
            )
        d.send(topic, p, op, replicas)


def _topic_creation(d: DirectoryView, e: ev.TopicCreation) -> None:
    if d.topic(e.topic) is not None:
        return  # processTopicChange only acts on topics it has not seen
    d.put(topic_key(e.topic), TopicRecord(configs=e.configs))
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    _new_partitions(d, e.topic, e.partitions)


def _partition_expansion(d: DirectoryView, e: ev.PartitionExpansion) -> None:
    rec = d.topic(e.topic)
    if rec is None or rec.queued:
        return  # unknown topic; or being deleted: Kafka restores the old assignment
    known = set(rec.partition_ids())
    _new_partitions(d, e.topic, tuple((p, r) for p, r in e.partitions if p not in known))


def _topic_config_change(d: DirectoryView, e: ev.TopicConfigChange) -> None:
    rec = d.topic(e.topic)
    if rec is None:
        return
    # The topic's config znode holds the whole override set: a change replaces it.
    d.put(topic_key(e.topic), replace(rec, configs=e.configs))
    # TopicConfigHandler.processConfigChanges: unclean.leader.election.enable=true on a topic
    # triggers triggerOnlinePartitionStateChange(topic). It reads the value with Scala's
    # toBoolean, untrimmed (the election's LogConfig trims it): " true" enables unclean
    # elections for the topic but triggers nothing here.
    if d.controller.active and equals_ignore_case(
        dict(e.configs).get("unclean.leader.election.enable", ""), "true"
    ):
        for p in rec.partition_ids():
            d.send(e.topic, p, TriggerOnline())


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


def _broker_config_change(d: DirectoryView, e: ev.BrokerConfigChange) -> None:
    """The cluster-wide dynamic defaults (`DynamicBrokerConfig`). Of the controller's
    settings only `unclean.leader.election.enable` is dynamic in 3.9.0; turning it from false
    to true runs `processUncleanLeaderElectionEnable`: triggerOnlinePartitionStateChange()."""
    c = d.controller
    configs = dict(c.dynamic_configs)
    for key, value in e.configs:
        if value is None:
            configs.pop(key, None)
        else:
            configs[key] = value
    merged = tuple(sorted(configs.items()))
    if merged == c.dynamic_configs:
        return
    enabled_before = d.config.cluster_unclean_enabled(c.dynamic_configs)
    d.put(CONTROLLER_KEY, replace(c, dynamic_configs=merged))
    if c.active and not enabled_before and d.config.cluster_unclean_enabled(merged):
        for t, p in _with_retries(d, []):
            d.send(t, p, TriggerOnline())


def _replica_dir_failure(d: DirectoryView, e: ev.ReplicaDirFailure) -> Continuation | None:
    """`processLogDirEventNotification` -> `onBrokerLogDirFailure(broker)`: LeaderAndIsr to
    every replica on the broker; then `processLeaderAndIsrResponseReceived` for its answer,
    KAFKA_STORAGE_ERROR for `e.partitions`: the new ones join `replicasOnOfflineDirs` and
    `onReplicasBecomeOffline` runs for them."""
    if not d.controller.active:
        return None
    brec = d.broker(e.broker_id)
    hosted = d.hosted(e.broker_id)
    if not brec.fact.registered:
        # a broker that is not live never answers: only the notification's LeaderAndIsr
        # round is run (and its requests are dropped at send)
        for t, p in hosted:
            d.send(t, p, LogDirFailure(e.broker_id, False, False), (e.broker_id,))
        return None
    answered = set(hosted)
    failed = {tp for tp in e.partitions if tp in answered}
    new = failed - set(brec.offline_dirs)
    if new:
        d.put_broker(
            e.broker_id, replace(brec, offline_dirs=tuple(sorted({*brec.offline_dirs, *new})))
        )
    targets = list(hosted)
    leaders: dict[tuple[str, int], int] = {}
    if new:
        # onReplicasBecomeOffline: partitionsWithOfflineLeader is cluster-wide (a leader that
        # is not online anywhere), then every New or Offline partition is elected
        leaders = _offline_leaders(d)
        targets = _with_retries(d, [*targets, *leaders])
    for t, p in targets:
        leader = leaders.get((t, p), -1)
        d.send(
            t,
            p,
            LogDirFailure(e.broker_id, (t, p) in new, bool(new)),
            (e.broker_id, leader) if leader >= 0 else (e.broker_id,),
        )
    if new:
        # onReplicasBecomeOffline's own UpdateMetadata (see _broker_failure)
        d.update_metadata(site=6, unless_sites=(3, 4))
    # failReplicaDeletion for the new offline replicas of topics queued for deletion
    queued = frozenset(t for t, _ in new if t in d.controller.queued_topics)
    return Continuation(mark_topics=queued, resume=True) if queued else None


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
            cont, followups = _broker_startup(d, event)
        case ev.BrokerFailure():
            cont = _broker_failure(d, event)
        case ev.ControlledShutdown():
            _controlled_shutdown(d, event)
        case ev.TopicCreation():
            _topic_creation(d, event)
        case ev.PartitionExpansion():
            _partition_expansion(d, event)
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
            _topic_config_change(d, event)
        case ev.PartitionStateSnapshot():
            _partition_state_snapshot(d, event)
        case ev.ObservedPartitionState():
            _observed_partition_state(d, event)
        case ev.BrokerConfigChange():
            _broker_config_change(d, event)
        case ev.ReplicaDirFailure():
            cont = _replica_dir_failure(d, event)
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
