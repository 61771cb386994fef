"""What the project's KRaft rules write for each kind of controller event, from the log's
state before it (log_state.py). Each function names the Kafka method it stands for; the
rules themselves are state_machines/kraft/ (ReplicationControlManager's handlers, the
PartitionChangeBuilder, `alterPartition`).

A decision is predicted per partition: a `PartitionChange` (the record and the partition
after it) or None (the handler leaves the partition alone). An input that the rules refuse
is an `ApiError` instead.

A PartitionChangeRecord that no broker or topic record anchors (see verifier.py) is
explained by `explanations`: the requests and periodic tasks that could have written it,
each with what the rules write for it; the first one that writes exactly the log's record
explains it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import ShadowControllerError
from ..kraft import alter_partition_reassignments, broker_isr_updates, elect_leaders
from ..kraft import replication_control as rc
from ..kraft.alter_partition import alter_partition
from ..kraft.cluster_control import BrokerRegistry
from ..kraft.messages import AlterPartitionPartitionData, ApiError, BrokerState
from ..kraft.metadata_version import MetadataVersion
from ..kraft.partition_change import PartitionChange
from ..kraft.partition_registration import PartitionRegistration
from ..kraft.records import (
    LOST_DIRECTORY,
    MIGRATING_DIRECTORY,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
)
from ..model import NO_LEADER
from .log_state import LogState, TopicPartition

Handler = Callable[
    [PartitionRegistration, rc.TopicContext, int, BrokerRegistry, int], PartitionChange | None
]

# Kafka's handlers (ReplicationControlManager) for the broker events, by the name the report uses
HANDLERS: dict[str, tuple[str, Handler]] = {
    "BrokerFenced": (
        "ReplicationControlManager.handleBrokerFenced",
        broker_isr_updates.handle_broker_fenced,
    ),
    "BrokerUnfenced": (
        "ReplicationControlManager.handleBrokerUnfenced",
        broker_isr_updates.handle_broker_unfenced,
    ),
    "ControlledShutdown": (
        "ReplicationControlManager.handleBrokerInControlledShutdown",
        broker_isr_updates.handle_broker_in_controlled_shutdown,
    ),
    "BrokerUnregistered": (
        "ReplicationControlManager.handleBrokerUnregistered",
        broker_isr_updates.handle_broker_unregistered,
    ),
    "BrokerShutdown": (
        "ReplicationControlManager.handleBrokerShutdown (4.0, a clean shutdown or no ELR; from "
        "ClusterControlManager.registerBroker)",
        broker_isr_updates.handle_broker_fenced,
    ),
    "BrokerUncleanShutdown": (
        "ReplicationControlManager.handleBrokerUncleanShutdown (from ClusterControlManager"
        ".registerBroker)",
        broker_isr_updates.handle_broker_unclean_shutdown,
    ),
    "BrokerRegistration": ("ClusterControlManager.registerBroker", lambda *_: None),
    "DirectoriesOffline": (
        "ReplicationControlManager.handleDirectoriesOffline",
        broker_isr_updates.handle_directories_offline,
    ),
}


def handler_targets(state: LogState, kind: str, broker_id: int) -> list[TopicPartition]:
    """The partitions Kafka's index hands the handler (`BrokersToIsrs`, `BrokersToElrs`)."""
    if kind == "BrokerUnfenced":
        return state.without_leader()  # partitionsWithNoLeader
    targets = state.with_broker_in_isr(broker_id)  # partitionsWithBrokerInIsr
    if kind in ("BrokerUnregistered", "BrokerUncleanShutdown"):
        targets += state.with_broker_in_elr(broker_id)  # partitionsWithBrokerInElr
    return targets


def partitions_in(state: LogState, directories: frozenset[str]) -> list[TopicPartition]:
    """`directoriesToPartitions` for `directories`: the partitions with a replica in one."""
    if not directories:
        return []
    return [
        (topic_id, pid)
        for topic_id, parts in sorted(state.partitions.items())
        for pid, reg in sorted(parts.items())
        if not directories.isdisjoint(reg.directories)
    ]


def broker_event(
    state: LogState, kind: str, broker_id: int, targets: Iterable[TopicPartition]
) -> dict[TopicPartition, PartitionChange | None]:
    """`generateLeaderAndIsrUpdates` over `targets` for the broker event `kind`."""
    _, handler = HANDLERS[kind]
    registry = state.registry
    out: dict[TopicPartition, PartitionChange | None] = {}
    for tp in targets:
        reg = state.partition(*tp)
        if reg is not None:
            try:
                out[tp] = handler(reg, state.context(tp[0]), tp[1], registry, broker_id)
            except ShadowControllerError:
                # the rules cannot decide on a state Kafka never reaches (a replica's
                # directory unknown, ...): no prediction; the log's record then diverges
                out[tp] = None
    return out


