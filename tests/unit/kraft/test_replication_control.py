"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0), for the handlers
built so far: one test per Kafka method, named after it.

Source: metadata/src/test/java/org/apache/kafka/controller/ReplicationControlManagerTest.java.
Kafka's `ReplicationControlTestContext` is `Ctx` here: a broker registry and the
partitions, changed only by replaying the records the handlers return. It folds the
per-partition handlers over partitions as Kafka's handlers do (the partitions with the
broker in their ISR, the leaderless ones, the requested ones), with what Kafka's test
context does around them:

* `register_brokers`: a RegisterBrokerRecord at epoch 100 + id with one directory
  TESTBROKER<5-digit id>DIRAAAA;
* `unfence_brokers`: a heartbeat; a fenced broker is unfenced (`handleBrokerUnfenced`), an
  unfenced one only counts as seen;
* `fence_brokers`: sees every other broker (unfencing the fenced ones), then fences the
  given unfenced brokers, least recently seen first, as `maybeFenceOneStaleBroker` does;
* `in_controlled_shutdown_brokers`: replays the BrokerRegistrationChangeRecord alone.

Topic ids are the topic's name with "-id"; `MetadataVersion.latestTesting()` is 4.0-IV1,
3.9.0's latest. Topic-level requests (ElectLeaders, AlterPartition,
AlterPartitionReassignments) are assembled here from the per-partition answers.

Where Kafka lets its StripedReplicaPlacer choose the replicas, the test gives the placer's
choice. testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions runs its "none",
"static" and "dynamic_topic" cases; "dynamic_cluster" and "dynamic_node" differ only in
where ConfigurationControlManager resolves the setting, which arrives here resolved.

Not ported, for machinery not built here:

* topic-level CreateTopics and CreatePartitions (the placer, TopicRecord and topic ids,
  configs, policies, validate-only, quotas): testCreateTopics,
  testCreateTopicsWithMutationQuotaExceeded, testCreateTopicsWithConfigs,
  testCreateTopicsWithValidateOnlyFlag, testInvalidCreateTopicsWithValidateOnlyFlag,
  testCreateTopicsWithPolicy, testCreatePartitions,
  testCreatePartitionsWithMutationQuotaExceeded;
* topic names: testCreateTopicWithCollisionChars, testValidateNewTopicNames,
  testTopicNameCollision;
* topic deletion and the brokersToIsrs/brokersToElrs indexes: testDeleteTopics,
  testDeleteTopicsWithMutationQuotaExceeded, testEligibleLeaderReplicas_DeleteTopic;
* topic ids on replay: testDuplicateTopicIdReplay;
* heartbeat sessions and the clock: testProcessExpiredBrokerHeartbeat, and the
  usableBrokers half of testKRaftClusterDescriber;
