"""Kafka 3.9.0's controller-wide rules, one scenario per rule, through the engine.

Each scenario follows a code path of `core/src/main/scala/kafka/controller/KafkaController.scala`
(named in its docstring) and checks what Kafka's controller would have stored and sent.
Epoch arithmetic: every controller write of the partition state bumps the partition epoch
(the znode version); a new leader, and a replica leaving the ISR, bump the leader epoch.
"""

from __future__ import annotations

from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig


class Cluster:
    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.engine = Engine(config or ControllerConfig())
        self.offset = 0
        self.out: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, event_id: str, type_: str, **fields: Any) -> list[dict[str, Any]]:
        records = self.engine.process(
            parse_event({"v": 1, "type": type_, "id": event_id, **fields}, self.offset)
        )
        self.offset += 1
        self.out[event_id] = records
        return records

    def start(self, *brokers: int, ts: int | None = None) -> None:
        for b in brokers:
            self(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b)
        self(
            "elected",
            "ControllerFailover",
            controller_id=brokers[0],
            controller_epoch=1,
            **({} if ts is None else {"ts": ts}),
        )

    def partition(self, key: str) -> dict[str, Any]:
        return self.engine.state_json()["partitions"][key]


def leadership(p: dict[str, Any]) -> tuple[str, int, list[int], int, int, str]:
    return (
        p["state"],
        p["leader"],
        p["isr"],
        p["leader_epoch"],
        p["partition_epoch"],
        p["leader_recovery_state"],
    )


def offline_t0(c: Cluster, configs: dict[str, str] | None = None) -> None:
    """t-0 on broker 1 only; broker 1 dies: leader -1, ISR [1] (the last member stays)."""
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1]},
        **({"configs": configs} if configs else {}),
    )
    c("b1-down", "BrokerFailure", broker_id=1)
    assert leadership(c.partition("t-0")) == ("OfflinePartition", -1, [1], 1, 1, "RECOVERED")


def test_an_offline_partition_is_elected_at_a_broker_change_anywhere() -> None:
    """The issue's case: unclean election enabled on the topic while none of its replicas
    lives (processTopicUncleanLeaderElectionEnable finds nobody), then a reassignment to a
    live broker (phase A: updateLeaderEpochAndSendRequest, NewReplica; nothing elects).
    Broker 3, which hosts nothing of t, starts: onBrokerStartup ->
    partitionStateMachine.triggerOnlinePartitionStateChange() over every New and Offline
    partition; Election.leaderForOffline finds no live ISR member, unclean is allowed by the
    topic, and the first live replica of the assignment, 2, leads (RECOVERING, KIP-704)."""
    c = Cluster()
    c.start(1, 2)
    offline_t0(c)
    c(
        "unclean-on",
        "TopicConfigChange",
        topic="t",
        configs={"unclean.leader.election.enable": "true"},
    )
    assert c.partition("t-0")["leader"] == -1
    c("move", "PartitionReassignment", topic="t", partition=0, target_replicas=[2])
    assert leadership(c.partition("t-0")) == ("OfflinePartition", -1, [1], 2, 2, "RECOVERED")
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103)
    assert leadership(c.partition("t-0")) == ("OnlinePartition", 2, [2], 3, 3, "RECOVERING")
    elected = [r for r in c.out["b3-up"] if r["type"] == "LeaderAndIsr"]
    assert [(r["leader"], r["election"], r["recipients"]) for r in elected] == [(2, "unclean", [2])]