# -- explanations of a PartitionChangeRecord no broker record anchors -----------------------


@dataclass(frozen=True, slots=True)
class Explanation:
    kind: str  # the report's name of the cause
    method: str  # Kafka's method
    change: PartitionChange | None  # what the rules write (None: nothing)
    refused: ApiError | None = None  # the rules refuse the input
    admin_unclean: bool = False  # an admin asked for an unclean election (allowed anyway)


RESERVED_DIRS = frozenset({UNASSIGNED_DIRECTORY, MIGRATING_DIRECTORY, LOST_DIRECTORY})
ALTER_PARTITION = ("AlterPartition", "ReplicationControlManager.alterPartition")
REASSIGNMENT = (
    "AlterPartitionReassignments",
    "ReplicationControlManager.alterPartitionReassignment",
)
PREFERRED = (
    "PreferredElection",
    "ReplicationControlManager.electLeader (PREFERRED: ElectLeaders, or "
    "maybeBalancePartitionLeaders)",
)
UNCLEAN = (
    "UncleanElection",
    "ReplicationControlManager.electLeader (UNCLEAN: ElectLeaders, or maybeElectUncleanLeaders)",
)


def _alter_partition(
    state: LogState,
    tp: TopicPartition,
    old: PartitionRegistration,
    isr: tuple[int, ...],
    lrs: object,
) -> Explanation:
    """An AlterPartition from the partition's leader (the only broker Kafka accepts one
    from: `validateAlterPartitionData`) at the current epochs, asking for `isr`."""
    kind, method = ALTER_PARTITION
    data = AlterPartitionPartitionData(
        tp[1],
        old.leader_epoch,
        old.partition_epoch,
        tuple(BrokerState(b) for b in isr),
        lrs if lrs is not None else old.leader_recovery_state,  # type: ignore[arg-type]
    )
    records, after, answer = alter_partition(
        old, state.context(tp[0]), state.registry, old.leader, 3, data
    )
    if answer.error not in ("NONE", "NEW_LEADER_ELECTED"):
        why = _ALTER_PARTITION_REFUSALS.get(answer.error, answer.error)
        return Explanation(kind, method, None, ApiError(answer.error, why))
    if not records or after is None:
        return Explanation(kind, method, None)
    record = records[0].message
    assert isinstance(record, PartitionChangeRecord)
    return Explanation(kind, method, PartitionChange(record, records[0].version, after))


_ALTER_PARTITION_REFUSALS = {
    "INVALID_REQUEST": "an ISR that leaves out the partition's leader, repeats a broker or names a "
    "non-replica, or an AlterPartition from a broker that is not the leader",
    "INELIGIBLE_REPLICA": "an ISR that adds a broker that is fenced, shutting down or unregistered",
}


def _reassign(
    state: LogState,
    tp: TopicPartition,
    old: PartitionRegistration,
    target: tuple[int, ...] | None,
) -> Explanation:
    kind, method = REASSIGNMENT
    records, after, error = alter_partition_reassignments.alter_partition_reassignment(
        old, state.context(tp[0]), tp[1], state.registry, target
    )
    if not error.is_success:
        return Explanation(kind, method, None, error)
    if not records:
        return Explanation(kind, method, None)
    record = records[0].message
    assert isinstance(record, PartitionChangeRecord)
    return Explanation(kind, method, PartitionChange(record, records[0].version, after))


def _elect(
    state: LogState, tp: TopicPartition, old: PartitionRegistration, election: str
) -> Explanation:
    kind, method = PREFERRED if election == "PREFERRED" else UNCLEAN
    records, after, error = elect_leaders.elect_leader(
        old,
        state.context(tp[0]),
        tp[1],
        state.registry,
        election,  # type: ignore[arg-type]
    )
    if not records:
        return Explanation(kind, method, None, None if error.is_success else error)
    record = records[0].message
    assert isinstance(record, PartitionChangeRecord)
    return Explanation(
        kind,
        method,
        PartitionChange(record, records[0].version, after),
        admin_unclean=election == "UNCLEAN" and not state.context(tp[0]).unclean_leader_election,
    )


