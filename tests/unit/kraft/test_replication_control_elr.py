"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0; trunk of 2024-10 for
4.0 has the same ELR methods): the eligible leader replicas (KIP-966), one test per Kafka
method, named after it, on the test context of rcm_context.py. Those that drive the
controller through requests and broker events run a second time through the engine in
kraft mode (engine_cluster.py), where BrokerFailure is a session timeout and BrokerStartup
a registration and the unfencing heartbeat in one event.
"""

from __future__ import annotations

from typing import Any

from tests.unit.kraft.engine_cluster import KRAFT_ELR, Cluster, of_type
from tests.unit.kraft.rcm_context import Ctx, assert_consistent, isr_with_default_epoch

# -- ELR ---------------------------------------------------------------------------------


def test_eligible_leader_replicas_shrink_and_expand_isr() -> None:
    """testEligibleLeaderReplicas_ShrinkAndExpandIsr."""
    ctx = Ctx(elr=True)
    ctx.register_brokers(0, 1, 2)
    ctx.unfence_brokers(0, 1, 2)
    ctx.create_test_topic("foo", [[0, 1, 2]])
    assert ctx.get("foo").leader == 0
    ctx.alter_topic_config("foo", min_isr=2)
    records, answers = ctx.send_alter_partition(
        0, 100, "foo", [ctx.new_alter_partition("foo", isr_with_default_epoch(0))]
    )
    ctx.replay(records)
    assert_consistent(ctx, answers[0])
    assert (ctx.get("foo").elr, ctx.get("foo").last_known_elr) == ((1, 2), ())
    records, answers = ctx.send_alter_partition(
        0, 100, "foo", [ctx.new_alter_partition("foo", isr_with_default_epoch(0, 1))]
    )
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


# -- the same, through the engine ---------------------------------------------------------


def elr_cluster_with_foo(*brokers: int, min_isr: int) -> Cluster:
    """The ELR test context, foo on all the brokers, then min.insync.replicas."""
    c = Cluster(KRAFT_ELR)
    c.start(*brokers)
    c("create", "TopicCreation", topic="foo", partitions={"0": list(brokers)})
    c("min-isr", "TopicConfigChange", topic="foo", configs={"min.insync.replicas": str(min_isr)})
    return c


def foo0(c: Cluster) -> dict[str, Any]:
    return dict(c.state()["partitions"]["foo-0"])


def elr_fields(p: dict[str, Any]) -> tuple[Any, ...]:
    return p["leader"], p["isr"], p["eligible_leader_replicas"], p["last_known_elr"]


def test_eligible_leader_replicas_shrink_and_expand_isr_through_the_engine() -> None:
    """testEligibleLeaderReplicas_ShrinkAndExpandIsr: the leader's AlterPartition shrinks
    the ISR to [0] below min.insync.replicas 2 (ELR [1, 2], only the partition epoch moves),
    then expands it to [0, 1] (the ELR empties); each answer is the partition as replayed."""
    c = elr_cluster_with_foo(0, 1, 2, min_isr=2)
    for step, (isr, partition_epoch, elr) in enumerate((([0], 0, [1, 2]), ([0, 1], 1, []))):
        out = c(
            f"alter-{step}",
            "AlterPartition",
            topic="foo",
            partition=0,
            broker_id=0,
            broker_epoch=100,
            leader_epoch=0,
            partition_epoch=partition_epoch,
            isr=isr,
        )
        (answer,) = of_type(out, "AlterPartitionResult")
        p = foo0(c)
        assert (
            answer["error"],
            answer["leader"],
            answer["leader_epoch"],
            answer["isr"],
            answer["partition_epoch"],
        ) == (None, p["leader"], p["leader_epoch"], p["isr"], p["partition_epoch"])
        assert (p["leader_epoch"], p["partition_epoch"]) == (0, partition_epoch + 1)
        assert elr_fields(p) == (0, isr, elr, [])


def test_eligible_leader_replicas_broker_fence_through_the_engine() -> None:
    """testEligibleLeaderReplicas_BrokerFence: session timeouts of 2 and 3 (ELR [3]), then
    of 1 (ELR [1, 3]); the brokers coming back do not change the ELR (their unfencing
    reaches only leaderless partitions)."""
    c = elr_cluster_with_foo(0, 1, 2, 3, min_isr=3)
    c("b2-timeout", "BrokerFailure", broker_id=2)
    c("b3-timeout", "BrokerFailure", broker_id=3)
    assert elr_fields(foo0(c)) == (0, [0, 1], [3], [])
    c("b1-timeout", "BrokerFailure", broker_id=1)
    assert elr_fields(foo0(c)) == (0, [0], [1, 3], [])
    for b in (1, 2, 3):
        assert (
            of_type(
                c(f"b{b}-back", "BrokerStartup", broker_id=b, broker_epoch=100 + b),
                "PartitionChangeRecord",
            )
            == []
        )
    assert elr_fields(foo0(c)) == (0, [0], [1, 3], [])


def test_eligible_leader_replicas_clean_election_through_the_engine() -> None:
    """testEligibleLeaderReplicas_CleanElection: session timeouts fence 1, 2, 3 (ELR [2, 3]);
    2 comes back (unfenced, still outside the ISR); when 0 times out the ISR empties, so 2
    is elected from the ELR (KIP-966), cleanly, and the ELR becomes [0, 3]."""
    c = elr_cluster_with_foo(0, 1, 2, 3, min_isr=3)
    for b in (1, 2, 3):
        c(f"b{b}-timeout", "BrokerFailure", broker_id=b)
    assert elr_fields(foo0(c)) == (0, [0], [2, 3], [])
    c("b2-back", "BrokerStartup", broker_id=2, broker_epoch=102)
    c("b0-timeout", "BrokerFailure", broker_id=0)
    c("b1-timeout", "BrokerFailure", broker_id=1)
    assert elr_fields(foo0(c)) == (2, [2], [0, 3], [])


def test_eligible_leader_replicas_unclean_shutdown_through_the_engine() -> None:
    """testEligibleLeaderReplicas_UncleanShutdown: 1, 2, 3 fenced (ELR [2, 3]). A new
    incarnation of 3 (registerBroker's handleBrokerUncleanShutdown) leaves the ELR; one of 0,
    the last ISR member and leader, leaves the ISR and becomes the last known leader. The
    heartbeat that then unfences 0 elects nobody: the ELR [2] is not empty, so
    `canElectLastKnownLeader` declines, and 2 is fenced."""
    c = elr_cluster_with_foo(0, 1, 2, 3, min_isr=3)
    for b in (1, 2, 3):
        c(f"b{b}-timeout", "BrokerFailure", broker_id=b)
    assert elr_fields(foo0(c)) == (0, [0], [2, 3], [])
    out = c("b3-new", "BrokerStartup", broker_id=3, broker_epoch=203)
    assert [ch.get("eligible_leader_replicas") for ch in of_type(out, "PartitionChangeRecord")] == [
        [2]
    ]
    assert elr_fields(foo0(c)) == (0, [0], [2], [])

    # 0 is unfenced: its old session must expire before the new incarnation registers
    # (issue 43 K6), so 0 is fenced first and goes to the ELR; then its unclean shutdown
    # takes it out of the ELR. The end is Kafka's: the ELR [2], 0 the last known leader.
    out = c("b0-new", "BrokerStartup", broker_id=0, broker_epoch=200)
    fenced, unclean = of_type(out, "PartitionChangeRecord")
    assert (fenced["isr"], fenced["leader"], fenced["last_known_elr"]) == ([], -1, [0])
    assert unclean["eligible_leader_replicas"] == [2]
    assert elr_fields(foo0(c)) == (-1, [], [2], [0])


def test_unfencing_after_an_unclean_shutdown_elects_the_last_known_leader() -> None:
    """Beyond Kafka's tests, its code: testEligibleLeaderReplicas_UncleanShutdown's step with
    nothing left in the ELR. bar on [0] alone; a new incarnation of 0 (a fast restart: its
    old session expires first, `handleBrokerFenced`) leaves the ISR empty with 0 as the last
    known leader. Kafka's unfencing
    heartbeat comes after those records are replayed, so bar-0 is in
    `partitionsWithNoLeader` and `handleBrokerUnfenced` elects 0 as the last known leader
    (`canElectLastKnownLeader`: ISR and ELR empty), uncleanly: ISR [0], RECOVERING, the last
    known ELR cleared. BrokerStartup is both, in one event."""
    c = Cluster(KRAFT_ELR)
    c.start(0, 1)
    c("create", "TopicCreation", topic="bar", partitions={"0": [0]})
    out = c("b0-new", "BrokerStartup", broker_id=0, broker_epoch=200)
    fenced, unfenced = of_type(out, "PartitionChangeRecord")
    assert (
        fenced["isr"],
        fenced["leader"],
        fenced["last_known_elr"],
    ) == ([], -1, [0])
    assert (
        unfenced["isr"],
        unfenced["leader"],
        unfenced["leader_recovery_state"],
        unfenced["last_known_elr"],
    ) == ([0], 0, 1, [])
    p = c.state()["partitions"]["bar-0"]
    assert (
        p["leader"],
        p["isr"],
        p["eligible_leader_replicas"],
        p["last_known_elr"],
        p["leader_recovery_state"],
    ) == (0, [0], [], [], "RECOVERING")
