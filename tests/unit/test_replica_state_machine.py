"""Port of Kafka 3.9.0 `ReplicaStateMachineTest.scala`.

Source: core/src/test/scala/unit/kafka/controller/ReplicaStateMachineTest.scala. Every Kafka
test method is one row of `CASES` (or of `STARTUP_CASES`), named after it, and run through
`partition.handle_replica_state_changes` (Kafka's `ZkReplicaStateMachine.handleStateChanges`
for one partition).

How Kafka's mocks map onto this API:
- `controllerContext.replicaState(replica)` -> `PartitionRecord.replica_states` of the result;
  Kafka's `putReplicaStateIfNotExists` records NonExistentReplica before validating, so a
  replica whose invalid transition started from "no state" is expected as NonExistentReplica.
- `zkClient.updateLeaderAndIsr` returning the written state -> `PartitionRecord.leadership`
  (the partition epoch is the znode version: +1 per successful write).
- `addLeaderAndIsrRequestForBrokers` / `addStopReplicaRequestForBrokers` on the mocked batch
  -> `LeaderAndIsrRecord` / `StopReplicaRecord` outputs. Kafka's mocks only `verify` the calls
  they expect; the rows here list the complete set of requests, which is what the real
  `doHandleStateChanges` queues (UpdateMetadata requests are not modelled). The batch sends
  only to brokers live or shutting down at send time (`sendLeaderAndIsrRequest`,
  `sendStopReplicaRequests`), which a mocked batch never does; where Kafka's test registers
  no live broker, its row registers the request's recipients live (`live_brokers`), so that
  the record shows the request Kafka's `verify` sees queued.
- A failed or invalid transition (only logged by Kafka) -> a `StateChangeFailedRecord`.

`testStartup*` exercise `ReplicaStateMachine.startup()`, which `handle_replica_state_changes`
does not cover (it starts with `initializeReplicaState`); they run the partition's share of
controller failover (`partition_step` with `Failover`), which performs that startup, and
look only at the replica state, as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from state_machines.commands import Command, Failover, PartitionContext
from state_machines.model import BrokerFact, ControllerConfig, LeaderAndIsr, ReplicaAssignment
from state_machines.outputs import LeaderAndIsrRecord, StateChangeFailedRecord, StopReplicaRecord
from state_machines.partition import PartitionRecord, handle_replica_state_changes, partition_step
from state_machines.states import LeaderRecoveryState, ReplicaState, is_valid_replica_transition

R = ReplicaState
TOPIC = "t"
PARTITION = 0
BROKER_ID = 5
OTHER_BROKER_ID = BROKER_ID + 1
CONTROLLER_EPOCH = 50
LIVE = BrokerFact(registered=True, broker_epoch=1)

_UNCHANGED = object()


def leader_and_isr(
    leader: int, isr: tuple[int, ...], leader_epoch: int = 0, partition_epoch: int = 0
) -> LeaderAndIsr:
    """Kafka's `LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr), controllerEpoch)`."""
    return LeaderAndIsr(
        leader, leader_epoch, isr, partition_epoch, LeaderRecoveryState.RECOVERED, CONTROLLER_EPOCH
    )


@dataclass(frozen=True)
class Lair:
    """The fields of one LeaderAndIsr request that Kafka's `verify` pins down."""

    recipients: tuple[int, ...]
    state: LeaderAndIsr
    replicas: tuple[int, ...]
    is_new: bool


@dataclass(frozen=True)
class Stop:
    broker_id: int
    delete_partition: bool
    leader_epoch: int


@dataclass(frozen=True)
class Case:
    name: str
    from_state: ReplicaState | None  # None: no recorded state
    target: ReplicaState
    expect_state: ReplicaState | None  # None: the replica's state entry is removed
    replicas: tuple[int, ...] = ()
    leadership: LeaderAndIsr | None = None
    live_brokers: tuple[int, ...] = ()
    expect_replicas: object = _UNCHANGED
    expect_leadership: object = _UNCHANGED
    lair: tuple[Lair, ...] = ()
    stop: tuple[Stop, ...] = ()
    failed: bool = False


def invalid(name: str, from_state: ReplicaState | None, target: ReplicaState) -> Case:
    """Kafka's `testInvalidTransition`: the state is left as it was and nothing is sent."""
    return Case(
        name, from_state, target, expect_state=from_state or R.NonExistentReplica, failed=True
    )


