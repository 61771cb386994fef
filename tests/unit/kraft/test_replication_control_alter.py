"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0): AlterPartition and
AlterPartitionReassignments, one test per Kafka method, named after it, on the test
context of rcm_context.py.
"""

from __future__ import annotations

import pytest

from state_machines.kraft.alter_partition import alter_partition_request_error
from state_machines.kraft.messages import (
    API_NONE,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResponse,
    ApiError,
)
from state_machines.kraft.records import ApiMessageAndVersion, RegisterBrokerRecord
from tests.unit.kraft.rcm_context import (
    ALTER_PARTITION_VERSIONS,
    RECOVERED,
    RECOVERING,
    Ctx,
    assert_consistent,
    default_broker_epoch,
    dir_of,
    isr_with_default_epoch,
    pcr,
    registration,
)

# -- AlterPartition ----------------------------------------------------------------------


def test_shrink_and_expand_isr() -> None:
    """testShrinkAndExpandIsr."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.get("foo").leader == 0
    for isr in ((0, 1), (0, 1, 2)):
        records, answers = ctx.send_alter_partition(
            0, 100, "foo", [ctx.new_alter_partition("foo", isr_with_default_epoch(*isr))]
        )
        ctx.replay(records)
        assert_consistent(ctx, answers[0])
        assert ctx.get("foo").isr == isr


