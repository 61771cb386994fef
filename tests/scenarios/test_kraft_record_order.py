"""The order of a cause's metadata records: the order the quorum controller appends them.

Every record of kraft mode carries `append_order`; a cause's records sorted by it are in
Kafka's order (apache/kafka 3.9.0): a handler's records in the order it makes them, which
places a broker's own record before or after its partitions' changes
(ReplicationControlManager.handleBrokerFenced, handleBrokerUnfenced,
handleBrokerInControlledShutdown; ClusterControlManager.registerBroker), a topic's
TopicRecord before its ConfigRecords before its PartitionRecords (`createTopic`), config
records in the order Kafka walks the request's HashMap of config names
(`ConfigurationControlManager.incrementalAlterConfigResource`). Issue 47, item 5.
"""

from __future__ import annotations

from typing import Any

from state_machines.kraft.java_hash_set import java_string_hash, string_hash_map_order
from state_machines.model import ControllerConfig
from tests.scenarios.test_kraft_rules import Cluster


def in_append_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cause's metadata records (those with a `version`), in append order."""
    metadata = [r for r in records if "version" in r]
    assert all("append_order" in r for r in metadata)
    return sorted(metadata, key=lambda r: r["append_order"])


def described(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each record as (type, what names it): a partition, a config name, a broker and its
    fencing change."""
    out: list[tuple[Any, ...]] = []
    for r in in_append_order(records):
        kind = r["type"]
        if "partition" in r:
            out.append((kind, r["partition"]))
        elif kind == "ConfigRecord":
            out.append((kind, r["name"]))
        elif kind == "BrokerRegistrationChangeRecord":
            out.append((kind, r["broker_id"], r["fenced"], r["in_controlled_shutdown"]))
        elif kind == "RegisterBrokerRecord":
            out.append((kind, r["broker_id"]))
        else:
            out.append((kind,))
    return out


def test_java_string_hash_map_order() -> None:
    """`String.hashCode` and HashMap's buckets: "a" is 97, "ab" 3105 (97*31 + 98); four
    config names whose buckets (spread hash & 15) are 0, 10, 11, 14 come in that order, not
    sorted; names in one bucket keep their insertion order."""
    assert (java_string_hash("a"), java_string_hash("ab")) == (97, 3105)
    assert java_string_hash("unclean.leader.election.enable") == 1016887921  # jshell
    names = ["compression.type", "min.insync.replicas", "retention.bytes", "segment.ms"]
    assert string_hash_map_order(names) == (
        "compression.type",
        "min.insync.replicas",
        "segment.ms",
        "retention.bytes",
    )
    assert string_hash_map_order(["segment.ms", "retention.ms"]) == ("segment.ms", "retention.ms")
    # 21 topic configs put in sorted order: the table grows to 32 buckets; the order is
    # what java.util.HashMap.keySet() printed (OpenJDK 17)
    many = [
        "cleanup.policy",
        "compression.type",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "index.interval.bytes",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    ]
    assert ",".join(string_hash_map_order(sorted(many))) == (
        "compression.type,file.delete.delay.ms,max.compaction.lag.ms,max.message.bytes,"
        "min.compaction.lag.ms,message.timestamp.type,min.insync.replicas,preallocate,"
        "segment.jitter.ms,index.interval.bytes,min.cleanable.dirty.ratio,"
        "unclean.leader.election.enable,delete.retention.ms,retention.bytes,cleanup.policy,"
        "flush.ms,retention.ms,segment.bytes,segment.ms,flush.messages,segment.index.bytes"
    )


def test_a_topic_creation_appends_topic_then_configs_then_partitions() -> None:
    """`ReplicationControlManager.createTopic`: the TopicRecord, then the ConfigRecords
    ("ConfigRecords go after TopicRecord but before PartitionRecord(s)"), in the order of
    the request's config HashMap, then the PartitionRecords in partition order (the HashMap
    of a 0..n-1 assignment iterates in order)."""
    c = Cluster()
    c.start(1, 2, 3)
    configs = {
        "segment.ms": "1000",
        "retention.bytes": "2000",
        "compression.type": "lz4",
        "min.insync.replicas": "2",
    }
    partitions = {str(p): [1, 2, 3] for p in range(12)}
    out = c("create", "TopicCreation", topic="t", partitions=partitions, configs=configs)
    assert described(out) == [
        ("TopicRecord",),
        ("ConfigRecord", "compression.type"),
        ("ConfigRecord", "min.insync.replicas"),
        ("ConfigRecord", "segment.ms"),
        ("ConfigRecord", "retention.bytes"),
        *(("PartitionRecord", p) for p in range(12)),
    ]


def test_a_fence_appends_the_partitions_then_the_broker() -> None:
    """`handleBrokerFenced`: the partitions with the broker in their ISR, then the fence
    record (BrokerRegistrationChangeRecord fenced=1)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [2, 1]})
    out = c("b1-down", "BrokerFailure", broker_id=1)
    assert described(out) == [
        ("PartitionChangeRecord", 0),
        ("PartitionChangeRecord", 1),
        ("BrokerRegistrationChangeRecord", 1, 1, 0),
    ]