* AssignReplicasToDirs: testHandleAssignReplicasToDirsFailsOnOlderMv,
  testHandleAssignReplicasToDirs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from state_machines.kraft.broker_heartbeat_manager import (
    BrokerControlState,
    calculate_next_broker_state,
    heartbeat_handler,
)
from state_machines.kraft.cluster_control import (
    BrokerRegistry,
    controlled_shutdown_record,
    directories_offline_record,
    fence_broker_record,
    unfence_broker_record,
)
from state_machines.kraft.messages import (
    API_NONE,
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResponse,
    ApiError,
    BrokerState,
)
from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.partition_registration import PartitionRegistration
from state_machines.kraft.records import (
    IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
    MIGRATING_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    ApiMessageAndVersion,
    BrokerRegistrationChangeRecord,
    MetadataPartitionRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from state_machines.kraft.replication_control import (
    ElectionType,
    TopicContext,
    alter_partition,
    alter_partition_reassignment,
    alter_partition_request_error,
    balance_partition_leader,
    cluster_describer_default_dir,
    create_partition,
    effective_min_isr,
    elect_leader,
    handle_broker_fenced,
    handle_broker_in_controlled_shutdown,
    handle_broker_unclean_shutdown,
    handle_broker_unfenced,
    handle_directories_offline,
    is_imbalanced,
    maybe_elect_unclean_leader,
    unknown_topic_error,
    validate_manual_partition_assignment,
)
from state_machines.model import NO_LEADER
from state_machines.states import LeaderRecoveryState

LATEST_TESTING = MV.IBP_4_0_IV1
RECOVERED = LeaderRecoveryState.RECOVERED
RECOVERING = LeaderRecoveryState.RECOVERING
ALTER_PARTITION_VERSIONS = [0, 1, 2, 3]  # @ApiKeyVersionsSource(apiKey = ALTER_PARTITION)


def dir_of(broker_id: int) -> str:
    return "TESTBROKER" + str(100000 + broker_id)[1:] + "DIRAAAA"


def default_broker_epoch(broker_id: int) -> int:
    return broker_id + 100


def isr_with_default_epoch(*isr: int) -> tuple[BrokerState, ...]:
    return tuple(BrokerState(b, default_broker_epoch(b)) for b in isr)


def registration(replicas: Sequence[int], isr: Sequence[int], leader: int, leader_epoch: int, partition_epoch: int,
                 adding: Sequence[int] = ()) -> PartitionRegistration:
    return PartitionRegistration(replicas=tuple(replicas), directories=tuple(dir_of(r) for r in replicas),
                                 isr=tuple(isr), leader=leader, leader_epoch=leader_epoch,
                                 partition_epoch=partition_epoch, adding_replicas=tuple(adding))


class Ctx:
    """`ReplicationControlTestContext`."""

    def __init__(self, mv: MV = LATEST_TESTING, elr: bool = False, unclean: bool = False) -> None:
        self.mv = mv
        self.elr = elr
        self.static_unclean = unclean
        self.registry = BrokerRegistry()
        self.parts: dict[tuple[str, int], PartitionRegistration] = {}
        self.min_isr: dict[str, int] = {}
        self.unclean: dict[str, bool] = {}
        self._clock = itertools.count()
        self.seen: dict[int, int] = {}

    # -- topics ----------------------------------------------------------------------

    def topic(self, name: str) -> TopicContext:
        rf = len(self.parts[(name, 0)].replicas)
        return TopicContext(topic_id=f"{name}-id", name=name, metadata_version=self.mv,
                            min_isr=effective_min_isr(self.min_isr.get(name, 1), rf),
                            unclean_leader_election=self.unclean.get(name, self.static_unclean),
                            eligible_leader_replicas_enabled=self.elr)

    def partitions(self) -> list[tuple[str, int]]:
        return list(self.parts)

    def get(self, name: str, pid: int = 0) -> PartitionRegistration:
        return self.parts[(name, pid)]

    def replay(self, records: Sequence[ApiMessageAndVersion]) -> None:
        for r in records:
            m = r.message
            if isinstance(m, MetadataPartitionRecord):
                self.parts[(m.topic_id.removesuffix("-id"), m.partition_id)] = PartitionRegistration.from_record(m)
            elif isinstance(m, PartitionChangeRecord):
                key = (m.topic_id.removesuffix("-id"), m.partition_id)
                self.parts[key] = self.parts[key].merge(m)
            else:
                self.registry = self.registry.replay(m)

    def create_test_topic(self, name: str, replicas: Sequence[Sequence[int]], expected: str = "NONE",
                          manual: bool = True) -> list[ApiMessageAndVersion]:
        records: list[ApiMessageAndVersion] = []
        rf: int | None = None
        for pid, assignment in enumerate(replicas):
            out, _, error = create_partition(assignment, f"{name}-id", pid, self.registry, self.mv,
                                             manual=manual, replication_factor=rf)
            rf = len(assignment)
            if not error.is_success:
                assert error.error == expected, error
                return []
            records.extend(out)
        assert expected == "NONE"
        self.replay(records)
        return records

    # -- brokers ---------------------------------------------------------------------

    def register_brokers(self, *ids: int) -> None:
        self.register_brokers_with_dirs({b: [dir_of(b)] for b in ids})

    def register_brokers_with_dirs(self, dirs: dict[int, list[str]]) -> None:
        for b, log_dirs in dirs.items():
            self.replay([ApiMessageAndVersion(RegisterBrokerRecord(
                b, default_broker_epoch(b), f"incarnation-{b}", log_dirs=tuple(log_dirs)), 3)])

    def unfence_brokers(self, *ids: int) -> None:
        for b in sorted(ids):
            self.seen[b] = next(self._clock)
            reg = self.registry.registration(b)
            assert reg is not None
            if reg.fenced:
                self.replay(self.handle_broker_unfenced(b, reg.epoch))

    def fence_brokers(self, *ids: int) -> None:
        self.unfence_brokers(*(b for b in self.registry.brokers if b not in ids))
        stale = sorted((b for b in ids if self.registry.is_unfenced(b)), key=lambda b: self.seen.get(b, -1))
        for b in stale:
            self.replay(self.handle_broker_fenced(b))
        assert self.registry.fenced_broker_ids() == frozenset(ids)

    def in_controlled_shutdown_brokers(self, *ids: int) -> None:
        for b in ids:
            self.replay([ApiMessageAndVersion(BrokerRegistrationChangeRecord(
                b, default_broker_epoch(b),
                in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN), 1)])

    def alter_topic_config(self, name: str, min_isr: int | None = None, unclean: bool | None = None) -> None:
        if min_isr is not None:
            self.min_isr[name] = min_isr
        if unclean is not None:
            self.unclean[name] = unclean

    # -- the handlers, over partitions as Kafka iterates them --------------------------

    def _with_broker_in_isr(self, broker_id: int) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if broker_id in p.isr]

    def _with_broker_in_elr(self, broker_id: int) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if broker_id in p.elr]

    def _leaderless(self) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if p.leader == NO_LEADER]

    def handle_broker_fenced(self, broker_id: int) -> list[ApiMessageAndVersion]:
        records = []
        for name, pid in self._with_broker_in_isr(broker_id):
            change = handle_broker_fenced(self.get(name, pid), self.topic(name), pid, self.registry, broker_id)
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        records.append(fence_broker_record(self.registry, broker_id, self.mv))
        return records

    def handle_broker_unfenced(self, broker_id: int, epoch: int) -> list[ApiMessageAndVersion]:
        records = [unfence_broker_record(broker_id, epoch, self.mv)]
        for name, pid in self._leaderless():
            change = handle_broker_unfenced(self.get(name, pid), self.topic(name), pid, self.registry, broker_id)
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def handle_broker_in_controlled_shutdown(self, broker_id: int, epoch: int) -> list[ApiMessageAndVersion]:
        records = []
        first = controlled_shutdown_record(self.registry, broker_id, epoch, self.mv)
        if first is not None:
            records.append(first)
        for name, pid in self._with_broker_in_isr(broker_id):
            change = handle_broker_in_controlled_shutdown(self.get(name, pid), self.topic(name), pid,
                                                          self.registry, broker_id)
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def handle_brokers_unclean_shutdown(self, *ids: int) -> None:
        records = []
        for b in ids:
            for keys in (self._with_broker_in_isr(b), self._with_broker_in_elr(b)):
                for name, pid in keys:
                    change = handle_broker_unclean_shutdown(self.get(name, pid), self.topic(name), pid,
                                                            self.registry, b)
                    if change is not None:
                        records.append(ApiMessageAndVersion(change.record, change.version))
        self.replay(records)

    def elect_leaders(self, election_type: ElectionType, request: dict[str, list[int]] | None,
                      ) -> tuple[list[ApiMessageAndVersion], dict[tuple[str, int], ApiError]]:
        """`electLeaders`: None asks for every partition and leaves ELECTION_NOT_NEEDED out."""
        records: list[ApiMessageAndVersion] = []
        answers: dict[tuple[str, int], ApiError] = {}
        wanted = request if request is not None else {}
        if request is None:
            for name, pid in self.parts:
                wanted.setdefault(name, []).append(pid)
        for name, pids in wanted.items():
            for pid in pids:
                if (name, 0) not in self.parts:
                    answers[(name, pid)] = ApiError("UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {name}")
                    continue
                if (name, pid) not in self.parts:
                    answers[(name, pid)] = ApiError("UNKNOWN_TOPIC_OR_PARTITION",
                                                    f"No such partition as {name}-{pid}")
                    continue
                out, _, answer = elect_leader(self.get(name, pid), self.topic(name), pid, self.registry,
                                              election_type)
                records.extend(out)
                if request is not None or answer != ELECTION_NOT_NEEDED:
                    answers[(name, pid)] = answer
        return records, answers

    def send_alter_partition(self, broker_id: int, broker_epoch: int, name: str,
                             data: Sequence[AlterPartitionPartitionData], version: int = 3,
                             ) -> tuple[list[ApiMessageAndVersion], list[AlterPartitionPartitionResponse]]:
        error = alter_partition_request_error(self.registry, broker_id, broker_epoch)
        assert error is None, error
        if (name, 0) not in self.parts:
            return [], [AlterPartitionPartitionResponse(d.partition_index, unknown_topic_error(version)) for d in data]
        records: list[ApiMessageAndVersion] = []
        answers = []
        for d in data:
            if version < 3:  # `newIsrToSimpleNewIsrWithBrokerEpochs`
                d = AlterPartitionPartitionData(d.partition_index, d.leader_epoch, d.partition_epoch,
                                                tuple(BrokerState(s.broker_id) for s in d.new_isr_with_epochs),
                                                d.leader_recovery_state)
            out, _, answer = alter_partition(self.parts.get((name, d.partition_index)), self.topic(name),
                                             self.registry, broker_id, version, d)
            records.extend(out)
            answers.append(answer)
        return records, answers

    def new_alter_partition(self, name: str, isr: tuple[BrokerState, ...],
                            state: LeaderRecoveryState = RECOVERED) -> AlterPartitionPartitionData:
        p = self.get(name)
        return AlterPartitionPartitionData(0, p.leader_epoch, p.partition_epoch, isr, state)

    def alter_partition(self, name: str, pid: int, leader_id: int, isr: tuple[BrokerState, ...]) -> None:
        """The context's `alterPartition`: the leader sends the current epochs; replay."""
        reg = self.registry.registration(leader_id)
        assert reg is not None and not reg.fenced
        p = self.get(name, pid)
        assert p.leader == leader_id
        records, _ = self.send_alter_partition(leader_id, reg.epoch, name, [
            AlterPartitionPartitionData(pid, p.leader_epoch, p.partition_epoch, isr)])
        self.replay(records)

    def alter_partition_reassignments(self, request: dict[str, list[tuple[int, list[int] | None]]],
                                      ) -> tuple[list[ApiMessageAndVersion], dict[tuple[str, int], ApiError]]:
        records: list[ApiMessageAndVersion] = []
        answers: dict[tuple[str, int], ApiError] = {}
        for name, targets in request.items():
            for pid, target in targets:
                if (name, pid) not in self.parts:
                    answers[(name, pid)] = ApiError("UNKNOWN_TOPIC_OR_PARTITION",
                                                    f"Unable to find partition {name}:{pid}.")
                    continue
                out, _, answer = alter_partition_reassignment(self.get(name, pid), self.topic(name), pid,
                                                              self.registry, target)
                records.extend(out)
                answers[(name, pid)] = answer
        return records, answers

    def reassigning(self) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """`listPartitionReassignments(null)`: (removing, adding, replicas) per partition."""
        return {k: (p.removing_replicas, p.adding_replicas, p.replicas) for k, p in self.parts.items()
                if p.removing_replicas or p.adding_replicas}

    def balance_partition_leaders(self) -> list[ApiMessageAndVersion]:
        records = []
        for name, pid in self.parts:
            p = self.get(name, pid)
            if is_imbalanced(p):
                change = balance_partition_leader(p, self.topic(name), pid, self.registry)
                if change is not None:
                    records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def maybe_elect_unclean_leaders(self) -> list[ApiMessageAndVersion]:
        records: list[ApiMessageAndVersion] = []
        for name, pid in self._leaderless():
            out, _, _ = maybe_elect_unclean_leader(self.get(name, pid), self.topic(name), pid, self.registry)
            records.extend(out)
        return records

    def imbalanced(self) -> bool:
        return any(is_imbalanced(p) for p in self.parts.values())


