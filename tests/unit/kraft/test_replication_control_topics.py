"""Kafka's `ReplicationControlManagerTest` (apache/kafka 3.9.0) methods that drive whole
topic requests (createTopics, createPartitions, deleteTopics), run through the engine in
kraft mode: the contract's TopicCreation, PartitionExpansion and TopicDeletion are those
requests with a manual assignment (quorum_controller.py).

What the contract cannot carry is given or left out, and each test says which: the
StripedReplicaPlacer's choice is given as the assignment; the CreateTopics, CreatePartitions
and DeleteTopics responses are not records: a refused request shows as the StateChangeFailed
record the engine answers it with, or (an unknown topic, a topic that exists) as nothing
written. The
engine writes a cause's records in the contract's (key, seq) order, so a topic's records
are compared per key, not against Kafka's batch order (TopicRecord, ConfigRecords, then the
PartitionRecords).
"""

from __future__ import annotations

from state_machines.kraft.kraft_view import directory_id, topic_id
from tests.unit.kraft.engine_cluster import KRAFT_ELR, Cluster, of_type, partition_records


def test_create_topics() -> None:
    """testCreateTopics. Kafka's two refusals come from the placer (all brokers fenced, then
    all fenced or in controlled shutdown); with the placer's later choice [1, 2, 0] as the
    manual assignment, the same cluster states refuse it and write nothing. Then all three
    unfenced: TopicRecord and one PartitionRecord (replicas = ISR = [1, 2, 0], leader 1,
    epochs 0, each replica's directory). A second createTopics is TOPIC_ALREADY_EXISTS:
    nothing is written."""
    c = Cluster()
    c.start(0, 1, 2)
    c("b1-down", "BrokerFailure", broker_id=1)
    c("b2-down", "BrokerFailure", broker_id=2)
    c("b0-shutdown", "ControlledShutdown", broker_id=0, broker_epoch=100)
    assert (
        c.state()["brokers"]["0"]["fenced"] or c.state()["brokers"]["0"]["in_controlled_shutdown"]
    )
    refused = c("create-fenced", "TopicCreation", topic="foo", partitions={"0": [1, 2, 0]})
    assert [r["type"] for r in refused] == ["StateChangeFailed"]
    assert "INVALID_REPLICA_ASSIGNMENT" in refused[0]["reason"]
    assert "are fenced or in controlled shutdown" in refused[0]["reason"]
    assert c.state()["topics"] == {}

    for b in (0, 1, 2):
        c(f"b{b}-back", "BrokerStartup", broker_id=b, broker_epoch=200 + b)
    out = c("create", "TopicCreation", topic="foo", partitions={"0": [1, 2, 0]})
    (topic,) = of_type(out, "TopicRecord")
    assert (topic["name"], topic["topic_id"]) == ("foo", topic_id("foo"))
    assert partition_records(out) == {
        0: ([1, 2, 0], [1, 2, 0], 1, 0, 0, [directory_id(b) for b in (1, 2, 0)])
    }
    assert of_type(out, "PartitionRecord")[0]["topic_id"] == topic_id("foo")
    assert of_type(out, "PartitionRecord")[0]["leader_recovery_state"] == 0  # RECOVERED

    assert c("create-again", "TopicCreation", topic="foo", partitions={"0": [1, 2, 0]}) == []


