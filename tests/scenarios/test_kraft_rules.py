"""KRaft's rules through the engine, one scenario per rule, and the shadow on a KRaft cluster.

Each scenario follows the quorum controller's code (apache/kafka 3.9.0,
metadata/src/main/java/org/apache/kafka/controller/: QuorumController.java,
ReplicationControlManager.java, PartitionChangeBuilder.java, BrokerHeartbeatManager.java)
and checks the records it would append. Epoch arithmetic under KRaft: every record of a
partition bumps its partition epoch; only a record that sets the leader (even to the same
broker) bumps the leader epoch (from metadata.version 3.6-IV0, an ISR shrink does not).
"""

from __future__ import annotations

from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig

KRAFT = ControllerConfig(mode="kraft")


class Cluster:
    def __init__(self, config: ControllerConfig = KRAFT) -> None:
        self.engine = Engine(config)
        self.offset = 0
        self.out: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, event_id: str, type_: str, **fields: Any) -> list[dict[str, Any]]:
        records = self.engine.process(
            parse_event({"v": 1, "type": type_, "id": event_id, **fields}, self.offset)
        )
        self.offset += 1
        self.out[event_id] = records
        return records

    def start(self, *brokers: int) -> None:
        for b in brokers:
            self(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b)
        self("elected", "ControllerFailover", controller_id=3000, controller_epoch=1)

    def partition(self, key: str) -> dict[str, Any]:
        return self.engine.state_json()["partitions"][key]

    def broker(self, b: int) -> dict[str, Any]:
        return self.engine.state_json()["brokers"][str(b)]


def of_type(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == kind]


