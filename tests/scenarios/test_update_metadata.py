"""UpdateMetadata, Kafka 3.9.0's third controller request, through the engine.

Each scenario follows a code path that sends it and names it: `KafkaController.scala`
(`sendUpdateMetadataRequest` at failover, broker startup, the end of `onReplicasBecomeOffline`,
AlterPartition and reassignment step B8), `ControllerChannelManager.scala`
(`addLeaderAndIsrRequestForBrokers` queues one for every LeaderAndIsr;
`addUpdateMetadataRequestForBrokers` skips partitions without leadership and sends leader -2
for topics queued for deletion) and `TopicDeletionManager.onTopicDeletion`. The first three
are Kafka's `ControllerIntegrationTest` metadata-propagation tests, checked against a model
of each broker's metadata cache fed by the UpdateMetadata records (`Brokers`).
"""

from __future__ import annotations

from typing import Any

from state_machines.model import ControllerConfig
from state_machines.update_metadata import MAX_PARTITIONS_PER_RECORD
from tests.scenarios.test_controller_wide_rules import Cluster


def sends(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == "UpdateMetadata"]


def summary(send: dict[str, Any]) -> tuple[list[int], list[str]]:
    """(recipients, partitions) of one send."""
    return send["recipients"], [f"{p['topic']}-{p['partition']}" for p in send["partitions"]]


class Brokers:
    """Each broker's MetadataCache as the UpdateMetadata records leave it: the partition
    states it was sent (a later one replaces an earlier one) and the live brokers."""

    def __init__(self) -> None:
        self.partitions: dict[int, dict[str, dict[str, Any]]] = {}
        self.live: dict[int, list[int]] = {}

    def apply(self, records: list[dict[str, Any]]) -> None:
        for send in sends(records):
            for b in send["recipients"]:
                self.live[b] = send["live_brokers"]
                cache = self.partitions.setdefault(b, {})
                for p in send["partitions"]:
                    cache[f"{p['topic']}-{p['partition']}"] = p


class Watched(Cluster):
    def __init__(self, config: ControllerConfig | None = None) -> None:
        super().__init__(config)
        self.brokers = Brokers()

    def __call__(self, event_id: str, type_: str, **fields: Any) -> list[dict[str, Any]]:
        records = super().__call__(event_id, type_, **fields)
        self.brokers.apply(records)
        return records


def test_metadata_propagation_on_broker_change() -> None:
    """ControllerIntegrationTest.testMetadataPropagationOnBrokerChange: broker 3 (not the
    controller) hosts a follower of t-0 only. Its shutdown (a controlled shutdown, then the
    failure) needs no leadership change, yet every remaining broker learns that 3 is offline
    for t-0; after its restart no broker lists an offline replica."""
    c = Watched()
    c.start(1, 2, 3)
    assignment = {"0": [1, 3], "1": [1, 2]}
    c("create", "TopicCreation", topic="t", partitions=assignment)
    c("b3-cs", "ControlledShutdown", broker_id=3, broker_epoch=103)
    c("b3-down", "BrokerFailure", broker_id=3)
    for b in (1, 2):
        t0, t1 = c.brokers.partitions[b]["t-0"], c.brokers.partitions[b]["t-1"]
        assert (t0["offline_replicas"], t0["replicas"], t0["isr"]) == ([3], [1, 3], [1])
        assert (t1["replicas"], t1["offline_replicas"]) == ([1, 2], [])
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=203)
    for b in (1, 2, 3):
        for p, replicas in assignment.items():
            info = c.brokers.partitions[b][f"t-{p}"]
            assert (info["offline_replicas"], info["replicas"]) == ([], replicas)


def test_metadata_propagation_for_offline_replicas() -> None:
    """ControllerIntegrationTest.testMetadataPropagationForOfflineReplicas: t-0 lives on
    broker 2 only; brokers 3, 2 and the controller 1 go down. The controller broker comes
    back and is elected, then broker 3 starts: each learns t-0 with leader -1, an offline
    replica and a non-empty ISR (removeReplicasFromIsr keeps the last member)."""
    c = Watched()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [2]})
    for b in (3, 2, 1):
        c(f"b{b}-down", "BrokerFailure", broker_id=b)
    c.brokers = Brokers()  # what the restarted brokers learn from here on
    c("b1-up", "BrokerStartup", broker_id=1, broker_epoch=201)
    c("elected-again", "ControllerFailover", controller_id=1, controller_epoch=2)
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=203)
    for b in (1, 3):
        info = c.brokers.partitions[b]["t-0"]
        assert info["leader"] == -1 and info["offline_replicas"] == [2] and info["replicas"] == [2]
        assert info["isr"] == [2]