def test_a_retry_of_a_partition_that_is_not_offline_emits_nothing() -> None:
    """triggerOnlinePartitionStateChange only elects New and Offline partitions: an online
    partition reached by the retry is left alone, without a record."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="u", partitions={"0": [2]})
    offline_t0(c)
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103)
    assert [r for r in c.out["b3-up"] if r.get("topic") == "u"] == []
    # the offline one is retried, and fails again (Kafka logs it each time)
    assert [(r["type"], r["topic"]) for r in c.out["b3-up"] if "topic" in r] == [
        ("StateChangeFailed", "t")
    ]


def test_cluster_wide_unclean_enabled_retries_offline_partitions() -> None:
    """BrokerConfigChange turns the cluster-wide dynamic unclean default true:
    processUncleanLeaderElectionEnable -> triggerOnlinePartitionStateChange(). A topic that
    overrides the setting to false stays offline."""
    c = Cluster()
    c.start(1, 2)
    offline_t0(c)
    c(
        "create-v",
        "TopicCreation",
        topic="v",
        partitions={"0": [1, 2]},
        configs={"unclean.leader.election.enable": "false"},
    )
    c("b2-down", "BrokerFailure", broker_id=2)
    c("b1-up", "BrokerStartup", broker_id=1, broker_epoch=201)  # t-0 is back: leader 1
    assert c.partition("t-0")["leader"] == 1
    # t-0 moves to broker 3; v-0 led by nobody: its ISR [2] is dead
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103)
    c("b1-down-again", "BrokerFailure", broker_id=1)
    c("move", "PartitionReassignment", topic="t", partition=0, target_replicas=[3])
    assert c.partition("t-0")["leader"] == -1
    c("default-unclean", "BrokerConfigChange", configs={"unclean.leader.election.enable": "true"})
    assert (c.partition("t-0")["leader"], c.partition("t-0")["leader_recovery_state"]) == (
        3,
        "RECOVERING",
    )
    v = c.partition("v-0")
    assert (v["state"], v["leader"]) == ("OfflinePartition", -1)
    failed = [r for r in c.out["default-unclean"] if r["type"] == "StateChangeFailed"]
    assert [r["topic"] for r in failed] == ["v"]
    # null returns the key to the static setting (false): nothing is retried
    c("default-static", "BrokerConfigChange", configs={"unclean.leader.election.enable": None})
    assert c.out["default-static"] == []
    assert "dynamic_configs" not in c.engine.state_json()


def test_a_replica_on_a_failed_log_dir_is_offline_until_its_broker_restarts() -> None:
    """processLogDirEventNotification -> onBrokerLogDirFailure: LeaderAndIsr to broker 1's
    replicas (OnlineReplica); its answer, KAFKA_STORAGE_ERROR for t-0
    (processLeaderAndIsrResponseReceived), puts that replica in replicasOnOfflineDirs and
    runs onReplicasBecomeOffline: t-0's leader is no longer online, 2 leads with ISR [2],
    and replica 1 goes OfflineReplica while its broker stays alive (so its StopReplica is
    sent). isReplicaOnline keeps it out of elections until broker 1 restarts
    (onBrokerStartup removes it from replicasOnOfflineDirs)."""
    c = Cluster(ControllerConfig(unclean_leader_election_enable=True))
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("dir", "ReplicaDirFailure", broker_id=1, partitions=[{"topic": "t", "partition": 0}])
    p = c.partition("t-0")
    assert leadership(p) == ("OnlinePartition", 2, [2], 1, 1, "RECOVERED")
    assert p["replica_states"]["1"] == "OfflineReplica" and p["offline_dirs"] == [1]
    assert [r["broker_id"] for r in c.out["dir"] if r["type"] == "StopReplica"] == [1]
    # broker 2 dies: the only other replica is on a failed dir, so even unclean finds nobody
    c("b2-down", "BrokerFailure", broker_id=2)
    assert leadership(c.partition("t-0"))[:2] == ("OfflinePartition", -1)
    # the same answer again is not new: onReplicasBecomeOffline does not run
    c("dir-again", "ReplicaDirFailure", broker_id=1, partitions=[{"topic": "t", "partition": 0}])
    assert [r["type"] for r in c.out["dir-again"]] == [
        "ReplicaStateChange",
        "LeaderAndIsr",
        "UpdateMetadata",
    ]
    # broker 1 bounces: the failed dir is forgotten and the unclean election picks it
    c("b1-bounce", "BrokerStartup", broker_id=1, broker_epoch=201)
    p = c.partition("t-0")
    assert (p["state"], p["leader"], p["leader_recovery_state"]) == (
        "OnlinePartition",
        1,
        "RECOVERING",
    )
    assert "offline_dirs" not in p


def test_a_controller_move_forgets_failed_log_dirs() -> None:
    """A new controller starts with an empty replicasOnOfflineDirs."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("dir", "ReplicaDirFailure", broker_id=1, partitions=[{"topic": "t", "partition": 0}])
    c("moved", "ControllerFailover", controller_id=2, controller_epoch=2)
    assert "offline_dirs" not in c.partition("t-0")


