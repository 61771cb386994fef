"""The ZK controller's topic and config events in the directory step: a topic's creation,
its new partitions, and the topic and cluster config changes that trigger elections.

Source: core/src/main/scala/kafka/controller/KafkaController.scala (apache/kafka 3.9.0):
`processTopicChange` and `processPartitionModifications` -> `onNewPartitionCreation`;
core/src/main/scala/kafka/server/ConfigHandler.scala (`TopicConfigHandler.processConfigChanges`)
and `DynamicBrokerConfig` with `processUncleanLeaderElectionEnable`. The handlers are cases
of `directory_step` (controller_events.py).
"""

from __future__ import annotations

from dataclasses import replace

from . import event_types as ev
from .broker_events import with_retries
from .commands import CreatePartition, LoadPartition, Op, TriggerOnline
from .directory import CONTROLLER_KEY, DirectoryView, TopicRecord, topic_key
from .model import ReplicaAssignment, equals_ignore_case
from .scala_hash import CallHints


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


def topic_creation(d: DirectoryView, e: ev.TopicCreation) -> None:
    if d.topic(e.topic) is not None:
        return  # processTopicChange only acts on topics it has not seen
    d.put(topic_key(e.topic), TopicRecord(configs=e.configs))
    c = d.controller
    d.put(CONTROLLER_KEY, replace(c, topics=c.topics | {e.topic}))
    _new_partitions(d, e.topic, e.partitions)


def partition_expansion(d: DirectoryView, e: ev.PartitionExpansion) -> None:
    rec = d.topic(e.topic)
    if rec is None or rec.queued:
        return  # unknown topic; or being deleted: Kafka restores the old assignment
    known = set(rec.partition_ids())
    _new_partitions(d, e.topic, tuple((p, r) for p, r in e.partitions if p not in known))


def topic_config_change(d: DirectoryView, e: ev.TopicConfigChange) -> None:
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


def broker_config_change(d: DirectoryView, e: ev.BrokerConfigChange) -> None:
    """The cluster-wide dynamic defaults (`DynamicBrokerConfig`). Of the controller's
    settings only `unclean.leader.election.enable` is dynamic in 3.9.0; turning it from false
    to true runs `processUncleanLeaderElectionEnable`: triggerOnlinePartitionStateChange()."""
    c = d.controller
    merged = c.configs_after(e.configs)
    if merged == c.dynamic_configs:
        return
    enabled_before = d.config.cluster_unclean_enabled(c.dynamic_configs)
    d.put(CONTROLLER_KEY, replace(c, dynamic_configs=merged))
    if c.active and not enabled_before and d.config.cluster_unclean_enabled(merged):
        for t, p in with_retries(d, []):
            d.send(t, p, TriggerOnline())