def test_metadata_propagation_on_broker_shutdown_with_no_replicas() -> None:
    """ControllerIntegrationTest.testMetadataPropagationOnBrokerShutdownWithNoReplicas, and
    the end of onReplicasBecomeOffline: broker 3 hosts nothing, so its failure changes no
    leader and no ISR; Kafka then sends UpdateMetadata on its own, with no partitions, so
    that the others learn the broker is gone."""
    c = Watched()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [2]})
    c("b2-down", "BrokerFailure", broker_id=2)
    c("b3-down", "BrokerFailure", broker_id=3)
    assert [summary(s) for s in sends(c.out["b3-down"])] == [([1], [])]
    assert c.brokers.live[1] == [1]
    # broker 2's failure changed t-0 (offline, ISR kept): no send of its own
    assert [summary(s) for s in sends(c.out["b2-down"])] == [([1, 3], ["t-0"])]


def test_failover_sends_to_every_broker_before_the_state_machines() -> None:
    """onControllerFailover: sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds, Set.empty)
    before replicaStateMachine.startup(), whose Online -> Online transitions then send
    LeaderAndIsr, and UpdateMetadata, for every partition."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [2, 1]})
    out = sends(c("again", "ControllerFailover", controller_id=2, controller_epoch=2))
    assert [(s["send"], *summary(s)) for s in out] == [
        ("update-metadata-000-000", [1, 2], []),
        ("update-metadata-000-001", [1, 2], ["t-0", "t-1"]),
    ]


def test_broker_startup_sends_full_metadata_to_the_new_broker_only() -> None:
    """onBrokerStartup: UpdateMetadata with no partitions to the existing brokers, then to
    the new broker with every partition with leadership (partitionsWithLeaders: not a
    topic queued for deletion, not a partition never elected), then the new broker's
    replicas go online (LeaderAndIsr, so UpdateMetadata to all)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1], "1": [2]})
    c("never", "TopicCreation", topic="n", partitions={"0": [3]})  # broker 3 is not up: no leader
    out = sends(c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103))
    assert [summary(s) for s in out] == [
        ([1, 2], []),
        ([3], ["t-0", "t-1"]),
        ([1, 2, 3], ["n-0"]),  # n-0 is elected by triggerOnlinePartitionStateChange
    ]
    assert all(s["live_brokers"] == [1, 2, 3] for s in out)


def test_leader_change_sends_with_the_leader_and_isr_batch() -> None:
    """addLeaderAndIsrRequestForBrokers queues UpdateMetadata for the partition to every
    live or shutting-down broker, whatever the LeaderAndIsr's recipients: a preferred
    election's batch sends the new state to all, a shutting-down broker included, and
    lists that broker's replica as offline (isReplicaOnline excludes shutting-down brokers;
    ControllerChannelManagerTest.testUpdateMetadataIncludesLiveOrShuttingDownBrokers)."""
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [2, 1]})
    out = sends(c("b1-cs", "ControlledShutdown", broker_id=1, broker_epoch=101))
    # the controlled-shutdown election (t-0), then broker 1 leaves t-1's ISR
    assert [summary(s) for s in out] == [([1, 2, 3], ["t-0"]), ([1, 2, 3], ["t-1"])]
    assert out[0]["partitions"][0]["offline_replicas"] == [1]
    assert out[0]["live_brokers"] == [1, 2, 3]


def test_partitions_without_leadership_are_left_out() -> None:
    """ControllerChannelManagerTest.testUpdateMetadataDoesNotIncludePartitionsWithoutLeaderAndIsr:
    m-0 is created while its only replica's broker is shutting down, so it is never
    elected. The broker's failure moves the replica to OfflineReplica, which for a
    partition without leadership queues UpdateMetadata all the same
    (replicasWithoutLeadershipInfo): the send goes out without the partition ("Leader not
    yet assigned ... Skip"). A new broker's full send leaves it out too."""
    c = Cluster()
    c.start(1, 2)
    c("b2-cs", "ControlledShutdown", broker_id=2, broker_epoch=102)
    c("never", "TopicCreation", topic="m", partitions={"0": [2]})
    assert c.partition("m-0")["leader"] == -1 and sends(c.out["never"]) == []
    out = sends(c("b2-down", "BrokerFailure", broker_id=2))
    assert [summary(s) for s in out] == [([1], [])]
    out = sends(c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103))
    assert [summary(s) for s in out] == [([1], []), ([3], [])]


