"""The live shadow's view of a metadata log (issue 45 §3): the verifier fed record by record,
its verdicts drained as they close, and each verdict's event as the contract's event.

`run --input metadata-log:DIR` folds the events a cluster's own log holds through the
job's rules and writes, beside the job's decisions, the verifier's verdict of each event.
Both come from one `LiveLog`, fed the log's records in order across micro-batches; the
source keeps it in the checkpoint beside each batch's end position, so its state is exactly
the state of a verifier that read the log from the start.

The records map onto events as docs/contract.md's table "A KRaft metadata log's records as
events" says, and as the verifier groups them: an event's records are those of its verdict
(`EventVerdict.first_offset` .. `last_offset`). A contract event's offset (its
`cause_offset`) is the log offset of the record it is read from. The state before each
record (a partition's leader and epochs, a broker's epoch, a topic's name) is kept by a
`LogState` of its own, replayed as each record comes in: the verifier replays a run of
PartitionChangeRecords only once the run ends.

Events with no contract counterpart (feature levels, unregistration, directory changes, a
PartitionChangeRecord no request explains) produce a verdict and no event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ShadowControllerError
from ..kraft.partition_registration import PartitionRegistration
from .base import broker_of, fencing
from .entries import LogEntry, partition_change_record
from .log_state import LogState, StaticConfig
from .predict import PREFERRED, REASSIGNMENT, UNCLEAN
from .verdicts import EventVerdict
from .verifier import Verifier

# the records a contract event is read from; others (no-ops, producer ids, ACLs, ...) are
# never kept
_KEPT = frozenset(
    {
        "PartitionChangeRecord",
        "PartitionRecord",
        "TopicRecord",
        "ConfigRecord",
        "RemoveTopicRecord",
        "RegisterBrokerRecord",
        "BrokerRegistrationChangeRecord",
        "FenceBrokerRecord",
        "UnfenceBrokerRecord",
    }
)
_BROKER_EVENTS = {
    "BrokerUnfenced": "BrokerStartup",
    "BrokerFenced": "BrokerFailure",
    "BrokerShutdown": "BrokerFailure",
    "ControlledShutdown": "ControlledShutdown",
}
_ELECTIONS = {PREFERRED[0]: "PREFERRED", UNCLEAN[0]: "UNCLEAN"}
# ConfigRecord resource types (ConfigResource.Type): 2 TOPIC, 4 BROKER
_TOPIC, _BROKER = 2, 4


@dataclass(frozen=True, slots=True)
class Kept:
    """A record kept until its verdict: the entry, and what it needs of the state before it."""

    entry: LogEntry
    topic: str | None  # the record's topic name (by its id)
    before: PartitionRegistration | None  # a PartitionChangeRecord's partition before it
    broker_epoch: int | None  # the broker's epoch (a broker record)


@dataclass(frozen=True, slots=True)
class Drained:
    """What a fed batch produced: contract events (offset, event) in offset order, and the
    verdicts closed."""

    events: list[tuple[int, dict[str, Any]]]
    verdicts: list[EventVerdict]


class LiveLog:
    """A Verifier fed record by record, and the contract events of its verdicts. Bounded:
    it keeps the log state twice (the verifier's and its own) and the records of the events
    still open, never the verdicts drained."""

    def __init__(self, static: StaticConfig | None = None) -> None:
        self.verifier = Verifier(static)
        self.state = LogState(static or StaticConfig())
        self._kept: dict[int, Kept] = {}
        self._events: list[tuple[int, dict[str, Any]]] = []
        self._leader_epoch = -1
        self._epochs: dict[int, int] = {}
        self._last = -1

    # -- feeding -----------------------------------------------------------------------

    def load_snapshot(self, entries: Iterable[LogEntry], end_offset: int) -> None:
        snap = list(entries)
        self.verifier.load_snapshot(snap, end_offset)
        self._last = end_offset - 1  # the log is read from the snapshot's end offset on
        for e in snap:
            self._observe(e, keep=False)

    def feed(self, e: LogEntry, leader_epoch: int | None = None) -> None:
        """`leader_epoch`: the batch's partition leader epoch (the quorum epoch a
        LeaderChange starts; LeaderChangeMessage does not carry it)."""
        self._observe(e, keep=True, leader_epoch=leader_epoch)
        self.verifier.feed(e)
        self._last = e.offset

    @property
    def next_offset(self) -> int:
        """The offset of the record expected next (0 before any)."""
        return self._last + 1

    def drain(self) -> Drained:
        """The events and verdicts closed since the last drain."""
        verdicts = self.verifier.verdicts
        self.verifier.verdicts = []
        for v in verdicts:
            self._events.extend(self._events_of(v))
        events, self._events = sorted(self._events, key=lambda x: x[0]), []
        low = self._held_from()
        for offset in [o for o in self._kept if o < low]:
            del self._kept[offset]
        return Drained(events, verdicts)

    def _held_from(self) -> int:
        """The lowest offset a verdict still to come can name."""
        v = self.verifier
        held = [e.offset for e in v._run]
        if v._open is not None:
            held.append(v._open.first)
        if v._after is not None and v._after.anchor is not None:
            held.append(v._after.anchor.offset)
        return min(held, default=self._last + 1)

    def _observe(self, e: LogEntry, keep: bool, leader_epoch: int | None = None) -> None:
        f = e.fields
        if e.control:
            if e.name == "LeaderChange":
                # a new quorum leader: the active controller's failover (its epoch is the
                # quorum's, the batch's partition leader epoch; one more when not given)
                epoch = self._leader_epoch + 1 if leader_epoch is None else leader_epoch
                if keep and epoch > self._leader_epoch and int(f.get("leader_id", -1)) >= 0:
                    self._events.append(
                        (
                            e.offset,
                            _event(
                                "ControllerFailover",
                                controller_id=int(f["leader_id"]),
                                controller_epoch=epoch,
                            ),
                        )
                    )
                self._leader_epoch = max(self._leader_epoch, epoch)
            return
        name = e.name
        if name == "RegisterBrokerRecord":
            self._epochs[int(f["broker_id"])] = int(f.get("broker_epoch", 0))
        if keep and name in _KEPT:
            topic: str | None = None
            before: PartitionRegistration | None = None
            broker_epoch: int | None = None
            if "topic_id" in f:
                topic = self.state.topic_names.get(str(f["topic_id"]))
            if name == "PartitionChangeRecord":
                before = self.state.partition(str(f["topic_id"]), int(f["partition_id"]))
            elif name not in (
                "TopicRecord",
                "PartitionRecord",
                "ConfigRecord",
                "RemoveTopicRecord",
            ):
                broker_epoch = self._epochs.get(broker_of(e))
            self._kept[e.offset] = Kept(e, topic, before, broker_epoch)
        with contextlib.suppress(ShadowControllerError):  # the verifier reports it
            self.state.replay(e)

    # -- verdicts to events --------------------------------------------------------------

    def _kept_in(self, v: EventVerdict, *names: str) -> list[Kept]:
        return [
            k
            for o in range(v.first_offset, v.last_offset + 1)
            if (k := self._kept.get(o)) is not None and k.entry.name in names
        ]

    def _events_of(self, v: EventVerdict) -> list[tuple[int, dict[str, Any]]]:
        kind = v.kind
        if kind in _BROKER_EVENTS:
            return self._broker_event(v, _BROKER_EVENTS[kind])
        if kind in ("CreateTopics", "CreatePartitions"):
            return self._creation(v, kind == "CreateTopics")
        if kind == "DeleteTopics":
            return [
                (k.entry.offset, _event("TopicDeletion", topic=k.topic))
                for k in self._kept_in(v, "RemoveTopicRecord")
                if k.topic is not None
            ]
        if kind == "IncrementalAlterConfigs":
            return self._configs(v)
        changes = self._kept_in(v, "PartitionChangeRecord")
        if kind == "AlterPartition":
            return [x for k in changes if (x := _alter_partition(k)) is not None]
        if kind in _ELECTIONS:
            return [
                (
                    k.entry.offset,
                    _event(
                        "ReplicaLeaderElection",
                        election_type=_ELECTIONS[kind],
                        partitions=[
                            {"topic": k.topic, "partition": int(k.entry.fields["partition_id"])}
                        ],
                    ),
                )
                for k in changes
                if k.topic is not None
            ]
        if kind == REASSIGNMENT[0]:
            return [x for k in changes if (x := _reassignment(k)) is not None]
        return []

    def _broker_event(self, v: EventVerdict, event: str) -> list[tuple[int, dict[str, Any]]]:
        anchors = [
            k
            for k in self._kept_in(
                v, "BrokerRegistrationChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord"
            )
            if fencing(k.entry) or int(k.entry.fields.get("in_controlled_shutdown", 0)) == 1
        ]
        if not anchors:
            return []
        k = anchors[0]
        broker = broker_of(k.entry)
        doc = _event(event, broker_id=broker)
        if event != "BrokerFailure" and k.broker_epoch is not None:
            doc["broker_epoch"] = k.broker_epoch
        return [(v.first_offset, doc)]

    def _creation(self, v: EventVerdict, new_topic: bool) -> list[tuple[int, dict[str, Any]]]:
        topic = None
        if new_topic:
            for k in self._kept_in(v, "TopicRecord"):
                topic = str(k.entry.fields["name"])
        parts = self._kept_in(v, "PartitionRecord")
        if topic is None and parts:
            topic = parts[0].topic or self.state.topic_names.get(
                str(parts[0].entry.fields["topic_id"])
            )
        if topic is None:
            return []
        partitions = {
            str(int(k.entry.fields["partition_id"])): list(k.entry.fields["replicas"])
            for k in parts
        }
        if not new_topic:
            return [
                (v.first_offset, _event("PartitionExpansion", topic=topic, partitions=partitions))
            ]
        doc = _event("TopicCreation", topic=topic, partitions=partitions)
        configs = {
            str(k.entry.fields["name"]): k.entry.fields.get("value")
            for k in self._kept_in(v, "ConfigRecord")
            if int(k.entry.fields.get("resource_type", 0)) == _TOPIC
        }
        if configs:
            doc["configs"] = configs
        return [(v.first_offset, doc)]

    def _configs(self, v: EventVerdict) -> list[tuple[int, dict[str, Any]]]:
        topics: dict[str, dict[str, Any]] = {}
        cluster: dict[str, Any] = {}
        first: dict[str, int] = {}
        for k in self._kept_in(v, "ConfigRecord"):
            f = k.entry.fields
            rtype, rname = int(f.get("resource_type", 0)), str(f.get("resource_name", ""))
            if rtype == _TOPIC:
                topics.setdefault(rname, {})[str(f["name"])] = f.get("value")
                first.setdefault(rname, k.entry.offset)
            elif rtype == _BROKER and rname == "":
                cluster[str(f["name"])] = f.get("value")
                first.setdefault("", k.entry.offset)
        out = [
            (first[t], _event("TopicConfigChange", topic=t, configs=c)) for t, c in topics.items()
        ]
        if cluster:
            out.append((first[""], _event("BrokerConfigChange", configs=cluster)))
        return out


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, **fields}


def _alter_partition(k: Kept) -> tuple[int, dict[str, Any]] | None:
    """The leader's AlterPartition a PartitionChangeRecord answers (`alterPartition`): asked
    at the partition's leader and epochs before it."""
    old = k.before
    if old is None or k.topic is None:
        return None
    r = partition_change_record(k.entry.fields)
    doc = _event(
        "AlterPartition",
        topic=k.topic,
        partition=r.partition_id,
        broker_id=old.leader,
        leader_epoch=old.leader_epoch,
        partition_epoch=old.partition_epoch,
        isr=list(r.isr if r.isr is not None else old.isr),
    )
    if r.leader_recovery_state is not None:
        doc["leader_recovery_state"] = r.leader_recovery_state.name
    return k.entry.offset, doc


def _reassignment(k: Kept) -> tuple[int, dict[str, Any]] | None:
    """The AlterPartitionReassignments request a PartitionChangeRecord setting the replicas
    answers: its target is the new replicas less those being removed."""
    old = k.before
    if old is None or k.topic is None:
        return None
    new = old.merge(partition_change_record(k.entry.fields))
    removing = set(new.removing_replicas)
    doc = _event(
        "PartitionReassignment",
        topic=k.topic,
        partition=int(k.entry.fields["partition_id"]),
        target_replicas=[b for b in new.replicas if b not in removing],
    )
    return k.entry.offset, doc
