"""Port of Kafka 3.9.0 `PartitionStateMachineTest.scala`.

Source: core/src/test/scala/unit/kafka/controller/PartitionStateMachineTest.scala. Each Kafka
test method is a row of `CASES` named after it (the parameterized
`testOfflinePartitionToUncleanOnlinePartitionTransition` is two rows), run through
`partition.handle_partition_state_changes` (Kafka's `ZkPartitionStateMachine.handleStateChanges`
for one partition). `testUpdatingOfflinePartitionsCount` has its own test below.

How Kafka's mocks map onto this API:
- The partition-state znode is `PartitionRecord.leadership`: what `getTopicPartitionStatesRaw`
  returns is the record's leadership, a missing znode is `leadership=None`, and the state a
  successful `updateLeaderAndIsr` returns is the result's leadership. Its partition epoch is the
  znode version: the znodes in Kafka's tests are read with a zero `Stat` (version 0), so a real
  conditional write yields version 1. Kafka's mocks stub the write result with
  `withPartitionEpoch(2)`, an arbitrary stub value; the rows expect 1 (see
  docs/kafka-semantics.md, section 2.3).
- `addLeaderAndIsrRequestForBrokers` on the mocked batch -> `LeaderAndIsrRecord` outputs (the
  rows list every request; UpdateMetadata is not modelled).
- A failed or invalid transition (only logged by Kafka) -> a `StateChangeFailedRecord`.
- Live brokers -> `BrokerFact(registered=True)`; `shuttingDownBrokerIds` -> `shutting_down=True`.
- `OfflinePartitionLeaderElectionStrategy(allowUnclean)` ->
  `strategy=OfflineElection(allow_unclean)`;
  the topic's `LogConfig` (default: unclean election disabled) ->
  `PartitionContext.unclean_leader_election_enable`.
- IBP 3.2 / 3.1 (`isLeaderRecoverySupported`) -> `ControllerConfig.leader_recovery_supported`.

Ported as the outcome Kafka ends with, because there is no store here:
- `testNewPartitionToOnlinePartitionTransitionErrorCodeFromCreateStates`: the create answers
  NODEEXISTS, i.e. the partition-state znode already exists. Here that is a NewPartition record
  that already has leadership; Kafka leaves the partition in NewPartition, queues nothing and
  keeps the stored state.
- `testOfflinePartitionToOnlinePartitionTransitionErrorCodeFromStateLookup`: the read answers
  NONODE, which Kafka treats as "LeaderAndIsr information doesn't exist". Here that is
  `leadership=None`; the partition stays OfflinePartition and nothing is queued.

Not ported (no equivalent input in a store-less, metric-less core):
- `testNewPartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromCreateStates`: a
  ZooKeeperClientException thrown by `createTopicPartitionStatesRaw`. Nothing in a
  `PartitionRecord`/`PartitionContext` makes the creation of the initial state fail other
  than "no live replica", which Kafka handles on a different path before the write.
- `testOfflinePartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromStateLookup`: a
  ZooKeeperClientException thrown by `getTopicPartitionStatesRaw`; reading the stored state
  cannot fail here.
- `testNoOfflinePartitionsChangeForTopicsBeingDeleted`: it asserts only the
  `offlinePartitionCount` metric, which the core does not keep, and which excludes topics
  whose deletion has *started*, a fact `PartitionContext` does not carry (it has only
  `queued_for_deletion`); the partition states themselves do change in Kafka.
- `testUpdatingOfflinePartitionsCountDuringTopicDeletion`: it asserts only that
  `TopicDeletionManager.enqueueTopicsForDeletion` lowers the same metric; enqueueing changes
  no partition state, so there is nothing for this API to show.

`testUpdatingOfflinePartitionsCount` is ported: for a topic not being deleted, Kafka's
`updatePartitionStateMetrics` moves the count by +1 when a partition enters OfflinePartition
from another state and -1 when it leaves it, which is a fold over `PartitionStateChangeRecord`s.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from state_machines.commands import PartitionContext
from state_machines.election import (
    CONTROLLED_SHUTDOWN,
    OFFLINE,
    PREFERRED,
    ElectionStrategy,
    OfflineElection,
)
from state_machines.model import BrokerFact, ControllerConfig, LeaderAndIsr, ReplicaAssignment
from state_machines.outputs import (
    LeaderAndIsrRecord,
    PartitionStateChangeRecord,
    StateChangeFailedRecord,
)
from state_machines.partition import PartitionRecord, handle_partition_state_changes
from state_machines.states import LeaderRecoveryState, PartitionState, is_valid_partition_transition

P = PartitionState
TOPIC = "t"
PARTITION = 0
BROKER_ID = 5
OTHER_BROKER_ID = BROKER_ID + 1
CONTROLLER_EPOCH = 50
NO_LEADER = -1
LIVE = BrokerFact(registered=True, broker_epoch=0)
SHUTTING_DOWN = BrokerFact(registered=True, shutting_down=True, broker_epoch=0)

_UNCHANGED = object()


def leader_and_isr(
    leader: int,
    isr: tuple[int, ...],
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    recovery: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
) -> LeaderAndIsr:
    """Kafka's `LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr), controllerEpoch)`."""
    return LeaderAndIsr(leader, leader_epoch, isr, partition_epoch, recovery, CONTROLLER_EPOCH)