def pcr(pid: int, topic: str = "foo", **fields: Any) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(PartitionChangeRecord(f"{topic}-id", pid, **fields),
                                LATEST_TESTING.partition_change_record_version)


# -- topic creation ----------------------------------------------------------------------


def test_create_topics_isr_invariants() -> None:
    """testCreateTopicsISRInvariants: the placer's choice [1, 0, 2] (StripedReplicaPlacer
    with MockRandom) is given here."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1)
    ctx.in_controlled_shutdown_brokers(1)
    records = ctx.create_test_topic("foo", [[1, 0, 2]], manual=False)
    assert records == [ApiMessageAndVersion(MetadataPartitionRecord(
        "foo-id", 0, replicas=(1, 0, 2), isr=(0,), leader=0, leader_epoch=0, partition_epoch=0,
        directories=(dir_of(1), dir_of(0), dir_of(2))), 2)]
    # Broker 2 is fenced and broker 1 in controlled shutdown: neither is in the ISR.
    assert ctx.get("foo") == registration([1, 0, 2], [0], 0, 0, 0)


def test_create_partitions_isr_invariants() -> None:
    """testCreatePartitionsISRInvariants: the new partition 1 placed on [0, 1, 2]."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1)
    ctx.in_controlled_shutdown_brokers(1)
    out, reg, error = create_partition([0, 1, 2], "foo-id", 1, ctx.registry, ctx.mv, manual=False)
    assert error == API_NONE
    assert reg == registration([0, 1, 2], [0], 0, 0, 0)


def test_create_partitions_fails_when_all_brokers_are_fenced_or_in_controlled_shutdown() -> None:
    """testCreatePartitionsFailsWhenAllBrokersAreFencedOrInControlledShutdown."""
    ctx = Ctx()
    ctx.register_brokers(0, 1)
    ctx.unfence_brokers(0, 1)
    ctx.create_test_topic("foo", [[0, 1]], manual=False)
    ctx.register_brokers(0, 1)
    ctx.unfence_brokers(0)
    ctx.in_controlled_shutdown_brokers(0)
    out, reg, error = create_partition([0, 1], "foo-id", 1, ctx.registry, ctx.mv, manual=False)
    assert (out, reg) == ((), None)
    assert error == ApiError("INVALID_REPLICATION_FACTOR", "Unable to replicate the partition 2 time(s): All "
                                                           "brokers are currently fenced or in controlled shutdown.")


