"""The directory step: the controller-wide facts, and the fan-out of events to partitions.

Theory of operation
-------------------
Kafka's controller keeps one `ControllerContext`. Here it is split by what owns each fact:

* the directory holds what is not a partition's own: whether this controller is active and
  its epoch, each broker's registration, shutdown and epoch, each topic's configs,
  partitions and deletion status (Kafka's `TopicDeletionManager` bookkeeping);
* each partition holds its own leader, ISR, epochs, assignment and replica states
  (`partition.py`).

The directory state is a set of records keyed by entity: `controller`, `broker-<id>` and
`topic-<name>`. A step reads them through a mapping and returns only the records it changed
(decide, then apply), the `Command`s for the partitions an event concerns, each carrying a
`PartitionContext` snapshot, and the records it answers by itself (unknown partitions,
stale broker epochs).

Topic deletion decides on all replicas of a topic at once, so partitions of topics queued
for deletion send a `DeletionReport` after every command, and a `Continuation` says what
the directory does once the reports of a round are in (`after_reports`).

Deviation, named: Kafka re-runs `triggerOnlinePartitionStateChange` over every New/Offline
partition of the cluster on each broker change. The directory sends the trigger only to the
partitions the event concerns (and, on a failure, to those hosted on shutting-down brokers,
whose leaders Kafka would also find offline). An election for any other partition has the
same inputs as its last failed attempt, so it fails again and changes nothing; Kafka only
logs it again, which here would be one more `StateChangeFailed` per offline partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Union, cast

from . import events as ev
from .commands import (
    AlterIsr, BrokersFailed, BrokersStarted, Command, CompleteTopicDeletion, CreatePartition,
    DeletionReport, Elect, Failover, LoadPartition, MarkQueued, Observe, Op, PartitionContext, Reassign,
    ReplicaDeletionResponse, ResumeDeletion, ShutdownBroker, TriggerOnline,
)
from .model import UNKNOWN_BROKER, BrokerFact, ControllerConfig, LeaderAndIsr, ReplicaAssignment
from .outputs import (
    AlterPartitionResultRecord, ControlledShutdownResultRecord, DivergenceRecord, ElectionResultRecord,
    ObservationOutcome, Record, StateChangeFailedRecord,
)
from .states import LeaderRecoveryState, ReplicaState

CONTROLLER_KEY = "controller"


def broker_key(broker_id: int) -> str:
    return f"broker-{broker_id}"


def topic_key(topic: str) -> str:
    return f"topic-{topic}"


@dataclass(frozen=True, slots=True)
class ControllerRecord:
    active: bool = False
    controller_id: int | None = None
    controller_epoch: int = 0
    topics: frozenset[str] = frozenset()
    brokers: frozenset[int] = frozenset()
    queued_topics: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class BrokerRecord:
    fact: BrokerFact = UNKNOWN_BROKER


@dataclass(frozen=True, slots=True)
class DeletionMirror:
    """A partition's last `DeletionReport`, kept while its topic is queued for deletion."""

    replicas: tuple[int, ...]
    replica_states: tuple[tuple[int, ReplicaState], ...]
    being_reassigned: bool


@dataclass(frozen=True, slots=True)
class TopicRecord:
    # partition -> every broker ever assigned to it (replicas, reassignment targets, ISR)
    partitions: tuple[tuple[int, tuple[int, ...]], ...] = ()
    configs: tuple[tuple[str, str], ...] = ()
    queued: bool = False
    started: bool = False
    ineligible: bool = False
    mirror: tuple[tuple[int, DeletionMirror], ...] = ()

    def partition_ids(self) -> tuple[int, ...]:
        return tuple(p for p, _ in self.partitions)

    def brokers_of(self, partition: int) -> tuple[int, ...]:
        for p, brokers in self.partitions:
            if p == partition:
                return brokers
        return ()

    @property
    def deletion(self) -> str:
        if not self.queued:
            return "none"
        if self.ineligible:
            return "ineligible"
        return "started" if self.started else "queued"


# The key says which record it holds: `controller`, `broker-<id>` or `topic-<name>`.
DirectoryRecord = Union[ControllerRecord, BrokerRecord, TopicRecord]