def test_topic_deletion_sends_leader_minus_two() -> None:
    """TopicDeletionManager.onTopicDeletion -> client.sendMetadataUpdate(partitions): the
    partitions of a topic queued for deletion go out as LeaderAndIsr.duringDelete(isr):
    leader -2, leader epoch and zk version 0 (ControllerChannelManagerTest.
    testUpdateMetadataRequestDuringTopicDeletion)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = sends(c("delete", "TopicDeletion", topic="t"))
    assert [summary(s) for s in out] == [([1, 2], ["t-0"])]
    state = out[0]["partitions"][0]
    assert (state["leader"], state["leader_epoch"], state["zk_version"], state["isr"]) == (
        -2,
        0,
        0,
        [1, 2],
    )


def test_alter_partition_sends_for_every_partition_of_the_request() -> None:
    """tryProcessAlterPartition ends with sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds,
    partitionsToAlter.keySet): an accepted ISR change and a refused one alike."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    ok = sends(
        c(
            "shrink",
            "AlterPartition",
            topic="t",
            partition=0,
            broker_id=1,
            broker_epoch=101,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1],
            leader_recovery_state="RECOVERED",
        )
    )
    assert [summary(s) for s in ok] == [([1, 2], ["t-0"])] and ok[0]["partitions"][0]["isr"] == [1]
    fenced = sends(
        c(
            "stale",
            "AlterPartition",
            topic="t",
            partition=0,
            broker_id=1,
            broker_epoch=101,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1, 2],
            leader_recovery_state="RECOVERED",
        )
    )
    assert [summary(s) for s in fenced] == [([1, 2], ["t-0"])]
    unknown = sends(
        c(
            "unknown",
            "AlterPartition",
            topic="t",
            partition=7,
            broker_id=1,
            broker_epoch=101,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1],
            leader_recovery_state="RECOVERED",
        )
    )
    assert [summary(s) for s in unknown] == [([1, 2], [])]


def test_reassignment_completion_sends_step_b8() -> None:
    """onPartitionReassignment, phase B: B3's LeaderAndIsr (with its UpdateMetadata), the
    removed replicas' OfflineReplica batch, then B8: sendUpdateMetadataRequest for the
    partition to every broker. onPartitionReassignment runs per partition, so its sends
    are keyed by the partition."""
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("move", "PartitionReassignment", topic="t", partition=0, target_replicas=[2, 3])
    done = sends(
        c(
            "caught-up",
            "AlterPartition",
            topic="t",
            partition=0,
            broker_id=1,
            broker_epoch=101,
            leader_epoch=1,
            partition_epoch=1,
            isr=[1, 2, 3],
            leader_recovery_state="RECOVERED",
        )
    )
    keys = [s["send"] for s in done]
    assert keys[0] == "update-metadata-000-001"  # the AlterPartition's own
    assert all(k.startswith("update-metadata-000-t-0-") for k in keys[1:]) and keys[-1].endswith(
        "-011"
    )
    final = done[-1]["partitions"][0]
    assert (final["replicas"], final["leader"], final["isr"]) == ([2, 3], 2, [2, 3])


def test_a_large_send_is_split_under_one_key() -> None:
    """A new broker's full UpdateMetadata at a few thousand partitions: one send, split
    after MAX_PARTITIONS_PER_RECORD partitions, the parts numbered by seq."""
    c = Cluster()
    c.start(1)
    count = MAX_PARTITIONS_PER_RECORD * 2 + 5
    c("create", "TopicCreation", topic="t", partitions={str(p): [1] for p in range(count)})
    full = [
        s
        for s in sends(c("b2-up", "BrokerStartup", broker_id=2, broker_epoch=102))
        if s["recipients"] == [2]
    ]
    assert [(s["seq"], len(s["partitions"])) for s in full] == [
        (0, MAX_PARTITIONS_PER_RECORD),
        (1, MAX_PARTITIONS_PER_RECORD),
        (2, 5),
    ]
    assert len({s["send"] for s in full}) == 1


def test_the_setting_turns_every_send_off() -> None:
    c = Cluster(ControllerConfig(emit_update_metadata=False))
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=103)
    c("b1-down", "BrokerFailure", broker_id=1)
    assert all(r["type"] != "UpdateMetadata" for records in c.out.values() for r in records)
