"""Leader election: Kafka's four pure algorithms and the strategy wrappers around them.

The algorithms are `PartitionLeaderElectionAlgorithms` (PartitionStateMachine.scala): each
scans an ordered replica list and returns the first eligible broker, or None. Order is the
whole point (the assignment's head is the preferred replica), so the candidate lists are
sequences and liveness is a set used only for membership tests.

The wrappers are `Election.scala`: they pick the candidate list, compute the new ISR, the
leader epoch and recovery state (`LeaderAndIsr.scala`) and the LeaderAndIsr recipients.
They take liveness as predicates and return what the election decided; they never record
metrics (counting unclean elections is the shell's job).

The strategies are values, as Kafka's sealed `PartitionLeaderElectionStrategy` is
(PartitionStateMachine.scala): `OfflineElection(allow_unclean)`, `ReassignElection`,
`PreferredElection` and `ControlledShutdownElection`. Each names the label its LeaderAndIsr
record carries (`election` in the contract).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from .model import LeaderAndIsr
from .speed import quick_init
from .states import LeaderRecoveryState

BrokerPredicate = Callable[[int], bool]


@dataclass(frozen=True, slots=True)
class OfflineElection:
    """`OfflinePartitionLeaderElectionStrategy(allowUnclean)`: `allow_unclean` is the admin
    API's UNCLEAN election; otherwise the topic's unclean setting decides."""

    allow_unclean: bool = False
    label = "offline"


@dataclass(frozen=True, slots=True)
class ReassignElection:
    """`ReassignPartitionLeaderElectionStrategy`."""

    label = "reassign"


@dataclass(frozen=True, slots=True)
class PreferredElection:
    """`PreferredReplicaPartitionLeaderElectionStrategy`."""

    label = "preferred"


@dataclass(frozen=True, slots=True)
class ControlledShutdownElection:
    """`ControlledShutdownPartitionLeaderElectionStrategy`."""

    label = "controlled_shutdown"


ElectionStrategy = (
    OfflineElection | ReassignElection | PreferredElection | ControlledShutdownElection
)

OFFLINE = OfflineElection()
REASSIGN = ReassignElection()
PREFERRED = PreferredElection()
CONTROLLED_SHUTDOWN = ControlledShutdownElection()


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Collection[int],
    live_replicas: Collection[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """First live ISR member in assignment order; else, if unclean is allowed, the first live
    replica."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica
    if unclean_leader_election_enabled:
        for replica in assignment:
            if replica in live_replicas:
                return replica
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int]
) -> int | None:
    """First live ISR member in target-replica order; never unclean."""
    for replica in reassignment:
        if replica in live_replicas and replica in isr:
            return replica
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Collection[int], live_replicas: Collection[int]
) -> int | None:
    """Only the head of the assignment, and only if it is live and in the ISR: no fallback."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Collection[int],
    live_replicas: Collection[int],
    shutting_down_brokers: Collection[int],
) -> int | None:
    """First live ISR member in assignment order that is not itself shutting down."""
    for replica in assignment:
        if replica in live_replicas and replica in isr and replica not in shutting_down_brokers:
            return replica
    return None


@quick_init
@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    """What one strategy decided for one partition: the new state (None: no leader found),
    the LeaderAndIsr recipients, and whether the new leader came from outside the ISR."""

    leader_and_isr: LeaderAndIsr | None
    recipients: tuple[int, ...]
    unclean: bool = False


def elect_for_offline_partition(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online: BrokerPredicate,
    unclean_leader_election_enabled: bool,
    leader_recovery_supported: bool = True,
) -> ElectionOutcome:
    """`Election.leaderForOffline`. Live replicas exclude shutting-down brokers.

    New ISR: the old ISR filtered to online replicas when the leader was in it, otherwise
    exactly [leader]; an unclean leader makes the partition RECOVERING (KIP-704, IBP >= 3.2).
    Recipients: the live replicas of the full assignment.
    """
    live = tuple(r for r in assignment if is_online(r))
    leader = offline_partition_leader_election(
        assignment, current.isr, live, unclean_leader_election_enabled
    )
    if leader is None:
        return ElectionOutcome(None, live)
    if leader in current.isr:
        return ElectionOutcome(
            current.new_leader_and_isr(leader, tuple(r for r in current.isr if is_online(r))), live
        )
    if leader_recovery_supported:
        return ElectionOutcome(
            current.new_recovering_leader_and_isr(leader, (leader,)), live, unclean=True
        )
    return ElectionOutcome(current.new_leader_and_isr(leader, (leader,)), live, unclean=True)


def elect_for_reassigned_partition(
    current: LeaderAndIsr, target_replicas: Sequence[int], is_online: BrokerPredicate
) -> ElectionOutcome:
    """`Election.leaderForReassign`: ISR unchanged (`newLeader`); recipients are all target
    replicas."""
    live = tuple(r for r in target_replicas if is_online(r))
    leader = reassign_partition_leader_election(target_replicas, current.isr, live)
    state = None if leader is None else current.new_leader(leader)
    return ElectionOutcome(state, tuple(target_replicas))


def elect_preferred_replica(
    current: LeaderAndIsr, assignment: Sequence[int], is_online: BrokerPredicate
) -> ElectionOutcome:
    """`Election.leaderForPreferredReplica`: ISR unchanged; the epoch is bumped even when the
    preferred replica already leads. Recipients: the whole assignment."""
    live = tuple(r for r in assignment if is_online(r))
    leader = preferred_replica_partition_leader_election(assignment, current.isr, live)
    state = None if leader is None else current.new_leader(leader)
    return ElectionOutcome(state, tuple(assignment))


def elect_for_controlled_shutdown(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online_or_shutting_down: BrokerPredicate,
    shutting_down_brokers: Collection[int],
) -> ElectionOutcome:
    """`Election.leaderForControlledShutdown`: candidates include shutting-down brokers (so the
    one shutting down receives the request); the ISR loses every shutting-down broker but keeps
    dead ones."""
    live = tuple(r for r in assignment if is_online_or_shutting_down(r))
    leader = controlled_shutdown_partition_leader_election(
        assignment, current.isr, live, shutting_down_brokers
    )
    if leader is None:
        return ElectionOutcome(None, live)
    new_isr = tuple(r for r in current.isr if r not in shutting_down_brokers)
    return ElectionOutcome(current.new_leader_and_isr(leader, new_isr), live)


__all__ = [
    "CONTROLLED_SHUTDOWN",
    "ControlledShutdownElection",
    "ElectionOutcome",
    "ElectionStrategy",
    "OFFLINE",
    "OfflineElection",
    "PREFERRED",
    "PreferredElection",
    "REASSIGN",
    "ReassignElection",
    "LeaderRecoveryState",
    "controlled_shutdown_partition_leader_election",
    "elect_for_controlled_shutdown",
    "elect_for_offline_partition",
    "elect_for_reassigned_partition",
    "elect_preferred_replica",
    "offline_partition_leader_election",
    "preferred_replica_partition_leader_election",
    "reassign_partition_leader_election",
]