@dataclass(frozen=True, slots=True)
class Continuation:
    """What the directory does after a round's deletion reports are in."""

    failover_init: bool = False  # TopicDeletionManager.init: ineligible = offline replicas or reassigning
    mark_topics: frozenset[str] = frozenset()  # markTopicIneligibleForDeletion
    resume_topics: frozenset[str] = frozenset()  # resumeDeletionForTopics
    resume: bool = False  # resumeDeletions


@dataclass(frozen=True, slots=True)
class DirectoryResult:
    changes: dict[str, DirectoryRecord | None]  # None: the record is deleted
    commands: tuple[Command, ...]
    outputs: tuple[Record | ObservationOutcome, ...]
    continuation: Continuation | None = None
    followups: tuple[ev.Event, ...] = ()


class _Dir:
    """Read-your-writes view over the directory records for one step."""

    def __init__(self, view: Mapping[str, DirectoryRecord], config: ControllerConfig, offset: int,
                 cause_id: str | None):
        self.view = view
        self.config = config
        self.offset = offset
        self.cause_id = cause_id
        self.changes: dict[str, DirectoryRecord | None] = {}
        self.commands: list[Command] = []
        self.outputs: list[Record | ObservationOutcome] = []
        # contexts already built since the last write: a fan-out to every partition of a
        # broker or a topic sends the same one thousands of times
        self._contexts: dict[tuple[str, tuple[int, ...]], PartitionContext] = {}

    def get(self, key: str) -> DirectoryRecord | None:
        return self.changes[key] if key in self.changes else self.view.get(key)

    def put(self, key: str, record: DirectoryRecord | None) -> None:
        self.changes[key] = record
        self._contexts.clear()

    @property
    def controller(self) -> ControllerRecord:
        return cast("ControllerRecord | None", self.get(CONTROLLER_KEY)) or ControllerRecord()

    def broker(self, broker_id: int) -> BrokerRecord:
        return cast("BrokerRecord | None", self.get(broker_key(broker_id))) or BrokerRecord()

    def fact(self, broker_id: int) -> BrokerFact:
        return self.broker(broker_id).fact

    def topic(self, name: str) -> TopicRecord | None:
        return cast("TopicRecord | None", self.get(topic_key(name)))

    def put_broker(self, broker_id: int, record: BrokerRecord) -> None:
        self.put(broker_key(broker_id), record)
        c = self.controller
        if broker_id not in c.brokers:
            self.put(CONTROLLER_KEY, replace(c, brokers=c.brokers | {broker_id}))

    def remember_brokers(self, topic: str, partition: int, brokers: Iterable[int]) -> None:
        """Add brokers to the partition's fan-out set."""
        brokers = [b for b in brokers if b >= 0]
        rec = self.topic(topic)
        assert rec is not None
        parts = dict(rec.partitions)
        known = parts.get(partition, ())
        merged = known + tuple(b for b in dict.fromkeys(brokers) if b not in known)
        if merged != known:
            parts[partition] = merged
            self.put(topic_key(topic), replace(rec, partitions=tuple(sorted(parts.items()))))

    def ctx(self, topic: str, brokers: Iterable[int] = ()) -> PartitionContext:
        key = (topic, tuple(brokers))
        cached = self._contexts.get(key)
        if cached is not None:
            return cached
        c = self.controller
        rec = self.topic(topic)
        configs = rec.configs if rec else ()
        made = self._contexts[key] = PartitionContext(
            c.active, c.controller_epoch, self.config.unclean_enabled_for(configs),
            bool(rec and rec.queued),
            tuple((b, self.fact(b)) for b in sorted(set(key[1])) if b >= 0),
        )
        return made

    def send(self, topic: str, partition: int, op: Op, brokers: Iterable[int] = ()) -> None:
        self.commands.append(Command(topic, partition, self.offset, self.cause_id, self.ctx(topic, brokers), op))

    def hosted(self, broker_id: int) -> list[tuple[str, int]]:
        """Partitions that have (or had) a replica on the broker, in (topic, partition) order:
        the fan-out may name partitions the broker no longer hosts (they ignore the command),
        never miss one. A scan of every partition, like ControllerContext.partitionsOnBroker;
        a per-broker index would cost a copy of the broker's topics on every creation."""
        out: list[tuple[str, int]] = []
        for topic in sorted(self.controller.topics):
            rec = self.topic(topic)
            assert rec is not None
            out.extend((topic, p) for p, brokers in rec.partitions if broker_id in brokers)
        return out

    def result(self, continuation: Continuation | None = None, followups: tuple[ev.Event, ...] = ()) -> DirectoryResult:
        return DirectoryResult(self.changes, tuple(self.commands), tuple(self.outputs), continuation, followups)