def test_manual_partition_assignment_on_all_fenced_brokers() -> None:
    """testManualPartitionAssignmentOnAllFencedBrokers."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2]], "INVALID_REPLICA_ASSIGNMENT")
    out, _, error = create_partition([0, 1, 2], "foo-id", 0, ctx.registry, ctx.mv, manual=True)
    assert error == ApiError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition "
                                                           "assignment for partition 0 are fenced or in controlled "
                                                           "shutdown.")


def test_create_partitions_fails_with_manual_assignment_with_all_fenced() -> None:
    """testCreatePartitionsFailsWithManualAssignmentWithAllFenced (a partition of
    createPartitions is built as createTopic builds one)."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4, 5)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    _, _, error = create_partition([3, 4, 5], "foo-id", 1, ctx.registry, ctx.mv, manual=True, replication_factor=3)
    assert error.error == "INVALID_REPLICA_ASSIGNMENT"
    out, _, error = create_partition([2, 4, 5], "foo-id", 1, ctx.registry, ctx.mv, manual=True, replication_factor=3)
    assert error == API_NONE
    ctx.replay(out)
    assert ctx.get("foo", 1) == registration([2, 4, 5], [2], 2, 0, 0)


def test_validate_good_manual_partition_assignments() -> None:
    """testValidateGoodManualPartitionAssignments."""
    ctx = Ctx()
    ctx.register_brokers(1, 2, 3)
    for replicas, rf in (([1], 1), ([1], None), ([1, 2, 3], 3), ([1, 2, 3], None)):
        assert validate_manual_partition_assignment(replicas, ctx.registry, rf) is None


def test_validate_bad_manual_partition_assignments() -> None:
    """testValidateBadManualPartitionAssignments."""
    ctx = Ctx()
    ctx.register_brokers(1, 2)
    cases: list[tuple[list[int], int | None, str]] = [
        ([], None, "The manual partition assignment includes an empty replica list."),
        ([1, 2, 3], None, "The manual partition assignment includes broker 3, but no such broker is registered."),
        ([1, 2, 2], None, "The manual partition assignment includes the broker 2 more than once."),
        ([1, 2], 3, "The manual partition assignment includes a partition with 2 replica(s), but this is not "
                    "consistent with previous partitions, which have 3 replica(s)."),
    ]
    for replicas, rf, message in cases:
        assert validate_manual_partition_assignment(replicas, ctx.registry, rf) == ApiError(
            "INVALID_REPLICA_ASSIGNMENT", message)


# -- broker lifecycle --------------------------------------------------------------------


def test_remove_leaderships() -> None:
    """testRemoveLeaderships: after fencing 0, it leads nothing and is in no ISR."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 2, 1]])
    assert [k for k, p in ctx.parts.items() if p.leader == 0] == [("foo", 0), ("foo", 3)]
    ctx.replay(ctx.handle_broker_fenced(0))
    assert [k for k, p in ctx.parts.items() if p.leader == 0 or 0 in p.isr] == []


def test_fence_multiple_brokers() -> None:
    """testFenceMultipleBrokers."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    assert ctx.registry.fenced_broker_ids() == frozenset()
    ctx.fence_brokers(2, 3)
    p0, p1, p2 = ctx.get("foo", 0), ctx.get("foo", 1), ctx.get("foo", 2)
    assert (p0.replicas, p0.isr, p0.leader) == ((1, 2, 3), (1,), 1)
    assert (p1.replicas, p1.isr, p1.leader) == ((2, 3, 4), (4,), 4)
    assert (p2.replicas, p2.isr) == ((0, 2, 1), (0, 1))
    assert p2.leader != 2


@pytest.mark.parametrize("mv", [MV.IBP_3_3_IV2, MV.IBP_3_3_IV3])
def test_process_broker_heartbeat_in_controlled_shutdown(mv: MV) -> None:
    """testProcessBrokerHeartbeatInControlledShutdown: the heartbeat's CONTROLLED_SHUTDOWN
    transition (the broker leads a partition) runs handleBrokerInControlledShutdown."""
    ctx = Ctx(mv)
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    expected = []
    if mv.is_at_least(MV.IBP_3_3_IV3):
        expected.append(ApiMessageAndVersion(BrokerRegistrationChangeRecord(
            0, 100, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN), 1))
    expected.append(ApiMessageAndVersion(PartitionChangeRecord("foo-id", 0, isr=(1, 2), leader=1), 0))
    next_state = calculate_next_broker_state(
        BrokerControlState.UNFENCED, want_fence=False, want_shut_down=True, current_metadata_offset=0,
        register_broker_record_offset=0, has_leaderships=any(p.leader == 0 for p in ctx.parts.values()))
    assert heartbeat_handler(BrokerControlState.UNFENCED, next_state) == "handleBrokerInControlledShutdown"
    assert ctx.handle_broker_in_controlled_shutdown(0, 100) == expected
    # The partition record of these versions carries no directories.
    assert ctx.get("foo").directories == (MIGRATING_DIRECTORY,) * 3


# -- ELR ---------------------------------------------------------------------------------


