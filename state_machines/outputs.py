"""Output records of contract v1 (docs/contract.md: the decisions topic).

Records are values without their envelope; the engine adds `v`, `cause_offset`, `cause_id`
and `seq` (the index among the records one cause produced for one record key).
`StillLeads` is internal: the partition step's share of a `ControlledShutdownResult`, merged
into the result by `fold.merge_shutdown_shares`; so are `UpdateMetadataShare` and
`UpdateMetadataSend`, merged into `UpdateMetadataRecord`s by `update_metadata.merge`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, ClassVar, NamedTuple

from .kraft.records import (
    CONFIG_RESOURCE_TOPIC,
    NO_LEADER_CHANGE,
    MetadataPartitionRecord,
    MetadataRecord,
    MetadataTopicRecord,
    PartitionChangeRecord,
)
from .speed import document_writer, quick_init
from .states import LeaderRecoveryState


@cache
def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names: dataclasses.fields() is slow enough to matter on the hot
    paths that turn records, commands and decisions into documents."""
    return tuple(f.name for f in fields(cls))


class _Record:
    TYPE: ClassVar[str]

    def key(self) -> str:
        return f"{self.topic}-{self.partition}"  # type: ignore[attr-defined]

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # as a plain `type`: mypy checks `type[_Record]` against the cache's Hashable with
        # the instance's `__hash__` (python/mypy#11470)
        cls: type = type(self)
        for name in field_names(cls):
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out


@quick_init
@dataclass(frozen=True, slots=True)
class LeaderAndIsrRecord(_Record):
    TYPE: ClassVar[str] = "LeaderAndIsr"
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    leader_recovery_state: str
    is_new: bool
    recipients: tuple[int, ...]
    election: str | None


@quick_init
@dataclass(frozen=True, slots=True)
class StopReplicaRecord(_Record):
    TYPE: ClassVar[str] = "StopReplica"
    topic: str
    partition: int
    broker_id: int
    delete_partition: bool
    leader_epoch: int


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionStateChangeRecord(_Record):
    TYPE: ClassVar[str] = "PartitionStateChange"
    topic: str
    partition: int
    from_state: str
    to_state: str


@quick_init
@dataclass(frozen=True, slots=True)
class ReplicaStateChangeRecord(_Record):
    TYPE: ClassVar[str] = "ReplicaStateChange"
    topic: str
    partition: int
    broker_id: int
    from_state: str
    to_state: str


@quick_init
@dataclass(frozen=True, slots=True)
class StateChangeFailedRecord(_Record):
    TYPE: ClassVar[str] = "StateChangeFailed"
    topic: str
    partition: int
    broker_id: int | None
    target_state: str
    reason: str


@dataclass(frozen=True, slots=True)
class ControlledShutdownResultRecord(_Record):
    """Kafka's reply to a ControlledShutdownRequest. `error` (Kafka's error name or null) is
    an addition to the contract's fields: the contract requires a refused request to be
    answered, and this is the record that answers it."""

    TYPE: ClassVar[str] = "ControlledShutdownResult"
    broker_id: int
    partitions_remaining: tuple[str, ...]
    error: str | None = None

    def key(self) -> str:
        return f"broker-{self.broker_id}"


@dataclass(frozen=True, slots=True)
class AlterPartitionResultRecord(_Record):
    TYPE: ClassVar[str] = "AlterPartitionResult"
    topic: str
    partition: int
    broker_id: int
    error: str | None
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...] | None
    partition_epoch: int | None


@quick_init
@dataclass(frozen=True, slots=True)
class ElectionResultRecord(_Record):
    TYPE: ClassVar[str] = "ElectionResult"
    topic: str
    partition: int
    election_type: str
    error: str | None
    leader: int | None


@dataclass(frozen=True, slots=True)
class DivergenceRecord(_Record):
    TYPE: ClassVar[str] = "Divergence"
    topic: str
    partition: int
    expected: dict[str, Any]
    observed: dict[str, Any]
    severity: str
    reason: str


@quick_init
@dataclass(frozen=True, slots=True)
class StillLeads:
    """Internal: after a controlled shutdown of `broker_id`, this partition is still led by
    it (RF > 1, topic not queued for deletion): one entry of `partitionLeadersOnBroker`."""

    broker_id: int
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class UpdateMetadataRecord(_Record):
    """One UpdateMetadata send (`sendUpdateMetadataRequests`): the same request to every
    broker in `recipients`, carrying the cluster's `live_brokers` and the states of the
    partitions of one Kafka batch (UpdateMetadataPartitionState, `zk_version` being the
    partition epoch), in (topic, partition) order. A send of more than
    `update_metadata.MAX_PARTITIONS_PER_RECORD` partitions is split over records with
    consecutive `seq`."""

    TYPE: ClassVar[str] = "UpdateMetadata"
    # the send's place in its cause, and the record's key: update-metadata-<round>[-<scope>]-<site>
    send: str
    recipients: tuple[int, ...]
    live_brokers: tuple[int, ...]
    partitions: tuple[MetadataState, ...]

    def key(self) -> str:
        return self.send