@pytest.mark.parametrize("version", ALTER_PARTITION_VERSIONS)
def test_alter_partition_handle_unknown_topic_id_or_name(version: int) -> None:
    """testAlterPartitionHandleUnknownTopicIdOrName."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    records, answers = ctx.send_alter_partition(
        0, 100, "foo", [AlterPartitionPartitionData(0, 0, 0, ())], version
    )
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
        records, answers = ctx.send_alter_partition(
            broker_id, default_broker_epoch(broker_id), "foo", [data]
        )
        assert records == []
        return answers[0].error

    request = ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1))
    assert send(1, request) == "INVALID_REQUEST"  # not the leader
    # A stale broker epoch fails the whole request (Kafka throws StaleBrokerEpochException).
    assert alter_partition_request_error(ctx.registry, 0, 99) == "STALE_BROKER_EPOCH"
    assert (
        send(0, AlterPartitionPartitionData(0, 500, 0, isr_with_default_epoch(0, 1)))
        == "NOT_CONTROLLER"
    )
    assert (
        send(0, AlterPartitionPartitionData(0, 0, 500, isr_with_default_epoch(0, 1)))
        == "NOT_CONTROLLER"
    )
    # 3 is not a replica; the ISR must include the leader.
    assert (
        send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1, 3)))
        == "INVALID_REQUEST"
    )
    assert (
        send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(1, 2))) == "INVALID_REQUEST"
    )
    # RECOVERING with more than one replica; RECOVERED to RECOVERING.
    assert (
        send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1), RECOVERING))
        == "INVALID_REQUEST"
    )
    assert (
        send(0, ctx.new_alter_partition("foo", isr_with_default_epoch(0), RECOVERING))
        == "INVALID_REQUEST"
    )


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
        assert (records, answers) == (
            [],
            [AlterPartitionPartitionResponse(0, "INELIGIBLE_REPLICA")],
        )
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
    records, answers = ctx.alter_partition_reassignments(
        {"foo": [(0, [3, 2, 1]), (1, [0, 2, 1]), (2, [0, 2, 1])], "bar": []}
    )
    assert answers == {
        ("foo", 0): API_NONE,
        ("foo", 1): API_NONE,
        ("foo", 2): ApiError("UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition foo:2."),
    }
    ctx.replay(records)
    assert ctx.reassigning() == {("foo", 1): ((3,), (0,), (0, 2, 1, 3))}
    records, answers = ctx.alter_partition_reassignments(
        {"foo": [(0, None), (1, None), (2, None)], "bar": [(0, None)]}
    )
    assert records == [
        pcr(
            1,
            replicas=(2, 1, 3),
            directories=(dir_of(2), dir_of(1), dir_of(3)),
            leader=3,
            removing_replicas=(),
            adding_replicas=(),
        )
    ]
    assert answers == {
        ("foo", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS"),
        ("foo", 1): API_NONE,
        ("foo", 2): ApiError("UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition foo:2."),
        ("bar", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS"),
    }
    # The cancel is not replayed: broker 3's ISR completes the reassignment, and 0 is no
    # longer the first ISR member, so the leader moves from 3.
    records, answers = ctx.send_alter_partition(
        3,
        103,
        "foo",
        [AlterPartitionPartitionData(1, 0, 1, isr_with_default_epoch(3, 0, 2, 1))],
        version,
    )
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
    records, answers = ctx.alter_partition_reassignments(
        {
            "foo": [(0, [1, 2, 4]), (1, [1, 2, 3, 0]), (2, [5, 6, 7]), (3, [])],
            "bar": [(0, [1, 2, 3, 4, 0])],
        }
    )
    assert answers == {
        ("foo", 0): API_NONE,
        ("foo", 1): API_NONE,
        ("foo", 2): ApiError(
            "INVALID_REPLICA_ASSIGNMENT",
            "The manual partition assignment includes broker 5, but no such broker is registered.",
        ),
        ("foo", 3): ApiError(
            "INVALID_REPLICA_ASSIGNMENT",
            "The manual partition assignment includes an empty replica list.",
        ),
        ("bar", 0): API_NONE,
    }
    ctx.replay(records)
    assert ctx.get("foo", 0) == registration([1, 2, 4], [1, 2, 4], 1, 1, 2)
    assert ctx.get("foo", 1) == registration([1, 2, 3, 0], [0, 1, 2], 0, 0, 2)
    assert ctx.get("bar", 0) == registration([1, 2, 3, 4, 0], [4, 2], 4, 0, 2, adding=[0, 1])
    assert ctx.reassigning() == {("bar", 0): ((), (0, 1), (1, 2, 3, 4, 0))}
    records, answers = ctx.send_alter_partition(
        4, 104, "bar", [AlterPartitionPartitionData(0, 0, 2, isr_with_default_epoch(4, 1, 2, 0))]
    )
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 4, 0, (4, 1, 2, 0), RECOVERED, 3)]
    # Not replayed, as in Kafka: the cancel reverts the registration at partition epoch 2.
    records, answers = ctx.alter_partition_reassignments({"foo": [(0, None)], "bar": [(0, None)]})
    assert records == [
        pcr(
            0,
            "bar",
            leader=4,
            replicas=(2, 3, 4),
            directories=(dir_of(2), dir_of(3), dir_of(4)),
            adding_replicas=(),
        )
    ]
    assert answers == {("foo", 0): ApiError("NO_REASSIGNMENT_IN_PROGRESS"), ("bar", 0): API_NONE}
    ctx.replay(records)
    assert ctx.reassigning() == {}
    assert ctx.get("bar", 0) == registration([2, 3, 4], [4, 2], 4, 1, 3)


def test_reassign_partitions_handles_new_reassignment_that_removes_previously_adding_replicas() -> (
    None
):
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
    records, answers = ctx.send_alter_partition(
        p.leader,
        default_broker_epoch(p.leader),
        "topic-1",
        [
            AlterPartitionPartitionData(
                0, p.leader_epoch, p.partition_epoch, isr_with_default_epoch(0, 1, 2)
            )
        ],
    )
    assert answers == [
        AlterPartitionPartitionResponse(
            0, "NONE", 0, 0, (0, 1, 2), RECOVERED, p.partition_epoch + 1
        )
    ]
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
    records, answers = ctx.send_alter_partition(
        p.leader,
        default_broker_epoch(p.leader),
        "topic-1",
        [
            AlterPartitionPartitionData(
                0, p.leader_epoch, p.partition_epoch, isr_with_default_epoch(0, 1, 2, 3, 4, 5)
            )
        ],
    )
    assert answers == [AlterPartitionPartitionResponse(0, "NEW_LEADER_ELECTED")]
    ctx.replay(records)
    assert ctx.get("topic-1").leader == 4
    assert ctx.reassigning() == {}