@dataclass(frozen=True)
class Lair:
    recipients: tuple[int, ...]
    state: LeaderAndIsr
    replicas: tuple[int, ...]
    is_new: bool


@dataclass(frozen=True)
class Case:
    name: str
    from_state: PartitionState | None  # None: no recorded state
    target: PartitionState
    expect_state: PartitionState
    strategy: ElectionStrategy | None = None
    replicas: tuple[int, ...] = ()
    leadership: LeaderAndIsr | None = None
    brokers: tuple[tuple[int, BrokerFact], ...] = ()
    config: ControllerConfig = ControllerConfig()
    expect_leadership: object = _UNCHANGED
    lair: tuple[Lair, ...] = ()
    failed: bool = False


def invalid(
    name: str,
    from_state: PartitionState | None,
    target: PartitionState,
    strategy: ElectionStrategy | None = None,
) -> Case:
    return Case(
        name,
        from_state,
        target,
        expect_state=from_state or P.NonExistentPartition,
        strategy=strategy,
        failed=True,
    )


def unclean_case(leader_recovery_supported: bool) -> Case:
    # Leader 6, ISR [6], replicas [6, 5], only 5 live; the admin asked for an unclean election.
    recovery = (
        LeaderRecoveryState.RECOVERING
        if leader_recovery_supported
        else LeaderRecoveryState.RECOVERED
    )
    elected = leader_and_isr(
        BROKER_ID, (BROKER_ID,), leader_epoch=1, partition_epoch=1, recovery=recovery
    )
    return Case(
        f"testOfflinePartitionToUncleanOnlinePartitionTransition[isLeaderRecoverySupported={str(leader_recovery_supported).lower()}]",
        P.OfflinePartition,
        P.OnlinePartition,
        expect_state=P.OnlinePartition,
        strategy=OfflineElection(allow_unclean=True),
        replicas=(OTHER_BROKER_ID, BROKER_ID),
        leadership=leader_and_isr(OTHER_BROKER_ID, (OTHER_BROKER_ID,)),
        brokers=((BROKER_ID, LIVE),),
        config=ControllerConfig(leader_recovery_supported=leader_recovery_supported),
        expect_leadership=elected,
        lair=(Lair((BROKER_ID,), elected, (OTHER_BROKER_ID, BROKER_ID), False),),
    )


