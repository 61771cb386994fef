"""KRaft mode's decision of contract v1: `AppendedRecord`, one metadata record the quorum
controller appends, and its contract document and key.

The record types are kraft/records.py's (Kafka's metadata/src/main/resources/common/
metadata/*.json, apache/kafka 3.9.0), built by kraft/outputs.py; the document's `type` is
Kafka's record name (`KAFKA_NAMES` where this project renames the class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .contract_record import ContractRecord, field_names
from .kraft.records import (
    CONFIG_RESOURCE_TOPIC,
    NO_LEADER_CHANGE,
    MetadataPartitionRecord,
    MetadataRecord,
    MetadataTopicRecord,
    PartitionChangeRecord,
)
from .states import LeaderRecoveryState


@dataclass(frozen=True, slots=True)
class AppendedRecord(ContractRecord):
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


def appended_writer(
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


def appended_key(doc: dict[str, Any]) -> str:
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