def test_eligible_leader_replicas_shrink_and_expand_isr() -> None:
    """testEligibleLeaderReplicas_ShrinkAndExpandIsr."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.get("foo").leader == 0
    ctx.alter_topic_config("foo", min_isr=2)
    records, answers = ctx.send_alter_partition(0, 100, "foo", [ctx.new_alter_partition("foo", isr_with_default_epoch(0))])
    ctx.replay(records)
    assert_consistent(ctx, answers[0])
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((1, 2), ())
    records, answers = ctx.send_alter_partition(0, 100, "foo", [
        ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1))])
    ctx.replay(records)
    assert_consistent(ctx, answers[0])
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((), ())


def test_eligible_leader_replicas_broker_fence() -> None:
    """testEligibleLeaderReplicas_BrokerFence."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2, 3]])
    ctx.alter_topic_config("foo", min_isr=3)
    ctx.fence_brokers(2, 3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((3,), ())
    ctx.fence_brokers(1, 2, 3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((1, 3), ())
    ctx.unfence_brokers(0, 1, 2, 3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((1, 3), ())


def test_eligible_leader_replicas_effective_min_isr() -> None:
    """testEligibleLeaderReplicas_EffectiveMinIsr."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    ctx.alter_topic_config("foo", min_isr=5)
    assert ctx.topic("foo").min_isr == 3


def test_eligible_leader_replicas_clean_election() -> None:
    """testEligibleLeaderReplicas_CleanElection."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2, 3]])
    ctx.alter_topic_config("foo", min_isr=3)
    ctx.fence_brokers(1, 2, 3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((2, 3), ())
    ctx.unfence_brokers(2)
    ctx.fence_brokers(0, 1)
    p = ctx.get("foo")
    assert (p.elr, p.isr, p.leader, p.last_known_elr) == ((0, 3), (2,), 2, ())


def test_eligible_leader_replicas_unclean_shutdown() -> None:
    """testEligibleLeaderReplicas_UncleanShutdown."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2, 3]])
    ctx.alter_topic_config("foo", min_isr=3)
    ctx.fence_brokers(1, 2, 3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((2, 3), ())
    # An unclean shutdown ELR member leaves the ELR.
    ctx.handle_brokers_unclean_shutdown(3)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((2,), ())
    # An unclean shutdown last ISR member becomes the last known leader.
    ctx.handle_brokers_unclean_shutdown(0)
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((2,), (0,))


# -- AlterPartition ----------------------------------------------------------------------


def assert_consistent(ctx: Ctx, answer: AlterPartitionPartitionResponse, name: str = "foo") -> None:
    """`assertConsistentAlterPartitionResponse`."""
    p = ctx.get(name, answer.partition_index)
    assert answer.error == "NONE"
    assert (answer.leader_id, answer.leader_epoch, answer.partition_epoch, answer.isr) == (
        p.leader, p.leader_epoch, p.partition_epoch, p.isr)


def test_shrink_and_expand_isr() -> None:
    """testShrinkAndExpandIsr."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.get("foo").leader == 0
    for isr in ((0, 1), (0, 1, 2)):
        records, answers = ctx.send_alter_partition(0, 100, "foo", [
            ctx.new_alter_partition("foo", isr_with_default_epoch(*isr))])
        ctx.replay(records)
        assert_consistent(ctx, answers[0])
        assert ctx.get("foo").isr == isr


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_alter_partition_handle_unknown_topic_id_or_name(version: int) -> None:
    """testAlterPartitionHandleUnknownTopicIdOrName."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    records, answers = ctx.send_alter_partition(0, 100, "foo", [AlterPartitionPartitionData(0, 0, 0, ())], version)
    expected = "UNKNOWN_TOPIC_ID" if version > 1 else "UNKNOWN_TOPIC_OR_PARTITION"
    assert (records, answers) == ([], [AlterPartitionPartitionResponse(0, expected)])


def test_invalid_alter_partition_requests() -> None:
    """testInvalidAlterPartitionRequests."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.get("foo").leader == 0

    def send(broker_id: int, data: AlterPartitionPartitionData) -> str:
        records, answers = ctx.send_alter_partition(broker_id, default_broker_epoch(broker_id), "foo", [data])
        assert records == []
        return answers[0].error

    request = ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1))
    assert send(1, request) == "INVALID_REQUEST"  # not the leader
    # A stale broker epoch fails the whole request (Kafka throws StaleBrokerEpochException).
    assert alter_partition_request_error(ctx.registry, 0, 99) == "STALE_BROKER_EPOCH"
    assert send(0, AlterPartitionPartitionData(0, 500, 0, isr_with_default_epoch(0, 1))) == "NOT_CONTROLLER"
    assert send(0, AlterPartitionPartitionData(0, 0, 500, isr_with_default_epoch(0, 1))) == "NOT_CONTROLLER"
    # 3 is not a replica; the ISR must include the leader.
    assert send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1, 3))) == "INVALID_REQUEST"
    assert send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(1, 2))) == "INVALID_REQUEST"
    # RECOVERING with more than one replica; RECOVERED to RECOVERING.
    assert send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1), RECOVERING)) == "INVALID_REQUEST"
    assert send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0), RECOVERING)) == "INVALID_REQUEST"


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_alter_partition_should_reject_fenced_brokers(version: int) -> None:
    """testAlterPartitionShouldRejectFencedBrokers."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4]])
    ctx.replay(ctx.handle_broker_fenced(3))
    assert ctx.get("foo") == registration([1, 2, 3, 4], [1, 2, 4], 1, 0, 1)
    request = AlterPartitionPartitionData(0, 0, 1, isr_with_default_epoch(1, 2, 3, 4))
    records, answers = ctx.send_alter_partition(1, 101, "foo", [request], version)
    expected = "OPERATION_NOT_ATTEMPTED" if version <= 1 else "INELIGIBLE_REPLICA"
    assert (records, answers) == ([], [AlterPartitionPartitionResponse(0, expected)])
    ctx.replay(ctx.handle_broker_unfenced(3, 103))
    records, answers = ctx.send_alter_partition(1, 101, "foo", [request], version)
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 1, 0, (1, 2, 3, 4), RECOVERED, 2)]
    assert records == [pcr(0, isr=(1, 2, 3, 4))]


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_alter_partition_should_reject_brokers_with_stale_epoch(version: int) -> None:
    """testAlterPartitionShouldRejectBrokersWithStaleEpoch (KIP-903)."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4]])
    ctx.alter_partition("foo", 0, 1, isr_with_default_epoch(1, 2, 3))
    # The leader builds a request, then broker 4 fails silently and registers again.
    request = AlterPartitionPartitionData(0, 0, 1, isr_with_default_epoch(1, 2, 3, 4))
    new_epoch = default_broker_epoch(4) + 1000
    ctx.replay([ApiMessageAndVersion(RegisterBrokerRecord(4, new_epoch, "incarnation-4b"), 0)])
    ctx.replay(ctx.handle_broker_unfenced(4, new_epoch))
    records, answers = ctx.send_alter_partition(1, 101, "foo", [request], version)
    # The late request is refused from version 3, which carries the broker epochs.
    if version >= 3:
        assert (records, answers) == ([], [AlterPartitionPartitionResponse(0, "INELIGIBLE_REPLICA")])
    else:
        assert answers[0].error == "NONE"


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_alter_partition_should_reject_shutting_down_brokers(version: int) -> None:
    """testAlterPartitionShouldRejectShuttingDownBrokers."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4]])
    assert ctx.get("foo") == registration([1, 2, 3, 4], [1, 2, 3, 4], 1, 0, 0)
    ctx.in_controlled_shutdown_brokers(3)
    request = AlterPartitionPartitionData(0, 0, 0, isr_with_default_epoch(1, 2, 3, 4))
    records, answers = ctx.send_alter_partition(1, 101, "foo", [request], version)
    expected = "OPERATION_NOT_ATTEMPTED" if version <= 1 else "INELIGIBLE_REPLICA"
    assert (records, answers) == ([], [AlterPartitionPartitionResponse(0, expected)])


# -- reassignment ------------------------------------------------------------------------


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_reassign_partitions(version: int) -> None:
    """testReassignPartitions."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.unfence_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[1, 2, 3], [3, 2, 1]])
    ctx.create_test_topic("bar", [[1, 2, 3]])
    assert ctx.reassigning() == {}
    records, answers = ctx.alter_partition_reassignments({"foo": [(0, [3, 2, 1]), (1, [0, 2, 1]), (2, [0, 2, 1])],
                                                          "bar": []})
    assert answers == {("foo", 0): API_NONE, ("foo", 1): API_NONE,
                       ("foo", 2): ApiError("UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition foo:2.")}
    ctx.replay(records)
    assert ctx.reassigning() == {("foo", 1): ((3,), (0,), (0, 2, 1, 3))}
    records, answers = ctx.alter_partition_reassignments({"foo": [(0, None), (1, None), (2, None)],
                                                          "bar": [(0, None)]})
    assert records == [pcr(1, replicas=(2, 1, 3), directories=(dir_of(2), dir_of(1), dir_of(3)), leader=3,
                           removing_replicas=(), adding_replicas=())]
    assert answers == {("foo", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS"), ("foo", 1): API_NONE,
                       ("foo", 2): ApiError("UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition foo:2."),
                       ("bar", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS")}
    # The cancel is not replayed: broker 3's ISR completes the reassignment, and 0 is no
    # longer the first ISR member, so the leader moves from 3.
    records, answers = ctx.send_alter_partition(3, 103, "foo", [
        AlterPartitionPartitionData(1, 0, 1, isr_with_default_epoch(3, 0, 2, 1))], version)
    expected = "NEW_LEADER_ELECTED" if version > 1 else "FENCED_LEADER_EPOCH"
    assert answers == [AlterPartitionPartitionResponse(1, expected)]
    ctx.replay(records)
    assert ctx.reassigning() == {}


def test_cancel_reassign_partitions() -> None:
    """testCancelReassignPartitions."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3, 4], [0, 1, 2, 3], [4, 3, 1, 0], [2, 3, 4, 1]])
    ctx.create_test_topic("bar", [[4, 3, 2]])
    ctx.replay(ctx.handle_broker_fenced(3))
    assert ctx.get("foo", 0) == registration([1, 2, 3, 4], [1, 2, 4], 1, 0, 1)
    records, answers = ctx.alter_partition_reassignments({
        "foo": [(0, [1, 2, 4]), (1, [1, 2, 3, 0]), (2, [5, 6, 7]), (3, [])], "bar": [(0, [1, 2, 3, 4, 0])]})
    assert answers == {
        ("foo", 0): API_NONE, ("foo", 1): API_NONE,
        ("foo", 2): ApiError("INVALID_REPLICA_ASSIGNMENT",
                             "The manual partition assignment includes broker 5, but no such broker is registered."),
        ("foo", 3): ApiError("INVALID_REPLICA_ASSIGNMENT",
                             "The manual partition assignment includes an empty replica list."),
        ("bar", 0): API_NONE}
    ctx.replay(records)
    assert ctx.get("foo", 0) == registration([1, 2, 4], [1, 2, 4], 1, 1, 2)
    assert ctx.get("foo", 1) == registration([1, 2, 3, 0], [0, 1, 2], 0, 0, 2)
    assert ctx.get("bar", 0) == registration([1, 2, 3, 4, 0], [4, 2], 4, 0, 2, adding=[0, 1])
    assert ctx.reassigning() == {("bar", 0): ((), (0, 1), (1, 2, 3, 4, 0))}
    records, answers = ctx.send_alter_partition(4, 104, "bar", [
        AlterPartitionPartitionData(0, 0, 2, isr_with_default_epoch(4, 1, 2, 0))])
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 4, 0, (4, 1, 2, 0), RECOVERED, 3)]
    # Not replayed, as in Kafka: the cancel reverts the registration at partition epoch 2.
    records, answers = ctx.alter_partition_reassignments({"foo": [(0, None)], "bar": [(0, None)]})
    assert records == [pcr(0, "bar", leader=4, replicas=(2, 3, 4),
                           directories=(dir_of(2), dir_of(3), dir_of(4)), adding_replicas=())]
    assert answers == {("foo", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS"), ("bar", 0): API_NONE}
    ctx.replay(records)
    assert ctx.reassigning() == {}
    assert ctx.get("bar", 0) == registration([2, 3, 4], [4, 2], 4, 1, 3)


def test_reassign_partitions_handles_new_reassignment_that_removes_previously_adding_replicas() -> None:
    """testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4, 5)
    ctx.unfence_brokers(0, 1, 2, 3, 4, 5)
    ctx.create_test_topic("topic-1", [[0, 1]])
    assert ctx.reassigning() == {}
    records, answers = ctx.alter_partition_reassignments({"topic-1": [(0, [2, 3])]})
    assert answers == {("topic-1", 0): API_NONE}
    ctx.replay(records)
    assert ctx.reassigning() == {("topic-1", 0): ((0, 1), (2, 3), (2, 3, 0, 1))}
    p = ctx.get("topic-1")
    records, answers = ctx.send_alter_partition(p.leader, default_broker_epoch(p.leader), "topic-1", [
        AlterPartitionPartitionData(0, p.leader_epoch, p.partition_epoch, isr_with_default_epoch(0, 1, 2))])
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 0, 0, (0, 1, 2), RECOVERED, p.partition_epoch + 1)]
    ctx.replay(records)
    # Replica 2, at the head of the replicas, becomes leader by a preferred election.
    records, election = ctx.elect_leaders("PREFERRED", {"topic-1": [0]})
    assert election == {("topic-1", 0): API_NONE}
    ctx.replay(records)
    assert ctx.get("topic-1").leader == 2
    records, answers = ctx.alter_partition_reassignments({"topic-1": [(0, [4, 5])]})
    assert answers == {("topic-1", 0): API_NONE}
    ctx.replay(records)
    assert ctx.reassigning() == {("topic-1", 0): ((0, 1, 2, 3), (4, 5), (4, 5, 0, 1, 2, 3))}
    p = ctx.get("topic-1")
    assert p.leader == 2 and p.leader in p.replicas
    records, answers = ctx.send_alter_partition(p.leader, default_broker_epoch(p.leader), "topic-1", [
        AlterPartitionPartitionData(0, p.leader_epoch, p.partition_epoch, isr_with_default_epoch(0, 1, 2, 3, 4, 5))])
    assert answers == [AlterPartitionPartitionResponse(0, "NEW_LEADER_ELECTED")]
    ctx.replay(records)
    assert ctx.get("topic-1").leader == 4
    assert ctx.reassigning() == {}


