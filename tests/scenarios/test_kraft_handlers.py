"""KRaft's request and broker handlers where they decide differently from a first reading.

Each scenario is a small log through the engine, asserting what Kafka's quorum controller
appends and answers (apache/kafka 3.9.0, metadata/src/main/java/org/apache/kafka/controller/
and core/src/main/scala/kafka/server/ControllerApis.scala); each names the method that
decides it. The cases are issue 43's K1-K7 and its AlterPartition item.
"""

from __future__ import annotations

from typing import Any

from state_machines.model import ControllerConfig
from tests.scenarios.test_kraft_rules import Cluster, of_type

KRAFT = ControllerConfig(mode="kraft")


def kinds(records: list[dict[str, Any]]) -> list[str]:
    return [r["type"] for r in records]


def test_partition_expansion_takes_the_replication_factor_from_partition_zero_now() -> None:
    """K1. `ReplicationControlManager.createPartitions`: the replication factor is partition
    0's current `replicas.length` (`topicInfo.parts.values().iterator().next()`), not every
    broker the partition ever named. A completed reassignment of t-0 from [1,2] to [3,4]
    leaves 2 replicas, so a new partition on [4,3] is written."""
    c = Cluster()
    c.start(1, 2, 3, 4)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("reassign", "PartitionReassignment", topic="t", partition=0, target_replicas=[3, 4])
    p = c.partition("t-0")
    done = c(
        "complete",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        leader_epoch=p["leader_epoch"],
        partition_epoch=p["partition_epoch"],
        isr=[1, 2, 3, 4],
    )
    assert of_type(done, "AlterPartitionResult")[0]["error"] == "NEW_LEADER_ELECTED"
    assert c.partition("t-0")["replicas"] == [3, 4]
    out = c("expand", "PartitionExpansion", topic="t", partitions={"1": [4, 3]})
    assert kinds(out) == ["PartitionRecord"]
    assert (out[0]["partition"], out[0]["replicas"], out[0]["isr"], out[0]["leader"]) == (
        1,
        [4, 3],
        [4, 3],
        4,
    )
    # and one of 4 replicas is refused: partition 0 has 2
    out = c("expand-4", "PartitionExpansion", topic="t", partitions={"2": [1, 2, 3, 4]})
    assert kinds(out) == ["StateChangeFailed"]
    assert out[0]["reason"].endswith("previous partitions, which have 2 replica(s).")


def test_partition_numbers_must_be_consecutive_from_zero() -> None:
    """K2. `ReplicationControlManager.createTopic` checks, after every assignment, that the
    partitions are 0..n-1 ("partitions should be a consecutive 0-based integer sequence",
    INVALID_REPLICA_ASSIGNMENT); `createPartitions` numbers the new partitions from the
    current count, so the contract's numbers must continue it (the request is `count` = the
    highest number + 1 with one assignment per new partition: "Attempted to add ...",
    INVALID_REPLICA_ASSIGNMENT; a count that is no increase: INVALID_PARTITIONS). A topic-level
    refusal is answered on the request's first partition; nothing is written."""
    c = Cluster()
    c.start(1, 2)
    consecutive = (
        "INVALID_REPLICA_ASSIGNMENT: partitions should be a consecutive 0-based integer sequence"
    )
    for name, partitions in (("gap", {"0": [1], "2": [2]}), ("from-one", {"1": [1]})):
        out = c(name, "TopicCreation", topic=name, partitions=partitions)
        first = min(int(p) for p in partitions)
        assert [(r["type"], r["partition"], r["reason"]) for r in out] == [
            ("StateChangeFailed", first, consecutive)
        ]
        assert name not in c.engine.state_json()["topics"]
    c("create", "TopicCreation", topic="t", partitions={"0": [1]})
    out = c("skip", "PartitionExpansion", topic="t", partitions={"3": [2]})
    assert [(r["type"], r["partition"], r["reason"]) for r in out] == [
        (
            "StateChangeFailed",
            3,
            "INVALID_REPLICA_ASSIGNMENT: Attempted to add 3 additional partition(s), but only "
            "1 assignment(s) were specified.",
        )
    ]
    out = c("again", "PartitionExpansion", topic="t", partitions={"0": [2]})
    assert [(r["type"], r["partition"], r["reason"]) for r in out] == [
        ("StateChangeFailed", 0, "INVALID_PARTITIONS: Topic already has 1 partition(s).")
    ]
    assert sorted(c.engine.state_json()["partitions"]) == ["t-0"]
    out = c("next", "PartitionExpansion", topic="t", partitions={"1": [2], "2": [1]})
    assert [(r["type"], r["partition"]) for r in out] == [
        ("PartitionRecord", 1),
        ("PartitionRecord", 2),
    ]


