"""KRaft's partition step: one command against one partition's registration.

Theory of operation
-------------------
`kraft_partition_step` is (KraftPartition or None, command) -> (new KraftPartition or None,
outputs), as `partition.partition_step` is for the ZK controller. The op names the
ReplicationControlManager handler; the handler (replication_control.py) builds with the
PartitionChangeBuilder and returns the records Kafka appends and its answer; this step
replays them (`PartitionRegistration.merge`, already done by the builder) and writes them
out as `AppendedRecord`s, with the answer as the contract's result record.

The directory reaches a superset of the partitions a handler works on (every partition the
broker hosts); the step applies Kafka's index here, as `BrokersToIsrs` would have chosen
(`partitionsWithBrokerInIsr`, `partitionsWithNoLeader`, the ELR for an unclean shutdown).

While the controller is not active (a standby replaying the log), the step keeps the state
the records would give and writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never, cast

from ..commands import (
    AlterIsr,
    AutoRebalance,
    BrokersFailed,
    BrokersStarted,
    Command,
    CompleteTopicDeletion,
    CreatePartition,
    Elect,
    Failover,
    LoadPartition,
    LogDirFailure,
    MarkQueued,
    Observe,
    PartitionSummary,
    Reassign,
    ReplicaDeletionResponse,
    ResumeDeletion,
    ShutdownBroker,
    TriggerOnline,
)
from ..errors import InvariantViolation
from ..kafka_errors import Errors
from ..model import NO_LEADER, ControllerConfig
from ..outputs import (
    AlterPartitionResultRecord,
    ElectionResultRecord,
    Output,
    StateChangeFailedRecord,
    StillLeads,
)
from ..partition import describe_error
from ..partition_summaries import interned_summary, replica_count
from ..states import LeaderRecoveryState, PartitionState
from . import alter_partition_reassignments, broker_isr_updates, elect_leaders, shadow_rules
from . import replication_control as rc
from .alter_partition import alter_partition
from .cluster_control import BrokerRegistry
from .commands import (
    AlterIsrData,
    AlterReassignment,
    BalanceLeader,
    BrokerLifecycle,
    ClearElr,
    ElectLeader,
    ElectUnclean,
    KraftContext,
    KraftPartition,
    KraftResult,
    LoadRegistration,
    RegisterPartition,
    RemovePartition,
)
from .messages import AlterPartitionPartitionData, ApiError, BrokerState
from .outputs import partition_record
from .partition_registration import PartitionRegistration
from .records import ApiMessageAndVersion, PartitionChangeRecord

_HANDLERS = {
    "handleBrokerFenced": broker_isr_updates.handle_broker_fenced,
    "handleBrokerInControlledShutdown": broker_isr_updates.handle_broker_in_controlled_shutdown,
    "handleBrokerUnregistered": broker_isr_updates.handle_broker_unregistered,
    "handleBrokerUnfenced": broker_isr_updates.handle_broker_unfenced,
    "handleBrokerUncleanShutdown": broker_isr_updates.handle_broker_unclean_shutdown,
}


def _registry(ctx: KraftContext) -> BrokerRegistry:
    return BrokerRegistry.of(ctx.brokers)


def _reached(handler: str, registration: PartitionRegistration, broker_id: int) -> bool:
    """Whether Kafka's index hands this partition to the handler (`BrokersToIsrs`)."""
    if handler == "handleBrokerUnfenced":
        return registration.leader == NO_LEADER  # partitionsWithNoLeader
    if handler == "handleBrokerUncleanShutdown":
        return broker_id in registration.isr or broker_id in registration.elr
    if handler == "handleBrokerUnregistered":
        # partitionsWithBrokerInIsr, then (with ELR) partitionsWithBrokerInElr
        return broker_id in registration.isr or broker_id in registration.elr
    return broker_id in registration.isr  # partitionsWithBrokerInIsr