# UpdateMetadataPartitionState as a plain tuple (a partition shares one per send: a tuple of
# ints and int tuples is not tracked by the cyclic collector), and its contract fields
MetadataState = tuple[
    str, int, int, int, int, tuple[int, ...], int, tuple[int, ...], tuple[int, ...]
]
METADATA_STATE_FIELDS = (
    "topic",
    "partition",
    "controller_epoch",
    "leader",
    "leader_epoch",
    "isr",
    "zk_version",
    "replicas",
    "offline_replicas",
)


def _update_metadata_writer(
    r: UpdateMetadataRecord, cause_offset: int, cause_id: str | None, seq: int
) -> dict[str, Any]:
    return {
        "v": 1,
        "type": r.TYPE,
        "cause_offset": cause_offset,
        "cause_id": cause_id,
        "seq": seq,
        "send": r.send,
        "recipients": list(r.recipients),
        "live_brokers": list(r.live_brokers),
        "partitions": [
            {
                "topic": t,
                "partition": p,
                "controller_epoch": ce,
                "leader": leader,
                "leader_epoch": le,
                "isr": list(isr),
                "zk_version": zk,
                "replicas": list(replicas),
                "offline_replicas": list(offline),
            }
            for t, p, ce, leader, le, isr, zk, replicas, offline in r.partitions
        ],
    }


class UpdateMetadataShare(NamedTuple):
    """Internal: a partition's share of one UpdateMetadata send. `site` names the Kafka
    batch within its round (the flow's call, in Kafka's order); `scope` is "" for a batch of
    many partitions, or names the one thing the batch is for (a partition's reassignment, a
    broker's rebalance). `state` is the partition's UpdateMetadataPartitionState, or None
    when the batch names the brokers only (no leadership: Kafka skips the partition).
    `mark` only records that the batch ran (for `UpdateMetadataSend.unless_sites`)."""

    site: int
    scope: str
    topic: str
    partition: int
    state: MetadataState | None
    mark: bool = False


# UpdateMetadataSend.site of the round's live or shutting-down brokers
ROUND_BROKERS = -1


@dataclass(frozen=True, slots=True)
class UpdateMetadataSend:
    """Internal, from the directory: `site` -1 gives the round's live or shutting-down
    brokers (the recipients of every send a LeaderAndIsr queued); any other site is an
    explicit `sendUpdateMetadataRequest(recipients, ...)`, sent even without partitions
    unless a partition shared at one of `unless_sites` in the same round."""

    site: int
    recipients: tuple[int, ...]
    unless_sites: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AppendedRecord(_Record):
    """Kraft mode's decision: one metadata record the quorum controller appends
    (kraft/records.py), with the version Kafka writes it at, under the key of the entity it
    concerns (kraft/outputs.py builds them). Its document's `type` is Kafka's record name;
    a `PartitionChangeRecord` carries only the fields it changes; leader recovery states
    are Kafka's bytes (0 RECOVERED, 1 RECOVERING)."""

    TYPE: ClassVar[str] = (
        "MetadataRecord"  # not written: the document's type is the record's own name
    )
    entity: str
    topic: str | None
    partition: int | None
    version: int
    record: MetadataRecord
    # not Kafka's record: the new leader is not in the previous ISR (`electionWasClean` false,
    # what KRaft's UncleanLeaderElectionsPerSec counts); written as `"election": "unclean"`,
    # the field ZK-mode's LeaderAndIsr records carry
    unclean: bool = False
    # not Kafka's: the record's place in its cause's appends, (round, index, k) — the
    # directory step's round, the place of the output or command that made it in the step's
    # production order, and its index among that command's outputs (fold.py sets it). A
    # cause's records sorted by it are in the order the quorum controller appends them;
    # written as `append_order`
    order: tuple[int, int, int] | None = None

    def key(self) -> str:
        return self.entity

    def placed(self, order: tuple[int, int, int]) -> AppendedRecord:
        """This record at `order` (a constructor call: a fan-out places one per partition)."""
        return AppendedRecord(
            self.entity, self.topic, self.partition, self.version, self.record, self.unclean, order
        )


