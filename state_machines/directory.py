"""The directory: the controller-wide facts, and the view one step reads and writes them through.

Theory of operation
-------------------
Kafka's controller keeps one `ControllerContext`. Here it is split by what owns each fact:

* the directory holds what is not a partition's own: whether this controller is active and
  its epoch, each broker's registration, shutdown and epoch, each topic's configs,
  partitions and deletion status (Kafka's `TopicDeletionManager` bookkeeping);
* each partition holds its own leader, ISR, epochs, assignment and replica states
  (`partition_record.py`).

The directory state is a set of records keyed by entity: `controller`, `broker-<id>` and
`topic-<name>`. A step (`controller_events.directory_step`, `topic_deletion.after_reports`)
reads them through a `DirectoryView` and returns a `DirectoryResult`: only the records it
changed (decide, then apply), the `Command`s for the partitions an event concerns, each
carrying a `PartitionContext` snapshot, and the records it answers by itself (unknown
partitions, stale broker epochs).

Topic deletion decides on all replicas of a topic at once, so partitions of topics queued
for deletion send a `DeletionReport` after every command, and a `Continuation` says what
the directory does once the reports of a round are in (`topic_deletion.after_reports`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import cast

from . import event_types as ev
from .commands import Command, Op, PartitionContext, PartitionSummary
from .kraft.cluster_control import BrokerRegistration
from .kraft.schedule import HeartbeatStates, KraftTasks
from .model import UNKNOWN_BROKER, BrokerFact, ControllerConfig
from .outputs import ObservationOutcome, Record
from .states import ReplicaState
from .update_metadata_records import ROUND_BROKERS, UpdateMetadataSend

CONTROLLER_KEY = "controller"


# The contexts' broker facts by value (DirectoryView._broker_facts), bounded for any cluster.
_BROKER_FACTS: dict[tuple[tuple[int, BrokerFact], ...], tuple[tuple[int, BrokerFact], ...]] = {}


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
    # the cluster-wide dynamic broker defaults (BrokerConfigChange), over the job's settings
    dynamic_configs: tuple[tuple[str, str], ...] = ()
    # event time (ms) at which the next automatic preferred-leader check is due, if scheduled
    rebalance_due: int | None = None
    # Not Kafka's: the latest event time (ms) the controller has seen, the operator's tools'
    # "now" (the age of a reassignment)
    event_time: int | None = None

    def configs_after(
        self, changes: tuple[tuple[str, str | None], ...]
    ) -> tuple[tuple[str, str], ...]:
        """`dynamic_configs` with a BrokerConfigChange's changes applied (None deletes a
        key), sorted: the same defaults give the same value whatever the order of change."""
        configs = dict(self.dynamic_configs)
        for key, value in changes:
            if value is None:
                configs.pop(key, None)
            else:
                configs[key] = value
        return tuple(sorted(configs.items()))


@dataclass(frozen=True, slots=True)
class BrokerRecord:
    fact: BrokerFact = UNKNOWN_BROKER
    # its replicas on failed log dirs (`replicasOnOfflineDirs(broker)`), until it restarts or fails
    offline_dirs: tuple[tuple[str, int], ...] = ()


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
    # partition -> its last reported summary (partition_summaries.py)
    summaries: tuple[tuple[int, PartitionSummary], ...] = ()

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


# The key says which record it holds: `controller`, `broker-<id>` or `topic-<name>`. In
# kraft mode a broker's record is its `BrokerRegistration` (kraft/cluster_control.py), and
# `kraft-tasks` and `kraft-heartbeats` the quorum controller's in-memory state (kraft/schedule.py).
DirectoryRecord = (
    ControllerRecord
    | BrokerRecord
    | TopicRecord
    | BrokerRegistration
    | KraftTasks
    | HeartbeatStates
)


@dataclass(frozen=True, slots=True)
class Continuation:
    """What the directory does after a round's deletion reports are in."""

    failover_init: bool = (
        False  # TopicDeletionManager.init: ineligible = offline replicas or reassigning
    )
    mark_topics: frozenset[str] = frozenset()  # markTopicIneligibleForDeletion
    resume_topics: frozenset[str] = frozenset()  # resumeDeletionForTopics
    resume: bool = False  # resumeDeletions


