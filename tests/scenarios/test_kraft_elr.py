"""KIP-966's eligible leader replicas under KRaft (PartitionChangeBuilder.maybePopulateTargetElr,
ReplicationControlManager.getTopicEffectiveMinIsr; apache/kafka 4.0, where ELR needs
metadata.version 4.0-IV1 and `eligible.leader.replicas.version` 1), through the engine."""

from __future__ import annotations

from state_machines.model import ControllerConfig
from tests.scenarios.test_kraft_rules import Cluster, change_fields, of_type

ELR = ControllerConfig(mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1)


def fence_all(c: Cluster) -> list[dict]:
    changes = []
    for b in (3, 2, 1):
        changes.append(
            [
                change_fields(r)
                for r in of_type(
                    c(f"b{b}-down", "BrokerFailure", broker_id=b), "PartitionChangeRecord"
                )
            ]
        )
    return changes


def test_the_elr_holds_the_replicas_that_left_an_isr_below_min_isr_and_one_of_them_is_elected() -> (
    None
):
    """min.insync.replicas 2 (topic config), RF 3. Broker 3 leaves: ISR [1,2], at min ISR,
    no ELR. Broker 2 leaves: ISR [1] below min ISR, 2 joins the ELR. Broker 1 leaves: the ISR
    may become empty with ELR, 1 joins the ELR, leader -1 and 1 is the last known leader.
    Broker 2 returns: it is in the ELR, so unfencing elects it cleanly, alone in the ISR."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    assert fence_all(c) == [
        [{"isr": [1, 2]}],
        [{"isr": [1], "eligible_leader_replicas": [2]}],
        [{"isr": [], "leader": -1, "eligible_leader_replicas": [1, 2], "last_known_elr": [1]}],
    ]
    out = c("b2-back", "BrokerStartup", broker_id=2, broker_epoch=102)
    (change,) = of_type(out, "PartitionChangeRecord")
    # clean under KIP-966 (2 is in the ELR), yet outside the previous ISR ([]): KRaft's
    # UncleanLeaderElectionsPerSec counts it (electionWasClean), and so does the marker
    assert change_fields(change) == {
        "isr": [2],
        "leader": 2,
        "eligible_leader_replicas": [1],
        "last_known_elr": [],
        "election": "unclean",
    }


def test_min_isr_comes_from_the_cluster_config_when_the_topic_has_none() -> None:
    """getTopicEffectiveMinIsr: the topic's min.insync.replicas, else the cluster's dynamic
    default (a BrokerConfigChange), else the static one."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    c("min-isr", "BrokerConfigChange", configs={"min.insync.replicas": "3"})
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2, 3]})
    out = c("b3-down", "BrokerFailure", broker_id=3)
    assert [change_fields(r) for r in of_type(out, "PartitionChangeRecord")] == [
        {"isr": [1, 2], "eligible_leader_replicas": [3]}
    ]


def test_without_elr_the_last_isr_member_stays() -> None:
    c = Cluster(ControllerConfig(mode="kraft", metadata_version="4.0-IV1"))
    c.start(1, 2, 3)
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    assert fence_all(c) == [[{"isr": [1, 2]}], [{"isr": [1]}], [{"leader": -1}]]


def test_the_shadow_matches_an_election_from_the_elr() -> None:
    """A KRaft cluster with ELR elects a replica outside the (empty) ISR but in the ELR: not
    unclean, not a divergence."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    fence_all(c)
    c("b2-back", "BrokerStartup", broker_id=2, broker_epoch=102)
    p = c.partition("t-0")
    out = c(
        "o",
        "ObservedPartitionState",
        topic="t",
        partition=0,
        leader=2,
        leader_epoch=p["leader_epoch"],
        isr=[2],
        partition_epoch=p["partition_epoch"],
    )
    assert of_type(out, "Divergence") == []
