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
(Kafka's epoch is the offset of the RegisterBrokerRecord). The broker events are in
broker_lifecycle.py, the view and the derived ids in kraft_view.py, the periodic tasks in
periodic_tasks.py.

Not mapped (the contract cannot express them): `StopReplicaResponse` (KRaft has no
StopReplica round trip) and `ReplicaDirFailure` (it names partitions; KRaft's
`handleDirectoriesOffline` needs directory ids) go to the dead letters with that reason.
The periodic tasks (`maybeBalancePartitionLeaders`, `maybeElectUncleanLeaders`) run on
event time before the event whose `ts` reaches their deadline (periodic_tasks.py);
`ControllerTick` moves time on in a quiet log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import assert_never, cast

from .. import event_types as ev
from ..commands import Observe
from ..directory import (
    CONTROLLER_KEY,
    ControllerRecord,
    DirectoryRecord,
    DirectoryResult,
    TopicRecord,
    topic_key,
)
from ..event_types import KraftTask
from ..kafka_errors import Errors
from ..model import ControllerConfig, config_int
from ..outputs import (
    AlterPartitionResultRecord,
    DivergenceRecord,
    ElectionResultRecord,
    ObservationOutcome,
    StateChangeFailedRecord,
)
from ..states import LeaderRecoveryState
from . import cluster_control as cc
from . import periodic_tasks
from .alter_partition import unknown_topic_error
from .broker_lifecycle import broker_failure, broker_startup, controlled_shutdown, forget_heartbeats
from .commands import (
    AlterIsrData,
    AlterReassignment,
    BalanceLeader,
    ClearElr,
    ElectLeader,
    ElectUnclean,
    KraftOp,
    LoadRegistration,
    RegisterPartition,
    RemovePartition,
)
from .java_hash_set import string_hash_map_order
from .kraft_view import (
    ALTER_PARTITION_VERSION,
    MIN_INSYNC_REPLICAS,
    KraftView,
    fan_out,
    partition_zero_replicas,
    topic_id,
)
from .outputs import broker_record, clear_elr_record, config_record, topic_record
from .partition_registration import PartitionRegistration
from .records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    ApiMessageAndVersion,
    ConfigRecord,
    MetadataTopicRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
)
from .replication_control import cluster_describer_default_dir, validate_manual_partition_assignment
from .schedule import TASKS_KEY

# -- topics ------------------------------------------------------------------------------


def _refuse_partitions(d: KraftView, topic: str, partition: int, error: str, message: str) -> None:
    """A refused CreateTopics or CreatePartitions request: Kafka answers the topic with one
    error and writes nothing; the contract's answer is a StateChangeFailed on `partition`."""
    d.emit(StateChangeFailedRecord(topic, partition, None, "NewPartition", f"{error}: {message}"))


def _validate_assignments(
    d: KraftView,
    topic: str,
    partitions: Iterable[tuple[int, tuple[int, ...]]],
    replication_factor: int | None,
) -> bool:
    """`createTopic` / `createPartitions`' checks of a manual assignment, all before any
    record: Kafka refuses the whole request with the first error."""
    registry = d.registry()
    for p, replicas in partitions:
        error = validate_manual_partition_assignment(replicas, registry, replication_factor)
        if error is not None:
            _refuse_partitions(d, topic, p, error.error, error.message or "")
            return False
        if not any(registry.is_active(r) for r in replicas):
            _refuse_partitions(
                d,
                topic,
                p,
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"All brokers specified in the manual partition assignment for partition {p} "
                f"are fenced or in controlled shutdown.",
            )
            return False
        if replication_factor is None:
            replication_factor = len(replicas)
    return True


def _register_partitions(
    d: KraftView, topic: str, partitions: Iterable[tuple[int, tuple[int, ...]]]
) -> None:
    partitions = tuple(partitions)
    d.remember_partitions(topic, partitions)
    for p, replicas in partitions:
        d.ksend(topic, p, RegisterPartition(replicas))


def _unify_collision_chars(topic: str) -> str:
    """`Topic.unifyCollisionChars`: '.' and '_' are one character in metric names."""
    return topic.replace(".", "_")


def _colliding_topic(d: KraftView, topic: str) -> str | None:
    """`validateNewTopicNames`' collision check (`Topic.hasCollisionChars`, then the
    `topicsWithCollisionChars` index): an existing topic whose name is the same once '.'
    and '_' are unified."""
    if "." not in topic and "_" not in topic:
        return None
    unified = _unify_collision_chars(topic)
    # one pass over the names, without sorting them (a creation at a time over many topics)
    return min(
        (o for o in d.controller.topics if _unify_collision_chars(o) == unified), default=None
    )