# -- elections and balancing --------------------------------------------------------------


@pytest.mark.parametrize("elect_all_partitions", [True, False])
def test_elect_unclean_leaders_without_elr(elect_all_partitions: bool) -> None:
    """testElectUncleanLeaders_WithoutElr."""
    ctx = Ctx(MV.IBP_3_6_IV1)
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    ctx.fence_brokers(2, 3)
    ctx.fence_brokers(1, 2, 3)
    assert [(p.leader, p.isr) for p in ctx.parts.values()] == [(NO_LEADER, (1,)), (4, (4,)), (0, (0,))]
    request = None if elect_all_partitions else {"foo": [0, 1, 2]}

    def expected(first: ApiError) -> dict[tuple[str, int], ApiError]:
        out = {("foo", 0): first}
        if not elect_all_partitions:
            out.update({("foo", 1): ELECTION_NOT_NEEDED, ("foo", 2): ELECTION_NOT_NEEDED})
        return out

    # No replica of partition 0 is available yet.
    records, answers = ctx.elect_leaders("UNCLEAN", request)
    assert (records, answers) == ([], expected(ELIGIBLE_LEADERS_NOT_AVAILABLE))
    ctx.unfence_brokers(2)
    # 2 back in partition 1's ISR: the unclean request must not elect the preferred replica.
    ctx.alter_partition("foo", 1, 4, isr_with_default_epoch(2, 4))
    records, answers = ctx.elect_leaders("UNCLEAN", request)
    assert records == [ApiMessageAndVersion(PartitionChangeRecord("foo-id", 0, isr=(2,), leader=2,
                                                                  leader_recovery_state=RECOVERING), 0)]
    ctx.replay(records)
    assert [(p.leader, p.isr) for p in ctx.parts.values()] == [(2, (2,)), (4, (2, 4)), (0, (0,))]
    assert answers == expected(API_NONE)