CASES = [
    Case(
        "testNonexistentReplicaToNewReplicaTransition",
        None,
        R.NewReplica,
        expect_state=R.NewReplica,
    ),
    invalid("testInvalidNonexistentReplicaToOnlineReplicaTransition", None, R.OnlineReplica),
    invalid("testInvalidNonexistentReplicaToOfflineReplicaTransition", None, R.OfflineReplica),
    invalid(
        "testInvalidNonexistentReplicaToReplicaDeletionStartedTransition",
        None,
        R.ReplicaDeletionStarted,
    ),
    invalid(
        "testInvalidNonexistentReplicaToReplicaDeletionIneligibleTransition",
        None,
        R.ReplicaDeletionIneligible,
    ),
    invalid(
        "testInvalidNonexistentReplicaToReplicaDeletionSuccessfulTransition",
        None,
        R.ReplicaDeletionSuccessful,
    ),
    invalid(
        "testInvalidNewReplicaToNonexistentReplicaTransition", R.NewReplica, R.NonExistentReplica
    ),
    Case(
        "testNewReplicaToOnlineReplicaTransition",
        R.NewReplica,
        R.OnlineReplica,
        expect_state=R.OnlineReplica,
        replicas=(BROKER_ID,),
        expect_replicas=(BROKER_ID,),
    ),
    # No leadership info: StopReplica(delete=false) with epoch NoEpoch (-1) plus an
    # UpdateMetadata to the live brokers (not modelled); no LeaderAndIsr.
    Case(
        "testNewReplicaToOfflineReplicaTransition",
        R.NewReplica,
        R.OfflineReplica,
        expect_state=R.OfflineReplica,
        live_brokers=(BROKER_ID,),
        stop=(Stop(BROKER_ID, False, -1),),
    ),
    invalid(
        "testInvalidNewReplicaToReplicaDeletionStartedTransition",
        R.NewReplica,
        R.ReplicaDeletionStarted,
    ),
    invalid(
        "testInvalidNewReplicaToReplicaDeletionIneligibleTransition",
        R.NewReplica,
        R.ReplicaDeletionIneligible,
    ),
    invalid(
        "testInvalidNewReplicaToReplicaDeletionSuccessfulTransition",
        R.NewReplica,
        R.ReplicaDeletionSuccessful,
    ),
    invalid(
        "testInvalidOnlineReplicaToNonexistentReplicaTransition",
        R.OnlineReplica,
        R.NonExistentReplica,
    ),
    invalid("testInvalidOnlineReplicaToNewReplicaTransition", R.OnlineReplica, R.NewReplica),
    Case(
        "testOnlineReplicaToOnlineReplicaTransition",
        R.OnlineReplica,
        R.OnlineReplica,
        expect_state=R.OnlineReplica,
        replicas=(BROKER_ID,),
        live_brokers=(BROKER_ID,),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
        lair=(Lair((BROKER_ID,), leader_and_isr(BROKER_ID, (BROKER_ID,)), (BROKER_ID,), False),),
    ),
    # The leader goes offline: the stored state becomes leader -1, ISR [other], LE+1, and the
    # write moves the partition epoch (znode version) from 0 to 1. The StopReplica is queued
    # before the write, so it carries the leader epoch read at that time (0).
    Case(
        "testOnlineReplicaToOfflineReplicaTransition",
        R.OnlineReplica,
        R.OfflineReplica,
        expect_state=R.OfflineReplica,
        replicas=(BROKER_ID, OTHER_BROKER_ID),
        live_brokers=(BROKER_ID, OTHER_BROKER_ID),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID, OTHER_BROKER_ID)),
        expect_leadership=leader_and_isr(-1, (OTHER_BROKER_ID,), leader_epoch=1, partition_epoch=1),
        stop=(Stop(BROKER_ID, False, 0),),
        lair=(
            Lair(
                (OTHER_BROKER_ID,),
                leader_and_isr(-1, (OTHER_BROKER_ID,), leader_epoch=1, partition_epoch=1),
                (BROKER_ID, OTHER_BROKER_ID),
                False,
            ),
        ),
    ),
    invalid(
        "testInvalidOnlineReplicaToReplicaDeletionStartedTransition",
        R.OnlineReplica,
        R.ReplicaDeletionStarted,
    ),
    invalid(
        "testInvalidOnlineReplicaToReplicaDeletionIneligibleTransition",
        R.OnlineReplica,
        R.ReplicaDeletionIneligible,
    ),
    invalid(
        "testInvalidOnlineReplicaToReplicaDeletionSuccessfulTransition",
        R.OnlineReplica,
        R.ReplicaDeletionSuccessful,
    ),
    invalid(
        "testInvalidOfflineReplicaToNonexistentReplicaTransition",
        R.OfflineReplica,
        R.NonExistentReplica,
    ),
    invalid("testInvalidOfflineReplicaToNewReplicaTransition", R.OfflineReplica, R.NewReplica),
    Case(
        "testOfflineReplicaToOnlineReplicaTransition",
        R.OfflineReplica,
        R.OnlineReplica,
        expect_state=R.OnlineReplica,
        replicas=(BROKER_ID,),
        live_brokers=(BROKER_ID,),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
        lair=(Lair((BROKER_ID,), leader_and_isr(BROKER_ID, (BROKER_ID,)), (BROKER_ID,), False),),
    ),
    # StopReplica(delete=true); no leadership info and the topic is not queued: epoch -1.
    Case(
        "testOfflineReplicaToReplicaDeletionStartedTransition",
        R.OfflineReplica,
        R.ReplicaDeletionStarted,
        expect_state=R.ReplicaDeletionStarted,
        live_brokers=(BROKER_ID,),
        stop=(Stop(BROKER_ID, True, -1),),
    ),
    Case(
        "testOfflineReplicaToReplicaDeletionIneligibleTransition",
        R.OfflineReplica,
        R.ReplicaDeletionIneligible,
        expect_state=R.ReplicaDeletionIneligible,
    ),
    invalid(
        "testInvalidOfflineReplicaToReplicaDeletionSuccessfulTransition",
        R.OfflineReplica,
        R.ReplicaDeletionSuccessful,
    ),
    invalid(
        "testInvalidReplicaDeletionStartedToNonexistentReplicaTransition",
        R.ReplicaDeletionStarted,
        R.NonExistentReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionStartedToNewReplicaTransition",
        R.ReplicaDeletionStarted,
        R.NewReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionStartedToOnlineReplicaTransition",
        R.ReplicaDeletionStarted,
        R.OnlineReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionStartedToOfflineReplicaTransition",
        R.ReplicaDeletionStarted,
        R.OfflineReplica,
    ),
    Case(
        "testReplicaDeletionStartedToReplicaDeletionIneligibleTransition",
        R.ReplicaDeletionStarted,
        R.ReplicaDeletionIneligible,
        expect_state=R.ReplicaDeletionIneligible,
    ),
    Case(
        "testReplicaDeletionStartedToReplicaDeletionSuccessfulTransition",
        R.ReplicaDeletionStarted,
        R.ReplicaDeletionSuccessful,
        expect_state=R.ReplicaDeletionSuccessful,
    ),
    # The replica leaves the assignment and its state entry is removed.
    Case(
        "testReplicaDeletionSuccessfulToNonexistentReplicaTransition",
        R.ReplicaDeletionSuccessful,
        R.NonExistentReplica,
        expect_state=None,
        replicas=(BROKER_ID,),
        expect_replicas=(),
    ),
    invalid(
        "testInvalidReplicaDeletionSuccessfulToNewReplicaTransition",
        R.ReplicaDeletionSuccessful,
        R.NewReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionSuccessfulToOnlineReplicaTransition",
        R.ReplicaDeletionSuccessful,
        R.OnlineReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionSuccessfulToOfflineReplicaTransition",
        R.ReplicaDeletionSuccessful,
        R.OfflineReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionSuccessfulToReplicaDeletionStartedTransition",
        R.ReplicaDeletionSuccessful,
        R.ReplicaDeletionStarted,
    ),
    invalid(
        "testInvalidReplicaDeletionSuccessfulToReplicaDeletionIneligibleTransition",
        R.ReplicaDeletionSuccessful,
        R.ReplicaDeletionIneligible,
    ),
    invalid(
        "testInvalidReplicaDeletionIneligibleToNonexistentReplicaTransition",
        R.ReplicaDeletionIneligible,
        R.NonExistentReplica,
    ),
    invalid(
        "testInvalidReplicaDeletionIneligibleToNewReplicaTransition",
        R.ReplicaDeletionIneligible,
        R.NewReplica,
    ),
    Case(
        "testReplicaDeletionIneligibleToOnlineReplicaTransition",
        R.ReplicaDeletionIneligible,
        R.OnlineReplica,
        expect_state=R.OnlineReplica,
        replicas=(BROKER_ID,),
        live_brokers=(BROKER_ID,),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID,)),
        lair=(Lair((BROKER_ID,), leader_and_isr(BROKER_ID, (BROKER_ID,)), (BROKER_ID,), False),),
    ),
    invalid(
        "testInvalidReplicaDeletionIneligibleToReplicaDeletionStartedTransition",
        R.ReplicaDeletionIneligible,
        R.ReplicaDeletionStarted,
    ),
    invalid(
        "testInvalidReplicaDeletionIneligibleToReplicaDeletionSuccessfulTransition",
        R.ReplicaDeletionIneligible,
        R.ReplicaDeletionSuccessful,
    ),
]