# ---------------------------------------------------------------------------------------
# events


def _controller_failover(d: _Dir, e: ev.ControllerFailover) -> Continuation | None:
    c = d.controller
    if c.active and e.controller_epoch <= c.controller_epoch:
        return None  # a stale or repeated election: this controller already holds that epoch
    d.put(CONTROLLER_KEY, replace(c, active=True, controller_id=e.controller_id, controller_epoch=e.controller_epoch))
    # initializeControllerContext clears shuttingDownBrokerIds
    for b in sorted(c.brokers):
        brec = d.broker(b)
        if brec.fact.shutting_down:
            d.put_broker(b, replace(brec, fact=replace(brec.fact, shutting_down=False)))
    if not d.config.delete_topic_enable:
        # TopicDeletionManager.init with deletion disabled drops the pending deletions
        for t in sorted(c.queued_topics):
            rec = d.topic(t)
            if rec is not None:
                d.put(topic_key(t), replace(rec, queued=False, started=False, ineligible=False, mirror=()))
        d.put(CONTROLLER_KEY, replace(d.controller, queued_topics=frozenset()))
    for t in sorted(d.controller.topics):
        rec = d.topic(t)
        assert rec is not None
        for p, brokers in rec.partitions:
            d.send(t, p, Failover(), brokers)
    return Continuation(failover_init=True, resume=True)


def _broker_startup(d: _Dir, e: ev.BrokerStartup) -> tuple[Continuation | None, tuple[ev.Event, ...]]:
    rec = d.broker(e.broker_id)
    fact = rec.fact
    if fact.registered:
        cached = fact.broker_epoch
        if e.broker_epoch is not None and cached is not None and e.broker_epoch > cached and d.controller.active:
            # A bounce (processBrokerChange): failure, then startup with the new epoch.
            return _broker_failure(d, ev.BrokerFailure(e.broker_id)), (e,)
        if e.broker_epoch is not None and (cached is None or e.broker_epoch > cached):
            d.put_broker(e.broker_id, replace(rec, fact=replace(fact, broker_epoch=e.broker_epoch)))
        return None, ()
    d.put_broker(e.broker_id, replace(rec, fact=BrokerFact(True, False, e.broker_epoch)))
    if not d.controller.active:
        return None, ()
    hosted = d.hosted(e.broker_id)
    for t, p in hosted:
        d.send(t, p, BrokersStarted((e.broker_id,)), (e.broker_id,))
    queued = frozenset(t for t, _ in hosted if t in d.controller.queued_topics)
    return (Continuation(resume_topics=queued) if queued else None), ()


def _broker_failure(d: _Dir, e: ev.BrokerFailure) -> Continuation | None:
    rec = d.broker(e.broker_id)
    if not rec.fact.registered:
        return None
    # onBrokerFailure also removes the broker from shuttingDownBrokerIds
    d.put_broker(e.broker_id, replace(rec, fact=BrokerFact(False, False, None)))
    if not d.controller.active:
        return None
    targets = dict.fromkeys(d.hosted(e.broker_id))
    # partitionsWithOfflineLeader is cluster-wide: leaders on shutting-down brokers are
    # offline too, so their partitions are reached as well.
    for b in sorted(d.controller.brokers):
        if d.fact(b).registered and d.fact(b).shutting_down:
            targets.update(dict.fromkeys(d.hosted(b)))
    for t, p in sorted(targets):
        d.send(t, p, BrokersFailed((e.broker_id,)), (e.broker_id,))
    queued = frozenset(t for t, p in d.hosted(e.broker_id) if t in d.controller.queued_topics)
    return Continuation(mark_topics=queued, resume=True) if queued else None


