"""KRaft's `ReplicationControlManager`, one partition at a time.

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(apache/kafka 3.9.0). Each handler here is Kafka's work on one partition: it builds with
the PartitionChangeBuilder and returns what Kafka appends and answers, never a changed
store. The caller chooses the partitions (Kafka's `brokersToIsrs` indexes:
`partitionsWithBrokerInIsr`, `partitionsWithNoLeader`, `imbalancedPartitions`) and their
order, replays the records (`PartitionRegistration.merge`, `BrokerRegistry.replay`) and
adds the broker's own record where Kafka does (cluster_control).

What Kafka looks up per topic arrives as a `TopicContext`: the effective min ISR
(`getTopicEffectiveMinIsr`: min.insync.replicas capped at the replication factor), the
topic's unclean.leader.election.enable, whether ELR is on (the controller's setting and a
metadata.version that supports it: `isElrEnabled`), ZK migration and metadata.version.
Liveness is the broker registry (`BrokerRegistry`): a replica may lead when its broker is
active and its directory online (`LeaderAcceptor`).

Handler             Kafka                                          answer
------------------  ---------------------------------------------  --------------------------
create_partition    createTopic / buildPartitionRegistration       ApiError
  (here)
handle_broker_*     handleBrokerFenced, ...Unregistered,           (records only)
  (broker_isr_       ...Unfenced, ...InControlledShutdown,
  updates.py)       ...UncleanShutdown (generateLeaderAndIsrUpdates)
handle_directories_ handleDirectoriesOffline                       (records only)
  offline (idem)
elect_leader        electLeader                                    ApiError
  (elect_leaders.py)
balance_partition_  maybeTriggerLeaderChangeForPartitions...       (records only)
  leader (idem)     WithoutPreferredLeader, one partition
alter_partition     alterPartition / validateAlterPartitionData    AlterPartitionPartitionResponse
                    (alter_partition.py)
alter_partition_    alterPartitionReassignment (change / cancel)   ApiError
  reassignment      (alter_partition_reassignments.py)

This module holds what they share: the topic's context, `LeaderAcceptor`, the builder as
every handler sets it up (`_builder`), and createTopic's partition handler.

The answers (`ApiError`, AlterPartition's partition data and response) are in
messages.py; a new partition's record is `PartitionRegistration.to_record`.

Refusals are values: where Kafka throws to answer (an invalid reassignment, no reassignment
in progress, a stale broker epoch), the answer is an `ApiError` and no record is written.
Not reproduced: topic ids (the caller names them), configs and policies, quotas, topic
names and collisions, the replica placer, directory assignment requests, listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..election import BrokerPredicate
from ..errors import InvariantViolation
from ..kafka_errors import Errors
from .cluster_control import BrokerRegistry
from .messages import API_NONE, ApiError
from .metadata_version import MetadataVersion
from .partition_change import DefaultDirProvider, PartitionChange
from .partition_change_builder import PartitionChangeBuilder
from .partition_registration import PartitionRegistration
from .records import MIGRATING_DIRECTORY, ApiMessageAndVersion


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicContext:
    """What ReplicationControlManager looks up for a partition's topic."""

    topic_id: str
    metadata_version: MetadataVersion
    min_isr: int  # already effective: `effective_min_isr`
    unclean_leader_election: bool = False
    eligible_leader_replicas_enabled: bool = False  # the controller's setting
    zk_migration_enabled: bool = False  # `clusterControl.zkRegistrationAllowed()`
    name: str = ""  # the topic's name, for messages

    @property
    def is_elr_enabled(self) -> bool:
        """`isElrEnabled`: the setting, and a metadata.version that supports ELR."""
        return self.eligible_leader_replicas_enabled and self.metadata_version.is_elr_supported


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """`getTopicEffectiveMinIsr`: min.insync.replicas, at most partition 0's replication factor."""
    return min(min_insync_replicas, replication_factor)


def leader_acceptor(
    registry: BrokerRegistry,
    partition: PartitionRegistration,
    is_acceptable: BrokerPredicate | None = None,
) -> BrokerPredicate:
    """`LeaderAcceptor`: acceptable (default `isActive`) and the replica's directory online."""
    base = registry.is_active if is_acceptable is None else is_acceptable

    def accept(broker_id: int) -> bool:
        if not base(broker_id):
            return False
        return registry.has_online_dir(broker_id, _directory(partition, broker_id))

    return accept


