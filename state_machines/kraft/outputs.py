"""KRaft mode's decisions: the metadata records the quorum controller appends, as contract
documents.

A decision in `kraft` mode is an `AppendedRecord` (outputs.py, with the contract's other
records): one of Kafka's metadata records (records.py) with the version Kafka writes it
at, under the key of the entity it concerns; this module builds them. Its document is the
envelope (`v`, `type`, `cause_offset`, `cause_id`, `seq`), then:

* `type`: Kafka's record name (`PartitionRecord`, `PartitionChangeRecord`, `TopicRecord`,
  `RemoveTopicRecord`, `ConfigRecord`, `RegisterBrokerRecord`, `FenceBrokerRecord`,
  `UnfenceBrokerRecord`, `BrokerRegistrationChangeRecord`, `UnregisterBrokerRecord`,
  `ClearElrRecord`);
* `version`: the record version Kafka writes at the metadata.version;
* `topic` (and `partition`) naming the topic and partition, which Kafka's records carry
  as a topic id only;
* the record's fields under their snake_case names. A `PartitionChangeRecord` carries only
  the fields it changes, as Kafka's does: a field at its default (no change) is left out.
  Leader recovery states are Kafka's bytes (0 RECOVERED, 1 RECOVERING).

Keys: `<topic>-<partition>` for partition records, `topic/<name>` for a topic's own records
(a topic name cannot hold "/"), `broker-<id>` for a broker's, `cluster` for cluster-wide
configs.

The answers to requests are the contract's result records (outputs.py), which both modes
share: AlterPartitionResult, ElectionResult, ControlledShutdownResult, StateChangeFailed.
"""

from __future__ import annotations

from ..appended_record import AppendedRecord
from .records import (
    CONFIG_RESOURCE_TOPIC,
    ApiMessageAndVersion,
    ClearElrRecord,
    ConfigRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
)

RECORD_TYPES = frozenset(
    {
        "PartitionRecord",
        "PartitionChangeRecord",
        "TopicRecord",
        "RemoveTopicRecord",
        "ConfigRecord",
        "RegisterBrokerRecord",
        "FenceBrokerRecord",
        "UnfenceBrokerRecord",
        "BrokerRegistrationChangeRecord",
        "UnregisterBrokerRecord",
        "ClearElrRecord",
    }
)


def partition_record(topic: str, partition: int, r: ApiMessageAndVersion) -> AppendedRecord:
    return AppendedRecord(f"{topic}-{partition}", topic, partition, r.version, r.message)


def topic_record(topic: str, r: ApiMessageAndVersion) -> AppendedRecord:
    return AppendedRecord(topic_key_of(topic), topic, None, r.version, r.message)


def broker_record(r: ApiMessageAndVersion) -> AppendedRecord:
    m = r.message
    broker_id = m.id if isinstance(m, (FenceBrokerRecord, UnfenceBrokerRecord)) else m.broker_id  # type: ignore[union-attr]
    return AppendedRecord(f"broker-{broker_id}", None, None, r.version, m)


def config_record(r: ApiMessageAndVersion) -> AppendedRecord:
    m = r.message
    assert isinstance(m, ConfigRecord)
    if m.resource_type == CONFIG_RESOURCE_TOPIC:
        return AppendedRecord(topic_key_of(m.resource_name), m.resource_name, None, r.version, m)
    return AppendedRecord(
        "cluster" if m.resource_name == "" else f"broker-{m.resource_name}",
        None,
        None,
        r.version,
        m,
    )


def clear_elr_record(topic: str) -> AppendedRecord:
    """A ClearElrRecord for `topic`, or "" for every topic (the cluster's)."""
    return AppendedRecord(
        topic_key_of(topic) if topic else "cluster", topic or None, None, 0, ClearElrRecord(topic)
    )


def topic_key_of(topic: str) -> str:
    return f"topic/{topic}"


__all__ = [
    "AppendedRecord",
    "RECORD_TYPES",
    "broker_record",
    "clear_elr_record",
    "config_record",
    "partition_record",
    "topic_key_of",
    "topic_record",
]