def _controlled_shutdown(d: _Dir, e: ev.ControlledShutdown) -> None:
    if not d.controller.active:
        return
    rec = d.broker(e.broker_id)

    def refuse(error: str) -> None:
        d.outputs.append(ControlledShutdownResultRecord(e.broker_id, (), error))

    if e.broker_epoch is not None and e.broker_epoch != -1:
        if not rec.fact.registered:
            # liveBrokerIdAndEpochs(id) throws for an unknown id before the availability check
            refuse("UNKNOWN_SERVER_ERROR")
            return
        if rec.fact.broker_epoch is not None and e.broker_epoch < rec.fact.broker_epoch:
            refuse("STALE_BROKER_EPOCH")
            return
    if not rec.fact.registered:
        refuse("BROKER_NOT_AVAILABLE")
        return
    d.put_broker(e.broker_id, replace(rec, fact=replace(rec.fact, shutting_down=True)))
    # the result's partitions_remaining is filled from the partitions' StillLeads
    d.outputs.append(ControlledShutdownResultRecord(e.broker_id, (), None))
    for t, p in d.hosted(e.broker_id):
        d.send(t, p, ShutdownBroker(e.broker_id), (e.broker_id,))


def _new_partitions(d: _Dir, topic: str, partitions: tuple[tuple[int, tuple[int, ...]], ...]) -> None:
    active = d.controller.active
    for p, replicas in partitions:
        d.remember_brokers(topic, p, replicas)
        op: Op = CreatePartition(replicas) if active else LoadPartition(ReplicaAssignment(replicas))
        d.send(topic, p, op, replicas)


def _topic_creation(d: _Dir, e: ev.TopicCreation) -> None:
    if d.topic(e.topic) is not None:
        return  # processTopicChange only acts on topics it has not seen
    d.put(topic_key(e.topic), TopicRecord(configs=e.configs))
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    _new_partitions(d, e.topic, e.partitions)


def _partition_expansion(d: _Dir, e: ev.PartitionExpansion) -> None:
    rec = d.topic(e.topic)
    if rec is None or rec.queued:
        return  # unknown topic; or being deleted: Kafka restores the old assignment
    known = set(rec.partition_ids())
    _new_partitions(d, e.topic, tuple((p, r) for p, r in e.partitions if p not in known))


def _topic_deletion(d: _Dir, e: ev.TopicDeletion) -> Continuation | None:
    rec = d.topic(e.topic)
    if rec is None or not d.config.delete_topic_enable:
        return None
    c = d.controller
    if not c.active:
        if not rec.queued:
            d.put(topic_key(e.topic), replace(rec, queued=True))
            d.put(CONTROLLER_KEY, replace(c, queued_topics=c.queued_topics | {e.topic}))
        return None
    if rec.queued:
        # processTopicDeletion marks a queued topic ineligible while it is being reassigned
        # (for a topic not yet queued the mark is a no-op in Kafka 3.9: it only applies to
        # topics already in topicsToBeDeleted)
        if any(m.being_reassigned for _, m in rec.mirror):
            d.put(topic_key(e.topic), replace(rec, ineligible=True))
        return Continuation(resume=True)
    d.put(topic_key(e.topic), replace(rec, queued=True))
    d.put(CONTROLLER_KEY, replace(c, queued_topics=c.queued_topics | {e.topic}))
    for p in rec.partition_ids():
        d.send(e.topic, p, MarkQueued())
    return Continuation(resume=True)


def _stop_replica_response(d: _Dir, e: ev.StopReplicaResponse) -> Continuation | None:
    if not d.controller.active:
        return None
    rec = d.topic(e.topic)
    if rec is None or not rec.queued:
        # completeReplicaDeletion filters to queued topics but still calls resumeDeletions
        return Continuation(resume=True) if e.error is None else None
    if e.partition in rec.partition_ids():
        d.send(e.topic, e.partition, ReplicaDeletionResponse(e.broker_id, e.error))
    if e.error is not None:
        return Continuation(mark_topics=frozenset({e.topic}), resume=True)
    return Continuation(resume=True)


def _partition_reassignment(d: _Dir, e: ev.PartitionReassignment) -> None:
    if not d.controller.active:
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        error = _unknown_partition_reassignment_error(d, e.target_replicas)
        d.outputs.append(StateChangeFailedRecord(e.topic, e.partition, None, "PartitionReassignment", error))
        return
    targets = [r for r in (e.target_replicas or ()) if isinstance(r, int) and r >= 0]
    d.remember_brokers(e.topic, e.partition, targets)
    d.send(e.topic, e.partition, Reassign(e.target_replicas), targets)