def test_delete_topic_enable_false_refuses_a_deletion() -> None:
    """K3. `ControllerApis.deleteTopics` throws TopicDeletionDisabledException before the
    quorum controller sees the request when `delete.topic.enable` is false (DeleteTopics v3+:
    TOPIC_DELETION_DISABLED): no RemoveTopicRecord, the topic stays. The refusal is answered
    on the topic's first partition."""
    c = Cluster(ControllerConfig(mode="kraft", delete_topic_enable=False))
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [2, 1]})
    out = c("delete", "TopicDeletion", topic="t")
    assert [(r["type"], r["partition"], r["target_state"], r["reason"]) for r in out] == [
        ("StateChangeFailed", 0, "TopicDeletion", "TOPIC_DELETION_DISABLED")
    ]
    assert sorted(c.engine.state_json()["partitions"]) == ["t-0", "t-1"]
    assert "t" in c.engine.state_json()["topics"]


def test_topic_names_that_collide_are_refused() -> None:
    """K4. `ReplicationControlManager.validateNewTopicNames`: a name with '.' or '_' that
    equals an existing topic's once both are unified ('.' -> '_', `Topic.unifyCollisionChars`)
    is INVALID_TOPIC_EXCEPTION "Topic 'a_b' collides with existing topic: a.b", checked before
    the assignment; nothing is written. After a.b is deleted, a_b can be created."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="a.b", partitions={"0": [1, 2]})
    out = c("collide", "TopicCreation", topic="a_b", partitions={"0": [1, 2], "1": [1]})
    assert [(r["type"], r["partition"], r["reason"]) for r in out] == [
        (
            "StateChangeFailed",
            0,
            "INVALID_TOPIC_EXCEPTION: Topic 'a_b' collides with existing topic: a.b",
        )
    ]
    assert sorted(c.engine.state_json()["topics"]) == ["a.b"]
    assert "TopicRecord" in kinds(c("other", "TopicCreation", topic="a.c", partitions={"0": [1]}))
    c("delete", "TopicDeletion", topic="a.b")
    assert "TopicRecord" in kinds(c("again", "TopicCreation", topic="a_b", partitions={"0": [2]}))


def _shrink_to_one_then_fail(c: Cluster) -> list[dict[str, Any]]:
    p = c.partition("t-0")
    c(
        "shrink",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        leader_epoch=p["leader_epoch"],
        partition_epoch=p["partition_epoch"],
        isr=[1],
    )
    return c("b1-down", "BrokerFailure", broker_id=1)


def test_unclean_leader_election_enable_is_read_untrimmed() -> None:
    """K5. ConfigDef validation trims, but ConfigurationControlManager stores the raw string
    and `uncleanLeaderElectionEnabledForTopic` reads it with `Boolean.parseBoolean`, so a
    topic's " true" is false: the fenced last ISR member's partition is left without a
    leader (`handleBrokerFenced`). So is the cluster's " true" (BrokerConfigChange, a
    ConfigRecord for the default broker resource); "TRUE" is true."""
    for configs, dynamic, leader in (
        ({"unclean.leader.election.enable": " true"}, None, -1),
        ({"unclean.leader.election.enable": "TRUE"}, None, 2),
        ({}, " true", -1),
        ({}, "True", 2),
    ):
        c = Cluster()
        c.start(1, 2)
        if dynamic is not None:
            c("cluster", "BrokerConfigChange", configs={"unclean.leader.election.enable": dynamic})
        c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]}, configs=configs)
        out = _shrink_to_one_then_fail(c)
        (change,) = of_type(out, "PartitionChangeRecord")
        assert (change["leader"], c.partition("t-0")["leader"]) == (leader, leader), (
            configs,
            dynamic,
        )


def test_a_new_incarnation_of_an_unfenced_broker_is_fenced_first() -> None:
    """K6. `ClusterControlManager.registerBroker` refuses a new incarnation while the old one
    holds a valid session (`BrokerHeartbeatManager.hasValidSession`: unfenced and heard
    from) with DUPLICATE_BROKER_REGISTRATION. The session then expires
    (`maybeFenceOneStaleBroker` -> `handleBrokerFenced`: the partitions, then the fence
    record) and the retried registration succeeds (RegisterBrokerRecord, fenced), then the
    heartbeat unfences it. So the leader moves and its epoch rises."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = c("b1-new", "BrokerStartup", broker_id=1, broker_epoch=300)
    (change,) = of_type(out, "PartitionChangeRecord")
    assert (change["leader"], change["isr"]) == (2, [2])
    broker = [
        (r["type"], r["broker_epoch"], r["fenced"])
        for r in out
        if r["type"] != "PartitionChangeRecord"
    ]
    assert broker == [
        ("BrokerRegistrationChangeRecord", 101, 1),
        ("RegisterBrokerRecord", 300, True),
        ("BrokerRegistrationChangeRecord", 300, -1),
    ]
    assert (c.partition("t-0")["leader"], c.partition("t-0")["leader_epoch"]) == (2, 1)
    assert c.broker(1)["broker_epoch"] == 300 and not c.broker(1)["fenced"]
    # a partition the fence leaves leaderless is in `partitionsWithNoLeader` when the new
    # incarnation's heartbeat unfences it (`handleBrokerUnfenced`): it leads again
    c("solo", "TopicCreation", topic="solo", partitions={"0": [1]})
    out = c("b1-newer", "BrokerStartup", broker_id=1, broker_epoch=400)
    assert [r["leader"] for r in of_type(out, "PartitionChangeRecord") if r["topic"] == "solo"] == [
        -1,
        1,
    ]
    assert (c.partition("solo-0")["leader"], c.partition("solo-0")["leader_epoch"]) == (1, 2)