def _directory(partition: PartitionRegistration, replica: int) -> str:
    # `PartitionRegistration.directory`, which throws for a replica outside the partition.
    # PartitionChangeBuilder asks only about ISR or ELR members, and in an unclean scan
    # about the target replicas, which are the registration's own in every handler here.
    for r, d in zip(partition.replicas, partition.directories, strict=True):
        if r == replica:
            return d
    raise InvariantViolation(f"Replica {replica} is not assigned to this partition.")


def cluster_describer_default_dir(
    registry: BrokerRegistry, mv: MetadataVersion
) -> DefaultDirProvider:
    """`KRaftClusterDescriber.defaultDir`: the registry's `defaultDir` from 3.7-IV2, before
    it MIGRATING (records then carry no directories)."""
    if mv.is_directory_assignment_supported:
        return registry.default_dir
    return lambda _broker_id: MIGRATING_DIRECTORY


def _builder(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    acceptor: BrokerPredicate | None = None,
) -> PartitionChangeBuilder:
    """`new PartitionChangeBuilder(...)` as every handler sets it up: migration, ELR, and the
    cluster's default directories."""
    return PartitionChangeBuilder(
        partition=partition,
        topic_id=topic.topic_id,
        partition_id=partition_id,
        is_acceptable_leader=leader_acceptor(registry, partition) if acceptor is None else acceptor,
        metadata_version=topic.metadata_version,
        min_isr=topic.min_isr,
        zk_migration_enabled=topic.zk_migration_enabled,
        eligible_leader_replicas_enabled=topic.is_elr_enabled,
        default_dir_provider=cluster_describer_default_dir(registry, topic.metadata_version),
    )


def _records(change: PartitionChange | None) -> tuple[ApiMessageAndVersion, ...]:
    return () if change is None else (ApiMessageAndVersion(change.record, change.version),)


def _after(
    partition: PartitionRegistration, change: PartitionChange | None
) -> PartitionRegistration:
    return partition if change is None else change.registration


# -- topic creation ----------------------------------------------------------------------


def validate_manual_partition_assignment(
    replicas: Sequence[int], registry: BrokerRegistry, replication_factor: int | None = None
) -> ApiError | None:
    """`validateManualPartitionAssignment` (INVALID_REPLICA_ASSIGNMENT, which Kafka throws)."""
    if not replicas:
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous: int | None = None
    for broker_id in sorted(replicas):
        if registry.registration(broker_id) is None:
            return ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker "
                f"{broker_id}, but no such broker is registered.",
            )
        if broker_id == previous:
            return ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {previous} more than once.",
            )
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with "
            f"{len(replicas)} replica(s), but this is not consistent with "
            f"previous partitions, which have {replication_factor} replica(s).",
        )
    return None


def build_partition_registration(
    replicas: Sequence[int], isr: Sequence[int], directories: Sequence[str]
) -> PartitionRegistration:
    """`buildPartitionRegistration`: the first ISR member leads, epochs 0, RECOVERED."""
    return PartitionRegistration(
        replicas=tuple(replicas),
        directories=tuple(directories),
        isr=tuple(isr),
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
    )


def create_partition(
    replicas: Sequence[int],
    topic_id: str,
    partition_id: int,
    registry: BrokerRegistry,
    mv: MetadataVersion,
    *,
    manual: bool,
    replication_factor: int | None = None,
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration | None, ApiError]:
    """One partition of `createTopic`: the ISR is the active replicas, the first of them leads.

    A manual assignment (`manual`) is validated first (`replication_factor`: the previous
    partitions', None for the first) and is refused with INVALID_REPLICA_ASSIGNMENT when no
    replica is active; a placed one with INVALID_REPLICATION_FACTOR, as the placer would.
    Directories are the cluster's defaults (`PartitionAssignment(replicas, clusterDescriber)`).
    """
    if manual:
        invalid = validate_manual_partition_assignment(replicas, registry, replication_factor)
        if invalid is not None:
            return (), None, invalid
    isr = [r for r in replicas if registry.is_active(r)]
    if not isr:
        if manual:
            return (
                (),
                None,
                ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"All brokers specified in the manual partition assignment for "
                    f"partition {partition_id} are fenced or in controlled shutdown.",
                ),
            )
        return (
            (),
            None,
            ApiError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {len(replicas)} time(s): All brokers "
                f"are currently fenced or in controlled shutdown.",
            ),
        )
    default_dir = cluster_describer_default_dir(registry, mv)
    registration = build_partition_registration(replicas, isr, [default_dir(r) for r in replicas])
    return (registration.to_record(topic_id, partition_id, mv),), registration, API_NONE