def _unknown_partition_reassignment_error(d: _Dir, target: tuple[int, ...] | None) -> str:
    # validateReplicas runs first against an empty current assignment, so every target
    # replica is "adding" and must be live; then maybeBuildReassignment, then the lookup.
    if target is not None:
        if not target:
            return "INVALID_REPLICA_ASSIGNMENT: empty replica list specified in partition reassignment"
        if len(set(target)) != len(target):
            return f"INVALID_REPLICA_ASSIGNMENT: duplicate replica ids in partition reassignment replica list: {list(target)}"
        if any(r < 0 for r in target):
            return f"INVALID_REPLICA_ASSIGNMENT: invalid broker id in replica list: {list(target)}"
        if not all(d.fact(r).live for r in target):
            return f"INVALID_REPLICA_ASSIGNMENT: replica assignment has brokers that are not alive: {list(target)}"
        return "UNKNOWN_TOPIC_OR_PARTITION: the partition does not exist"
    return "NO_REASSIGNMENT_IN_PROGRESS"


def _alter_partition(d: _Dir, e: ev.AlterPartition) -> None:
    if not d.controller.active:
        return
    fact = d.fact(e.broker_id)

    def refuse(error: str) -> None:
        d.outputs.append(AlterPartitionResultRecord(e.topic, e.partition, e.broker_id, error, None, None, None, None))

    # the request-level check: unknown broker or a broker epoch other than the cached one
    if not fact.registered:
        refuse("STALE_BROKER_EPOCH")
        return
    if e.broker_epoch is not None and fact.broker_epoch is not None and e.broker_epoch != fact.broker_epoch:
        refuse("STALE_BROKER_EPOCH")
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        refuse("UNKNOWN_TOPIC_OR_PARTITION")
        return
    mentioned = (e.broker_id, *e.isr)
    d.remember_brokers(e.topic, e.partition, mentioned)
    d.send(e.topic, e.partition,
           AlterIsr(e.broker_id, e.leader_epoch, e.partition_epoch, e.isr, e.leader_recovery_state), mentioned)


def _replica_leader_election(d: _Dir, e: ev.ReplicaLeaderElection) -> None:
    if not d.controller.active:
        return
    if e.partitions is None:
        wanted = [(t, p) for t in sorted(d.controller.topics) for p in d.topic(t).partition_ids()]  # type: ignore[union-attr]
    else:
        wanted = list(e.partitions)
    # Kafka allows an unclean election without reading the topic config only when an admin
    # asked for it (AdminClientTriggered).
    allow_unclean = e.election_type == "UNCLEAN" and e.trigger == "admin"
    for t, p in wanted:
        rec = d.topic(t)
        if rec is None or p not in rec.partition_ids():
            d.outputs.append(ElectionResultRecord(t, p, e.election_type, "UNKNOWN_TOPIC_OR_PARTITION", None))
        elif rec.queued:
            d.outputs.append(ElectionResultRecord(t, p, e.election_type, "INVALID_TOPIC_EXCEPTION", None))
        else:
            d.send(t, p, Elect(e.election_type, allow_unclean))


def _topic_config_change(d: _Dir, e: ev.TopicConfigChange) -> None:
    rec = d.topic(e.topic)
    if rec is None:
        return
    # The topic's config znode holds the whole override set: a change replaces it.
    d.put(topic_key(e.topic), replace(rec, configs=e.configs))
    # TopicConfigHandler: unclean.leader.election.enable=true on a topic triggers
    # triggerOnlinePartitionStateChange(topic).
    if d.controller.active and dict(e.configs).get("unclean.leader.election.enable", "").strip().lower() == "true":
        for p in rec.partition_ids():
            d.send(e.topic, p, TriggerOnline())


