"""The ZK controller's broker events in the directory step: a broker's startup, failure,
controlled shutdown and log-dir failure, up to the partitions.

Source: core/src/main/scala/kafka/controller/KafkaController.scala (apache/kafka 3.9.0):
`processBrokerChange` -> `onBrokerStartup` / `onBrokerFailure` (then
`onReplicasBecomeOffline` and `triggerOnlinePartitionStateChange`),
`processControlledShutdown` -> `doControlledShutdown`, and
`processLogDirEventNotification` -> `onBrokerLogDirFailure`. Each handler updates the
broker's record and sends one `Command` to every partition Kafka's controller would walk;
the partitions run the rest (flows.py). The handlers are cases of `directory_step`
(controller_events.py).
"""

from __future__ import annotations

from dataclasses import replace

from . import event_types as ev
from .commands import BrokersFailed, BrokersStarted, LogDirFailure, ShutdownBroker
from .directory import BrokerRecord, Continuation, DirectoryView
from .kafka_errors import Errors
from .model import BrokerFact
from .outputs import ControlledShutdownResultRecord
from .partition_summaries import offline_partitions, partitions_with_offline_leader


def broker_startup(
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
            return broker_failure(d, ev.BrokerFailure(e.broker_id)), (e,)
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
    targets = with_retries(d, hosted)
    if d.config.emit_update_metadata:
        targets = sorted({*targets, *_partitions_with_leaders(d)})
    started = BrokersStarted((e.broker_id,))
    for t, p in targets:
        d.send(t, p, started, (e.broker_id,))
    queued = frozenset(t for t, _ in hosted if t in d.controller.queued_topics)
    return (Continuation(resume_topics=queued) if queued else None), ()


def broker_failure(d: DirectoryView, e: ev.BrokerFailure) -> Continuation | None:
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
    for t, p in with_retries(d, [*targets, *leaders]):
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


def with_retries(d: DirectoryView, targets: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`targets`, with every partition `triggerOnlinePartitionStateChange` elects, in
    (topic, partition) order."""
    queued = d.controller.queued_topics
    more = [tp for tp in d.touched if tp[0] not in queued]
    # the distinct partitions, sorted: deduplicated in order, so that the sort meets a few
    # sorted runs (`targets` and the offline partitions come in order) instead of a set's
    return sorted(dict.fromkeys([*targets, *offline_partitions(d), *more]))


def controlled_shutdown(d: DirectoryView, e: ev.ControlledShutdown) -> None:
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


def replica_dir_failure(d: DirectoryView, e: ev.ReplicaDirFailure) -> Continuation | None:
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
        targets = with_retries(d, [*targets, *leaders])
    for t, p in targets:
        leader = leaders.get((t, p), -1)
        d.send(
            t,
            p,
            LogDirFailure(e.broker_id, (t, p) in new, bool(new)),
            (e.broker_id, leader) if leader >= 0 else (e.broker_id,),
        )
    if new:
        # onReplicasBecomeOffline's own UpdateMetadata (see broker_failure)
        d.update_metadata(site=6, unless_sites=(3, 4))
    # failReplicaDeletion for the new offline replicas of topics queued for deletion
    queued = frozenset(t for t, _ in new if t in d.controller.queued_topics)
    return Continuation(mark_topics=queued, resume=True) if queued else None