CASES = [
    Case(
        "testNonexistentPartitionToNewPartitionTransition",
        None,
        P.NewPartition,
        expect_state=P.NewPartition,
    ),
    invalid(
        "testInvalidNonexistentPartitionToOnlinePartitionTransition",
        None,
        P.OnlinePartition,
        OFFLINE,
    ),
    invalid(
        "testInvalidNonexistentPartitionToOfflinePartitionTransition", None, P.OfflinePartition
    ),
    # Initialization: leader = first live replica, ISR = live replicas, LE 0, PE 0 (new znode),
    # LeaderAndIsr(isNew=true) to the ISR.
    Case(
        "testNewPartitionToOnlinePartitionTransition",
        P.NewPartition,
        P.OnlinePartition,
        expect_state=P.OnlinePartition,
        strategy=OFFLINE,
        replicas=(BROKER_ID,),
        brokers=((BROKER_ID, LIVE),),
        expect_leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
        lair=(Lair((BROKER_ID,), leader_and_isr(BROKER_ID, (BROKER_ID,)), (BROKER_ID,), True),),
    ),
    # NODEEXISTS from the create: the partition-state znode is already there (see docstring).
    Case(
        "testNewPartitionToOnlinePartitionTransitionErrorCodeFromCreateStates",
        P.NewPartition,
        P.OnlinePartition,
        expect_state=P.NewPartition,
        strategy=OFFLINE,
        replicas=(BROKER_ID,),
        brokers=((BROKER_ID, LIVE),),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID,), leader_epoch=3, partition_epoch=3),
        failed=True,
    ),
    Case(
        "testNewPartitionToOfflinePartitionTransition",
        P.NewPartition,
        P.OfflinePartition,
        expect_state=P.OfflinePartition,
    ),
    invalid(
        "testInvalidNewPartitionToNonexistentPartitionTransition",
        P.NewPartition,
        P.NonExistentPartition,
    ),
    # Preferred election of the current leader: ISR unchanged, LE still bumped.
    Case(
        "testOnlinePartitionToOnlineTransition",
        P.OnlinePartition,
        P.OnlinePartition,
        expect_state=P.OnlinePartition,
        strategy=PREFERRED,
        replicas=(BROKER_ID,),
        brokers=((BROKER_ID, LIVE),),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
        expect_leadership=leader_and_isr(
            BROKER_ID, (BROKER_ID,), leader_epoch=1, partition_epoch=1
        ),
        lair=(
            Lair(
                (BROKER_ID,),
                leader_and_isr(BROKER_ID, (BROKER_ID,), leader_epoch=1, partition_epoch=1),
                (BROKER_ID,),
                False,
            ),
        ),
    ),
    # The request also goes to the shutting-down broker.
    Case(
        "testOnlinePartitionToOnlineTransitionForControlledShutdown",
        P.OnlinePartition,
        P.OnlinePartition,
        expect_state=P.OnlinePartition,
        strategy=CONTROLLED_SHUTDOWN,
        replicas=(BROKER_ID, OTHER_BROKER_ID),
        brokers=((BROKER_ID, SHUTTING_DOWN), (OTHER_BROKER_ID, LIVE)),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID, OTHER_BROKER_ID)),
        expect_leadership=leader_and_isr(
            OTHER_BROKER_ID, (OTHER_BROKER_ID,), leader_epoch=1, partition_epoch=1
        ),
        lair=(
            Lair(
                (BROKER_ID, OTHER_BROKER_ID),
                leader_and_isr(
                    OTHER_BROKER_ID, (OTHER_BROKER_ID,), leader_epoch=1, partition_epoch=1
                ),
                (BROKER_ID, OTHER_BROKER_ID),
                False,
            ),
        ),
    ),
    Case(
        "testOnlinePartitionToOfflineTransition",
        P.OnlinePartition,
        P.OfflinePartition,
        expect_state=P.OfflinePartition,
    ),
    invalid(
        "testInvalidOnlinePartitionToNonexistentPartitionTransition",
        P.OnlinePartition,
        P.NonExistentPartition,
    ),
    invalid(
        "testInvalidOnlinePartitionToNewPartitionTransition", P.OnlinePartition, P.NewPartition
    ),
    Case(
        "testOfflinePartitionToOnlinePartitionTransition",
        P.OfflinePartition,
        P.OnlinePartition,
        expect_state=P.OnlinePartition,
        strategy=OFFLINE,
        replicas=(BROKER_ID,),
        brokers=((BROKER_ID, LIVE),),
        leadership=leader_and_isr(NO_LEADER, (BROKER_ID,)),
        expect_leadership=leader_and_isr(
            BROKER_ID, (BROKER_ID,), leader_epoch=1, partition_epoch=1
        ),
        lair=(
            Lair(
                (BROKER_ID,),
                leader_and_isr(BROKER_ID, (BROKER_ID,), leader_epoch=1, partition_epoch=1),
                (BROKER_ID,),
                False,
            ),
        ),
    ),
    unclean_case(True),
    unclean_case(False),
    # NONODE from the read: no stored leader and ISR (see docstring).
    Case(
        "testOfflinePartitionToOnlinePartitionTransitionErrorCodeFromStateLookup",
        P.OfflinePartition,
        P.OnlinePartition,
        expect_state=P.OfflinePartition,
        strategy=OFFLINE,
        replicas=(BROKER_ID,),
        brokers=((BROKER_ID, LIVE),),
        leadership=None,
        failed=True,
    ),
    Case(
        "testOfflinePartitionToNonexistentPartitionTransition",
        P.OfflinePartition,
        P.NonExistentPartition,
        expect_state=P.NonExistentPartition,
    ),
    invalid(
        "testInvalidOfflinePartitionToNewPartitionTransition", P.OfflinePartition, P.NewPartition
    ),
]