def _partition_state_snapshot(d: _Dir, e: ev.PartitionStateSnapshot) -> None:
    if d.controller.active:
        d.outputs.append(StateChangeFailedRecord(
            e.topic, e.partition, None, "PartitionStateSnapshot",
            "ignored: snapshots load context while the controller is inactive"))
        return
    rec = d.topic(e.topic)
    if rec is None:
        d.put(topic_key(e.topic), TopicRecord())
        c = d.controller
        d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    d.remember_brokers(e.topic, e.partition, (*e.replicas, *e.isr))
    leadership = LeaderAndIsr(
        e.leader, e.leader_epoch, e.isr, e.partition_epoch, LeaderRecoveryState(e.leader_recovery_state),
        e.controller_epoch,
    )
    assignment = ReplicaAssignment(e.replicas, e.adding_replicas, e.removing_replicas)
    d.send(e.topic, e.partition, LoadPartition(assignment, leadership, overwrite=True), e.replicas)


def _observed_partition_state(d: _Dir, e: ev.ObservedPartitionState) -> None:
    """Shadow mode (see shadow.py): the partition compares the cluster's state with its own."""
    if not d.controller.active:
        return
    rec = d.topic(e.topic)
    if rec is None or e.partition not in rec.partition_ids():
        observed = {"leader": e.leader, "leader_epoch": e.leader_epoch, "isr": list(e.isr)}
        d.outputs.append(DivergenceRecord(e.topic, e.partition, {"leader": -1, "leader_epoch": None, "isr": []},
                                          observed, "benign", "the shadow does not know this partition"))
        d.outputs.append(ObservationOutcome("benign"))
        return
    d.send(e.topic, e.partition,
           Observe(e.leader, e.leader_epoch, e.isr, e.partition_epoch, e.controller_epoch),
           (e.leader, *e.isr))


def directory_step(
    view: Mapping[str, DirectoryRecord], event: ev.Event, config: ControllerConfig, offset: int,
    cause_id: str | None = None,
) -> DirectoryResult:
    """One input event against the directory: (records, event) -> (changed records, commands, outputs)."""
    d = _Dir(view, config, offset, cause_id)
    cont: Continuation | None = None
    followups: tuple[ev.Event, ...] = ()
    if isinstance(event, ev.ControllerFailover):
        cont = _controller_failover(d, event)
    elif isinstance(event, ev.BrokerStartup):
        cont, followups = _broker_startup(d, event)
    elif isinstance(event, ev.BrokerFailure):
        cont = _broker_failure(d, event)
    elif isinstance(event, ev.ControlledShutdown):
        _controlled_shutdown(d, event)
    elif isinstance(event, ev.TopicCreation):
        _topic_creation(d, event)
    elif isinstance(event, ev.PartitionExpansion):
        _partition_expansion(d, event)
    elif isinstance(event, ev.TopicDeletion):
        cont = _topic_deletion(d, event)
    elif isinstance(event, ev.StopReplicaResponse):
        cont = _stop_replica_response(d, event)
    elif isinstance(event, ev.PartitionReassignment):
        _partition_reassignment(d, event)
    elif isinstance(event, ev.AlterPartition):
        _alter_partition(d, event)
    elif isinstance(event, ev.ReplicaLeaderElection):
        _replica_leader_election(d, event)
    elif isinstance(event, ev.TopicConfigChange):
        _topic_config_change(d, event)
    elif isinstance(event, ev.PartitionStateSnapshot):
        _partition_state_snapshot(d, event)
    elif isinstance(event, ev.ObservedPartitionState):
        _observed_partition_state(d, event)
    else:  # pragma: no cover - programming error
        raise TypeError(f"unknown event {event!r}")
    d.commands.sort(key=lambda cmd: (cmd.topic, cmd.partition))
    return d.result(cont, followups)


# ---------------------------------------------------------------------------------------
# deletion: after the reports of a round