def test_automatic_rebalance_runs_in_event_time_and_only_when_enabled() -> None:
    """onControllerFailover schedules the first check 5 s after the failover; each check
    schedules the next one leader.imbalance.check.interval.seconds later. With
    auto.leader.rebalance.enable=false nothing is ever scheduled."""
    for enabled in (True, False):
        c = Cluster(
            ControllerConfig(
                auto_leader_rebalance_enable=enabled, leader_imbalance_check_interval_seconds=60
            )
        )
        c.start(1, 2, ts=0)
        c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [1, 2]}, ts=100)
        c("b1-down", "BrokerFailure", broker_id=1, ts=200)
        c("b1-up", "BrokerStartup", broker_id=1, broker_epoch=201, ts=300)
        for p in (0, 1):
            c(
                f"isr-{p}",
                "AlterPartition",
                topic="t",
                partition=p,
                broker_id=2,
                broker_epoch=102,
                leader_epoch=1,
                partition_epoch=1,
                isr=[2, 1],
                ts=400,
            )
        c("tick-4999", "ControllerTick", ts=4_999)
        assert c.out["tick-4999"] == []
        c("tick-5000", "ControllerTick", ts=5_000)
        leaders = {p: c.partition(f"t-{p}")["leader"] for p in (0, 1)}
        if not enabled:
            assert c.out["tick-5000"] == [] and leaders == {0: 2, 1: 2}
            continue
        # broker 1 is preferred for both and leads neither (ratio 1.0 > 0.10)
        assert leaders == {0: 1, 1: 1}
        assert {r["type"] for r in c.out["tick-5000"]} == {"LeaderAndIsr", "UpdateMetadata"}
        assert c.engine.state_json()["next_rebalance_check_ts"] == 65_000
        # a quiet hour later: one check runs (nothing to do) and the schedule moves past it
        c("tick-later", "ControllerTick", ts=3_605_000)
        assert c.out["tick-later"] == []
        assert c.engine.state_json()["next_rebalance_check_ts"] == 3_665_000


def test_automatic_rebalance_respects_the_ratio_strictly() -> None:
    """ratio = not-preferred / group > leader.imbalance.per.broker.percentage / 100, on
    doubles: 1 of 10 (0.1) does not trigger at the default 10 %; 2 of 10 does."""
    for moved, expect in ((1, False), (2, True)):
        c = Cluster()
        c.start(1, 2, ts=0)
        c(
            "create",
            "TopicCreation",
            topic="t",
            partitions={str(p): [1, 2] for p in range(10)},
            ts=100,
        )
        # broker 1 bounces: 2 leads all ten; 1 rejoins every ISR, and a preferred election
        # gives back all but the first `moved`
        c("b1-bounce", "BrokerStartup", broker_id=1, broker_epoch=201, ts=300)
        for p in range(10):
            c(
                f"isr-{p}",
                "AlterPartition",
                topic="t",
                partition=p,
                broker_id=2,
                broker_epoch=102,
                leader_epoch=1,
                partition_epoch=1,
                isr=[2, 1],
                ts=400,
            )
        for p in range(moved, 10):
            c(
                f"back-{p}",
                "ReplicaLeaderElection",
                election_type="PREFERRED",
                partitions=[{"topic": "t", "partition": p}],
                ts=500,
            )
        c("tick", "ControllerTick", ts=5_000)
        elected = [r["partition"] for r in c.out["tick"] if r["type"] == "LeaderAndIsr"]
        assert elected == (list(range(moved)) if expect else [])


