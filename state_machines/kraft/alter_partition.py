"""KRaft's `ReplicationControlManager.alterPartition`, one partition at a time.

Source: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(apache/kafka 3.9.0): `alterPartition`, `validateAlterPartitionData` and
`ineligibleReplicasForIsr`. The request's broker epoch is checked once for the whole request
(`alter_partition_request_error`), an unknown topic is answered for each of its partitions
(`unknown_topic_error`), and each known partition goes through `alter_partition`, which
builds with the PartitionChangeBuilder as the other handlers (replication_control.py) do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..kafka_errors import Errors
from ..states import LeaderRecoveryState
from .cluster_control import BrokerRegistry
from .messages import AlterPartitionPartitionData, AlterPartitionPartitionResponse, BrokerState
from .partition_change import Election
from .partition_registration import PartitionRegistration
from .records import NO_LEADER_CHANGE, ApiMessageAndVersion
from .replication_control import TopicContext, _after, _builder, _records


def alter_partition_request_error(
    registry: BrokerRegistry, broker_id: int, broker_epoch: int
) -> str | None:
    """`alterPartition`'s first check, for the whole request: `checkBrokerEpoch`
    (STALE_BROKER_EPOCH, which Kafka throws)."""
    return registry.check_broker_epoch(broker_id, broker_epoch)


def unknown_topic_error(request_version: int) -> Errors:
    """An AlterPartition topic the controller does not know, for each of its partitions."""
    return Errors.UNKNOWN_TOPIC_ID if request_version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION


def validate_alter_partition_data(
    broker_id: int,
    partition: PartitionRegistration | None,
    request_version: int,
    data: AlterPartitionPartitionData,
    registry: BrokerRegistry,
) -> Errors:
    """`validateAlterPartitionData`, in Kafka's order; "NONE" when valid."""
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    # Epochs above ours: this controller is likely no longer the active one.
    if (
        data.leader_epoch > partition.leader_epoch
        or data.partition_epoch > partition.partition_epoch
    ):
        return Errors.NOT_CONTROLLER
    if data.leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return Errors.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    new_isr = [s.broker_id for s in data.new_isr_with_epochs]
    # `Replicas.validateIsr`: no duplicates, every member a replica.
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(partition.replicas):
        return Errors.INVALID_REQUEST
    if partition.leader not in new_isr:
        return Errors.INVALID_REQUEST  # the ISR must include the leader
    if data.leader_recovery_state is LeaderRecoveryState.RECOVERING and len(new_isr) > 1:
        return Errors.INVALID_REQUEST
    if (
        partition.leader_recovery_state is LeaderRecoveryState.RECOVERED
        and data.leader_recovery_state is LeaderRecoveryState.RECOVERING
    ):
        return Errors.INVALID_REQUEST
    if ineligible_replicas_for_isr(data.new_isr_with_epochs, registry):
        return Errors.INELIGIBLE_REPLICA if request_version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return Errors.NONE


def ineligible_replicas_for_isr(
    states: Sequence[BrokerState], registry: BrokerRegistry
) -> tuple[tuple[int, str], ...]:
    """`ineligibleReplicasForIsr`: unregistered, shutting down, fenced, or (KIP-903) a broker
    epoch other than the registered one (-1 skips the check)."""
    out: list[tuple[int, str]] = []
    for s in states:
        r = registry.registration(s.broker_id)
        if r is None:
            out.append((s.broker_id, "not registered"))
        elif r.in_controlled_shutdown:
            out.append((s.broker_id, "shutting down"))
        elif r.fenced:
            out.append((s.broker_id, "fenced"))
        elif s.broker_epoch != -1 and r.epoch != s.broker_epoch:
            out.append(
                (
                    s.broker_id,
                    f"broker epoch mismatch: requested={s.broker_epoch} VS expected={r.epoch}",
                )
            )
    return tuple(out)


def alter_partition(
    partition: PartitionRegistration | None,
    topic: TopicContext,
    registry: BrokerRegistry,
    broker_id: int,
    request_version: int,
    data: AlterPartitionPartitionData,
) -> tuple[
    tuple[ApiMessageAndVersion, ...], PartitionRegistration | None, AlterPartitionPartitionResponse
]:
    """One partition of `alterPartition`, after the request's broker epoch and topic passed.

    Invalid data is answered with its error and changes nothing. Otherwise the builder takes
    the new ISR (UNCLEAN election if the topic allows) and the requested recovery state. An
    ISR that completes a reassignment may move leadership away from the sender: the record
    is written and the answer is NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH up to version 1).
    Else the answer is the partition as replayed. There is no idempotency for a request at a
    stale partition epoch: it is INVALID_UPDATE_VERSION even when its ISR is the current one.
    """
    pid = data.partition_index
    error = validate_alter_partition_data(broker_id, partition, request_version, data, registry)
    if error != Errors.NONE or partition is None:
        return (), partition, AlterPartitionPartitionResponse(pid, error)
    b = _builder(partition, topic, pid, registry)
    if topic.unclean_leader_election:
        b = replace(b, election=Election.UNCLEAN)
    b = replace(
        b,
        target_isr=tuple(s.broker_id for s in data.new_isr_with_epochs),
        target_leader_recovery_state=data.leader_recovery_state,
    )
    change = b.build()
    records = _records(change)
    after = _after(partition, change)
    if change is not None and change.record.leader not in (broker_id, NO_LEADER_CHANGE):
        answer = Errors.NEW_LEADER_ELECTED if request_version > 1 else Errors.FENCED_LEADER_EPOCH
        return records, after, AlterPartitionPartitionResponse(pid, answer)
    return (
        records,
        after,
        AlterPartitionPartitionResponse(
            pid,
            Errors.NONE,
            after.leader,
            after.leader_epoch,
            after.isr,
            after.leader_recovery_state,
            after.partition_epoch,
        ),
    )