def test_a_startup_without_broker_epoch_is_a_new_incarnation() -> None:
    """K7. A BrokerStartup is a broker process starting: a registration with a new
    incarnation (`registerBroker`: RegisterBrokerRecord, fenced and not in controlled
    shutdown) unless its broker_epoch is the current registration's. After a controlled
    shutdown and a session timeout, the restarted broker is active again, so the leader's
    AlterPartition adding it back is accepted (`validateAlterPartitionData`,
    `ineligibleReplicasForIsr`)."""
    c = Cluster()
    c.start(0, 1)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 0]})
    c("b1-shutdown", "ControlledShutdown", broker_id=1, broker_epoch=101)
    c("b1-down", "BrokerFailure", broker_id=1)
    out = c("b1-up", "BrokerStartup", broker_id=1)
    assert [(r["type"], r["fenced"]) for r in out] == [
        ("RegisterBrokerRecord", True),
        ("BrokerRegistrationChangeRecord", -1),
    ]
    assert out[0]["in_controlled_shutdown"] is False
    assert c.broker(1)["in_controlled_shutdown"] is False
    out = c(
        "expand-isr",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=0,
        leader_epoch=1,
        partition_epoch=1,
        isr=[0, 1],
    )
    (answer,) = of_type(out, "AlterPartitionResult")
    assert (answer["error"], answer["isr"]) == (None, [0, 1])
    assert of_type(out, "PartitionChangeRecord")[0]["isr"] == [0, 1]
    # the same incarnation again: nothing new
    assert (
        c("b1-up-again", "BrokerStartup", broker_id=1, broker_epoch=c.broker(1)["broker_epoch"])
        == []
    )


