"""Topic deletion: Kafka's `TopicDeletionManager`, on both sides of the fan-out.

Theory of operation
-------------------
Kafka decides on all replicas of a topic at once, so the work is split the way facts are:

* the directory side keeps each queued topic's bookkeeping (queued, started, ineligible)
  and a mirror of its partitions' replica states, fed by the `DeletionReport` every
  partition of a queued topic sends after each command. `on_topic_deletion` and
  `on_stop_replica_response` are the two events that drive it; `after_reports` folds a
  round's reports in and runs what the cause asked for (`Continuation`):
  `markTopicIneligibleForDeletion`, `resumeDeletionForTopics`, `resumeDeletions`, and at
  failover `TopicDeletionManager.init`;
* the partition side runs what `resumeDeletions` decided for each partition with the two
  state machines: `retryDeletionForIneligibleReplicas`, `onPartitionDeletion`
  (`deleteTopicStopReplicaReplicas`), `completeReplicaDeletion` /
  `failReplicaDeletion` for a StopReplica response, and `completeDeleteTopic`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from . import event_types as ev
from .commands import (
    CompleteTopicDeletion,
    DeletionReport,
    MarkQueued,
    ReplicaDeletionResponse,
    ResumeDeletion,
)
from .directory import (
    CONTROLLER_KEY,
    Continuation,
    DeletionMirror,
    DirectoryRecord,
    DirectoryResult,
    DirectoryView,
    TopicRecord,
    topic_key,
)
from .flow import Run
from .model import ControllerConfig
from .scala_hash import CallHints
from .states import PartitionState, ReplicaState

P = PartitionState
R = ReplicaState


# -- the directory side: events ------------------------------------------------------------


def on_topic_deletion(d: DirectoryView, e: ev.TopicDeletion) -> Continuation | None:
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


def on_stop_replica_response(d: DirectoryView, e: ev.StopReplicaResponse) -> Continuation | None:
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


# -- the directory side: after the reports of a round ------------------------------------


def after_reports(
    view: Mapping[str, DirectoryRecord],
    reports: Iterable[DeletionReport],
    continuation: Continuation | None,
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
) -> DirectoryResult:
    """Fold deletion reports into the topics' mirrors and run the cause's deletion steps."""
    d = DirectoryView(view, config, offset, cause_id)
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
                mirror[r.partition] = DeletionMirror(
                    r.replicas, r.replica_states, r.being_reassigned
                )
        d.put(topic_key(topic), replace(rec, mirror=tuple(sorted(mirror.items()))))

    queued = d.controller.queued_topics
    if cont.failover_init:
        for t in sorted(queued):
            rec = d.topic(t)
            assert rec is not None
            # TopicDeletionManager.init: isReplicaOnline (a new controller knows no failed dirs)
            offline = any(
                not d.is_replica_online(b, t, p) for p, m in rec.mirror for b in m.replicas
            )
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


def _resume_deletions(d: DirectoryView) -> None:
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
    retry_hints, hints = _call_hints(d, retry, eligible)
    for t in sorted(retry | eligible):
        rec = d.topic(t)
        assert rec is not None
        first = t in eligible and not rec.started
        for p, m in rec.mirror:
            has_ineligible = any(
                s is ReplicaState.ReplicaDeletionIneligible for _, s in m.replica_states
            )
            brokers = (*m.replicas, *(b for b, _ in m.replica_states))
            op = ResumeDeletion(
                retry=t in retry and has_ineligible,
                start=t in eligible,
                first=first,
                order=hints(brokers) if t in eligible else (),
                retry_order=retry_hints(brokers) if t in retry else (),
            )
            if op.retry or op.start:
                d.send(t, p, op)
        if t in eligible:
            # onPartitionDeletion: a topic with a replica that is not online (a dead broker,
            # or a failed log dir: isReplicaOnline) is ineligible
            dead = any(not d.is_replica_online(b, t, p) for p, m in rec.mirror for b in m.replicas)
            d.put(topic_key(t), replace(rec, started=True, ineligible=rec.ineligible or dead))


def _call_hints(
    d: DirectoryView, retry: set[str], eligible: set[str]
) -> tuple[CallHints, CallHints]:
    """The order of `resumeDeletions`' replica calls over their topics (scala_hash.py):
    `retryDeletionForIneligibleReplicas` (the Ineligible replicas of `retry`), and
    `onPartitionDeletion`'s (the dead replicas of `eligible`, then the live ones not yet
    deleted)."""
    ineligible: set[int] = set()
    dead: set[int] = set()
    alive: set[int] = set()
    for t in retry | eligible:
        rec = d.topic(t)
        assert rec is not None
        for p, m in rec.mirror:
            states = dict(m.replica_states)
            if t in retry:
                ineligible.update(
                    b for b, s in states.items() if s is ReplicaState.ReplicaDeletionIneligible
                )
            if t in eligible:
                for b in m.replicas:
                    if not d.is_replica_online(b, t, p):
                        dead.add(b)
                    elif states.get(b) is not ReplicaState.ReplicaDeletionSuccessful:
                        alive.add(b)
    return CallHints(ineligible), CallHints(alive, dead)


def _complete_delete_topic(d: DirectoryView, topic: str) -> None:
    rec = d.topic(topic)
    assert rec is not None
    # completeDeleteTopic's call: the topic's replicas in ReplicaDeletionSuccessful
    hints = CallHints({b for _, m in rec.mirror for b, _ in m.replica_states})
    mirror = dict(rec.mirror)
    for p in rec.partition_ids():
        m = mirror.get(p)
        order = hints((*m.replicas, *(b for b, _ in m.replica_states))) if m else ()
        d.send(topic, p, CompleteTopicDeletion(order))
    c = d.controller
    d.put(
        CONTROLLER_KEY,
        replace(c, topics=c.topics - {topic}, queued_topics=c.queued_topics - {topic}),
    )
    d.put(topic_key(topic), None)


# -- the partition side ----------------------------------------------------------------------


def replica_deletion_response(run: Run, op: ReplicaDeletionResponse) -> None:
    """`completeReplicaDeletion` / `failReplicaDeletion` for the responding replica."""
    if run.facts.queued:
        run.replicas(
            (op.broker_id,),
            R.ReplicaDeletionIneligible if op.error else R.ReplicaDeletionSuccessful,
            site=1,
        )


def resume_deletion(run: Run, op: ResumeDeletion) -> None:
    """This partition's share of `resumeDeletions`."""
    rec = run.rec
    if op.retry:
        # retryDeletionForIneligibleReplicas
        run.replicas(
            [b for b, s in rec.replica_states if s is R.ReplicaDeletionIneligible],
            R.OfflineReplica,
            site=1,
            call_order=op.retry_order,
        )
    if op.start:
        if op.first:
            run.partition(P.OfflinePartition, site=2)
            run.partition(P.NonExistentPartition, site=3)
        # client.sendMetadataUpdate(allPartitionsForDeletion): leader -2 (duringDelete)
        run.update_metadata(site=4)
        # onPartitionDeletion
        rec = run.rec
        replicas = rec.assignment.replicas
        states = dict(rec.replica_states)
        dead = [r for r in replicas if not run.facts.is_online(r)]
        retry = [
            r
            for r in replicas
            if run.facts.is_online(r) and states.get(r) is not R.ReplicaDeletionSuccessful
        ]
        run.replicas(dead, R.ReplicaDeletionIneligible, site=5, call_order=op.order)
        run.replicas(retry, R.OfflineReplica, site=6, call_order=op.order)
        run.replicas(retry, R.ReplicaDeletionStarted, site=7, call_order=op.order)


def complete_topic_deletion(run: Run, order: tuple[int, ...] = ()) -> None:
    """`completeDeleteTopic` for this partition: its successfully deleted replicas become
    NonExistent, and the partition is gone. `order`: the call's order over the topic."""
    run.replicas(
        [b for b, s in run.rec.replica_states if s is R.ReplicaDeletionSuccessful],
        R.NonExistentReplica,
        site=1,
        call_order=order,
    )
    run.removed = True


def report(run: Run) -> DeletionReport:
    """What a partition of a queued topic tells the directory after each command."""
    rec = run.rec
    return DeletionReport(
        rec.topic,
        rec.partition,
        rec.assignment.replicas,
        rec.replica_states,
        rec.being_reassigned,
        run.mark_ineligible,
        run.resume_deletion,
        run.removed,
    )