def _ctx(
    brokers: tuple[tuple[int, BrokerFact], ...] = (), queued: bool = False
) -> PartitionContext:
    return PartitionContext(
        active=True,
        controller_epoch=CONTROLLER_EPOCH,
        unclean_leader_election_enable=False,
        queued_for_deletion=queued,
        brokers=brokers,
    )


def _lairs(outputs: tuple[object, ...]) -> list[Lair]:
    return [
        Lair(
            tuple(sorted(o.recipients)),
            LeaderAndIsr(
                o.leader,
                o.leader_epoch,
                o.isr,
                o.partition_epoch,
                LeaderRecoveryState(o.leader_recovery_state),
                o.controller_epoch,
            ),
            o.replicas,
            o.is_new,
        )
        for o in outputs
        if isinstance(o, LeaderAndIsrRecord)
    ]


def test_every_kafka_method_is_ported_or_listed() -> None:
    ported = {c.name.split("[")[0] for c in CASES} | {"testUpdatingOfflinePartitionsCount"}
    not_ported = {
        "testNewPartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromCreateStates",
        "testOfflinePartitionToOnlinePartitionTransitionZooKeeperClientExceptionFromStateLookup",
        "testNoOfflinePartitionsChangeForTopicsBeingDeleted",
        "testUpdatingOfflinePartitionsCountDuringTopicDeletion",
    }
    assert len({c.name for c in CASES}) == len(CASES) == 18
    assert not ported & not_ported
    # 21 @Test methods plus one @ParameterizedTest in PartitionStateMachineTest.scala
    assert len(ported | not_ported) == 22


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_partition_state_change(case: Case) -> None:
    record = PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment(case.replicas),
        state=case.from_state,
        leadership=case.leadership,
        brokers=case.brokers,
    )
    result = handle_partition_state_changes(
        record, case.target, _ctx(case.brokers), case.strategy, case.config
    )
    assert result.state is not None
    assert result.state.state == case.expect_state
    expect_leadership = (
        case.leadership if case.expect_leadership is _UNCHANGED else case.expect_leadership
    )
    assert result.state.leadership == expect_leadership
    assert result.state.assignment == ReplicaAssignment(case.replicas)
    assert _lairs(result.outputs) == list(case.lair)
    failures = [o for o in result.outputs if isinstance(o, StateChangeFailedRecord)]
    if case.failed:
        assert [f.target_state for f in failures] == [case.target.value]
    else:
        assert failures == []


def _offline_count_delta(outputs: tuple[object, ...]) -> int:
    """`ControllerContext.updatePartitionStateMetrics` for a topic whose deletion has not
    started."""
    delta = 0
    for o in outputs:
        if isinstance(o, PartitionStateChangeRecord):
            entering = (
                o.to_state == P.OfflinePartition.value and o.from_state != P.OfflinePartition.value
            )
            leaving = (
                o.from_state == P.OfflinePartition.value and o.to_state != P.OfflinePartition.value
            )
            delta += int(entering) - int(leaving)
    return delta


