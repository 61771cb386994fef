"""KRaft's metadata records, as the quorum controller writes them to the metadata log.

Source: metadata/src/main/resources/common/metadata/PartitionChangeRecord.json and
`LeaderConstants` / `LeaderRecoveryState.NO_CHANGE` (apache/kafka 3.9.0).

A `PartitionChangeRecord` names only what changes: a field left at its default (None, or
`NO_LEADER_CHANGE` for the leader) keeps the registration's value when the record is
replayed (`PartitionRegistration.merge`). A leader field that is set, even to the current
leader, bumps the leader epoch; every record bumps the partition epoch. Kafka's
`LeaderRecoveryState.NO_CHANGE` (-1) is None here.

The record version Kafka writes (`MetadataVersion.partitionChangeRecordVersion`) travels
beside the record, as `ApiMessageAndVersion` does (`PartitionChange.version`).

The handlers' other records (PartitionRecord.json, RegisterBrokerRecord.json,
UnregisterBrokerRecord.json, FenceBrokerRecord.json, UnfenceBrokerRecord.json,
BrokerRegistrationChangeRecord.json) are here too, with the fields the controller's rules
read; `ApiMessageAndVersion` pairs any of them with its version. Kafka's `PartitionRecord`
is `MetadataPartitionRecord` (see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..states import LeaderRecoveryState

# LeaderConstants: NO_LEADER (-1) is model.NO_LEADER; NO_LEADER_CHANGE is the record's default.
NO_LEADER_CHANGE = -2

# DirectoryId (server-common): the reserved directory ids, as Kafka's Uuid strings.
MIGRATING_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0): a replica still on a ZK-era broker
UNASSIGNED_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1): not yet placed in a directory
LOST_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAg"  # Uuid(0, 2): on an offline directory


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    topic_id: str
    partition_id: int
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: LeaderRecoveryState | None = None
    directories: tuple[str, ...] | None = None
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


def change_record_is_no_op(record: PartitionChangeRecord) -> bool:
    """`PartitionChangeBuilder.changeRecordIsNoOp`: nothing but the partition's name is set."""
    return (
        record.isr is None
        and record.eligible_leader_replicas is None
        and record.last_known_elr is None
        and record.leader == NO_LEADER_CHANGE
        and record.replicas is None
        and record.removing_replicas is None
        and record.adding_replicas is None
        and record.leader_recovery_state is None
        and record.directories is None
    )


@dataclass(frozen=True, slots=True)
class MetadataPartitionRecord:
    """Kafka's `PartitionRecord` (PartitionRecord.json): a new partition, written whole
    (`PartitionRegistration.toRecord`). Renamed because the core's
    `partition_record.PartitionRecord` (the ZK controller's partition state) holds the name,
    and the shell tags encoded values by class name (streaming.tagged)."""

    topic_id: str
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[str, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


# The broker registry's records (RegisterBrokerRecord.json, ... at 3.9.0). Broker epochs are
# the offsets of the registering records; ids of incarnations and directories are Uuid strings.


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    id: int
    epoch: int


# BrokerRegistrationFencingChange and BrokerRegistrationInControlledShutdownChange values.
FENCING_CHANGE_FENCE = 1
FENCING_CHANGE_NONE = 0
FENCING_CHANGE_UNFENCE = -1
IN_CONTROLLED_SHUTDOWN_CHANGE_NONE = 0
IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN = 1


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    """From 3.3-IV2 the fencing change; from 3.3-IV3 (version 1) the controlled shutdown
    change; from 3.7-IV2 (version 2) the online log directories (empty: no change)."""

    broker_id: int
    broker_epoch: int
    fenced: int = FENCING_CHANGE_NONE
    in_controlled_shutdown: int = IN_CONTROLLED_SHUTDOWN_CHANGE_NONE
    log_dirs: tuple[str, ...] = ()


# The topic's records (TopicRecord.json, RemoveTopicRecord.json, ConfigRecord.json at 3.9.0).


@dataclass(frozen=True, slots=True)
class MetadataTopicRecord:
    """Kafka's `TopicRecord`, renamed as `MetadataPartitionRecord` is (the directory's
    `TopicRecord` holds the name)."""

    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    topic_id: str


# ConfigResource.Type: the resource types of a ConfigRecord
CONFIG_RESOURCE_BROKER = 4
CONFIG_RESOURCE_TOPIC = 2


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A config set (`value`) or deleted (None); a cluster-wide broker default has the
    resource name ""."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class ClearElrRecord:
    """Kafka 4.0 (KAFKA-16540, KAFKA-18649; ClearElrRecord.json): the ELR and last known ELR
    of a topic's partitions (`topic_name`), or of every partition ("" ), are emptied."""

    topic_name: str


MetadataRecord = (
    MetadataPartitionRecord
    | PartitionChangeRecord
    | RegisterBrokerRecord
    | UnregisterBrokerRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | BrokerRegistrationChangeRecord
    | MetadataTopicRecord
    | RemoveTopicRecord
    | ConfigRecord
    | ClearElrRecord
)


@dataclass(frozen=True, slots=True)
class ApiMessageAndVersion:
    """A record and the version Kafka writes it at."""

    message: MetadataRecord
    version: int