def test_a_replica_on_a_failed_log_dir_makes_a_topic_deletion_ineligible() -> None:
    """TopicDeletionManager.onPartitionDeletion splits a topic's replicas with
    `controllerContext.isReplicaOnline`, which counts a replica on a failed log dir as
    offline although its broker lives: broker 2's replica goes ReplicaDeletionIneligible and
    the topic is ineligible ("offline replicas"). When broker 1's deletion succeeds,
    resumeDeletions retries the ineligible replica (-> OfflineReplica) but does not start
    its deletion: no StopReplica with delete_partition goes to broker 2."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("dir", "ReplicaDirFailure", broker_id=2, partitions=[{"topic": "t", "partition": 0}])
    c("delete", "TopicDeletion", topic="t")
    assert c.engine.state_json()["topics"]["t"]["deletion"] == "ineligible"
    assert [
        (r["broker_id"], r["delete_partition"])
        for r in c.out["delete"]
        if r["type"] == "StopReplica"
    ] == [(1, False), (1, True)]
    c("deleted-on-1", "StopReplicaResponse", topic="t", partition=0, broker_id=1, error=None)
    assert [
        (r["broker_id"], r["delete_partition"])
        for r in c.out["deleted-on-1"]
        if r["type"] == "StopReplica"
    ] == [(2, False)]
    assert c.partition("t-0")["replica_states"] == {
        "1": "ReplicaDeletionSuccessful",
        "2": "OfflineReplica",
    }


def _offline_t0_with_broker_2_out_of_sync(c: Cluster) -> None:
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("b2-down", "BrokerFailure", broker_id=2)
    c("b1-down", "BrokerFailure", broker_id=1)
    c("b2-up", "BrokerStartup", broker_id=2, broker_epoch=202)  # only the out-of-sync replica lives
    assert leadership(c.partition("t-0"))[:3] == ("OfflinePartition", -1, [1])


def test_a_topic_enabling_unclean_elections_is_retried_at_once() -> None:
    """TopicConfigHandler.processConfigChanges -> enableTopicUncleanLeaderElection ->
    processTopicUncleanLeaderElectionEnable: triggerOnlinePartitionStateChange(topic)."""
    c = Cluster()
    c.start(1, 2)
    _offline_t0_with_broker_2_out_of_sync(c)
    c("unclean", "TopicConfigChange", topic="t", configs={"unclean.leader.election.enable": "TRUE"})
    assert (c.partition("t-0")["leader"], c.partition("t-0")["leader_recovery_state"]) == (
        2,
        "RECOVERING",
    )


def test_a_topic_enabling_unclean_elections_with_spaces_waits_for_the_next_trigger() -> None:
    """TopicConfigHandler reads the value with Scala's toBoolean, untrimmed: " true" throws,
    `Try(...).getOrElse(false)` says false, and nothing is retried. LogConfig trims
    (ConfigDef.parseType), so the topic's elections are unclean from then on: the next
    broker change (onBrokerStartup -> triggerOnlinePartitionStateChange) elects."""
    c = Cluster()
    c.start(1, 2)
    _offline_t0_with_broker_2_out_of_sync(c)
    c("spaced", "TopicConfigChange", topic="t", configs={"unclean.leader.election.enable": " true"})
    assert c.out["spaced"] == []
    assert c.partition("t-0")["leader"] == -1
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103)
    assert (c.partition("t-0")["leader"], c.partition("t-0")["leader_recovery_state"]) == (
        2,
        "RECOVERING",
    )
