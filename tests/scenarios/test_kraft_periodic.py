"""KRaft's periodic write events on event time (QuorumController.java, 3.9.0):
`maybeBalancePartitionLeaders` and `maybeElectUncleanLeaders`, scheduled after the write
event that gives them work, run before the event whose `ts` reaches the deadline."""

from __future__ import annotations

from typing import Any

from state_machines.model import ControllerConfig
from tests.scenarios.test_kraft_rules import Cluster, change_fields, of_type

MIN = 60_000


def imbalanced_after_failover(c: Cluster) -> None:
    """t-0 [1,2] led by 1; broker 1 is fenced at ts 1 min (leader 2: imbalanced), comes
    back and rejoins the ISR."""
    for b in (1, 2):
        c(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b, ts=0)
    c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1, ts=0)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]}, ts=0)
    c("b1-down", "BrokerFailure", broker_id=1, ts=1 * MIN)
    c("b1-back", "BrokerStartup", broker_id=1, broker_epoch=101, ts=2 * MIN)
    c(
        "rejoin",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=2,
        broker_epoch=102,
        leader_epoch=1,
        partition_epoch=1,
        isr=[2, 1],
        ts=3 * MIN,
    )


def tick(c: Cluster, event_id: str, ts: int) -> list[dict[str, Any]]:
    return c(event_id, "ControllerTick", ts=ts)


def test_the_balance_runs_an_interval_after_the_event_that_imbalanced_the_leaders() -> None:
    """The fencing at 1 min made t-0 imbalanced: the balance is due 1 + 5 min later
    (leader.imbalance.check.interval.seconds 300), and moves the leader back to 1."""
    c = Cluster()
    imbalanced_after_failover(c)
    assert tick(c, "early", 6 * MIN - 1) == []
    out = tick(c, "due", 6 * MIN)
    (change,) = of_type(out, "PartitionChangeRecord")
    assert change_fields(change) == {"leader": 1}
    assert c.partition("t-0")["leader"] == 1
    # balanced: nothing is scheduled again
    assert tick(c, "later", 60 * MIN) == []


def test_no_balance_when_auto_rebalance_is_off() -> None:
    c = Cluster(ControllerConfig(mode="kraft", auto_leader_rebalance_enable=False))
    imbalanced_after_failover(c)
    assert tick(c, "late", 60 * MIN) == []


def test_a_balance_that_cannot_move_the_leader_reschedules_an_interval_later() -> None:
    """Broker 1 is back but not in the ISR: the PREFERRED election keeps 2 (no record), the
    partition stays imbalanced, and the task is due again an interval after its run."""
    c = Cluster()
    for b in (1, 2):
        c(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b, ts=0)
    c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1, ts=0)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]}, ts=0)
    c("b1-down", "BrokerFailure", broker_id=1, ts=1 * MIN)
    c("b1-back", "BrokerStartup", broker_id=1, broker_epoch=101, ts=2 * MIN)
    assert of_type(tick(c, "first", 6 * MIN), "PartitionChangeRecord") == []
    c(
        "rejoin",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=2,
        broker_epoch=102,
        leader_epoch=1,
        partition_epoch=1,
        isr=[2, 1],
        ts=7 * MIN,
    )
    assert tick(c, "not-yet", 11 * MIN - 1) == []
    (change,) = of_type(tick(c, "second", 11 * MIN), "PartitionChangeRecord")
    assert change_fields(change) == {"leader": 1}


def test_unclean_elections_run_on_their_own_interval_for_topics_that_allow_them() -> None:
    """KRaft does not elect when a topic's unclean setting turns true; the unclean task,
    scheduled when the partition lost its leader (2 min), runs 5 min later
    (unclean.leader.election.interval.ms) and elects the out-of-sync replica, RECOVERING."""
    c = Cluster()
    for b in (1, 2):
        c(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b, ts=0)
    c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1, ts=0)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]}, ts=0)
    c("b2-down", "BrokerFailure", broker_id=2, ts=1 * MIN)
    c("b1-down", "BrokerFailure", broker_id=1, ts=2 * MIN)
    c("b2-back", "BrokerStartup", broker_id=2, broker_epoch=102, ts=3 * MIN)
    assert c.partition("t-0")["leader"] == -1
    assert (
        of_type(
            c(
                "allow",
                "TopicConfigChange",
                topic="t",
                configs={"unclean.leader.election.enable": "true"},
                ts=4 * MIN,
            ),
            "PartitionChangeRecord",
        )
        == []
    )
    assert tick(c, "not-yet", 7 * MIN - 1) == []
    (change,) = of_type(tick(c, "due", 7 * MIN), "PartitionChangeRecord")
    assert change_fields(change) == {
        "isr": [2],
        "leader": 2,
        "leader_recovery_state": 1,
        "election": "unclean",
    }


def test_an_unclean_run_that_finds_no_topic_allowing_it_runs_again_an_interval_later() -> None:
    """The run at 7 min finds the topic does not allow unclean election: DEFERRED, and the
    partition still has no leader, so its run schedules the next one at 7 + 5 min."""
    c = Cluster()
    for b in (1, 2):
        c(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b, ts=0)
    c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1, ts=0)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]}, ts=0)
    c("b2-down", "BrokerFailure", broker_id=2, ts=1 * MIN)
    c("b1-down", "BrokerFailure", broker_id=1, ts=2 * MIN)
    c("b2-back", "BrokerStartup", broker_id=2, broker_epoch=102, ts=3 * MIN)
    assert of_type(tick(c, "first-run", 7 * MIN), "PartitionChangeRecord") == []
    c(
        "allow",
        "TopicConfigChange",
        topic="t",
        configs={"unclean.leader.election.enable": "true"},
        ts=8 * MIN,
    )
    assert tick(c, "not-yet", 12 * MIN - 1) == []
    (change,) = of_type(tick(c, "second-run", 12 * MIN), "PartitionChangeRecord")
    assert change_fields(change) == {
        "isr": [2],
        "leader": 2,
        "leader_recovery_state": 1,
        "election": "unclean",
    }
