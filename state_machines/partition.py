"""The partition step: one command against one partition, with Kafka's state machines.

Theory of operation
-------------------
`partition_step` is (record or None, command) -> (new record or None, outputs, deletion
report). The command names the flow (flows.py, reassignment.py, topic_deletion.py) and
carries the controller-wide facts the partition may read; the flow calls the replica and
partition state machines (replica_state_machine.py, partition_state_machine.py) in Kafka's
order through a `Run`, and each machine call sends its request batch (requests.py) as it
ends, as Kafka's `handleStateChanges` does.

The record itself (`PartitionRecord`) is in partition_record.py. `guarded_partition_step`
is the boundary of the core for the partitions: an exception becomes a value there.
`handle_replica_state_changes` and `handle_partition_state_changes` are the two machines'
entry points on their own, what Kafka's unit tests call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from . import flows, reassignment, topic_deletion
from .commands import (
    AlterIsr,
    AutoRebalance,
    BrokersFailed,
    BrokersStarted,
    Command,
    CompleteTopicDeletion,
    CreatePartition,
    DeletionReport,
    Elect,
    Failover,
    LoadPartition,
    LogDirFailure,
    MarkQueued,
    Observe,
    PartitionContext,
    Reassign,
    ReplicaDeletionResponse,
    ResumeDeletion,
    ShutdownBroker,
    TriggerOnline,
)
from .election import ElectionStrategy
from .errors import InvariantViolation
from .flow import Run
from .kraft.commands import (
    AlterIsrData,
    AlterReassignment,
    BalanceLeader,
    BrokerLifecycle,
    ClearElr,
    ElectLeader,
    ElectUnclean,
    LoadRegistration,
    RegisterPartition,
    RemovePartition,
)
from .model import BrokerFact, ControllerConfig, ReplicaAssignment
from .outputs import Output
from .partition_record import Facts, PartitionRecord
from .speed import IdentityMemo, quick_init
from .states import PartitionState, ReplicaState

__all__ = [
    "PartitionRecord",
    "PartitionResult",
    "describe_error",
    "guarded_partition_step",
    "handle_partition_state_changes",
    "handle_replica_state_changes",
    "partition_step",
]


@quick_init
@dataclass(frozen=True, slots=True)
class PartitionResult:
    state: PartitionRecord | None
    outputs: tuple[Output, ...]
    report: DeletionReport | None


def _begin(rec: PartitionRecord, ctx: PartitionContext, config: ControllerConfig) -> Run:
    """A run over `rec` whose view of the brokers is updated by the command's."""
    old, told = rec.brokers, ctx.brokers
    view, brokers = _VIEWS.get_pair(old, told) or _VIEWS.put((old, told), _view(old, told))
    if view is not old:
        rec = PartitionRecord(
            rec.topic,
            rec.partition,
            rec.assignment,
            rec.state,
            rec.leadership,
            rec.replica_states,
            view,
            rec.being_reassigned,
            rec.offline_dirs,
            rec.reassignment_started,
        )
    return Run(rec, Facts(ctx, config, brokers, rec.offline_dirs))


# A partition's view of the brokers updated by a command's facts, by identity of the two
# (the memo holds them, `speed.IdentityMemo`): the new view, and the new view as the dict
# `Facts` reads, never written to. The partitions a fan-out reaches hold the same few views
# (one per context the directory made, contexts being shared by replica set), so each
# update is worked out once and the partitions share its result.
_VIEWS: IdentityMemo[tuple[tuple[tuple[int, BrokerFact], ...], dict[int, BrokerFact]]] = (
    IdentityMemo(65536)
)


# The (broker, fact) pairs of the partitions' broker views, the last one made for each
# broker: the facts are the directory's own objects, so every partition that learns a
# broker's fact shares one pair instead of holding a copy the cyclic collector must walk.
_BROKER_PAIRS: dict[int, tuple[int, BrokerFact]] = {}


def _view(
    old: tuple[tuple[int, BrokerFact], ...], told: tuple[tuple[int, BrokerFact], ...]
) -> tuple[tuple[tuple[int, BrokerFact], ...], dict[int, BrokerFact]]:
    brokers = dict(old)
    changed = False
    for b, fact in told:
        known = brokers.get(b)
        if known is not fact and known != fact:
            brokers[b] = fact
            changed = True
    view = old
    if changed:
        pairs = []
        for b, fact in sorted(brokers.items()):
            pair = _BROKER_PAIRS.get(b)
            if pair is None or pair[1] is not fact:
                pair = _BROKER_PAIRS[b] = (b, fact)
            pairs.append(pair)
        view = tuple(pairs)
    return view, brokers


