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
handle_broker_*     handleBrokerFenced, ...Unregistered,           (records only)
                    ...Unfenced, ...InControlledShutdown,
                    ...UncleanShutdown (generateLeaderAndIsrUpdates)
handle_directories_ handleDirectoriesOffline                       (records only)
  offline
elect_leader        electLeader                                    ApiError
alter_partition     alterPartition / validateAlterPartitionData    AlterPartitionPartitionResponse
                    (alter_partition.py)
alter_partition_    alterPartitionReassignment (change / cancel)   ApiError
  reassignment
balance_partition_  maybeTriggerLeaderChangeForPartitions...       (records only)
  leader            WithoutPreferredLeader, one partition

The answers (`ApiError`, AlterPartition's partition data and response) are in
messages.py; a new partition's record is `PartitionRegistration.to_record`.

Refusals are values: where Kafka throws to answer (an invalid reassignment, no reassignment
in progress, a stale broker epoch), the answer is an `ApiError` and no record is written.
Not reproduced: topic ids (the caller names them), configs and policies, quotas, topic
names and collisions, the replica placer, directory assignment requests, listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..election import BrokerPredicate
from ..errors import InvariantViolation
from ..kafka_errors import Errors
from ..model import NO_LEADER
from .cluster_control import BrokerRegistry
from .messages import (
    API_NONE,
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    ApiError,
)
from .metadata_version import MetadataVersion
from .partition_change_builder import (
    DefaultDirProvider,
    Election,
    PartitionChange,
    PartitionChangeBuilder,
)
from .partition_reassignment_replicas import (
    PartitionReassignmentReplicas,
    PartitionReassignmentRevert,
)
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


# -- broker lifecycle: generateLeaderAndIsrUpdates ---------------------------------------


def generate_leader_and_isr_update(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    *,
    broker_to_remove: int = NO_LEADER,
    broker_to_add: int = NO_LEADER,
    broker_with_unclean_shutdown: int = NO_LEADER,
) -> PartitionChange | None:
    """`generateLeaderAndIsrUpdates` for one partition.

    `broker_to_remove` leaves the ISR and may not lead; `broker_to_add` may lead although
    the registry still shows it fenced (it is being unfenced); `broker_with_unclean_shutdown`
    leaves ISR and ELR and may not lead. The topic's unclean setting makes the election
    UNCLEAN."""

    def acceptable(r: int) -> bool:
        return r not in (broker_to_remove, broker_with_unclean_shutdown) and (
            r == broker_to_add or registry.is_active(r)
        )

    b = _builder(
        partition, topic, partition_id, registry, leader_acceptor(registry, partition, acceptable)
    )
    if topic.unclean_leader_election:
        b = replace(b, election=Election.UNCLEAN)
    if broker_with_unclean_shutdown != NO_LEADER:
        b = replace(b, unclean_shutdown_replicas=(broker_with_unclean_shutdown,))
    # `Replicas.copyWithout(isr, {remove, unclean})`: a no-op when both are NO_LEADER.
    removed = (broker_to_remove, broker_with_unclean_shutdown)
    b = replace(b, target_isr=tuple(r for r in partition.isr if r not in removed))
    return b.build()


def handle_broker_fenced(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleBrokerFenced` for a partition with the broker in its ISR; the handler then
    writes `cluster_control.fence_broker_record` (after the partitions). Kafka fences on a
    session timeout (`maybeFenceOneStaleBroker`) and on a heartbeat asking for it."""
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_to_remove=broker_id
    )


def handle_broker_unregistered(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleBrokerUnregistered` for a partition with the broker in its ISR (then, in a
    second pass, its ELR); `cluster_control.unregister_broker_record` follows."""
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_to_remove=broker_id
    )


def handle_broker_unfenced(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleBrokerUnfenced` for a leaderless partition (`partitionsWithNoLeader`), after
    `cluster_control.unfence_broker_record`: the broker counts as active, so a partition it
    can lead gets a leader."""
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_to_add=broker_id
    )


def handle_broker_in_controlled_shutdown(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleBrokerInControlledShutdown` for a partition with the broker in its ISR, after
    `cluster_control.controlled_shutdown_record`: the broker leaves the ISR and leadership."""
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_to_remove=broker_id
    )


def handle_directories_offline(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleDirectoriesOffline` for a partition with a replica in one of the broker's
    newly offline directories (`directoriesToPartitions`;
    `cluster_control.directories_offline_record` names them and closes the handler): the
    broker leaves the ISR and leadership, as if fenced."""
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_to_remove=broker_id
    )


def handle_broker_unclean_shutdown(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    broker_id: int,
) -> PartitionChange | None:
    """`handleBrokerUncleanShutdown` for a partition with the broker in its ISR or ELR: only
    when metadata.version supports ELR (then the broker leaves both)."""
    if not topic.metadata_version.is_elr_supported:
        return None
    return generate_leader_and_isr_update(
        partition, topic, partition_id, registry, broker_with_unclean_shutdown=broker_id
    )


# -- ElectLeaders ------------------------------------------------------------------------

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


# -- AlterPartitionReassignments ---------------------------------------------------------


def alter_partition_reassignment(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    target_replicas: Sequence[int] | None,
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration, ApiError]:
    """`alterPartitionReassignment` for a known partition: `target_replicas` None cancels
    (`cancelPartitionReassignment`), else `changePartitionReassignment`. Kafka throws its
    refusals and answers them with `ApiError.fromThrowable`, which drops a message equal to
    the error's default."""
    if target_replicas is None:
        return _cancel_partition_reassignment(partition, topic, partition_id, registry)
    return _change_partition_reassignment(
        partition, topic, partition_id, registry, tuple(target_replicas)
    )


def _cancel_partition_reassignment(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration, ApiError]:
    if not (partition.removing_replicas or partition.adding_replicas):
        return (), partition, ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS)
    revert = PartitionReassignmentRevert.of(partition)
    if revert.unclean and not topic.unclean_leader_election:
        return (
            (),
            partition,
            ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic.name}:{partition_id} "
                f"because it would require an unclean leader election.",
            ),
        )
    b = _builder(partition, topic, partition_id, registry)
    if topic.unclean_leader_election:
        b = replace(b, election=Election.UNCLEAN)
    change = replace(
        b,
        target_isr=revert.isr,
        target_replicas=revert.replicas,
        target_removing=(),
        target_adding=(),
    ).build()
    return _records(change), _after(partition, change), API_NONE


def _change_partition_reassignment(
    partition: PartitionRegistration,
    topic: TopicContext,
    partition_id: int,
    registry: BrokerRegistry,
    target: tuple[int, ...],
) -> tuple[tuple[ApiMessageAndVersion, ...], PartitionRegistration, ApiError]:
    invalid = validate_manual_partition_assignment(target, registry)
    if invalid is not None:
        return (), partition, invalid
    reassignment = PartitionReassignmentReplicas.from_assignments(partition.replicas, target)
    b = _builder(partition, topic, partition_id, registry)
    if reassignment.replicas != partition.replicas:
        b = replace(b, target_replicas=reassignment.replicas)
    if reassignment.removing:
        b = replace(b, target_removing=reassignment.removing)
    if reassignment.adding:
        b = replace(b, target_adding=reassignment.adding)
    change = b.build()
    return _records(change), _after(partition, change), API_NONE