def _ctx(live_brokers: tuple[int, ...] = (), queued: bool = False) -> PartitionContext:
    return PartitionContext(
        active=True,
        controller_epoch=CONTROLLER_EPOCH,
        unclean_leader_election_enable=False,
        queued_for_deletion=queued,
        brokers=tuple((b, LIVE) for b in live_brokers),
    )


def _record(case: Case) -> PartitionRecord:
    states = () if case.from_state is None else ((BROKER_ID, case.from_state),)
    return PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment(case.replicas),
        leadership=case.leadership,
        replica_states=states,
        brokers=tuple((b, LIVE) for b in case.live_brokers),
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


def _stops(outputs: tuple[object, ...]) -> list[Stop]:
    return [
        Stop(o.broker_id, o.delete_partition, o.leader_epoch)
        for o in outputs
        if isinstance(o, StopReplicaRecord)
    ]


def test_every_kafka_method_has_one_row() -> None:
    names = [c.name for c in CASES] + [c[0] for c in STARTUP_CASES]
    assert len(names) == len(set(names)) == 45  # @Test methods in ReplicaStateMachineTest.scala


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_replica_state_change(case: Case) -> None:
    record = _record(case)
    result = handle_replica_state_changes(record, [BROKER_ID], case.target, _ctx(case.live_brokers))
    assert result.state is not None
    states = dict(result.state.replica_states)
    if case.expect_state is None:
        assert BROKER_ID not in states
    else:
        assert states.get(BROKER_ID) == case.expect_state

    expect_replicas = case.replicas if case.expect_replicas is _UNCHANGED else case.expect_replicas
    assert result.state.assignment == ReplicaAssignment(expect_replicas)  # type: ignore[arg-type]
    expect_leadership = (
        case.leadership if case.expect_leadership is _UNCHANGED else case.expect_leadership
    )
    assert result.state.leadership == expect_leadership

    assert _lairs(result.outputs) == list(case.lair)
    assert _stops(result.outputs) == list(case.stop)
    failures = [o for o in result.outputs if isinstance(o, StateChangeFailedRecord)]
    if case.failed:
        assert [(f.broker_id, f.target_state) for f in failures] == [(BROKER_ID, case.target.value)]
    else:
        assert failures == []


