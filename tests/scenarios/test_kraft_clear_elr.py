"""Kafka 4.0's ClearElrRecord (KAFKA-16540, KAFKA-18649): with ELR on, a config record that
sets or removes `min.insync.replicas` is followed by a ClearElrRecord for its topic, or for
every topic when it is the cluster's (`ConfigurationControlManager.createClearElrRecordsAsNeeded`).
Its replay empties the ELR and last known ELR of each partition that has one, which bumps
that partition's epoch and nothing else (`ReplicationControlManager.removeTopicElrs`). With
ELR on, the cluster's min.insync.replicas cannot be removed (`isDisallowedClusterMinIsrTransition`).
Through the engine, in kraft mode."""

from __future__ import annotations

from state_machines.model import ControllerConfig
from tests.scenarios.test_kraft_elr import ELR, fence_all
from tests.scenarios.test_kraft_rules import Cluster


def two_topics_with_elrs() -> Cluster:
    """t and u (RF 3, min ISR 2) with brokers 3, 2 and 1 fenced in turn: each partition has
    ELR [1, 2] and last known ELR [1]."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    for topic in ("t", "u"):
        c(
            f"create-{topic}",
            "TopicCreation",
            topic=topic,
            partitions={"0": [1, 2, 3]},
            configs={"min.insync.replicas": "2"},
        )
    fence_all(c)
    for key in ("t-0", "u-0"):
        p = c.partition(key)
        assert (p["eligible_leader_replicas"], p["last_known_elr"]) == ([1, 2], [1]), p
    return c


def kinds(records: list[dict]) -> list[str]:
    return [r["type"] for r in records]


def test_a_topic_min_isr_change_clears_that_topics_elrs_and_bumps_only_their_partition_epoch() -> (
    None
):
    c = two_topics_with_elrs()
    t_before, u_before = c.partition("t-0"), c.partition("u-0")
    out = c("t-min-isr", "TopicConfigChange", topic="t", configs={"min.insync.replicas": "1"})
    assert kinds(out) == ["ConfigRecord", "ClearElrRecord"]
    assert (out[1]["topic_name"], out[1]["topic"]) == ("t", "t")
    t_after = c.partition("t-0")
    assert (t_after["eligible_leader_replicas"], t_after["last_known_elr"]) == ([], [])
    assert t_after["partition_epoch"] == t_before["partition_epoch"] + 1
    assert {
        k: v
        for k, v in t_after.items()
        if k not in ("eligible_leader_replicas", "last_known_elr", "partition_epoch")
    } == {
        k: v
        for k, v in t_before.items()
        if k not in ("eligible_leader_replicas", "last_known_elr", "partition_epoch")
    }
    assert c.partition("u-0") == u_before


def test_the_clusters_min_isr_clears_every_elr_even_when_set_to_its_value() -> None:
    """A BROKER resource gets a ConfigRecord for every key of the request, changed or not
    (KAFKA-14136), so re-setting the cluster's min.insync.replicas clears every ELR."""
    c = two_topics_with_elrs()
    c("min-isr", "BrokerConfigChange", configs={"min.insync.replicas": "2"})
    epochs = {k: c.partition(k)["partition_epoch"] for k in ("t-0", "u-0")}
    out = c("min-isr-again", "BrokerConfigChange", configs={"min.insync.replicas": "2"})
    assert kinds(out) == ["ConfigRecord", "ClearElrRecord"]
    assert out[1]["topic_name"] == "" and "topic" not in out[1]
    for key in ("t-0", "u-0"):
        p = c.partition(key)
        assert (p["eligible_leader_replicas"], p["last_known_elr"], p["partition_epoch"]) == (
            [],
            [],
            epochs[key],
        )  # cleared by the first


def test_a_partition_without_an_elr_is_not_merged() -> None:
    """KAFKA-18649: no merge, so no partition epoch bump, where there is nothing to clear."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    before = c.partition("t-0")
    out = c("t-min-isr", "TopicConfigChange", topic="t", configs={"min.insync.replicas": "3"})
    assert kinds(out) == ["ConfigRecord", "ClearElrRecord"]
    assert c.partition("t-0") == before


def test_a_topic_created_with_min_isr_writes_its_clear_elr_record_before_its_partitions() -> None:
    """createTopics takes its configs through incrementalAlterConfig, so its ConfigRecord is
    followed by a ClearElrRecord, under the topic's key (the contract orders a cause's
    records by key, so the partition's record comes first in the output)."""
    c = Cluster(ELR)
    c.start(1, 2, 3)
    out = c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    assert kinds(out) == ["PartitionRecord", "TopicRecord", "ConfigRecord", "ClearElrRecord"]
    assert [r["seq"] for r in out[1:]] == [0, 1, 2]


def test_removing_the_clusters_min_isr_is_refused_while_elr_is_on() -> None:
    c = two_topics_with_elrs()
    c("min-isr", "BrokerConfigChange", configs={"min.insync.replicas": "2"})
    before = {k: c.partition(k) for k in ("t-0", "u-0")}
    assert c("remove", "BrokerConfigChange", configs={"min.insync.replicas": None}) == []
    assert {k: c.partition(k) for k in ("t-0", "u-0")} == before
    assert c.engine.state_json()["dynamic_configs"] == {"min.insync.replicas": "2"}


def test_without_elr_no_clear_elr_record_is_written() -> None:
    c = Cluster(ControllerConfig(mode="kraft", metadata_version="4.0-IV1"))
    c.start(1, 2, 3)
    out = c(
        "create",
        "TopicCreation",
        topic="t",
        partitions={"0": [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    assert "ClearElrRecord" not in kinds(out)
    assert kinds(c("min-isr", "BrokerConfigChange", configs={"min.insync.replicas": "2"})) == [
        "ConfigRecord"
    ]
    # and the cluster's min ISR can be removed
    assert kinds(c("remove", "BrokerConfigChange", configs={"min.insync.replicas": None})) == [
        "ConfigRecord"
    ]
    assert c.engine.state_json().get("dynamic_configs", {}) == {}