def _invalid_topic_config(configs: Iterable[tuple[str, str]]) -> str | None:
    """`incrementalAlterConfig`'s validation of a topic's configs that the rules read
    (ControllerConfigurationValidator -> LogConfig.validate, ConfigDef.parse):
    min.insync.replicas is an INT (`Integer.parseInt` of the trimmed text), atLeast(1). The
    ConfigException's message, or None."""
    value = dict(configs).get(MIN_INSYNC_REPLICAS)
    if value is None:
        return None
    number = config_int(value)
    prefix = "Invalid value {} for configuration " + MIN_INSYNC_REPLICAS
    if number is None:
        return prefix.format(value) + ": Not a number of type INT"
    if number < 1:
        return prefix.format(number) + ": Value must be at least 1"
    return None


def _topic_creation(d: KraftView, e: ev.TopicCreation) -> None:
    if d.topic(e.topic) is not None:
        return  # TOPIC_ALREADY_EXISTS: nothing is written
    colliding = _colliding_topic(d, e.topic)
    if colliding is not None:
        _refuse_partitions(
            d,
            e.topic,
            e.partitions[0][0],
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Topic '{e.topic}' collides with existing topic: {colliding}",
        )
        return
    invalid = _invalid_topic_config(e.configs)
    if invalid is not None:  # createTopics: the configs, then the assignment
        _refuse_partitions(d, e.topic, e.partitions[0][0], Errors.INVALID_CONFIG, invalid)
        return
    if not _validate_assignments(d, e.topic, e.partitions, None):
        return
    # createTopic, after every assignment: the partitions are 0..n-1
    if [p for p, _ in e.partitions] != list(range(len(e.partitions))):
        _refuse_partitions(
            d,
            e.topic,
            e.partitions[0][0],
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
        return
    d.put(topic_key(e.topic), TopicRecord(configs=e.configs))
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    # TopicRecord, then its ConfigRecords, then the PartitionRecords (createTopic)
    d.emit(
        topic_record(
            e.topic, ApiMessageAndVersion(MetadataTopicRecord(e.topic, topic_id(e.topic)), 0)
        )
    )
    configs = dict(e.configs)
    _write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_TOPIC, e.topic, name, configs[name])
            for name in _request_order(configs)
        ],
    )
    _register_partitions(d, e.topic, e.partitions)


def _partition_expansion(d: KraftView, e: ev.PartitionExpansion) -> None:
    """`createPartitions` with a manual assignment. The event is the request Kafka gets: the
    new count is its highest partition number + 1, and its lists (in number order) are the
    assignments, which Kafka numbers from the current count."""
    rec = d.topic(e.topic)
    if rec is None:
        return
    current = len(rec.partition_ids())
    count = e.partitions[-1][0] + 1
    first = e.partitions[0][0]
    if count <= current:
        message = (
            f"Topic already has {current} partition(s)."
            if count == current
            else f"The topic {e.topic} currently has {current} partition(s); {count} would "
            f"not be an increase."
        )
        _refuse_partitions(d, e.topic, first, Errors.INVALID_PARTITIONS, message)
        return
    additional = count - current
    if len(e.partitions) != additional:
        _refuse_partitions(
            d,
            e.topic,
            first,
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(e.partitions)} assignment(s) were specified.",
        )
        return
    new = tuple((current + i, replicas) for i, (_, replicas) in enumerate(e.partitions))
    # the replication factor is partition 0's current `replicas.length` (its summary's
    # replica count; the event waits for partition 0's fold, see `kraft_reads_summaries`)
    if _validate_assignments(d, e.topic, new, partition_zero_replicas(rec) or None):
        _register_partitions(d, e.topic, new)


def _topic_deletion(d: KraftView, e: ev.TopicDeletion) -> None:
    rec = d.topic(e.topic)
    if rec is None:
        return
    if not d.config.delete_topic_enable:
        # ControllerApis.deleteTopics throws TopicDeletionDisabledException before the
        # controller sees the request (DeleteTopics v3+; INVALID_REQUEST before): answered on
        # the topic's first partition, nothing written
        d.emit(
            StateChangeFailedRecord(
                e.topic,
                min(rec.partition_ids(), default=0),
                None,
                "TopicDeletion",
                Errors.TOPIC_DELETION_DISABLED,
            )
        )
        return
    d.emit(topic_record(e.topic, ApiMessageAndVersion(RemoveTopicRecord(topic_id(e.topic)), 0)))
    periodic_tasks.forget_topic(d, rec)
    for p in rec.partition_ids():
        d.ksend(e.topic, p, RemovePartition())
    d.put(topic_key(e.topic), None)
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics - {e.topic}))


def _request_order(configs: Iterable[str]) -> tuple[str, ...]:
    """The order Kafka walks a request's config names in, so the order of its ConfigRecords
    (`incrementalAlterConfigResource` iterates the HashMap the request was read into:
    `ReplicationControlManager.computeConfigChanges`, ControllerApis'
    incrementalAlterConfigs). The request's own order, which decides only between names in
    one bucket, is taken as sorted (the contract's configs are an object)."""
    return string_hash_map_order(sorted(configs))


def _config_changes(
    before: Iterable[tuple[str, str | None]], after: Iterable[tuple[str, str | None]]
) -> list[tuple[str, str | None]]:
    """The topic's changed configs (a TopicConfigChange carries the whole set: Kafka writes
    records only for values that change), in the request's order."""
    old, new = dict(before), dict(after)
    changed = [k for k in {*old, *new} if old.get(k) != new.get(k)]
    return [(k, new.get(k)) for k in _request_order(changed)]


