"""Port of Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0; trunk of 2024-10 for
4.0 has the same ELR methods): the eligible leader replicas (KIP-966), one test per Kafka
method, named after it, on the test context of rcm_context.py.
"""

from __future__ import annotations

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
