"""KRaft's topic requests: `createTopics`, `createPartitions` and `deleteTopics` as the quorum
controller handles a TopicCreation, a PartitionExpansion or a TopicDeletion.

Source: apache/kafka 3.9.0, metadata/src/main/java/org/apache/kafka/controller/
ReplicationControlManager.java (`createTopic`, `validateNewTopicNames`, `createPartitions`,
`deleteTopics`) and common's `Topic.unifyCollisionChars`. A request is checked whole before
any record: Kafka refuses it with the first error and writes nothing. The handlers are cases
of `kraft_directory_step` (quorum_controller.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .. import event_types as ev
from ..directory import CONTROLLER_KEY, TopicRecord, topic_key
from ..kafka_errors import Errors
from ..outputs import StateChangeFailedRecord
from . import periodic_tasks
from .commands import RegisterPartition, RemovePartition
from .config_requests import invalid_topic_config, request_order, write_configs
from .kraft_view import KraftView, partition_zero_replicas, topic_id
from .outputs import topic_record
from .records import (
    CONFIG_RESOURCE_TOPIC,
    ApiMessageAndVersion,
    ConfigRecord,
    MetadataTopicRecord,
    RemoveTopicRecord,
)
from .replication_control import validate_manual_partition_assignment


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


def topic_creation(d: KraftView, e: ev.TopicCreation) -> None:
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
    invalid = invalid_topic_config(e.configs)
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
    write_configs(
        d,
        [
            ConfigRecord(CONFIG_RESOURCE_TOPIC, e.topic, name, configs[name])
            for name in request_order(configs)
        ],
    )
    _register_partitions(d, e.topic, e.partitions)


def partition_expansion(d: KraftView, e: ev.PartitionExpansion) -> None:
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


def topic_deletion(d: KraftView, e: ev.TopicDeletion) -> None:
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