def after_reports(
    view: Mapping[str, DirectoryRecord],
    reports: Iterable[DeletionReport],
    continuation: Continuation | None,
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
) -> DirectoryResult:
    """Fold deletion reports into the topics' mirrors and run the cause's deletion steps."""
    d = _Dir(view, config, offset, cause_id)
    cont = continuation or Continuation()
    need_resume = cont.resume
    by_topic: dict[str, list[DeletionReport]] = {}
    for r in reports:
        by_topic.setdefault(r.topic, []).append(r)
    for topic, rs in by_topic.items():
        rec = d.topic(topic)
        if rec is None:
            continue
        mirror = dict(rec.mirror)
        for r in rs:
            if r.removed:
                mirror.pop(r.partition, None)
            else:
                mirror[r.partition] = DeletionMirror(r.replicas, r.replica_states, r.being_reassigned)
        d.put(topic_key(topic), replace(rec, mirror=tuple(sorted(mirror.items()))))

    queued = d.controller.queued_topics
    if cont.failover_init:
        for t in sorted(queued):
            rec = d.topic(t)
            assert rec is not None
            offline = any(not d.fact(b).live for _, m in rec.mirror for b in m.replicas)
            reassigning = any(m.being_reassigned for _, m in rec.mirror)
            if offline or reassigning:
                d.put(topic_key(t), replace(rec, ineligible=True))
    for topic, rs in by_topic.items():
        for r in rs:
            rec = d.topic(topic)
            if rec is None or not rec.queued:
                continue
            if r.mark_ineligible:
                rec = replace(rec, ineligible=True)
                d.put(topic_key(topic), rec)
            if r.resume_deletion:
                d.put(topic_key(topic), replace(rec, ineligible=False))
                need_resume = True
    for t in sorted(cont.mark_topics & queued):
        rec = d.topic(t)
        assert rec is not None
        d.put(topic_key(t), replace(rec, ineligible=True))
    for t in sorted(cont.resume_topics & queued):
        rec = d.topic(t)
        assert rec is not None
        d.put(topic_key(t), replace(rec, ineligible=False))
        need_resume = True
    if need_resume and config.delete_topic_enable:
        _resume_deletions(d)
    return d.result()


def _states(rec: TopicRecord) -> list[tuple[ReplicaState | None, int]]:
    """(state, broker) of every replica in the topic's assignment (replicasForTopic)."""
    out: list[tuple[ReplicaState | None, int]] = []
    for _, m in rec.mirror:
        states = dict(m.replica_states)
        out.extend((states.get(b), b) for b in m.replicas)
    return out


def _any_state(rec: TopicRecord, state: ReplicaState) -> bool:
    # replicasInState reads every recorded replica state of the topic, assigned or not
    return any(s is state for _, m in rec.mirror for _, s in m.replica_states)


def _resume_deletions(d: _Dir) -> None:
    """`TopicDeletionManager.resumeDeletions` over every queued topic."""
    retry: set[str] = set()
    eligible: set[str] = set()
    for t in sorted(d.controller.queued_topics):
        rec = d.topic(t)
        assert rec is not None
        if all(s is ReplicaState.ReplicaDeletionSuccessful for s, _ in _states(rec)):
            _complete_delete_topic(d, t)
            continue
        started = _any_state(rec, ReplicaState.ReplicaDeletionStarted)
        if not started and _any_state(rec, ReplicaState.ReplicaDeletionIneligible):
            retry.add(t)
        if not started and not rec.ineligible:
            eligible.add(t)
    for t in sorted(retry | eligible):
        rec = d.topic(t)
        assert rec is not None
        first = t in eligible and not rec.started
        for p, m in rec.mirror:
            has_ineligible = any(s is ReplicaState.ReplicaDeletionIneligible for _, s in m.replica_states)
            op = ResumeDeletion(retry=t in retry and has_ineligible, start=t in eligible, first=first)
            if op.retry or op.start:
                d.send(t, p, op)
        if t in eligible:
            # onPartitionDeletion: a topic with a replica on a dead broker is ineligible
            dead = any(not d.fact(b).live for _, m in rec.mirror for b in m.replicas)
            d.put(topic_key(t), replace(rec, started=True, ineligible=rec.ineligible or dead))


def _complete_delete_topic(d: _Dir, topic: str) -> None:
    rec = d.topic(topic)
    assert rec is not None
    for p in rec.partition_ids():
        d.send(topic, p, CompleteTopicDeletion())
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics - {topic}, queued_topics=c.queued_topics - {topic}))
    d.put(topic_key(topic), None)


__all__ = [
    "BrokerRecord", "CONTROLLER_KEY", "Continuation", "ControllerRecord", "DeletionMirror", "DirectoryRecord",
    "DirectoryResult", "TopicRecord", "after_reports", "broker_key", "directory_step", "topic_key",
]