def change_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A PartitionChangeRecord's changed fields (what it carries beyond its names), and
    `election` when the record marks an unclean election."""
    names = {
        "v",
        "type",
        "cause_offset",
        "cause_id",
        "seq",
        "topic",
        "partition",
        "version",
        "topic_id",
        "partition_id",
        "append_order",
    }
    return {k: v for k, v in record.items() if k not in names}


def epochs(p: dict[str, Any]) -> tuple[int, list[int], int, int]:
    return p["leader"], p["isr"], p["leader_epoch"], p["partition_epoch"]


def test_registration_and_unfencing_write_the_broker_records_and_a_standby_writes_nothing() -> None:
    """BrokerStartup before the failover: a standby replays, it appends nothing. Then a new
    incarnation: the old one is unfenced, so its session expires first (the fence record,
    BrokerRegistrationChangeRecord fenced=1; registerBroker refuses a new incarnation while
    the old holds a session), then registerBroker (RegisterBrokerRecord v3, fenced, with its
    directory) and the unfencing heartbeat (BrokerRegistrationChangeRecord fenced=-1,
    3.3-IV2+)."""
    c = Cluster()
    assert c("b1-up", "BrokerStartup", broker_id=1, broker_epoch=101) == []
    c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1)
    out = c("b1-new", "BrokerStartup", broker_id=1, broker_epoch=205)
    fence, register, change = out
    assert (fence["type"], fence["fenced"], fence["broker_epoch"]) == (
        "BrokerRegistrationChangeRecord",
        1,
        101,
    )
    assert (
        register["type"],
        register["version"],
        register["broker_epoch"],
        register["fenced"],
    ) == ("RegisterBrokerRecord", 3, 205, True)
    assert len(register["log_dirs"]) == 1
    assert (change["type"], change["fenced"], change["broker_epoch"]) == (
        "BrokerRegistrationChangeRecord",
        -1,
        205,
    )
    assert c.broker(1) == {
        "fenced": False,
        "in_controlled_shutdown": False,
        "broker_epoch": 205,
        "incarnation_id": "incarnation-1-205",
    }
    assert c("b1-again", "BrokerStartup", broker_id=1, broker_epoch=205) == []  # unfenced already


def test_topic_creation_writes_topic_config_and_partition_records() -> None:
    """createTopic: TopicRecord, its ConfigRecords, then a PartitionRecord per partition
    (buildPartitionRegistration: the active replicas are the ISR, the first leads)."""
    c = Cluster()
    c.start(1, 2, 3)
    out = c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    kinds = [r["type"] for r in out]
    assert sorted(kinds) == ["ConfigRecord", "PartitionRecord", "TopicRecord"]
    (p0,) = of_type(out, "PartitionRecord")
    assert (p0["leader"], p0["isr"], p0["leader_epoch"], p0["partition_epoch"]) == (
        1,
        [1, 2, 3],
        0,
        0,
    )
    (cfg,) = of_type(out, "ConfigRecord")
    assert (cfg["resource_type"], cfg["resource_name"], cfg["name"], cfg["value"]) == (
        2,
        "t",
        "min.insync.replicas",
        "2",
    )


def test_an_isr_shrink_bumps_only_the_partition_epoch() -> None:
    """The issue's false alarm: AlterPartition from the leader drops a follower. The
    PartitionChangeRecord carries only the ISR (triggerLeaderEpochBumpForIsrShrinkIfNeeded
    bumps nothing from 3.6-IV0, KAFKA-15021), and the answer is the partition as replayed."""
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
    out = c(
        "shrink",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        broker_epoch=101,
        leader_epoch=0,
        partition_epoch=0,
        isr=[1, 2],
    )
    (change,) = of_type(out, "PartitionChangeRecord")
    assert change_fields(change) == {"isr": [1, 2]}
    (answer,) = of_type(out, "AlterPartitionResult")
    assert (answer["error"], answer["leader_epoch"], answer["partition_epoch"], answer["isr"]) == (
        None,
        0,
        1,
        [1, 2],
    )
    assert epochs(c.partition("t-0")) == (1, [1, 2], 0, 1)


def test_before_3_6_an_isr_shrink_also_bumps_the_leader_epoch() -> None:
    """metadata.version 3.5-IV2: isLeaderEpochBumpRequiredOnIsrShrink, the leader field is
    set to the current leader."""
    c = Cluster(ControllerConfig(mode="kraft", metadata_version="3.5-IV2"))
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
    out = c(
        "shrink",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        broker_epoch=101,
        leader_epoch=0,
        partition_epoch=0,
        isr=[1, 2],
    )
    (change,) = of_type(out, "PartitionChangeRecord")
    assert change_fields(change) == {"isr": [1, 2], "leader": 1}
    assert epochs(c.partition("t-0")) == (1, [1, 2], 1, 1)


def test_alter_partition_refusals_have_kafkas_answers() -> None:
    """validateAlterPartitionData: only the leader (INVALID_REQUEST), no stale-epoch
    idempotency (INVALID_UPDATE_VERSION even for the current ISR), a fenced member is
    INELIGIBLE_REPLICA (v3); an unknown epoch is STALE_BROKER_EPOCH."""
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})

    def ask(event_id: str, **fields: Any) -> str | None:
        base = dict(
            topic="t",
            partition=0,
            broker_id=1,
            broker_epoch=101,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1, 2, 3],
        )
        (answer,) = of_type(
            c(event_id, "AlterPartition", **{**base, **fields}), "AlterPartitionResult"
        )
        return answer["error"]

    assert ask("not-leader", broker_id=2, broker_epoch=102) == "INVALID_REQUEST"
    assert ask("stale-broker", broker_epoch=99) == "STALE_BROKER_EPOCH"
    assert ask("shrink", isr=[1, 2]) is None
    assert ask("replayed", isr=[1, 2]) == "INVALID_UPDATE_VERSION"  # partition epoch 0 < 1
    c("b3-down", "BrokerFailure", broker_id=3)
    assert ask("fenced-member", partition_epoch=1, isr=[1, 2, 3]) == "INELIGIBLE_REPLICA"


def test_fencing_moves_leadership_and_the_last_isr_member_stays() -> None:
    """handleBrokerFenced (session timeout): the broker leaves every ISR and leadership; a
    partition whose only ISR member it is keeps it in the ISR with leader -1 (without ELR);
    the broker's fence record closes the handler."""
    c = Cluster()
    c.start(1, 2)
    c("create-t", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    c("create-u", "TopicCreation", topic="u", partitions={"0": [1]})
    out = c("b1-down", "BrokerFailure", broker_id=1)
    by_partition = {r["topic"]: change_fields(r) for r in of_type(out, "PartitionChangeRecord")}
    assert by_partition == {"t": {"isr": [2], "leader": 2}, "u": {"leader": -1}}
    (fence,) = of_type(out, "BrokerRegistrationChangeRecord")
    assert fence["fenced"] == 1
    assert epochs(c.partition("u-0")) == (-1, [1], 1, 1)
    # unfencing elects the leaderless partition again (handleBrokerUnfenced: partitionsWithNoLeader)
    out = c("b1-back", "BrokerStartup", broker_id=1, broker_epoch=101)
    assert {r["topic"]: change_fields(r) for r in of_type(out, "PartitionChangeRecord")} == {
        "u": {"leader": 1}
    }


def test_partitions_of_a_topic_share_one_replication_factor() -> None:
    """validateManualPartitionAssignment: the whole creation is refused, nothing written."""
    c = Cluster()
    c.start(1, 2)
    out = c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [1]})
    assert [(r["type"], r["partition"]) for r in out] == [("StateChangeFailed", 1)]
    assert out[0]["reason"].startswith(
        "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes a "
        "partition with 1 replica(s)"
    )
    assert c.engine.state_json()["partitions"] == {}


