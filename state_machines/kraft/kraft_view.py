"""The directory as KRaft's rules see it: `KraftView`, with ClusterControlManager's broker
registry in the directory's records, the contexts a command carries to a partition, and the
ids the contract does not carry.

Kafka's random ids are not in the contract: a topic's id and a broker's one log directory
are derived from their names (`topic_id`, `directory_id`), so that a replay gives the same
records.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace

from .. import event_types as ev
from ..commands import Command, Observe
from ..directory import (
    CONTROLLER_KEY,
    DirectoryRecord,
    DirectoryResult,
    DirectoryView,
    TopicRecord,
    broker_key,
)
from ..model import ControllerConfig
from . import cluster_control as cc
from .commands import KraftContext, KraftOp
from .configuration_control import unclean_leader_election_enabled_for_topic
from .metadata_version import MetadataVersion
from .outputs import broker_record
from .records import ApiMessageAndVersion, FenceBrokerRecord, UnfenceBrokerRecord
from .replication_control import TopicContext, effective_min_isr

ALTER_PARTITION_VERSION = 3
MIN_INSYNC_REPLICAS = "min.insync.replicas"


def _derived_uuid(name: str) -> str:
    """A Kafka `Uuid` derived from `name` (16 bytes of its SHA-1), written as Kafka's
    `Uuid.toString` writes one: URL-safe base64 without padding."""
    digest = hashlib.sha1(f"kafka-shadow-controller/{name}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def topic_id(topic: str) -> str:
    """The topic's id, derived from its name (Kafka's is random; the contract has none)."""
    return _derived_uuid(f"topic/{topic}")


def directory_id(broker_id: int) -> str:
    """The one log directory of a broker, derived from its id."""
    return _derived_uuid(f"directory/{broker_id}")


def partition_zero_replicas(rec: TopicRecord) -> int:
    """`getTopicEffectiveMinIsr`'s replication factor: partition 0's replica count, as its
    summary reports it (during a reassignment, adding and removing replicas included), else
    the brokers the directory gave it at creation. A summary is current when read: the loop
    holds an event behind a command to a partition 0 until it is folded, when ELR (the only
    reader of the min ISR) is on (rule_sets.py), and holds a PartitionExpansion (the other
    reader: `createPartitions`' replication factor) until every command sent is folded."""
    summary = dict(rec.summaries).get(0)
    if summary is not None and summary.replica_count is not None:
        return summary.replica_count
    return len(rec.brokers_of(0))


class KraftView(DirectoryView):
    """The directory view with KRaft's broker registry and contexts."""

    def __init__(
        self,
        view: Mapping[str, DirectoryRecord],
        config: ControllerConfig,
        offset: int,
        cause_id: str | None,
        touched: frozenset[tuple[str, int]] = frozenset(),
        ts: int | None = None,
    ):
        super().__init__(view, config, offset, cause_id, touched, ts)
        self.mv = MetadataVersion.from_version_string(config.metadata_version)
        self._kcontexts: dict[tuple[str, tuple[int, ...]], KraftContext] = {}
        self.rejected: str | None = None
        # each output's and command's place in production order: Kafka appends a handler's
        # records in the order it makes them (the broker's record before or after its
        # partitions' changes), and the loop carries these places to the records
        self._made = 0
        self._output_order: list[int] = []
        self._command_order: list[int] = []

    def put(self, key: str, record: DirectoryRecord | None) -> None:
        super().put(key, record)
        self._kcontexts.clear()

    def registration(self, broker_id: int) -> cc.BrokerRegistration | None:
        rec = self.get(broker_key(broker_id))
        return rec if isinstance(rec, cc.BrokerRegistration) else None

    def registry(self, brokers: Iterable[int] | None = None) -> cc.BrokerRegistry:
        ids = sorted(self.controller.brokers) if brokers is None else brokers
        return cc.BrokerRegistry.of(r for r in (self.registration(b) for b in ids) if r is not None)

    def replay(self, records: Iterable[ApiMessageAndVersion], emit: bool = True) -> None:
        """Write broker records out (unless already written: `emit` False) and replay them
        into the registry."""
        for r in records:
            m = r.message
            broker_id = (
                m.id if isinstance(m, (FenceBrokerRecord, UnfenceBrokerRecord)) else m.broker_id  # type: ignore[union-attr]
            )
            after = self.registry([broker_id]).replay(m).registration(broker_id)
            self.put(broker_key(broker_id), after)
            c = self.controller
            if after is not None and broker_id not in c.brokers:
                self.put(CONTROLLER_KEY, replace(c, brokers=c.brokers | {broker_id}))
            elif after is None:
                self.put(CONTROLLER_KEY, replace(c, brokers=c.brokers - {broker_id}))
            if emit:
                self.emit(broker_record(r))

    def emit(self, output: object) -> None:
        """An output of the active controller (a standby replays and writes nothing)."""
        if self.controller.active:
            self.append_output(output)

    def append_output(self, output: object) -> None:
        self.outputs.append(output)  # type: ignore[arg-type]
        self._output_order.append(self._made)
        self._made += 1

    def min_insync_replicas(self, configs: Iterable[tuple[str, str]]) -> int:
        """The topic's min.insync.replicas: its own, the cluster's, the static setting. A
        topic's value Kafka cannot parse is refused before it is stored; the cluster's is
        not validated by Kafka (its `getTopicEffectiveMinIsr` would then throw), and is
        passed over here (`ControllerConfig.min_isr_for`)."""
        return self.config.min_isr_for(tuple(configs), self.controller.dynamic_configs)[0]

    def topic_context(self, topic: str) -> TopicContext:
        rec = self.topic(topic)
        configs = rec.configs if rec else ()
        rf = partition_zero_replicas(rec) if rec else 0
        return TopicContext(
            topic_id=topic_id(topic),
            metadata_version=self.mv,
            min_isr=effective_min_isr(self.min_insync_replicas(configs), rf)
            if rf
            else self.min_insync_replicas(configs),
            unclean_leader_election=unclean_leader_election_enabled_for_topic(
                self.config, configs, self.controller.dynamic_configs
            ),
            eligible_leader_replicas_enabled=self.config.eligible_leader_replicas_version >= 1,
            name=topic,
        )

    def kctx(self, topic: str, partition: int) -> KraftContext:
        rec = self.topic(topic)
        brokers = tuple(sorted(rec.brokers_of(partition))) if rec else ()
        key = (topic, brokers)
        made = self._kcontexts.get(key)
        if made is None:
            registry = self.registry(brokers)
            made = self._kcontexts[key] = KraftContext(
                self.controller.active,
                self.topic_context(topic),
                tuple(r for b in brokers if (r := registry.registration(b)) is not None),
                ts=self.ts if self.ts is not None else self.controller.event_time,
            )
        return made

    def ksend(self, topic: str, partition: int, op: KraftOp | Observe) -> None:
        self.commands.append(
            Command(topic, partition, self.offset, self.cause_id, self.kctx(topic, partition), op)
        )
        self._command_order.append(self._made)
        self._made += 1

    def sort_commands(self) -> None:
        """The commands in (topic, partition) order, each keeping its place in production
        order (a stable sort: one partition's commands stay in the order they were made)."""
        commands, order = self.commands, self._command_order
        by_partition = sorted(
            range(len(commands)), key=lambda i: (commands[i].topic, commands[i].partition)
        )
        self.commands = [commands[i] for i in by_partition]
        self._command_order = [order[i] for i in by_partition]

    def result(  # type: ignore[override]
        self, continuation: None = None, followups: tuple[ev.CauseStep, ...] = ()
    ) -> DirectoryResult:
        return DirectoryResult(
            self.changes,
            tuple(self.commands),
            tuple(self.outputs),
            None,
            followups,
            self.rejected,
            tuple(self._output_order),
            tuple(self._command_order),
        )


def fan_out(d: KraftView, targets: Iterable[tuple[str, int]], op: KraftOp) -> None:
    for t, p in targets:
        d.ksend(t, p, op)
