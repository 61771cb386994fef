"""KRaft's leader elections, one partition at a time: `electLeaders` and the periodic
tasks' elections.

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(apache/kafka 3.9.0): `electLeader` (the ElectLeaders request's answer per partition:
ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE),
`maybeElectUncleanLeaders`' per-partition election, and
`maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader` with `imbalancedPartitions`'
test. The shared set-up (`_builder`, `TopicContext`) is replication_control.py's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ..model import NO_LEADER
from .cluster_control import BrokerRegistry
from .messages import (
    API_NONE,
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    ApiError,
)
from .partition_change import Election, PartitionChange
from .partition_registration import PartitionRegistration
from .records import ApiMessageAndVersion
from .replication_control import TopicContext, _builder, _records

ElectionType = Literal["PREFERRED", "UNCLEAN"]


def elect_leader(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    election_type: ElectionType,
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration, ApiError]:
    """`electLeader`: ELECTION_NOT_NEEDED when the preferred replica already leads (PREFERRED)
    or the partition has a leader (UNCLEAN); else the builder's PREFERRED or UNCLEAN election
    (the topic's unclean setting plays no part), and when it changes nothing,
    PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE. Asked for every
    partition (no partitions in the request), Kafka leaves ELECTION_NOT_NEEDED out of the
    response."""
    preferred = partition.replicas[0] if partition.replicas else NO_LEADER
    if (election_type == "PREFERRED" and partition.leader == preferred) or (
        election_type == "UNCLEAN" and partition.leader != NO_LEADER
    ):
        return (), partition, ELECTION_NOT_NEEDED
    election = Election.PREFERRED if election_type == "PREFERRED" else Election.UNCLEAN
    change = replace(_builder(partition, topic, partition_id, registry), election=election).build()
    if change is None:
        answer = (
            PREFERRED_LEADER_NOT_AVAILABLE
            if election_type == "PREFERRED"
            else ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        return (), partition, answer
    return _records(change), change.registration, API_NONE


def maybe_elect_unclean_leader(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration, ApiError | None]:
    """One leaderless partition of `maybeTriggerUncleanLeaderElectionForLeaderlessPartitions`:
    an UNCLEAN `electLeader` when the topic allows it, else nothing (None)."""
    if not topic.unclean_leader_election:
        return (), partition, None
    return elect_leader(partition, topic, partition_id, registry, "UNCLEAN")


def balance_partition_leader(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
) -> PartitionChange | None:
    """One imbalanced partition (its leader is not its first replica) of
    `maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader`: a PREFERRED election;
    Kafka stops once `maxElectionsPerImbalance` records are written."""
    return replace(
        _builder(partition, topic, partition_id, registry), election=Election.PREFERRED
    ).build()


def is_imbalanced(partition: PartitionRegistration) -> bool:
    """Membership of `imbalancedPartitions`, kept on replay: `!hasPreferredLeader()`."""
    return partition.leader != (partition.replicas[0] if partition.replicas else NO_LEADER)