@dataclass(frozen=True, slots=True)
class DirectoryResult:
    changes: dict[str, DirectoryRecord | None]  # None: the record is deleted
    commands: tuple[Command, ...]
    outputs: tuple[Record | ObservationOutcome | UpdateMetadataSend, ...]
    continuation: Continuation | None = None
    followups: tuple[ev.CauseStep, ...] = ()
    # the event cannot be applied under this rule set: it goes to the dead letters with this reason
    rejected: str | None = None
    # kraft: each output's and each command's place in the step's production order (empty:
    # their indexes), so that a cause's metadata records can be put in the order the quorum
    # controller appends them (outputs.AppendedRecord.order)
    output_order: tuple[int, ...] = ()
    command_order: tuple[int, ...] = ()


class DirectoryView:
    """Read-your-writes view over the directory records for one step."""

    def __init__(
        self,
        view: Mapping[str, DirectoryRecord],
        config: ControllerConfig,
        offset: int,
        cause_id: str | None,
        touched: frozenset[tuple[str, int]] = frozenset(),
        ts: int | None = None,
    ):
        self.view = view
        # the event time of the cause (its envelope's `ts`), if it has one
        self.ts = ts
        # the partitions earlier steps of this cause already reached
        self.touched = touched
        self.config = config
        self.offset = offset
        self.cause_id = cause_id
        self.changes: dict[str, DirectoryRecord | None] = {}
        self.commands: list[Command] = []
        self.outputs: list[Record | ObservationOutcome | UpdateMetadataSend] = []
        self._explicit_sends = False
        # contexts already built since the last write: a fan-out to every partition of a
        # broker or a topic sends the same one thousands of times, and partitions of
        # different topics with the same flags and replicas the same context (it names no
        # topic), one object that the job's codec then encodes once
        self._topic_flags: dict[str, tuple[bool, bool]] = {}
        self._shared_contexts: dict[tuple[bool, bool, tuple[int, ...]], PartitionContext] = {}

    def get(self, key: str) -> DirectoryRecord | None:
        return self.changes[key] if key in self.changes else self.view.get(key)

    def put(self, key: str, record: DirectoryRecord | None) -> None:
        self.changes[key] = record
        self._topic_flags.clear()
        self._shared_contexts.clear()

    @property
    def controller(self) -> ControllerRecord:
        return cast("ControllerRecord | None", self.get(CONTROLLER_KEY)) or ControllerRecord()

    def broker(self, broker_id: int) -> BrokerRecord:
        return cast("BrokerRecord | None", self.get(broker_key(broker_id))) or BrokerRecord()

    def fact(self, broker_id: int) -> BrokerFact:
        return self.broker(broker_id).fact

    def is_replica_online(self, broker_id: int, topic: str, partition: int) -> bool:
        """`controllerContext.isReplicaOnline(broker, partition)`: the broker is live and the
        partition is not on one of its failed log dirs."""
        rec = self.broker(broker_id)
        return rec.fact.live and (topic, partition) not in rec.offline_dirs

    def topic(self, name: str) -> TopicRecord | None:
        return cast("TopicRecord | None", self.get(topic_key(name)))

    def put_broker(self, broker_id: int, record: BrokerRecord) -> None:
        self.put(broker_key(broker_id), record)
        c = self.controller
        if broker_id not in c.brokers:
            self.put(CONTROLLER_KEY, replace(c, brokers=c.brokers | {broker_id}))

    def remember_brokers(self, topic: str, partition: int, brokers: Iterable[int]) -> None:
        """Add brokers to the partition's fan-out set."""
        self.remember_partitions(topic, ((partition, brokers),))

    def remember_partitions(
        self, topic: str, partitions: Iterable[tuple[int, Iterable[int]]]
    ) -> None:
        """`remember_brokers` for each (partition, brokers) in turn, with one copy of the
        topic's record (a creation names every partition of the topic)."""
        rec = self.topic(topic)
        assert rec is not None
        parts = dict(rec.partitions)
        changed = False
        for partition, brokers in partitions:
            known = parts.get(partition, ())
            merged = known + tuple(b for b in dict.fromkeys(brokers) if b >= 0 and b not in known)
            if merged != known:
                parts[partition] = merged
                changed = True
        if changed:
            self.put(topic_key(topic), replace(rec, partitions=tuple(sorted(parts.items()))))

    def ctx(self, topic: str, brokers: Iterable[int] = ()) -> PartitionContext:
        flags = self._topic_flags.get(topic)
        if flags is None:
            c = self.controller
            rec = self.topic(topic)
            configs = rec.configs if rec else ()
            flags = self._topic_flags[topic] = (
                self.config.unclean_enabled_for(configs, c.dynamic_configs),
                bool(rec and rec.queued),
            )
        replicas = tuple(brokers)
        made = self._shared_contexts.get((*flags, replicas))
        if made is None:
            c = self.controller
            made = self._shared_contexts[(*flags, replicas)] = PartitionContext(
                c.active,
                c.controller_epoch,
                flags[0],
                flags[1],
                self._broker_facts(replicas),
            )
        return made

    def _broker_facts(self, replicas: tuple[int, ...]) -> tuple[tuple[int, BrokerFact], ...]:
        """A context's (broker, fact) pairs, one object for equal pairs: the contexts of
        the same brokers in another order, of another topic or of another event share it,
        and with it the partition step's update of the partitions' views (`partition._begin`
        works each out once per pair of objects)."""
        facts = tuple([(b, self.fact(b)) for b in sorted(set(replicas)) if b >= 0])
        pairs = _BROKER_FACTS.get(facts)  # by BrokerFact's own equality
        if pairs is None:
            if len(_BROKER_FACTS) > 65536:
                _BROKER_FACTS.clear()
            pairs = _BROKER_FACTS[facts] = facts
        return pairs

    def send(self, topic: str, partition: int, op: Op, brokers: Iterable[int] = ()) -> None:
        self.commands.append(
            Command(topic, partition, self.offset, self.cause_id, self.ctx(topic, brokers), op)
        )

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

    def live_or_shutting_down(self) -> tuple[int, ...]:
        """`liveOrShuttingDownBrokerIds`, in order."""
        return tuple(b for b in sorted(self.controller.brokers) if self.fact(b).registered)

    def update_metadata(
        self, site: int, recipients: Iterable[int] | None = None, unless_sites: tuple[int, ...] = ()
    ) -> None:
        """`sendUpdateMetadataRequest(recipients, ...)` at `site` of this round (default: every
        live or shutting-down broker); the partitions it names share their states at the same
        site (update_metadata.py)."""
        if self.config.emit_update_metadata:
            brokers = self.live_or_shutting_down() if recipients is None else tuple(recipients)
            self.outputs.append(UpdateMetadataSend(site, brokers, unless_sites))
            self._explicit_sends = True

    def result(
        self, continuation: Continuation | None = None, followups: tuple[ev.CauseStep, ...] = ()
    ) -> DirectoryResult:
        if self.config.emit_update_metadata and (self.commands or self._explicit_sends):
            # the round's live brokers: the recipients of every UpdateMetadata a LeaderAndIsr queued
            self.outputs.append(UpdateMetadataSend(ROUND_BROKERS, self.live_or_shutting_down()))
        return DirectoryResult(
            self.changes, tuple(self.commands), tuple(self.outputs), continuation, followups
        )


__all__ = [
    "BrokerRecord",
    "CONTROLLER_KEY",
    "Continuation",
    "ControllerRecord",
    "DeletionMirror",
    "DirectoryRecord",
    "DirectoryResult",
    "DirectoryView",
    "TopicRecord",
    "broker_key",
    "topic_key",
]