# -- startup --------------------------------------------------------------------------------

# (Kafka method, replicas of t-0, live brokers, replica looked at, its state after startup)
STARTUP_CASES = [
    ("testStartupOnlinePartition", (BROKER_ID,), (BROKER_ID,), BROKER_ID, R.OnlineReplica),
    ("testStartupOfflinePartition", (BROKER_ID,), (), BROKER_ID, R.OfflineReplica),
    ("testStartupWithReplicaWithoutLeader", (100,), (BROKER_ID,), 100, R.OfflineReplica),
]


@pytest.mark.parametrize(
    ("name", "replicas", "live_brokers", "replica", "expected"),
    STARTUP_CASES,
    ids=[c[0] for c in STARTUP_CASES],
)
def test_replica_state_machine_startup(
    name: str,
    replicas: tuple[int, ...],
    live_brokers: tuple[int, ...],
    replica: int,
    expected: ReplicaState,
) -> None:
    record = PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment(replicas),
        brokers=tuple((b, LIVE) for b in live_brokers),
    )
    assert dict(record.replica_states).get(replica) is None
    cmd = Command(TOPIC, PARTITION, 0, None, _ctx(live_brokers), Failover())
    result = partition_step(record, cmd, ControllerConfig())
    assert result.state is not None
    assert dict(result.state.replica_states).get(replica) == expected


# -- full 7x7 transition matrix ---------------------------------------------------------------

# Literal copy of docs/kafka-semantics.md section 1.1 (row = current, column = target),
# itself read from the valid previous states in ReplicaStateMachine.scala.
COLUMNS = (
    R.NewReplica,
    R.OnlineReplica,
    R.OfflineReplica,
    R.ReplicaDeletionStarted,
    R.ReplicaDeletionSuccessful,
    R.ReplicaDeletionIneligible,
    R.NonExistentReplica,
)
VALIDITY = {
    #                               New  Onl  Off  DSt  DSu  DIn  NonEx
    R.NonExistentReplica: ("V", "-", "-", "-", "-", "-", "-"),
    R.NewReplica: ("-", "V", "V", "-", "-", "-", "-"),
    R.OnlineReplica: ("-", "V", "V", "-", "-", "-", "-"),
    R.OfflineReplica: ("-", "V", "V", "V", "-", "V", "-"),
    R.ReplicaDeletionStarted: ("-", "-", "-", "-", "V", "V", "-"),
    R.ReplicaDeletionSuccessful: ("-", "-", "-", "-", "-", "-", "V"),
    R.ReplicaDeletionIneligible: ("-", "V", "V", "-", "-", "-", "-"),
}
MATRIX = [
    (current, target, VALIDITY[current][i] == "V")
    for current in VALIDITY
    for i, target in enumerate(COLUMNS)
]


