"""Issue 43, Z3: `onReplicasBecomeOffline` moves every partition whose leader is not
online to OfflinePartition, cluster-wide.

`KafkaController.onReplicasBecomeOffline` (Kafka 3.9.0) starts with
`partitionStateMachine.handleStateChanges(controllerContext.partitionsWithOfflineLeader
.toSeq, OfflinePartition)`. `ControllerContext.partitionsWithOfflineLeader` filters every
partition with leadership info by `!isReplicaOnline(leader, partition)` (topics queued for
deletion aside), whatever broker failed: leader -1 is never online, so an Online partition
left without a leader (a reassignment's leader move that found nobody) goes Offline at the
next broker failure anywhere, and `triggerOnlinePartitionStateChange` retries it then and
at every later broker change.
"""

from __future__ import annotations

from pathlib import Path

from tests.scenarios.test_controller_integration import simulate


def test_an_online_partition_without_leader_goes_offline_at_any_broker_failure(
    tmp_path: Path,
) -> None:
    """The issue's log. t-0 on [0]; broker 0 dies (leader -1); a reassignment to [1] and
    unclean election on the topic elect 1 (RECOVERING); the cancellation reverts to [0]:
    moveReassignedPartitionLeaderIfRequired finds no leader in [0] (the partition stays
    Online) and replica 1 leaves the ISR as the leader, so t-0 is Online, leader -1, ISR [1].
    Broker 2, which never hosted t, dies: Kafka moves t-0 Online -> Offline and fails to
    elect (no live replica of [0]). A reassignment to [0, 1] adds 1 as a new replica; broker
    2's return (onBrokerStartup -> triggerOnlinePartitionStateChange) elects 1, in the ISR:
    LE 6, ISR [1], PE 6, an offline election (Election.leaderForOffline keeps the recovery
    state)."""
    run = simulate(tmp_path, "zkOfflineLeaderScanIsClusterWide")
    assert [
        (r["from_state"], r["to_state"]) for r in run.records("b2-down", "PartitionStateChange")
    ] == [("OnlinePartition", "OfflinePartition")]
    assert [r["target_state"] for r in run.records("b2-down", "StateChangeFailed")] == [
        "OnlinePartition"
    ]
    (elected,) = run.records("b2-up-again", "LeaderAndIsr")
    assert (
        elected["leader"],
        elected["leader_epoch"],
        elected["isr"],
        elected["partition_epoch"],
        elected["election"],
    ) == (1, 6, [1], 6, "offline")
    p = run.partition("t-0")
    assert (p["state"], p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]) == (
        "OnlinePartition",
        1,
        [1],
        6,
        6,
    )


def test_a_log_dir_failure_reaches_every_partition_without_leader(tmp_path: Path) -> None:
    """The same scan from the other caller: processLeaderAndIsrResponseReceived ->
    onReplicasBecomeOffline for u-0's replica on broker 2's failed dir. t-0 (Online,
    leader -1, as above; never on broker 2) goes Offline there too, and its election fails;
    u-0's leader 2 is no longer online for u-0 and 1 takes over."""
    run = simulate(tmp_path, "zkOfflineLeaderScanAtLogDirFailure")
    by_topic = {
        t: [
            (r["from_state"], r["to_state"])
            for r in run.records("b2-dir", "PartitionStateChange")
            if r["topic"] == t
        ]
        for t in ("t", "u")
    }
    assert by_topic == {
        "t": [("OnlinePartition", "OfflinePartition")],
        "u": [("OnlinePartition", "OfflinePartition"), ("OfflinePartition", "OnlinePartition")],
    }
    assert (run.partition("t-0")["state"], run.partition("t-0")["leader"]) == (
        "OfflinePartition",
        -1,
    )
    assert (run.partition("u-0")["leader"], run.partition("u-0")["isr"]) == (1, [1])