def partition_step(
    state: PartitionRecord | None, cmd: Command, config: ControllerConfig
) -> PartitionResult:
    """Apply one command to one partition: (state or None, command) -> (new state or None,
    outputs)."""
    op = cmd.op
    ctx = cmd.ctx
    assert isinstance(ctx, PartitionContext)  # the ZK rules' commands (rule_sets.py)
    if isinstance(op, LoadPartition):
        if state is not None and not op.overwrite:
            return PartitionResult(state, (), None)
        base = state or PartitionRecord(cmd.topic, cmd.partition, op.assignment)
        new = PartitionRecord(
            base.topic,
            base.partition,
            op.assignment,
            base.state,
            op.leadership if op.overwrite else base.leadership,
            base.replica_states,
            tuple(sorted({**dict(base.brokers), **dict(ctx.brokers)}.items())),
            base.being_reassigned,
            base.offline_dirs,
            base.reassignment_started,
        )
        return PartitionResult(new, (), None)

    known = state is not None
    if state is None:
        if not isinstance(op, (CreatePartition, Reassign)):
            # Broker fan-out may reach a partition that no longer exists (the directory's
            # broker index is a superset); there is nothing to do.
            return PartitionResult(None, (), None)
        replicas = op.replicas if isinstance(op, CreatePartition) else ()
        state = PartitionRecord(cmd.topic, cmd.partition, ReplicaAssignment(replicas))
    run = _begin(state, ctx, config)

    match op:
        case Failover():
            flows.failover(run, op.order)
        case CreatePartition():
            flows.create(run, op.replicas, op.order)
        case BrokersStarted():
            flows.brokers_started(run, op.broker_ids)
        case BrokersFailed():
            flows.brokers_failed(run, op.broker_ids)
        case ShutdownBroker():
            flows.controlled_shutdown(run, op.broker_id)
        case Reassign():
            reassignment.request(run, op.target_replicas, known)
            reassignment.maybe_mark_started(run, state, cmd.cause_offset, op.ts)
        case AlterIsr():
            flows.alter_partition(run, op)
        case Elect():
            flows.elect(run, op)
        case TriggerOnline():
            flows.trigger_online(run)
        case ReplicaDeletionResponse():
            topic_deletion.replica_deletion_response(run, op)
        case ResumeDeletion():
            topic_deletion.resume_deletion(run, op)
        case CompleteTopicDeletion():
            topic_deletion.complete_topic_deletion(run, op.order)
        case MarkQueued():
            pass
        case Observe():
            flows.observe(run, op)
        case LogDirFailure():
            flows.log_dir_failure(run, op)
        case AutoRebalance():
            flows.auto_rebalance(run)
        case (
            RegisterPartition()
            | BrokerLifecycle()
            | ElectLeader()
            | AlterIsrData()
            | AlterReassignment()
            | RemovePartition()
            | LoadRegistration()
            | BalanceLeader()
            | ElectUnclean()
            | ClearElr()
        ):  # the KRaft rules' ops (kraft/partition_step.py); the ZK directory sends none
            raise InvariantViolation(f"a KRaft op in the ZooKeeper rules: {op!r}")
        case _:
            assert_never(op)

    new_state = None if run.removed or not (known or run.rec.state is not None) else run.rec
    report = topic_deletion.report(run) if ctx.queued_for_deletion else None
    return PartitionResult(new_state, tuple(run.out), report)


# ---------------------------------------------------------------------------------------
# Kafka's state machine entry points, one partition at a time (what Kafka's unit tests call)

_DEFAULT_CONFIG = ControllerConfig()


def handle_replica_state_changes(
    state: PartitionRecord,
    brokers: Sequence[int],
    target: ReplicaState,
    ctx: PartitionContext,
    config: ControllerConfig = _DEFAULT_CONFIG,
) -> PartitionResult:
    """`ReplicaStateMachine.handleStateChanges` for this partition's replicas on `brokers`."""
    run = _begin(state, ctx, config)
    run.replicas(brokers, target)
    return PartitionResult(run.rec, tuple(run.out), None)


def handle_partition_state_changes(
    state: PartitionRecord,
    target: PartitionState,
    ctx: PartitionContext,
    strategy: ElectionStrategy | None = None,
    config: ControllerConfig = _DEFAULT_CONFIG,
) -> PartitionResult:
    """`PartitionStateMachine.handleStateChanges(partitions, target, strategy)`, one partition."""
    run = _begin(state, ctx, config)
    run.partition(target, strategy)
    return PartitionResult(run.rec, tuple(run.out), None)


def guarded_partition_step(
    state: PartitionRecord | None, cmd: Command, config: ControllerConfig
) -> tuple[PartitionResult, str | None]:
    """`partition_step`, with an exception turned into a value: the partition keeps its
    state, the command has no outputs, and the error's one-line description comes back.
    An exception here is a bug of this project, not bad input; raised inside a Spark task
    it would fail the batch, and the restart would replay the same event forever. A
    partition of a topic queued for deletion still reports back (its unchanged state), or
    the directory would wait for its report for good."""
    try:
        return partition_step(state, cmd, config), None
    except Exception as exc:
        report = None
        if isinstance(cmd.ctx, PartitionContext) and cmd.ctx.queued_for_deletion:
            if state is None:
                report = DeletionReport(cmd.topic, cmd.partition, (), (), False, removed=True)
            else:
                report = topic_deletion.report(
                    Run(state, Facts(cmd.ctx, config, dict(state.brokers), state.offline_dirs))
                )
        return PartitionResult(state, (), report), describe_error(
            exc, f"partition {cmd.topic}-{cmd.partition}"
        )


def describe_error(exc: BaseException, where: str) -> str:
    """The dead-letter reason for an exception the controller raised."""
    text = str(exc).replace("\n", " ")
    if len(text) > 200:
        text = text[:200] + "..."
    return f"controller error in {where}: {type(exc).__name__}: {text}"