def _alter(c: Cluster, name: str, isr: list[int]) -> list[dict[str, Any]]:
    p = c.partition("t-0")
    return c(
        name,
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        leader_epoch=p["leader_epoch"],
        partition_epoch=p["partition_epoch"],
        isr=isr,
    )


def test_an_empty_or_repeating_isr_is_answered_invalid_request_under_kraft() -> None:
    """Issue 43, AlterPartition. `ReplicationControlManager.validateAlterPartitionData`:
    `Replicas.validateIsr` refuses a repeated broker, and an empty ISR lacks the leader
    ("The ISR must always include the current leader"): both INVALID_REQUEST, nothing
    written. They are requests Kafka answers, not malformed events."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    for name, isr in (("empty", []), ("twice", [1, 1]), ("twice-2", [1, 2, 2])):
        out = _alter(c, name, isr)
        assert [(r["type"], r["error"]) for r in out] == [
            ("AlterPartitionResult", "INVALID_REQUEST")
        ]
    assert c.engine.errors == []
    assert (c.partition("t-0")["isr"], c.partition("t-0")["partition_epoch"]) == ([1, 2], 0)


def test_an_empty_or_repeating_isr_is_written_under_zk() -> None:
    """The ZooKeeper rules answer differently: `KafkaController.processAlterPartition` (3.9)
    checks the epochs, the recovery state and that every ISR member is live
    (`newLeaderAndIsr.isr.toSet -- liveBrokerIds`), not that the ISR holds the leader or
    repeats no broker, so it writes the ISR as asked (zkClient.updateLeaderAndIsr) and
    answers with it."""
    c = Cluster(ControllerConfig(emit_update_metadata=False))
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = _alter(c, "twice", [1, 1])
    (answer,) = of_type(out, "AlterPartitionResult")
    assert (answer["error"], answer["isr"], answer["partition_epoch"]) == (None, [1, 1], 1)
    out = _alter(c, "empty", [])
    (answer,) = of_type(out, "AlterPartitionResult")
    assert (answer["error"], answer["isr"], answer["leader"]) == (None, [], 1)
    assert (c.partition("t-0")["isr"], c.partition("t-0")["leader"]) == ([], 1)
    assert c.engine.errors == []


def test_a_topic_min_insync_replicas_kafka_cannot_parse_is_refused() -> None:
    """Found sweeping for issue 43's slips: ConfigurationControlManager.incrementalAlterConfig
    validates a topic's configs (ControllerConfigurationValidator -> LogConfig.validate,
    ConfigDef: min.insync.replicas is an INT, atLeast(1)) and refuses the whole CreateTopics
    or IncrementalAlterConfigs with INVALID_CONFIG: nothing is written. The kraft rules
    created the topic with "0", and "abc" stopped the directory step with a ValueError."""
    c = Cluster()
    c.start(1, 2)
    for name, value, message in (
        (
            "zero",
            "0",
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        (
            "abc",
            "abc",
            "Invalid value abc for configuration min.insync.replicas: Not a number of type INT",
        ),
    ):
        out = c(
            name,
            "TopicCreation",
            topic=name,
            partitions={"0": [1, 2]},
            configs={"min.insync.replicas": value},
        )
        assert [(r["type"], r["reason"]) for r in out] == [
            ("StateChangeFailed", f"INVALID_CONFIG: {message}")
        ]
    assert c.engine.state_json()["topics"] == {} and c.engine.errors == []
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = c("alter", "TopicConfigChange", topic="t", configs={"min.insync.replicas": "x"})
    assert [(r["type"], r["target_state"]) for r in out] == [
        ("StateChangeFailed", "TopicConfigChange")
    ]
    assert c.engine.state_json()["topics"]["t"]["configs"] == {}
    assert c.engine.errors == []
