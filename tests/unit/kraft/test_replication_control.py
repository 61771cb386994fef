"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0): topic creation checks,
the broker lifecycle and directories, one test per Kafka method, named after it. The
test context is rcm_context.py; the other methods are in test_replication_control_*.py,
and tests/unit/kraft/KAFKA_TESTS.md maps every method of the class.

Where Kafka lets its StripedReplicaPlacer choose the replicas, the test gives the placer's
choice.
"""

from __future__ import annotations

import pytest

from state_machines.kraft.broker_heartbeat_manager import (
    BrokerControlState,
    calculate_next_broker_state,
    heartbeat_handler,
)
from state_machines.kraft.broker_isr_updates import handle_directories_offline
from state_machines.kraft.cluster_control import directories_offline_record
from state_machines.kraft.messages import API_NONE, ApiError
from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.records import (
    IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
    MIGRATING_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    ApiMessageAndVersion,
    BrokerRegistrationChangeRecord,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)
from state_machines.kraft.replication_control import (
    cluster_describer_default_dir,
    create_partition,
    validate_manual_partition_assignment,
)
from tests.unit.kraft.rcm_context import Ctx, default_broker_epoch, dir_of, pcr, registration

# -- topic creation ----------------------------------------------------------------------


def test_create_topics_isr_invariants() -> None:
    """testCreateTopicsISRInvariants: the placer's choice [1, 0, 2] (StripedReplicaPlacer
    with MockRandom) is given here."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1)
    ctx.in_controlled_shutdown_brokers(1)
    records = ctx.create_test_topic("foo", [[1, 0, 2]], manual=False)
    assert records == [
        ApiMessageAndVersion(
            MetadataPartitionRecord(
                "foo-id",
                0,
                replicas=(1, 0, 2),
                isr=(0,),
                leader=0,
                leader_epoch=0,
                partition_epoch=0,
                directories=(dir_of(1), dir_of(0), dir_of(2)),
            ),
            2,
        )
    ]
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
    assert error == ApiError(
        "INVALID_REPLICATION_FACTOR",
        "Unable to replicate the partition 2 time(s): All "
        "brokers are currently fenced or in controlled shutdown.",
    )


def test_manual_partition_assignment_on_all_fenced_brokers() -> None:
    """testManualPartitionAssignmentOnAllFencedBrokers."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3)
    ctx.create_test_topic("foo", [[0, 1, 2]], "INVALID_REPLICA_ASSIGNMENT")
    out, _, error = create_partition([0, 1, 2], "foo-id", 0, ctx.registry, ctx.mv, manual=True)
    assert error == ApiError(
        "INVALID_REPLICA_ASSIGNMENT",
        "All brokers specified in the manual partition "
        "assignment for partition 0 are fenced or in controlled "
        "shutdown.",
    )


def test_create_partitions_fails_with_manual_assignment_with_all_fenced() -> None:
    """testCreatePartitionsFailsWithManualAssignmentWithAllFenced (a partition of
    createPartitions is built as createTopic builds one)."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4, 5)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    _, _, error = create_partition(
        [3, 4, 5], "foo-id", 1, ctx.registry, ctx.mv, manual=True, replication_factor=3
    )
    assert error.error == "INVALID_REPLICA_ASSIGNMENT"
    out, _, error = create_partition(
        [2, 4, 5], "foo-id", 1, ctx.registry, ctx.mv, manual=True, replication_factor=3
    )
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
        (
            [1, 2, 3],
            None,
            "The manual partition assignment includes broker 3, but no such broker is registered.",
        ),
        ([1, 2, 2], None, "The manual partition assignment includes the broker 2 more than once."),
        (
            [1, 2],
            3,
            "The manual partition assignment includes a partition with 2 replica(s), but "
            "this is not "
            "consistent with previous partitions, which have 3 replica(s).",
        ),
    ]
    for replicas, rf, message in cases:
        assert validate_manual_partition_assignment(replicas, ctx.registry, rf) == ApiError(
            "INVALID_REPLICA_ASSIGNMENT", message
        )


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
        expected.append(
            ApiMessageAndVersion(
                BrokerRegistrationChangeRecord(
                    0,
                    100,
                    in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
                ),
                1,
            )
        )
    expected.append(
        ApiMessageAndVersion(PartitionChangeRecord("foo-id", 0, isr=(1, 2), leader=1), 0)
    )
    next_state = calculate_next_broker_state(
        BrokerControlState.UNFENCED,
        want_fence=False,
        want_shut_down=True,
        current_metadata_offset=0,
        register_broker_record_offset=0,
        has_leaderships=any(p.leader == 0 for p in ctx.parts.values()),
    )
    assert (
        heartbeat_handler(BrokerControlState.UNFENCED, next_state)
        == "handleBrokerInControlledShutdown"
    )
    assert ctx.handle_broker_in_controlled_shutdown(0, 100) == expected
    # The partition record of these versions carries no directories.
    assert ctx.get("foo").directories == (MIGRATING_DIRECTORY,) * 3


# -- directories -------------------------------------------------------------------------


def test_kraft_cluster_describer() -> None:
    """testKRaftClusterDescriber, its defaultDir half (usableBrokers needs the heartbeat
    manager's sessions)."""
    ctx = Ctx()
    ctx.register_brokers_with_dirs(
        {
            0: [],
            1: [],
            2: ["ozwqsVMFSNiYQUPSJA3j0w"],
            3: ["SSDgCZ4BTyec5QojGT65qg", "K8KwMrviRcOUvgI8FPOJWg"],
            4: [],
        }
    )
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
        ctx.replay(
            [
                ApiMessageAndVersion(
                    PartitionChangeRecord(f"{name}-id", 0, directories=(dir1b1, dir1b2)), 2
                ),
                ApiMessageAndVersion(
                    PartitionChangeRecord(f"{name}-id", 1, directories=(dir2b1, dir2b2)), 2
                ),
            ]
        )
    # dir1b2 is not b1's: it changes nothing.
    offline, broker_record = directories_offline_record(
        ctx.registry, b1, default_broker_epoch(b1), [dir1b1, dir1b2]
    )
    assert offline == (dir1b1,)
    records = []
    for name, pid in ctx.partitions():
        if set(ctx.get(name, pid).directories) & set(offline):
            change = handle_directories_offline(
                ctx.get(name, pid), ctx.topic(name), pid, ctx.registry, b1
            )
            assert change is not None
            records.append(ApiMessageAndVersion(change.record, change.version))
    assert broker_record is not None
    records.append(broker_record)
    assert records == [
        pcr(0, "a", leader=b2, isr=(b2,)),
        pcr(0, "b", leader=b2, isr=(b2,)),
        ApiMessageAndVersion(
            BrokerRegistrationChangeRecord(b1, default_broker_epoch(b1), log_dirs=(dir2b1,)), 2
        ),
    ]
    ctx.replay(records)
    registration_b1 = ctx.registry.registration(b1)
    assert registration_b1 is not None and registration_b1.directories == (dir2b1,)