# Kafka's record names, where this project's class is renamed
KAFKA_NAMES: dict[type, str] = {
    MetadataPartitionRecord: "PartitionRecord",
    MetadataTopicRecord: "TopicRecord",
}
_RECOVERY_BYTE = {LeaderRecoveryState.RECOVERED: 0, LeaderRecoveryState.RECOVERING: 1}


def kafka_name(record: MetadataRecord) -> str:
    cls = type(record)
    return KAFKA_NAMES.get(cls, cls.__name__)


def _appended_writer(
    r: AppendedRecord, cause_offset: int, cause_id: str | None, seq: int
) -> dict[str, Any]:
    m = r.record
    doc: dict[str, Any] = {
        "v": 1,
        "type": kafka_name(m),
        "cause_offset": cause_offset,
        "cause_id": cause_id,
        "seq": seq,
    }
    if r.topic is not None:
        doc["topic"] = r.topic
    if r.partition is not None:
        doc["partition"] = r.partition
    doc["version"] = r.version
    only_changes = isinstance(m, PartitionChangeRecord)
    cls: type = type(m)
    for name in field_names(cls):
        value = getattr(m, name)
        if only_changes and (value is None or (name == "leader" and value == NO_LEADER_CHANGE)):
            continue
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, LeaderRecoveryState):
            value = _RECOVERY_BYTE[value]
        doc[name] = value
    if r.unclean:
        doc["election"] = "unclean"
    if r.order is not None:
        doc["append_order"] = list(r.order)
    return doc


@dataclass(frozen=True, slots=True)
class ObservationOutcome:
    """Internal: one comparison of an observed partition state with ours, for the running
    counts of matches and divergences by severity."""

    outcome: str  # match | benign | safety


Record = (
    LeaderAndIsrRecord
    | StopReplicaRecord
    | PartitionStateChangeRecord
    | ReplicaStateChangeRecord
    | StateChangeFailedRecord
    | ControlledShutdownResultRecord
    | AlterPartitionResultRecord
    | ElectionResultRecord
    | DivergenceRecord
    | UpdateMetadataRecord
    | AppendedRecord
)
Output = Record | StillLeads | ObservationOutcome | UpdateMetadataShare


def contract_key(doc: dict[str, Any]) -> str:
    """The record key of a contract document (`_Record.key` of the record it was written from)."""
    kind = doc["type"]
    if (
        "version" in doc
    ):  # kraft mode's metadata records (AppendedRecord), the only ones with a version
        return _appended_key(doc)
    if kind == ControlledShutdownResultRecord.TYPE:
        return f"broker-{doc['broker_id']}"
    if kind == UpdateMetadataRecord.TYPE:
        return str(doc["send"])
    return f"{doc['topic']}-{doc['partition']}"


def _appended_key(doc: dict[str, Any]) -> str:
    """The key of an `AppendedRecord`'s document (kraft/outputs.py names the keys)."""
    kind = doc["type"]
    if "partition" in doc:
        return f"{doc['topic']}-{doc['partition']}"
    if kind in ("TopicRecord", "RemoveTopicRecord") or (
        kind == "ConfigRecord" and doc["resource_type"] == CONFIG_RESOURCE_TOPIC
    ):
        return f"topic/{doc['topic']}"
    if kind == "ConfigRecord":
        return "cluster" if doc["resource_name"] == "" else f"broker-{doc['resource_name']}"
    if kind == "ClearElrRecord":
        return f"topic/{doc['topic_name']}" if doc["topic_name"] else "cluster"
    broker = doc["id"] if kind in ("FenceBrokerRecord", "UnfenceBrokerRecord") else doc["broker_id"]
    return f"broker-{broker}"


def to_contract(
    record: Record, cause_offset: int, cause_id: str | None, seq: int
) -> dict[str, Any]:
    """The record's contract document: the envelope, then its fields in declaration order
    (tuples as lists), the same dict as `{envelope..., **record.body()}`."""
    cls: type = type(record)
    writer = _WRITERS.get(cls) or _writer(cls)
    return writer(record, cause_offset, cause_id, seq)


_Writer = Callable[[Any, int, "str | None", int], dict[str, Any]]
_WRITERS: dict[type, _Writer] = {
    UpdateMetadataRecord: _update_metadata_writer,
    AppendedRecord: _appended_writer,
}


def _writer(cls: type) -> _Writer:
    """A document writer for one record class, made once (`speed.document_writer`): every
    decision of a fan-out goes through it. A tuple-typed field may hold a tuple (a list in
    the contract) or None."""
    writer: _Writer = document_writer(
        (("v", 1), ("type", cls.TYPE)),  # type: ignore[attr-defined]
        ("cause_offset", "cause_id", "seq"),
        tuple((f.name, "tuple" in str(f.type)) for f in fields(cls)),
    )
    _WRITERS[cls] = writer
    return writer