def test_a_controlled_shutdown_appends_the_broker_then_the_partitions() -> None:
    """`handleBrokerInControlledShutdown`: the BrokerRegistrationChangeRecord
    (inControlledShutdown=1) first, then the partitions with the broker in their ISR."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2], "1": [2, 1]})
    out = c("b1-shutdown", "ControlledShutdown", broker_id=1, broker_epoch=101)
    assert described(out) == [
        ("BrokerRegistrationChangeRecord", 1, 0, 1),
        ("PartitionChangeRecord", 0),
        ("PartitionChangeRecord", 1),
    ]


def test_a_new_incarnation_appends_fence_registration_unfence_then_elections() -> None:
    """A new incarnation of an unfenced broker (issue 43 K6): its session's expiry
    (`handleBrokerFenced`: partitions, then the fence), `registerBroker`'s
    RegisterBrokerRecord, then the heartbeat's `handleBrokerUnfenced` (the unfence record,
    then the leaderless partitions it can lead)."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1]})
    out = c("b1-new", "BrokerStartup", broker_id=1, broker_epoch=300)
    assert described(out) == [
        ("PartitionChangeRecord", 0),
        ("BrokerRegistrationChangeRecord", 1, 1, 0),
        ("RegisterBrokerRecord", 1),
        ("BrokerRegistrationChangeRecord", 1, -1, 0),
        ("PartitionChangeRecord", 0),
    ]
    assert c.partition("t-0")["leader"] == 1


def test_brokers_registered_before_the_first_failover_get_their_records_then() -> None:
    """While inactive nothing is appended. Brokers that registered before the first
    ControllerFailover get, at that failover, the records their registration made: each
    broker's RegisterBrokerRecord, and the unfence record if it is unfenced, in the order
    they registered (broker epochs). A later failover (a controller move) writes nothing:
    the new leader already has the log."""
    c = Cluster()
    assert c("b2-up", "BrokerStartup", broker_id=2, broker_epoch=50) == []
    assert c("b1-up", "BrokerStartup", broker_id=1, broker_epoch=60) == []
    assert c("b3-up", "BrokerStartup", broker_id=3, broker_epoch=70) == []
    assert c("b3-down", "BrokerFailure", broker_id=3) == []
    out = c("elected", "ControllerFailover", controller_id=3000, controller_epoch=1)
    assert described(out) == [
        ("RegisterBrokerRecord", 2),
        ("BrokerRegistrationChangeRecord", 2, -1, 0),
        ("RegisterBrokerRecord", 1),
        ("BrokerRegistrationChangeRecord", 1, -1, 0),
        ("RegisterBrokerRecord", 3),
    ]
    register = [r for r in in_append_order(out) if r["type"] == "RegisterBrokerRecord"]
    assert [(r["broker_epoch"], r["fenced"]) for r in register] == [
        (50, True),
        (60, True),
        (70, True),
    ]
    assert c("moved", "ControllerFailover", controller_id=3001, controller_epoch=2) == []


def test_a_cluster_config_change_appends_in_the_requests_hash_order() -> None:
    """`incrementalAlterConfigResource` for the default BROKER resource: a ConfigRecord for
    every key of the request, in the order of its HashMap."""
    c = Cluster()
    c.start(1)
    out = c(
        "configs",
        "BrokerConfigChange",
        configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "2"},
    )
    assert described(out) == [
        ("ConfigRecord", name)
        for name in string_hash_map_order(["min.insync.replicas", "unclean.leader.election.enable"])
    ]


def test_fenced_has_each_schemas_encoding() -> None:
    """`fenced` as Kafka's schemas (metadata/src/main/resources/common/metadata/*.json)
    encode it: RegisterBrokerRecord's Fenced and InControlledShutdown are bools;
    BrokerRegistrationChangeRecord's are int8 changes (1 fence, -1 unfence, 0 none; 1 in
    controlled shutdown, 0 none); Fence/UnfenceBrokerRecord (before 3.3-IV2) carry none."""
    c = Cluster()
    c.start(1, 2)
    c("create", "TopicCreation", topic="t", partitions={"0": [1, 2]})
    records = [
        *c("b1-shutdown", "ControlledShutdown", broker_id=1, broker_epoch=101),
        *c("b1-new", "BrokerStartup", broker_id=1, broker_epoch=300),
    ]
    registers = [r for r in records if r["type"] == "RegisterBrokerRecord"]
    changes = [r for r in records if r["type"] == "BrokerRegistrationChangeRecord"]
    assert registers and changes
    for r in registers:
        assert type(r["fenced"]) is bool and type(r["in_controlled_shutdown"]) is bool
    for r in changes:
        assert type(r["fenced"]) is int and r["fenced"] in (-1, 0, 1)
        assert type(r["in_controlled_shutdown"]) is int and r["in_controlled_shutdown"] in (0, 1)
    old = Cluster(ControllerConfig(mode="kraft", metadata_version="3.3-IV1"))
    old.start(1)
    fence = old("b1-down", "BrokerFailure", broker_id=1)
    assert [(r["type"], "fenced" in r) for r in fence] == [("FenceBrokerRecord", False)]