def kraft_partition_step(
    state: KraftPartition | None, cmd: Command, config: ControllerConfig
) -> KraftResult:
    ctx = cmd.ctx
    assert isinstance(ctx, KraftContext)
    op = cmd.op
    out: list[Output] = []
    topic, pid = cmd.topic, cmd.partition

    def appended(records: tuple[ApiMessageAndVersion, ...]) -> None:
        for r in records:
            rec = partition_record(topic, pid, r)
            m = r.message
            # ControllerMetricsChanges.handlePartitionChange: `electionWasClean(next.leader,
            # prev.isr)`, what UncleanLeaderElectionsPerSec counts (an ELR election too)
            if (
                state is not None
                and isinstance(m, PartitionChangeRecord)
                and m.leader >= 0
                and m.leader not in state.registration.isr
            ):
                rec = replace(rec, unclean=True)
            out.append(rec)

    if isinstance(op, LoadRegistration):
        return KraftResult(KraftPartition(topic, pid, op.registration), (), None)
    if isinstance(op, RegisterPartition):
        if state is not None:
            return KraftResult(state, (), None)
        records, registration, error = rc.create_partition(
            op.replicas,
            ctx.topic.topic_id,
            pid,
            _registry(ctx),
            ctx.topic.metadata_version,
            manual=True,
        )
        if registration is None:
            out.append(StateChangeFailedRecord(topic, pid, None, "NewPartition", _describe(error)))
            return _result(None, out, ctx)
        appended(records)
        return _result(KraftPartition(topic, pid, registration), out, ctx)
    if state is None:
        return KraftResult(None, (), None)  # the fan-out reached a partition that is gone
    reg = state.registration
    registry = _registry(ctx)
    new = reg
    if isinstance(op, RemovePartition):
        return KraftResult(None, (), None)
    if isinstance(op, ClearElr):
        # ReplicationControlManager.removeTopicElrs (4.0, KAFKA-18649): the replay merges only
        # a partition with an ELR or last known ELR, since a merge bumps the partition epoch.
        # The directory wrote the ClearElrRecord; the partition writes nothing.
        if not reg.elr and not reg.last_known_elr:
            return KraftResult(state, (), None)
        cleared = reg.merge(
            PartitionChangeRecord(
                ctx.topic.topic_id, pid, eligible_leader_replicas=(), last_known_elr=()
            )
        )
        return KraftResult(KraftPartition(topic, pid, cleared), (), None)
    match op:
        case BrokerLifecycle():
            if _reached(op.handler, reg, op.broker_id):
                change = _HANDLERS[op.handler](reg, ctx.topic, pid, registry, op.broker_id)
                if change is not None:
                    appended((ApiMessageAndVersion(change.record, change.version),))
                    new = change.registration
            if op.handler == "handleBrokerInControlledShutdown" and new.leader == op.broker_id:
                # `hasLeaderships` after the handler
                out.append(StillLeads(op.broker_id, topic, pid))
        case BalanceLeader():
            change = elect_leaders.balance_partition_leader(reg, ctx.topic, pid, registry)
            if change is not None:
                appended((ApiMessageAndVersion(change.record, change.version),))
                new = change.registration
        case ElectUnclean():
            records, new, _ = elect_leaders.maybe_elect_unclean_leader(
                reg, ctx.topic, pid, registry
            )
            appended(records)
        case ElectLeader():
            records, new, error = elect_leaders.elect_leader(
                reg, ctx.topic, pid, registry, cast(elect_leaders.ElectionType, op.election_type)
            )
            appended(records)
            if op.listed or error.error != Errors.ELECTION_NOT_NEEDED:
                out.append(
                    ElectionResultRecord(
                        topic,
                        pid,
                        op.election_type,
                        None if error.is_success else error.error,
                        new.leader if error.is_success else None,
                    )
                )
        case AlterIsrData():
            data = AlterPartitionPartitionData(
                pid,
                op.leader_epoch,
                op.partition_epoch,
                tuple(BrokerState(b) for b in op.isr),
                LeaderRecoveryState(op.leader_recovery_state),
            )
            records, after, answer = alter_partition(
                reg, ctx.topic, registry, op.broker_id, op.request_version, data
            )
            appended(records)
            new = after if after is not None else reg
            if answer.error == Errors.NONE:
                out.append(
                    AlterPartitionResultRecord(
                        topic,
                        pid,
                        op.broker_id,
                        None,
                        answer.leader_id,
                        answer.leader_epoch,
                        answer.isr,
                        answer.partition_epoch,
                    )
                )
            else:
                out.append(
                    AlterPartitionResultRecord(
                        topic, pid, op.broker_id, answer.error, None, None, None, None
                    )
                )
        case AlterReassignment():
            records, new, error = alter_partition_reassignments.alter_partition_reassignment(
                reg, ctx.topic, pid, registry, op.target_replicas
            )
            appended(records)
            if not error.is_success:
                out.append(
                    StateChangeFailedRecord(
                        topic, pid, None, "PartitionReassignment", _describe(error)
                    )
                )
        case Observe():
            outputs, outcome = shadow_rules.compare(
                topic, pid, reg, op, registry, ctx.topic.unclean_leader_election
            )
            out.extend(outputs)
            if outcome != "match" and config.shadow_follow:
                new = shadow_rules.adopt(reg, op)
            # the shadow's own outputs
            return KraftResult(KraftPartition(topic, pid, new), tuple(out), None)
        case (
            LoadPartition()
            | Failover()
            | CreatePartition()
            | BrokersStarted()
            | BrokersFailed()
            | ShutdownBroker()
            | Reassign()
            | AlterIsr()
            | Elect()
            | TriggerOnline()
            | ReplicaDeletionResponse()
            | MarkQueued()
            | ResumeDeletion()
            | CompleteTopicDeletion()
            | LogDirFailure()
            | AutoRebalance()
        ):  # the ZK rules' ops (partition.py); the KRaft directory sends none
            raise InvariantViolation(f"a ZooKeeper op in the KRaft rules: {op!r}")
        case _:
            assert_never(op)
    return _result(KraftPartition(topic, pid, new) if new is not reg else state, out, ctx)