def test_preferred_election_does_not_trigger_unclean_election() -> None:
    """testPreferredElectionDoesNotTriggerUncleanElection."""
    ctx = Ctx()
    ctx.register_brokers(1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3]])
    ctx.fence_brokers(2, 3)
    ctx.fence_brokers(1, 2, 3)
    ctx.unfence_brokers(2)
    assert (ctx.get("foo").leader, ctx.get("foo").isr) == (NO_LEADER, (1,))
    ctx.alter_topic_config("foo", unclean=True)
    records, answers = ctx.elect_leaders("PREFERRED", {"foo": [0]})
    assert (records, answers) == ([], {("foo", 0): PREFERRED_LEADER_NOT_AVAILABLE})


def test_elect_preferred_leaders() -> None:
    """testElectPreferredLeaders."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(1, 2, 3, 4)
    ctx.in_controlled_shutdown_brokers(1)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    request = {"foo": [0, 1, 2], "bar": [0, 1]}
    unknown_bar = ApiError("UNKNOWN_TOPIC_OR_PARTITION", "No such topic as bar")
    records, answers = ctx.elect_leaders("PREFERRED", request)
    assert answers == {("foo", 0): PREFERRED_LEADER_NOT_AVAILABLE, ("foo", 1): ELECTION_NOT_NEEDED,
                       ("foo", 2): PREFERRED_LEADER_NOT_AVAILABLE, ("bar", 0): unknown_bar, ("bar", 1): unknown_bar}
    assert records == []
    # Broker 1 registers again to leave controlled shutdown.
    ctx.register_brokers(1)
    ctx.unfence_brokers(0, 1)
    records, alter_answers = ctx.send_alter_partition(2, 102, "foo", [
        AlterPartitionPartitionData(0, 0, 0, isr_with_default_epoch(1, 2, 3)),
        AlterPartitionPartitionData(2, 0, 0, isr_with_default_epoch(0, 2, 1))])
    assert alter_answers == [AlterPartitionPartitionResponse(0, "NONE", 2, 0, (1, 2, 3), RECOVERED, 1),
                             AlterPartitionPartitionResponse(2, "NONE", 2, 0, (0, 2, 1), RECOVERED, 1)]
    ctx.replay(records)
    records, answers = ctx.elect_leaders("PREFERRED", request)
    assert answers == {("foo", 0): API_NONE, ("foo", 1): ELECTION_NOT_NEEDED, ("foo", 2): API_NONE,
                       ("bar", 0): unknown_bar, ("bar", 1): unknown_bar}
    assert records == [pcr(0, leader=1), pcr(2, leader=0)]


def test_balance_partition_leaders() -> None:
    """testBalancePartitionLeaders (maxElectionsPerImbalance unbounded, as in the test)."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    assert ctx.imbalanced()
    ctx.unfence_brokers(1)
    records, answers = ctx.send_alter_partition(2, 102, "foo", [
        AlterPartitionPartitionData(0, 0, 0, isr_with_default_epoch(1, 2, 3))])
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 2, 0, (1, 2, 3), RECOVERED, 1)]
    ctx.replay(records)
    records = ctx.balance_partition_leaders()
    ctx.replay(records)
    assert records == [pcr(0, leader=1)]
    assert ctx.imbalanced()
    ctx.unfence_brokers(0)
    records, answers = ctx.send_alter_partition(2, 102, "foo", [
        AlterPartitionPartitionData(2, 0, 0, isr_with_default_epoch(0, 2, 1))])
    assert answers == [AlterPartitionPartitionResponse(2, "NONE", 2, 0, (0, 2, 1), RECOVERED, 1)]
    ctx.replay(records)
    records = ctx.balance_partition_leaders()
    ctx.replay(records)
    assert records == [pcr(2, leader=0)]
    assert not ctx.imbalanced()


