"""Issue 43, Z1: the replicas of several brokers in one replica state machine call are
visited in Scala 2.13 `immutable.HashMap` order (state_machines/scala_hash.py).

`ZkReplicaStateMachine.handleStateChanges` (Kafka 3.9.0, ReplicaStateMachine.scala) runs
`replicas.groupBy(_.replica).forKeyValue(doHandleStateChanges)`: one broker at a time, in
the HashMap's order over the brokers of every replica in the call. For OfflineReplica each
broker's turn is a `removeReplicasFromIsr` write, and the ISR keeps its last member, so the
broker visited last is the ISR that remains. `IterableOps.groupBy` (scala 2.13.14,
Iterable.scala) always builds an `immutable.HashMap`; keys are placed by
`Hashing.improve(id)`, five bits a level: brokers 0, 1, 2 take root slots 0, 7, 14.
"""

from __future__ import annotations

from pathlib import Path

from tests.scenarios.test_controller_integration import simulate


def test_topic_deletion_removes_isr_members_in_hash_map_order(tmp_path: Path) -> None:
    """The issue's log. `TopicDeletion t`: TopicDeletionManager.onPartitionDeletion moves
    the live replicas [0, 2, 1] to OfflineReplica in one call; Kafka visits 0, 1, 2
    (slots 0, 7, 14), not in the assignment's order, so `removeReplicasFromIsr` leaves ISR
    [2] with leader -1: three writes, each bumping the leader and partition epochs (the
    third keeps the one-member ISR). Broker 1's restart sends it that state
    (onBrokerStartup: OnlineReplica from ReplicaDeletionIneligible)."""
    run = simulate(tmp_path, "zkOfflineReplicasVisitedInHashMapOrder")
    offline = [
        r["broker_id"]
        for r in run.records("delete-t", "ReplicaStateChange")
        if r["to_state"] == "OfflineReplica"
    ]
    assert offline == [0, 1, 2]
    (sent,) = run.records("b1-up-again", "LeaderAndIsr")
    assert (sent["leader"], sent["isr"], sent["leader_epoch"], sent["partition_epoch"]) == (
        -1,
        [2],
        3,
        3,
    )
    assert sent["recipients"] == [1]
    p = run.partition("t-0")
    assert (p["leader"], p["isr"], p["state"]) == (-1, [2], "NonExistentPartition")


def test_the_order_is_over_every_broker_of_the_call(tmp_path: Path) -> None:
    """A key's place depends on the call's other keys: 24 and 25 share root slot 3, so both
    go one level down, after every key alone in its root slot (ChampBaseIterator: a node's
    payload, then its sub-nodes). The deletion's OfflineReplica call holds brokers
    {2, 24, 25} (t-0 on [24, 2], t-1 on [25]): Kafka visits 2 (slot 14), then 24, then 25,
    and t-0's ISR keeps 24. On its own, t-0's {24, 2} would put 24 (slot 3) first."""
    run = simulate(tmp_path, "zkOfflineReplicasVisitedInHashMapOrderHighIds")
    offline = [
        r["broker_id"]
        for r in run.records("delete-t", "ReplicaStateChange")
        if r["to_state"] == "OfflineReplica" and r["partition"] == 0
    ]
    assert offline == [2, 24]
    p = run.partition("t-0")
    assert (p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]) == (-1, [24], 2, 2)


def test_a_new_controller_takes_offline_replicas_out_of_the_isr_in_hash_map_order(
    tmp_path: Path,
) -> None:
    """ReplicaStateMachine.startup: `handleStateChanges(offlineReplicas.toSeq,
    OfflineReplica)` over every partition at once. Loaded while inactive: t-0 on [24, 2, 0]
    with ISR [24, 2] and u-0 on [25, 0]; only broker 0 is registered at the failover. The
    call's brokers are {2, 24, 25}: Kafka visits 2, then 24 (24 and 25 share a root slot),
    so t-0 keeps ISR [24], leader -1, after two writes (LE 3 -> 5, PE 5 -> 7)."""
    run = simulate(tmp_path, "zkStartupOfflineReplicasInHashMapOrder")
    offline = [
        r["broker_id"]
        for r in run.records("elected", "ReplicaStateChange")
        if r["topic"] == "t" and r["to_state"] == "OfflineReplica"
    ]
    assert offline == [2, 24]
    p = run.partition("t-0")
    assert (p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]) == (-1, [24], 5, 7)