def test_matrix_covers_every_pair() -> None:
    assert len(MATRIX) == 49
    assert {(c, t) for c, t, _ in MATRIX} == {(c, t) for c in R for t in R}
    assert sum(valid for _, _, valid in MATRIX) == 14


@pytest.mark.parametrize(
    ("current", "target", "valid"), MATRIX, ids=[f"{c.value}->{t.value}" for c, t, _ in MATRIX]
)
def test_transition_table_matches_kafka(
    current: ReplicaState, target: ReplicaState, valid: bool
) -> None:
    assert is_valid_replica_transition(current, target) is valid
    assert (current in target.valid_previous_states) is valid


@pytest.mark.parametrize(
    "with_leadership", [False, True], ids=["no-leadership", "leader-is-other-broker"]
)
@pytest.mark.parametrize(
    ("current", "target", "valid"), MATRIX, ids=[f"{c.value}->{t.value}" for c, t, _ in MATRIX]
)
def test_transition_matrix(
    current: ReplicaState, target: ReplicaState, valid: bool, with_leadership: bool
) -> None:
    # Replica 5 of t-0 with replicas [5, 6], both brokers live. With leadership, broker 6
    # leads, so NewReplica is not refused for "being requested to become leader".
    leadership = (
        leader_and_isr(OTHER_BROKER_ID, (BROKER_ID, OTHER_BROKER_ID)) if with_leadership else None
    )
    record = PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment((BROKER_ID, OTHER_BROKER_ID)),
        leadership=leadership,
        replica_states=((BROKER_ID, current), (OTHER_BROKER_ID, R.OnlineReplica)),
        brokers=((BROKER_ID, LIVE), (OTHER_BROKER_ID, LIVE)),
    )
    result = handle_replica_state_changes(
        record, [BROKER_ID], target, _ctx((BROKER_ID, OTHER_BROKER_ID))
    )
    assert result.state is not None
    states = dict(result.state.replica_states)
    failures = [o for o in result.outputs if isinstance(o, StateChangeFailedRecord)]
    assert states[OTHER_BROKER_ID] is R.OnlineReplica
    if valid:
        assert failures == []
        if target is R.NonExistentReplica:
            assert BROKER_ID not in states
            assert result.state.assignment == ReplicaAssignment((OTHER_BROKER_ID,))
        else:
            assert states[BROKER_ID] is target
    else:
        assert states[BROKER_ID] is current
        assert [(f.broker_id, f.target_state) for f in failures] == [(BROKER_ID, target.value)]
        # Nothing is queued and nothing is written for an invalid transition.
        assert _lairs(result.outputs) == []
        assert _stops(result.outputs) == []
        assert result.state.leadership == leadership
        assert result.state.assignment == record.assignment


def test_new_replica_refused_for_the_leader_is_logged_with_offline_replica_as_target() -> None:
    # ZkReplicaStateMachine.doHandleStateChanges, case NewReplica: the replica that leads
    # cannot become NewReplica; Kafka logs the failure naming OfflineReplica as the target
    # (logFailedStateChange(replica, currentState, OfflineReplica, exception)), queues no
    # request and leaves the replica's state as it was.
    record = PartitionRecord(
        TOPIC,
        PARTITION,
        ReplicaAssignment((BROKER_ID, OTHER_BROKER_ID)),
        leadership=leader_and_isr(BROKER_ID, (BROKER_ID, OTHER_BROKER_ID)),
        brokers=((BROKER_ID, LIVE), (OTHER_BROKER_ID, LIVE)),
    )
    result = handle_replica_state_changes(
        record, [BROKER_ID], R.NewReplica, _ctx((BROKER_ID, OTHER_BROKER_ID))
    )
    assert result.outputs == (
        StateChangeFailedRecord(
            TOPIC,
            PARTITION,
            BROKER_ID,
            "OfflineReplica",
            "replica is being requested to become leader",
        ),
    )
    assert result.state is not None
    assert dict(result.state.replica_states) == {BROKER_ID: R.NonExistentReplica}
