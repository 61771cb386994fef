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