def test_testUpdatingOfflinePartitionsCount() -> None:
    brokers = ((BROKER_ID, LIVE),)
    ctx = _ctx(brokers)
    # Kafka's mocked store holds LeaderAndIsr(5, [5]) for every partition, which the
    # Offline -> Online election reads.
    records = [
        PartitionRecord(
            "test",
            p,
            ReplicaAssignment((BROKER_ID,)),
            leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
            brokers=brokers,
        )
        for p in (0, 1, 2, 3)
    ]
    offline_count = 0

    def step(target: PartitionState, strategy: ElectionStrategy | None = None) -> None:
        nonlocal records, offline_count
        results = [handle_partition_state_changes(r, target, ctx, strategy) for r in records]
        for res in results:
            assert not [o for o in res.outputs if isinstance(o, StateChangeFailedRecord)]
            offline_count += _offline_count_delta(res.outputs)
        records = [res.state for res in results]  # type: ignore[misc]

    step(P.NewPartition)
    step(P.OfflinePartition)
    assert offline_count == 4, "There should be 4 offline partition(s)"
    assert [r.state for r in records] == [P.OfflinePartition] * 4

    step(P.OnlinePartition, OFFLINE)
    assert offline_count == 0, "There should be no offline partition(s)"
    assert [r.state for r in records] == [P.OnlinePartition] * 4
    assert [r.leadership.leader for r in records] == [BROKER_ID] * 4  # type: ignore[union-attr]


# -- full 4x4 transition matrix ---------------------------------------------------------------

# Literal copy of docs/kafka-semantics.md section 1.2 (row = current, column = target),
# itself read from the valid previous states in PartitionStateMachine.scala.
COLUMNS = (P.NewPartition, P.OnlinePartition, P.OfflinePartition, P.NonExistentPartition)
VALIDITY = {
    #                         New  Onl  Off  NonEx
    P.NonExistentPartition: ("V", "-", "-", "-"),
    P.NewPartition: ("-", "V", "V", "-"),
    P.OnlinePartition: ("-", "V", "V", "-"),
    P.OfflinePartition: ("-", "V", "V", "V"),
}
MATRIX = [
    (current, target, VALIDITY[current][i] == "V")
    for current in VALIDITY
    for i, target in enumerate(COLUMNS)
]


def test_matrix_covers_every_pair() -> None:
    assert len(MATRIX) == 16
    assert {(c, t) for c, t, _ in MATRIX} == {(c, t) for c in P for t in P}
    assert sum(valid for _, _, valid in MATRIX) == 8


@pytest.mark.parametrize(
    ("current", "target", "valid"), MATRIX, ids=[f"{c.value}->{t.value}" for c, t, _ in MATRIX]
)
def test_transition_table_matches_kafka(
    current: PartitionState, target: PartitionState, valid: bool
) -> None:
    assert is_valid_partition_transition(current, target) is valid
    assert (current in target.valid_previous_states) is valid


@pytest.mark.parametrize(
    ("current", "target", "valid"), MATRIX, ids=[f"{c.value}->{t.value}" for c, t, _ in MATRIX]
)
def test_transition_matrix(current: PartitionState, target: PartitionState, valid: bool) -> None:
    # t-0 on broker 5 (live). Partitions that have been Online/Offline have a stored leader
    # and ISR; NonExistent/New ones do not (initialization creates it).
    has_state = current in (P.OnlinePartition, P.OfflinePartition)
    leadership = leader_and_isr(BROKER_ID, (BROKER_ID,)) if has_state else None
    brokers = ((BROKER_ID, LIVE),)
    record = PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment((BROKER_ID,)),
        state=current,
        leadership=leadership,
        brokers=brokers,
    )
    result = handle_partition_state_changes(record, target, _ctx(brokers), OFFLINE)
    assert result.state is not None
    failures = [o for o in result.outputs if isinstance(o, StateChangeFailedRecord)]
    if valid:
        assert failures == []
        assert result.state.state is target
    else:
        assert result.state.state is current
        assert [f.target_state for f in failures] == [target.value]
        assert _lairs(result.outputs) == []
        assert result.state.leadership == leadership
