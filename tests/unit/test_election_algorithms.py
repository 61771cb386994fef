"""Port of Kafka 3.9.0 `PartitionLeaderElectionAlgorithmsTest.scala`.

Source: core/src/test/scala/unit/kafka/controller/PartitionLeaderElectionAlgorithmsTest.scala.
One row per Kafka test method, run against the four pure functions of
`state_machines/election.py` (Kafka's `PartitionLeaderElectionAlgorithms`).

Kafka's two unclean tests also check `uncleanLeaderElectionRate`, a metric that Kafka bumps
inside `offlinePartitionLeaderElection`. Here the pure function records nothing (counting is
the shell's job), so those two assertions are ported to the `unclean` flag of the
`elect_for_offline_partition` wrapper, which is what a shell would count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from state_machines.election import (
    controlled_shutdown_partition_leader_election,
    elect_for_offline_partition,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from state_machines.model import LeaderAndIsr


@dataclass(frozen=True)
class Case:
    name: str
    elect: Callable[[], int | None]
    expected: int | None


def _offline(assignment, isr, live, unclean):  # type: ignore[no-untyped-def]
    return lambda: offline_partition_leader_election(assignment, isr, live, unclean)


def _reassign(reassignment, isr, live):  # type: ignore[no-untyped-def]
    return lambda: reassign_partition_leader_election(reassignment, isr, live)


def _preferred(assignment, isr, live):  # type: ignore[no-untyped-def]
    return lambda: preferred_replica_partition_leader_election(assignment, isr, live)


def _controlled_shutdown(assignment, isr, live, shutting_down):  # type: ignore[no-untyped-def]
    return lambda: controlled_shutdown_partition_leader_election(
        assignment, isr, live, shutting_down
    )


CASES = [
    Case("testOfflinePartitionLeaderElection", _offline([2, 4], [2, 4], {4}, False), 4),
    Case(
        "testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled",
        _offline([2, 4], [2], {4}, False),
        None,
    ),
    Case(
        "testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled",
        _offline([2, 4], [2], {4}, True),
        4,
    ),
    Case("testReassignPartitionLeaderElection", _reassign([2, 4], [2, 4], {4}), 4),
    Case("testReassignPartitionLeaderElectionWithNoLiveIsr", _reassign([2, 4], [2], set()), None),
    Case("testReassignPartitionLeaderElectionWithEmptyIsr", _reassign([2, 4], [], {2}), None),
    Case("testPreferredReplicaPartitionLeaderElection", _preferred([2, 4], [2, 4], {2, 4}), 2),
    Case(
        "testPreferredReplicaPartitionLeaderElectionPreferredReplicaInIsrNotLive",
        _preferred([2, 4], [2], set()),
        None,
    ),
    Case(
        "testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrLive",
        _preferred([2, 4], [4], {2, 4}),
        None,
    ),
    Case(
        "testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrNotLive",
        _preferred([2, 4], [], set()),
        None,
    ),
    Case(
        "testControlledShutdownPartitionLeaderElection",
        _controlled_shutdown([2, 4], [2, 4], {2, 4}, {2}),
        4,
    ),
    Case(
        "testControlledShutdownPartitionLeaderElectionLastIsrShuttingDown",
        _controlled_shutdown([2, 4], [2], {2, 4}, {2}),
        None,
    ),
    Case(
        "testControlledShutdownPartitionLeaderElectionAllIsrSimultaneouslyShutdown",
        _controlled_shutdown([2, 4], [2, 4], {2, 4}, {2, 4}),
        None,
    ),
]


def test_every_kafka_method_has_one_row() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) == 13


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_election_algorithm(case: Case) -> None:
    assert case.elect() == case.expected


# The metric half of the two unclean tests: (name, unclean enabled, expected leader,
# expected count of unclean elections = the outcome's `unclean` flag).
UNCLEAN_METRIC_CASES = [
    (
        "testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled",
        False,
        None,
        0,
    ),
    ("testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled", True, 4, 1),
]


@pytest.mark.parametrize(
    ("name", "unclean_enabled", "leader", "unclean_count"),
    UNCLEAN_METRIC_CASES,
    ids=[c[0] for c in UNCLEAN_METRIC_CASES],
)
def test_unclean_election_metric(
    name: str, unclean_enabled: bool, leader: int | None, unclean_count: int
) -> None:
    # assignment [2, 4], ISR [2], live {4}; the current leader was 2.
    current = LeaderAndIsr(leader=2, leader_epoch=0, isr=(2,), partition_epoch=0)
    outcome = elect_for_offline_partition(current, (2, 4), lambda b: b in {4}, unclean_enabled)
    elected = outcome.leader_and_isr.leader if outcome.leader_and_isr is not None else None
    assert elected == leader
    assert int(outcome.unclean) == unclean_count
