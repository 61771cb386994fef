"""KRaft's `alterPartitionReassignments`, one partition at a time.

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(apache/kafka 3.9.0): `alterPartitionReassignment`, `cancelPartitionReassignment` (a
cancel is a revert: `PartitionReassignmentRevert`) and `changePartitionReassignment`
(`PartitionReassignmentReplicas`, partition_reassignment_replicas.py). Refusals are
`ApiError` values with no record. The shared set-up (`_builder`, `TopicContext`) and
`validate_manual_partition_assignment` are replication_control.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..kafka_errors import Errors
from .cluster_control import BrokerRegistry
from .messages import API_NONE, ApiError
from .partition_change import Election
from .partition_reassignment_replicas import (
    PartitionReassignmentReplicas,
    PartitionReassignmentRevert,
)
from .partition_registration import PartitionRegistration
from .records import ApiMessageAndVersion
from .replication_control import (
    TopicContext,
    _after,
    _builder,
    _records,
    validate_manual_partition_assignment,
)


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