def test_create_partitions() -> None:
    """testCreatePartitions. The placer's choices are given. A PartitionExpansion is the
    CreatePartitions request whose count is its highest partition number + 1. foo to 5
    partitions writes two PartitionRecords; bar to 3 (it has 4) and quux to 2 (it has 2) are
    INVALID_PARTITIONS with Kafka's messages, baz (unknown: UNKNOWN_TOPIC_OR_PARTITION) writes
    nothing. Then foo to 6 on [1, 3] writes partition 5; bar's one-replica partition, quux's
    one assignment for 2 new partitions and foo2's unregistered broker 2 are
    INVALID_REPLICA_ASSIGNMENT with Kafka's messages. Not expressible: broker 1's two log
    directories (a broker has one here; the directory a replica gets is
    test_kraft_cluster_describer's)."""
    c = Cluster()
    c.start(0, 1, 3)
    for name, assignment in (
        ("foo", [[0, 1], [1, 3], [3, 0]]),
        ("bar", [[0, 1], [1, 3], [3, 0], [0, 1]]),
        ("quux", [[1, 3], [3, 0]]),
        ("foo2", [[0, 1], [1, 3]]),
    ):
        c(
            f"create-{name}",
            "TopicCreation",
            topic=name,
            partitions={str(i): r for i, r in enumerate(assignment)},
        )

    out = c("foo-5", "PartitionExpansion", topic="foo", partitions={"3": [0, 1], "4": [1, 3]})
    assert sorted(partition_records(out)) == [3, 4]
    (bar,) = c("bar-3", "PartitionExpansion", topic="bar", partitions={"2": [3, 0]})
    assert (bar["type"], bar["reason"]) == (
        "StateChangeFailed",
        "INVALID_PARTITIONS: The topic bar currently has 4 partition(s); 3 would not be an "
        "increase.",
    )
    assert c("baz-3", "PartitionExpansion", topic="baz", partitions={"2": [0, 1]}) == []
    (quux,) = c("quux-2", "PartitionExpansion", topic="quux", partitions={"1": [3, 0]})
    assert (quux["type"], quux["reason"]) == (
        "StateChangeFailed",
        "INVALID_PARTITIONS: Topic already has 2 partition(s).",
    )

    out = c("foo-6", "PartitionExpansion", topic="foo", partitions={"5": [1, 3]})
    assert partition_records(out) == {
        5: ([1, 3], [1, 3], 1, 0, 0, [directory_id(1), directory_id(3)])
    }
    (bar,) = c("bar-5", "PartitionExpansion", topic="bar", partitions={"4": [1]})
    assert (bar["type"], bar["reason"]) == (
        "StateChangeFailed",
        "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes a partition "
        "with 1 replica(s), but this is not consistent with previous partitions, which have "
        "2 replica(s).",
    )
    (quux,) = c("quux-4", "PartitionExpansion", topic="quux", partitions={"3": [1, 0]})
    assert (quux["type"], quux["reason"]) == (
        "StateChangeFailed",
        "INVALID_REPLICA_ASSIGNMENT: Attempted to add 2 additional partition(s), but only 1 "
        "assignment(s) were specified.",
    )
    (foo2,) = c("foo2-3", "PartitionExpansion", topic="foo2", partitions={"2": [2, 0]})
    assert (foo2["type"], foo2["reason"]) == (
        "StateChangeFailed",
        "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes broker 2, "
        "but no such broker is registered.",
    )
    assert sorted(k for k in c.state()["partitions"] if k.startswith("foo-")) == [
        f"foo-{p}" for p in range(6)
    ]
    assert "bar-4" not in c.state()["partitions"] and "foo2-2" not in c.state()["partitions"]


def test_delete_topics() -> None:
    """testDeleteTopics: foo with three partitions and two configs. Deleting an unknown
    topic (Kafka: UNKNOWN_TOPIC_ID) writes nothing; deleting foo writes exactly one record,
    RemoveTopicRecord, and its replay drops the partitions and the topic's configs.
    Kafka's findTopicNames/findTopicIds are listing APIs, not reproduced."""
    c = Cluster()
    c.start(0, 1)
    out = c(
        "create",
        "TopicCreation",
        topic="foo",
        partitions={"0": [0, 1], "1": [1, 0], "2": [0, 1]},
        configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"},
    )
    assert sorted(partition_records(out)) == [0, 1, 2]
    assert sorted((r["name"], r["value"]) for r in of_type(out, "ConfigRecord")) == [
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.1"),
    ]
    assert c.state()["topics"]["foo"]["configs"] == {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.1",
    }

    assert c("delete-unknown", "TopicDeletion", topic="bar") == []
    out = c("delete", "TopicDeletion", topic="foo")
    assert [(r["type"], r["topic_id"]) for r in out] == [("RemoveTopicRecord", topic_id("foo"))]
    assert c.state()["partitions"] == {}
    assert c.state()["topics"] == {}
    # the configs went with the topic: a new foo starts without them
    c("recreate", "TopicCreation", topic="foo", partitions={"0": [0, 1]})
    assert c.state()["topics"]["foo"]["configs"] == {}


def test_eligible_leader_replicas_delete_topic() -> None:
    """testEligibleLeaderReplicas_DeleteTopic: foo on [0, 1, 2], min.insync.replicas 2; the
    ISR shrinks to [0] and the ELR is [1, 2]. After deleteTopics, foo is in no broker's
    ELR (brokersToElrs) or ISR (brokersToIsrs): fencing 1, then 0, writes only their
    broker records."""
    c = Cluster(KRAFT_ELR)
    c.start(0, 1, 2)
    c("create", "TopicCreation", topic="foo", partitions={"0": [0, 1, 2]})
    c("min-isr", "TopicConfigChange", topic="foo", configs={"min.insync.replicas": "2"})
    out = c(
        "shrink",
        "AlterPartition",
        topic="foo",
        partition=0,
        broker_id=0,
        broker_epoch=100,
        leader_epoch=0,
        partition_epoch=0,
        isr=[0],
    )
    (answer,) = of_type(out, "AlterPartitionResult")
    assert (answer["error"], answer["isr"]) == (None, [0])
    foo0 = c.state()["partitions"]["foo-0"]
    assert (foo0["eligible_leader_replicas"], foo0["last_known_elr"]) == ([1, 2], [])

    out = c("delete", "TopicDeletion", topic="foo")
    assert [r["type"] for r in out] == ["RemoveTopicRecord"]
    assert [r["type"] for r in c("b1-down", "BrokerFailure", broker_id=1)] == [
        "BrokerRegistrationChangeRecord"
    ]
    assert [r["type"] for r in c("b0-down", "BrokerFailure", broker_id=0)] == [
        "BrokerRegistrationChangeRecord"
    ]