@pytest.mark.parametrize("unclean_config", ["none", "static", "dynamic_topic"])
def test_maybe_trigger_unclean_leader_election_for_leaderless_partitions(unclean_config: str) -> None:
    """testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions. Kafka's dynamic_cluster
    and dynamic_node cases differ from dynamic_topic only in where the config is resolved."""
    ctx = Ctx(unclean=unclean_config == "static")
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(0, 1, 2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 4], [1, 3, 4], [0, 2, 4]])
    assert not any(p.leader == NO_LEADER for p in ctx.parts.values())
    ctx.fence_brokers(0, 1, 2, 3, 4)
    assert [(p.isr, p.leader) for p in ctx.parts.values()] == [((4,), NO_LEADER)] * 3
    # Broker 2 can now lead partitions 0 and 2, after an unclean election.
    ctx.unfence_brokers(2)
    elected = [((2,), 2), ((4,), NO_LEADER), ((2,), 2)]
    if unclean_config == "static":
        # Configured statically, the unfencing already elected it.
        assert [(p.isr, p.leader) for p in ctx.parts.values()] == elected
    else:
        assert [(p.isr, p.leader) for p in ctx.parts.values()] == [((4,), NO_LEADER)] * 3
    if unclean_config == "dynamic_topic":
        ctx.alter_topic_config("foo", unclean=True)
    records = ctx.maybe_elect_unclean_leaders()
    if unclean_config in ("none", "static"):
        assert records == []
    else:
        assert records
        ctx.replay(records)
        assert [(p.isr, p.leader) for p in ctx.parts.values()] == elected


# -- directories -------------------------------------------------------------------------


def test_kraft_cluster_describer() -> None:
    """testKRaftClusterDescriber, its defaultDir half (usableBrokers needs the heartbeat
    manager's sessions)."""
    ctx = Ctx()
    ctx.register_brokers_with_dirs({0: [], 1: [], 2: ["ozwqsVMFSNiYQUPSJA3j0w"],
                                    3: ["SSDgCZ4BTyec5QojGT65qg", "K8KwMrviRcOUvgI8FPOJWg"], 4: []})
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    ctx.create_test_topic("bar", [[2, 3, 4], [3, 4, 2]])
    default_dir = cluster_describer_default_dir(ctx.registry, ctx.mv)
    assert default_dir(1) == MIGRATING_DIRECTORY
    assert default_dir(2) == "ozwqsVMFSNiYQUPSJA3j0w"
    assert default_dir(3) == UNASSIGNED_DIRECTORY
    # Before 3.7-IV2 every new replica is MIGRATING.
    assert cluster_describer_default_dir(ctx.registry, MV.IBP_3_7_IV1)(2) == MIGRATING_DIRECTORY


def test_handle_directories_offline() -> None:
    """testHandleDirectoriesOffline. Kafka places the replicas with AssignReplicasToDirs,
    not built here: its records are replayed as directory-only PartitionChangeRecords."""
    ctx = Ctx()
    b1, b2 = 101, 102
    dir1b1, dir2b1 = "suitdzfTTdqoWcy8VqmkUg", "yh3acnzGSeurSTj8aIhOjw"
    dir1b2, dir2b2 = "OmpmJ8RjQliQlEFht56DwQ", "w05baLpsT5Oz0LvKTKXoDw"
    ctx.register_brokers_with_dirs({b1: [dir1b1, dir2b1], b2: [dir1b2, dir2b2]})
    ctx.unfence_brokers(b1, b2)
    ctx.create_test_topic("a", [[b1, b2], [b1, b2]])
    ctx.create_test_topic("b", [[b1, b2], [b1, b2]])
    for name in ("a", "b"):
        ctx.replay([ApiMessageAndVersion(PartitionChangeRecord(f"{name}-id", 0, directories=(dir1b1, dir1b2)), 2),
                    ApiMessageAndVersion(PartitionChangeRecord(f"{name}-id", 1, directories=(dir2b1, dir2b2)), 2)])
    # dir1b2 is not b1's: it changes nothing.
    offline, broker_record = directories_offline_record(ctx.registry, b1, default_broker_epoch(b1), [dir1b1, dir1b2])
    assert offline == (dir1b1,)
    records = []
    for name, pid in ctx.partitions():
        if set(ctx.get(name, pid).directories) & set(offline):
            change = handle_directories_offline(ctx.get(name, pid), ctx.topic(name), pid, ctx.registry, b1)
            assert change is not None
            records.append(ApiMessageAndVersion(change.record, change.version))
    assert broker_record is not None
    records.append(broker_record)
    assert records == [pcr(0, "a", leader=b2, isr=(b2,)), pcr(0, "b", leader=b2, isr=(b2,)),
                       ApiMessageAndVersion(BrokerRegistrationChangeRecord(
                           b1, default_broker_epoch(b1), log_dirs=(dir2b1,)), 2)]
    ctx.replay(records)
    registration_b1 = ctx.registry.registration(b1)
    assert registration_b1 is not None and registration_b1.directories == (dir2b1,)