def explanations(
    state: LogState, tp: TopicPartition, old: PartitionRegistration, r: PartitionChangeRecord
) -> list[Explanation]:
    """The causes that could have written `r`, the likeliest first (the first is the one
    a divergence is reported against)."""
    new = old.merge(r)
    out: list[Explanation] = []
    if r.directories is not None and r == PartitionChangeRecord(
        r.topic_id, r.partition_id, directories=r.directories
    ):
        return [_assign_to_dirs(state, old, r)]
    assignment = (
        r.replicas is not None or r.adding_replicas is not None or r.removing_replicas is not None
    )
    reassigning = bool(old.adding_replicas or old.removing_replicas)
    if assignment:
        if reassigning and not new.adding_replicas and not new.removing_replicas:
            # the leader's AlterPartition that completed it (its ISR held the replicas being
            # removed that were in sync: the completion drops them; the ISR it asked for may
            # also be the one it had, then the record carries none)
            asked = new.isr + tuple(
                b for b in old.isr if b in old.removing_replicas and b not in new.isr
            )
            out.append(_alter_partition(state, tp, old, asked, r.leader_recovery_state))
            out.append(_reassign(state, tp, old, None))
        # PartitionReassignmentReplicas: the replicas are the target, then the replicas it
        # removes; a record that does not set `removing_replicas` removes none (Kafka sets
        # the builder's removing and adding only when they are not empty)
        targets = []
        if r.replicas is not None:
            removed = len(r.removing_replicas or ())
            targets.append(r.replicas[: len(r.replicas) - removed])
        targets.append(tuple(b for b in new.replicas if b not in new.removing_replicas))
        for target in dict.fromkeys(targets):
            out.append(_reassign(state, tp, old, target))
        return out
    if r.leader != NO_LEADER_CHANGE and r.leader != old.leader:
        if r.isr is not None and r.leader not in old.isr and r.leader != NO_LEADER:
            out.append(_elect(state, tp, old, "UNCLEAN"))
            out.append(_elect(state, tp, old, "PREFERRED"))
        else:
            out.append(_elect(state, tp, old, "PREFERRED"))
            if old.leader == NO_LEADER:
                out.append(_elect(state, tp, old, "UNCLEAN"))
        if r.isr is not None:
            out.append(_alter_partition(state, tp, old, r.isr, r.leader_recovery_state))
        return out + _shutting_down(state, tp, old, new)
    # the ISR, ELR or recovery state only (or an epoch bump at the same leader): the leader
    out.append(_alter_partition(state, tp, old, new.isr, r.leader_recovery_state))
    return out + _shutting_down(state, tp, old, new)


def _shutting_down(
    state: LogState, tp: TopicPartition, old: PartitionRegistration, new: PartitionRegistration
) -> list[Explanation]:
    """A controlled shutdown with no flag record: the broker was already in controlled
    shutdown (`handleBrokerInControlledShutdown` writes the flag only when it is not), or
    metadata.version is before 3.3-IV3. Tried for each broker of the old ISR that is in
    controlled shutdown and leaves it."""
    method, handler = HANDLERS["ControlledShutdown"]
    out = []
    for b in old.isr:
        if b not in new.isr and (
            state.registry.in_controlled_shutdown(b)
            or not state.mv.is_at_least(MetadataVersion.IBP_3_3_IV3)
        ):
            change = handler(old, state.context(tp[0]), tp[1], state.registry, b)
            out.append(Explanation("ControlledShutdown", method, change))
    return out


def _assign_to_dirs(
    state: LogState, old: PartitionRegistration, r: PartitionChangeRecord
) -> Explanation:
    """`handleAssignReplicasToDirs` (3.7-IV2, JBOD): a broker names the directory of its
    replicas: an input. Kafka accepts a directory the broker registered (or a reserved one)
    and writes only the directories."""
    kind, method = "AssignReplicasToDirs", "ReplicationControlManager.handleAssignReplicasToDirs"
    dirs = r.directories or ()
    if len(dirs) != len(old.replicas):
        return Explanation(
            kind, method, None, ApiError("INVALID_REPLICA_DIRECTORIES", "one per replica")
        )
    for broker_id, d, before in zip(old.replicas, dirs, old.directories, strict=False):
        reg = state.registry.registration(broker_id)
        if d != before and d not in RESERVED_DIRS and (reg is None or d not in reg.directories):
            return Explanation(
                kind,
                method,
                None,
                ApiError("INVALID_REQUEST", f"broker {broker_id} has no directory {d}"),
            )
    return Explanation(kind, method, PartitionChange(r, 1, old.merge(r)))


def same_change(log: PartitionChangeRecord, change: PartitionChange | None) -> bool:
    return change is not None and change.record == log


def leader_of(reg: PartitionRegistration | None) -> int:
    return NO_LEADER if reg is None else reg.leader
