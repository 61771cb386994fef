"""KRaft's ISR and ELR updates for a broker's lifecycle, one partition at a time.

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(apache/kafka 3.9.0, and 4.0 for ELR): `generateLeaderAndIsrUpdates` and the handlers that
call it when a broker is fenced, unregistered, unfenced, in controlled shutdown or back
from an unclean shutdown (`handleBrokerFenced`, `handleBrokerUnregistered`,
`handleBrokerUnfenced`, `handleBrokerInControlledShutdown`,
`handleBrokerUncleanShutdown`), and `handleDirectoriesOffline`. Each returns the
PartitionChangeBuilder's change (records only: the caller replays them); the shared set-up
(`_builder`, `TopicContext`, `leader_acceptor`) is replication_control.py's.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import NO_LEADER
from .cluster_control import BrokerRegistry
from .partition_change import Election, PartitionChange
from .partition_registration import PartitionRegistration
from .replication_control import TopicContext, _builder, leader_acceptor


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
