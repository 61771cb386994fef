"""Kafka's replica and partition states, with their valid previous states as data.

Source: core/src/main/scala/kafka/controller/ReplicaStateMachine.scala and
PartitionStateMachine.scala at the bottom of each file (apache/kafka 3.9.0). The string
values are Kafka's object names; they are persisted in checkpoints, so they never change.

A replica or partition with no recorded state is first recorded as NonExistent and then
validated (`putReplicaStateIfNotExists` / `putPartitionStateIfNotExists`); an invalid
transition leaves the state unchanged and is only logged by Kafka, which this project turns
into a `StateChangeFailed` record.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType


class ReplicaState(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    NewReplica = "NewReplica"
    OnlineReplica = "OnlineReplica"
    OfflineReplica = "OfflineReplica"
    ReplicaDeletionStarted = "ReplicaDeletionStarted"
    ReplicaDeletionSuccessful = "ReplicaDeletionSuccessful"
    ReplicaDeletionIneligible = "ReplicaDeletionIneligible"
    NonExistentReplica = "NonExistentReplica"

    @property
    def id(self) -> int:
        return REPLICA_STATE_IDS[self]

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return VALID_PREVIOUS_REPLICA_STATES[self]


class PartitionState(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    NewPartition = "NewPartition"
    OnlinePartition = "OnlinePartition"
    OfflinePartition = "OfflinePartition"
    NonExistentPartition = "NonExistentPartition"

    @property
    def id(self) -> int:
        return PARTITION_STATE_IDS[self]

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return VALID_PREVIOUS_PARTITION_STATES[self]


_R = ReplicaState
_P = PartitionState

# `state: Byte` of each case object; replica ids start at 1, partition ids at 0.
REPLICA_STATE_IDS = MappingProxyType(
    {
        _R.NewReplica: 1,
        _R.OnlineReplica: 2,
        _R.OfflineReplica: 3,
        _R.ReplicaDeletionStarted: 4,
        _R.ReplicaDeletionSuccessful: 5,
        _R.ReplicaDeletionIneligible: 6,
        _R.NonExistentReplica: 7,
    }
)

PARTITION_STATE_IDS = MappingProxyType(
    {
        _P.NewPartition: 0,
        _P.OnlinePartition: 1,
        _P.OfflinePartition: 2,
        _P.NonExistentPartition: 3,
    }
)

VALID_PREVIOUS_REPLICA_STATES = MappingProxyType(
    {
        _R.NewReplica: frozenset({_R.NonExistentReplica}),
        _R.OnlineReplica: frozenset(
            {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
        ),
        _R.OfflineReplica: frozenset(
            {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
        ),
        _R.ReplicaDeletionStarted: frozenset({_R.OfflineReplica}),
        _R.ReplicaDeletionSuccessful: frozenset({_R.ReplicaDeletionStarted}),
        _R.ReplicaDeletionIneligible: frozenset({_R.OfflineReplica, _R.ReplicaDeletionStarted}),
        _R.NonExistentReplica: frozenset({_R.ReplicaDeletionSuccessful}),
    }
)

VALID_PREVIOUS_PARTITION_STATES = MappingProxyType(
    {
        _P.NewPartition: frozenset({_P.NonExistentPartition}),
        _P.OnlinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
        _P.OfflinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
        _P.NonExistentPartition: frozenset({_P.OfflinePartition}),
    }
)


def is_valid_replica_transition(current: ReplicaState, target: ReplicaState) -> bool:
    return current in VALID_PREVIOUS_REPLICA_STATES[target]


def is_valid_partition_transition(current: PartitionState, target: PartitionState) -> bool:
    return current in VALID_PREVIOUS_PARTITION_STATES[target]


class LeaderRecoveryState(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    """KIP-704: a leader elected uncleanly is RECOVERING until it reports its log is usable."""

    RECOVERED = "RECOVERED"
    RECOVERING = "RECOVERING"