def _topic_config_change(d: KraftView, e: ev.TopicConfigChange) -> None:
    rec = d.topic(e.topic)
    if rec is None:
        return
    invalid = _invalid_topic_config(e.configs)
    if invalid is not None:
        # incrementalAlterConfigs answers INVALID_CONFIG and writes nothing: answered on the
        # topic's first partition
        d.emit(
            StateChangeFailedRecord(
                e.topic,
                min(rec.partition_ids(), default=0),
                None,
                "TopicConfigChange",
                f"INVALID_CONFIG: {invalid}",
            )
        )
        return
    _write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_TOPIC, e.topic, name, value)
            for name, value in _config_changes(rec.configs, e.configs)
        ],
    )
    d.put(topic_key(e.topic), replace(rec, configs=e.configs))


def _broker_config_change(d: KraftView, e: ev.BrokerConfigChange) -> None:
    c = d.controller
    if _elr_enabled(d) and any(
        key == MIN_INSYNC_REPLICAS and value is None for key, value in e.configs
    ):
        # ConfigurationControlManager.isDisallowedClusterMinIsrTransition (4.0, KAFKA-16540):
        # "Cluster-level min.insync.replicas cannot be removed while ELR is enabled": the
        # request fails with INVALID_CONFIG and nothing is written (3.9 has no such rule)
        return
    configs: dict[str, str] = dict(c.dynamic_configs)
    for key, value in e.configs:
        if value is None:
            configs.pop(key, None)
        else:
            configs[key] = value
    merged = tuple(sorted(configs.items()))
    # incrementalAlterConfigResource: a BROKER resource gets a record for every key of the
    # request, changed or not (KAFKA-14136: "to trigger reloads on the brokers")
    requested = dict(e.configs)
    _write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_BROKER, "", name, requested[name])
            for name in _request_order(requested)
        ],
    )
    d.put(CONTROLLER_KEY, replace(c, dynamic_configs=merged))


def _elr_enabled(d: KraftView) -> bool:
    """FeatureControlManager.isElrFeatureEnabled: eligible.leader.replicas.version is 1 (the
    settings allow it only at metadata.version 4.0-IV1 and later)."""
    return d.config.eligible_leader_replicas_version >= 1


def _write_configs(d: KraftView, records: list[ConfigRecord]) -> None:
    """ConfigurationControlManager.incrementalAlterConfig's records: the ConfigRecords, then
    (4.0, `createClearElrRecordsAsNeeded`, with ELR on) a ClearElrRecord for each one that
    sets or removes min.insync.replicas: for its topic, or for every topic when it is the
    cluster's. Kafka 3.9 has no ClearElrRecord, and 4.0 writes one even when the value is
    unchanged (apache/kafka#20237's review). Its replay empties the ELR and last known ELR
    of each partition that has one (`ClearElr`)."""
    for r in records:
        d.emit(config_record(ApiMessageAndVersion(r, 0)))
    if not _elr_enabled(d):
        return
    for r in records:
        if r.name != MIN_INSYNC_REPLICAS:
            continue
        scope = r.resource_name if r.resource_type == CONFIG_RESOURCE_TOPIC else ""
        d.emit(clear_elr_record(scope))
        for topic in [scope] if scope else sorted(d.controller.topics):
            rec = d.topic(topic)
            for p in rec.partition_ids() if rec is not None else ():
                d.ksend(topic, p, ClearElr())


# -- requests ----------------------------------------------------------------------------


def _known(d: KraftView, topic: str, partition: int) -> bool:
    rec = d.topic(topic)
    return rec is not None and partition in rec.partition_ids()


def _partition_reassignment(d: KraftView, e: ev.PartitionReassignment) -> None:
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


def _alter_partition(d: KraftView, e: ev.AlterPartition) -> None:
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


def _replica_leader_election(d: KraftView, e: ev.ReplicaLeaderElection) -> None:
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


def _partition_state_snapshot(d: KraftView, e: ev.PartitionStateSnapshot) -> None:
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


def _observed_partition_state(d: KraftView, e: ev.ObservedPartitionState) -> None:
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
            _topic_creation(d, event)
        case ev.PartitionExpansion():
            _partition_expansion(d, event)
        case ev.TopicDeletion():
            _topic_deletion(d, event)
        case ev.PartitionReassignment():
            _partition_reassignment(d, event)
        case ev.AlterPartition():
            _alter_partition(d, event)
        case ev.ReplicaLeaderElection():
            _replica_leader_election(d, event)
        case ev.TopicConfigChange():
            _topic_config_change(d, event)
        case ev.BrokerConfigChange():
            _broker_config_change(d, event)
        case ev.PartitionStateSnapshot():
            _partition_state_snapshot(d, event)
        case ev.ObservedPartitionState():
            _observed_partition_state(d, event)
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
