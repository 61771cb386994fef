"""Output records of contract v1 (docs/contract.md: the decisions topic).

Records are values without their envelope; the engine adds `v`, `cause_offset`, `cause_id`
and `seq` (the index among the records one cause produced for one record key).
`StillLeads` is internal: the partition step's share of a `ControlledShutdownResult`, merged
into the result by `fold.merge_shutdown_shares`.

This module holds the ZK controller's decisions, the unions of every record and output,
and their contract documents (`to_contract`, `contract_key`). The UpdateMetadata records
and their internal shares are in update_metadata_records.py, KRaft's `AppendedRecord` in
appended_record.py, the records' base in contract_record.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from .appended_record import AppendedRecord, appended_key, appended_writer
from .contract_record import ContractRecord
from .speed import document_writer, quick_init
from .update_metadata_records import (
    UpdateMetadataRecord,
    UpdateMetadataShare,
    update_metadata_writer,
)


@quick_init
@dataclass(frozen=True, slots=True)
class LeaderAndIsrRecord(ContractRecord):
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
class StopReplicaRecord(ContractRecord):
    TYPE: ClassVar[str] = "StopReplica"
    topic: str
    partition: int
    broker_id: int
    delete_partition: bool
    leader_epoch: int


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionStateChangeRecord(ContractRecord):
    TYPE: ClassVar[str] = "PartitionStateChange"
    topic: str
    partition: int
    from_state: str
    to_state: str


@quick_init
@dataclass(frozen=True, slots=True)
class ReplicaStateChangeRecord(ContractRecord):
    TYPE: ClassVar[str] = "ReplicaStateChange"
    topic: str
    partition: int
    broker_id: int
    from_state: str
    to_state: str


@quick_init
@dataclass(frozen=True, slots=True)
class StateChangeFailedRecord(ContractRecord):
    TYPE: ClassVar[str] = "StateChangeFailed"
    topic: str
    partition: int
    broker_id: int | None
    target_state: str
    reason: str


@dataclass(frozen=True, slots=True)
class ControlledShutdownResultRecord(ContractRecord):
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
class AlterPartitionResultRecord(ContractRecord):
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
class ElectionResultRecord(ContractRecord):
    TYPE: ClassVar[str] = "ElectionResult"
    topic: str
    partition: int
    election_type: str
    error: str | None
    leader: int | None


@dataclass(frozen=True, slots=True)
class DivergenceRecord(ContractRecord):
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
    """The record key of a contract document (`ContractRecord.key` of the record it was
    written from)."""
    kind = doc["type"]
    if (
        "version" in doc
    ):  # kraft mode's metadata records (AppendedRecord), the only ones with a version
        return appended_key(doc)
    if kind == ControlledShutdownResultRecord.TYPE:
        return f"broker-{doc['broker_id']}"
    if kind == UpdateMetadataRecord.TYPE:
        return str(doc["send"])
    return f"{doc['topic']}-{doc['partition']}"


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
    UpdateMetadataRecord: update_metadata_writer,
    AppendedRecord: appended_writer,
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