def _result(state: KraftPartition | None, out: list[Output], ctx: KraftContext) -> KraftResult:
    # a standby replays the log: it keeps the state and appends nothing
    return KraftResult(state, tuple(out) if ctx.active else (), None)


def _describe(error: ApiError) -> str:
    return error.error if error.message is None else f"{error.error}: {error.message}"


def guarded_kraft_partition_step(
    state: KraftPartition | None, cmd: Command, config: ControllerConfig
) -> tuple[KraftResult, str | None]:
    """`kraft_partition_step`, with an exception (a bug of this project) turned into a value,
    as `partition.guarded_partition_step` does."""
    try:
        return kraft_partition_step(state, cmd, config), None
    except Exception as exc:
        return KraftResult(state, (), None), describe_error(
            exc, f"partition {cmd.topic}-{cmd.partition}"
        )


def kraft_summary_of(rec: KraftPartition | None) -> PartitionSummary | None:
    """The partition's summary: Online with a leader, else Offline (`partitionsWithNoLeader`)."""
    if rec is None:
        return None
    reg = rec.registration
    state = (
        PartitionState.OfflinePartition
        if reg.leader == NO_LEADER
        else PartitionState.OnlinePartition
    )
    # the counts the replica metrics read (as partition_summaries.summary_of), and the
    # replica count the directory takes partition 0's replication factor from
    # (`getTopicEffectiveMinIsr`)
    return interned_summary(
        state,
        reg.replicas[0] if reg.replicas else -1,
        reg.leader,
        len(reg.isr),
        len(reg.replicas) - len(reg.adding_replicas),
        replica_count(reg.replicas, reg.leader),
    )


def kraft_same_summary(a: KraftPartition | None, b: KraftPartition | None) -> bool:
    return kraft_summary_of(a) is kraft_summary_of(b)