def test_unclean_election_follows_the_topic_config_and_recovers() -> None:
    """generateLeaderAndIsrUpdates with the topic's unclean.leader.election.enable: the
    election is UNCLEAN, the first active replica leads alone and RECOVERING (KIP-704)."""
    c = Cluster()
    c.start(1, 2)
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2]},
        configs={"unclean.leader.election.enable": "true"},
    )
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
    )
    out = c("b1-down", "BrokerFailure", broker_id=1)
    (change,) = of_type(out, "PartitionChangeRecord")
    assert change_fields(change) == {
        "isr": [2],
        "leader": 2,
        "leader_recovery_state": 1,
        "election": "unclean",
    }


def test_elections_answer_as_kafka_does() -> None:
    """electLeader: ELECTION_NOT_NEEDED when the preferred replica leads; a preferred
    replica that cannot lead: PREFERRED_LEADER_NOT_AVAILABLE; unknown partitions."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = c(
        "elect",
        "ReplicaLeaderElection",
        election_type="PREFERRED",
        partitions=[{"topic": "t", "partition": 0}, {"topic": "t", "partition": 9}],
    )
    assert sorted((r["partition"], r["error"]) for r in of_type(out, "ElectionResult")) == [
        (0, "ELECTION_NOT_NEEDED"),
        (9, "UNKNOWN_TOPIC_OR_PARTITION"),
    ]
    c("b1-down", "BrokerFailure", broker_id=1)
    out = c(
        "elect-again",
        "ReplicaLeaderElection",
        election_type="PREFERRED",
        partitions=[{"topic": "t", "partition": 0}],
    )
    assert [(r["error"], r["leader"]) for r in of_type(out, "ElectionResult")] == [
        ("PREFERRED_LEADER_NOT_AVAILABLE", None)
    ]


def test_controlled_shutdown_moves_leaders_then_the_broker_is_fenced() -> None:
    """A heartbeat asking to shut down, with leaderships: CONTROLLED_SHUTDOWN
    (BrokerRegistrationChangeRecord inControlledShutdown=1, v1), the broker leaves ISRs and
    leadership (handleBrokerInControlledShutdown). Asked again with none left: SHUTDOWN_NOW
    (handleBrokerFenced)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = c("b1-stop", "ControlledShutdown", broker_id=1, broker_epoch=101)
    (reply,) = of_type(out, "ControlledShutdownResult")
    assert (reply["error"], reply["partitions_remaining"]) == (None, [])
    (change,) = of_type(out, "PartitionChangeRecord")
    assert change_fields(change) == {"isr": [2], "leader": 2}
    (cs,) = of_type(out, "BrokerRegistrationChangeRecord")
    assert (cs["in_controlled_shutdown"], cs["version"]) == (1, 1)
    out = c("b1-stop-again", "ControlledShutdown", broker_id=1, broker_epoch=101)
    assert [r["fenced"] for r in of_type(out, "BrokerRegistrationChangeRecord")] == [1]
    assert (
        of_type(
            c("b9-stop", "ControlledShutdown", broker_id=9, broker_epoch=1),
            "ControlledShutdownResult",
        )[0]["error"]
        == "STALE_BROKER_EPOCH"
    )


def test_a_reassignment_completes_in_one_record() -> None:
    """alterPartitionReassignment writes the union with adding/removing; the AlterPartition
    that brings the adding replica into the ISR completes it in one record
    (completeReassignmentIfNeeded), and the leader, being removed, is replaced:
    NEW_LEADER_ELECTED."""
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    out = c("move", "PartitionReassignment", topic="t", partition=0, target_replicas=[2, 3])
    (start,) = of_type(out, "PartitionChangeRecord")
    assert (start["replicas"], start["adding_replicas"], start["removing_replicas"]) == (
        [2, 3, 1],
        [3],
        [1],
    )
    out = c(
        "caught-up",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        broker_epoch=101,
        leader_epoch=0,
        partition_epoch=1,
        isr=[1, 2, 3],
    )
    (done,) = of_type(out, "PartitionChangeRecord")
    assert (
        done["replicas"],
        done["isr"],
        done["leader"],
        done["adding_replicas"],
        done["removing_replicas"],
    ) == ([2, 3], [2, 3], 2, [], [])
    assert of_type(out, "AlterPartitionResult")[0]["error"] == "NEW_LEADER_ELECTED"


def test_deletion_is_one_record() -> None:
    c = Cluster()
    c.start(1)
    c("create", "TopicCreation", topic="t", partitions={"0": [1], "1": [1]})
    out = c("delete", "TopicDeletion", topic="t")
    assert [r["type"] for r in out] == ["RemoveTopicRecord"]
    assert c.engine.state_json()["partitions"] == {}


