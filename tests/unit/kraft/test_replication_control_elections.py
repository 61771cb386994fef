"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0): ElectLeaders, leader
balancing and the unclean election of leaderless partitions, one test per Kafka method,
named after it, on the test context of rcm_context.py.

testMaybeTriggerUncleanLeaderElectionForLeaderlessPartitions runs its "none", "static" and
"dynamic_topic" cases; "dynamic_cluster" and "dynamic_node" differ only in where
ConfigurationControlManager resolves the setting, which arrives here resolved.
"""

from __future__ import annotations

import pytest

from state_machines.kraft.messages import (
    API_NONE,
    ELECTION_NOT_NEEDED,
    ELIGIBLE_LEADERS_NOT_AVAILABLE,
    PREFERRED_LEADER_NOT_AVAILABLE,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResponse,
    ApiError,
)
from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.records import ApiMessageAndVersion, PartitionChangeRecord
from state_machines.model import NO_LEADER
from tests.unit.kraft.rcm_context import RECOVERED, RECOVERING, Ctx, isr_with_default_epoch, pcr

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
    assert [(p.leader, p.isr) for p in ctx.parts.values()] == [
        (NO_LEADER, (1,)),
        (4, (4,)),
        (0, (0,)),
    ]
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
    assert records == [
        ApiMessageAndVersion(
            PartitionChangeRecord(
                "foo-id", 0, isr=(2,), leader=2, leader_recovery_state=RECOVERING
            ),
            0,
        )
    ]
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
    assert answers == {
        ("foo", 0): PREFERRED_LEADER_NOT_AVAILABLE,
        ("foo", 1): ELECTION_NOT_NEEDED,
        ("foo", 2): PREFERRED_LEADER_NOT_AVAILABLE,
        ("bar", 0): unknown_bar,
        ("bar", 1): unknown_bar,
    }
    assert records == []
    # Broker 1 registers again to leave controlled shutdown.
    ctx.register_brokers(1)
    ctx.unfence_brokers(0, 1)
    records, alter_answers = ctx.send_alter_partition(
        2,
        102,
        "foo",
        [
            AlterPartitionPartitionData(0, 0, 0, isr_with_default_epoch(1, 2, 3)),
            AlterPartitionPartitionData(2, 0, 0, isr_with_default_epoch(0, 2, 1)),
        ],
    )
    assert alter_answers == [
        AlterPartitionPartitionResponse(0, "NONE", 2, 0, (1, 2, 3), RECOVERED, 1),
        AlterPartitionPartitionResponse(2, "NONE", 2, 0, (0, 2, 1), RECOVERED, 1),
    ]
    ctx.replay(records)
    records, answers = ctx.elect_leaders("PREFERRED", request)
    assert answers == {
        ("foo", 0): API_NONE,
        ("foo", 1): ELECTION_NOT_NEEDED,
        ("foo", 2): API_NONE,
        ("bar", 0): unknown_bar,
        ("bar", 1): unknown_bar,
    }
    assert records == [pcr(0, leader=1), pcr(2, leader=0)]


def test_balance_partition_leaders() -> None:
    """testBalancePartitionLeaders (maxElectionsPerImbalance unbounded, as in the test)."""
    ctx = Ctx()
    ctx.register_brokers(0, 1, 2, 3, 4)
    ctx.unfence_brokers(2, 3, 4)
    ctx.create_test_topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
    assert ctx.imbalanced()
    ctx.unfence_brokers(1)
    records, answers = ctx.send_alter_partition(
        2, 102, "foo", [AlterPartitionPartitionData(0, 0, 0, isr_with_default_epoch(1, 2, 3))]
    )
    assert answers == [AlterPartitionPartitionResponse(0, "NONE", 2, 0, (1, 2, 3), RECOVERED, 1)]
    ctx.replay(records)
    records = ctx.balance_partition_leaders()
    ctx.replay(records)
    assert records == [pcr(0, leader=1)]
    assert ctx.imbalanced()
    ctx.unfence_brokers(0)
    records, answers = ctx.send_alter_partition(
        2, 102, "foo", [AlterPartitionPartitionData(2, 0, 0, isr_with_default_epoch(0, 2, 1))]
    )
    assert answers == [AlterPartitionPartitionResponse(2, "NONE", 2, 0, (0, 2, 1), RECOVERED, 1)]
    ctx.replay(records)
    records = ctx.balance_partition_leaders()
    ctx.replay(records)
    assert records == [pcr(2, leader=0)]
    assert not ctx.imbalanced()


@pytest.mark.parametrize("unclean_config", ["none", "static", "dynamic_topic"])
def test_maybe_trigger_unclean_leader_election_for_leaderless_partitions(
    unclean_config: str,
) -> None:
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