# -- the shadow on a KRaft cluster --------------------------------------------------------


def observe(
    c: Cluster, event_id: str, leader: int, leader_epoch: int, isr: list[int], partition_epoch: int
) -> str:
    out = c(
        event_id,
        "ObservedPartitionState",
        topic="t",
        partition=0,
        leader=leader,
        leader_epoch=leader_epoch,
        isr=isr,
        partition_epoch=partition_epoch,
    )
    divergences = of_type(out, "Divergence")
    return divergences[0]["severity"] if divergences else "match"


def correct_kraft_history(c: Cluster) -> list[str]:
    """What a healthy KRaft cluster shows: a follower drops out of the ISR and comes back,
    the leader's broker is fenced, leadership moves, the broker returns."""
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
    seen = [observe(c, "o1", 1, 0, [1, 2, 3], 0)]
    c("b3-down", "BrokerFailure", broker_id=3)
    seen.append(
        observe(c, "o2", 1, 0, [1, 2], 1)
    )  # KRaft: the controller's shrink bumps no leader epoch
    c("b3-back", "BrokerStartup", broker_id=3, broker_epoch=103)
    c(
        "expand",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=1,
        broker_epoch=101,
        leader_epoch=0,
        partition_epoch=1,
        isr=[1, 2, 3],
    )
    seen.append(observe(c, "o3", 1, 0, [1, 2, 3], 2))
    c("b1-down", "BrokerFailure", broker_id=1)
    seen.append(observe(c, "o4", 2, 1, [2, 3], 3))
    c("b1-back", "BrokerStartup", broker_id=1, broker_epoch=104)
    c(
        "rejoin",
        "AlterPartition",
        topic="t",
        partition=0,
        broker_id=2,
        broker_epoch=102,
        leader_epoch=1,
        partition_epoch=3,
        isr=[2, 3, 1],
    )
    seen.append(observe(c, "o5", 2, 1, [2, 3, 1], 4))
    return seen


def test_the_shadow_reports_no_divergence_on_a_correct_kraft_cluster() -> None:
    assert correct_kraft_history(Cluster()) == ["match"] * 5


def test_the_zk_rules_raise_the_false_alarm_the_kraft_rules_do_not() -> None:
    """The issue's report, reproduced: a follower's broker drops out. The ZK controller
    bumps the leader epoch when it removes a replica from the ISR
    (ReplicaStateMachine's OfflineReplica: removeReplicasFromIsr), so under the ZK rules the
    KRaft cluster's unchanged epoch reads as a safety divergence."""
    c = Cluster(ControllerConfig())
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
    c("b3-down", "BrokerFailure", broker_id=3)
    assert observe(c, "o", 1, 0, [1, 2], 1) == "safety"


def test_a_leader_outside_the_isr_and_elr_without_unclean_is_safety() -> None:
    c = Cluster()
    c.start(1, 2, 3)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
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
    )
    out = c(
        "bad",
        "ObservedPartitionState",
        topic="t",
        partition=0,
        leader=3,
        leader_epoch=1,
        isr=[3],
        partition_epoch=2,
    )
    (divergence,) = of_type(out, "Divergence")
    assert divergence["severity"] == "safety"
    assert "outside the ISR [1] and the ELR []" in divergence["reason"]


def test_a_fence_ends_the_heartbeat_managers_controlled_shutdown_but_not_the_registrations() -> (
    None
):
    """BrokerHeartbeatManager.touch(fenced) clears the controlled shutdown offset; the
    registration keeps inControlledShutdown. Broker 1 shuts down (t-0 has no other replica:
    leader -1), is fenced, and the same incarnation heartbeats again: unfencing lets it lead
    t-0 (handleBrokerUnfenced accepts the broker being added). Asked to shut down again, the
    manager sees it UNFENCED with a leadership: CONTROLLED_SHUTDOWN once more, the leadership
    moves (no registration record: it is already in controlled shutdown)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1]})
    c("stop", "ControlledShutdown", broker_id=1, broker_epoch=101)
    assert c.partition("t-0")["leader"] == -1
    c("fenced", "BrokerFailure", broker_id=1)
    out = c("back", "BrokerStartup", broker_id=1, broker_epoch=101)
    assert [change_fields(r) for r in of_type(out, "PartitionChangeRecord")] == [{"leader": 1}]
    out = c("stop-again", "ControlledShutdown", broker_id=1, broker_epoch=101)
    assert [change_fields(r) for r in of_type(out, "PartitionChangeRecord")] == [{"leader": -1}]
    assert of_type(out, "BrokerRegistrationChangeRecord") == []
