"""The engine's kraft-mode decisions written as a metadata log, for `metadata-log verify`.

Issue 47 item 5: the KRaft rules' record lists follow the quorum controller's append order,
so that KRaft's sequential replay, and this verifier, can read them as Kafka's own log. This
module writes each cause's records (the contract documents of docs/contract.md's kraft
table) as one batch, sorted by their `append_order` (Kafka's append order within a cause),
with Kafka's field names at the record version the engine names. The offsets are the log's;
a LeaderChange control batch stands for a ControllerFailover, and the first one is followed by
the bootstrap FeatureLevelRecords of the engine's metadata.version (and ELR).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.kraft.metadata_version import MetadataVersion
from state_machines.kraft.outputs import RECORD_TYPES
from state_machines.model import ControllerConfig
from streaming.metadata_log.encode import control_value, encode_batch, metadata_value, write_segment
from streaming.metadata_log.schemas import METADATA_BY_NAME

FIRST_OFFSET = 1_000_000


def feature(name: str, level: int) -> bytes:
    return metadata_value("FeatureLevelRecord", 0, name=name, feature_level=level)


def record_value(doc: Mapping[str, Any]) -> bytes:
    """One decision document as the metadata record Kafka writes."""
    name, version = str(doc["type"]), int(doc["version"])
    schema = METADATA_BY_NAME[name]
    fields = {
        f.key: doc[f.key]
        for f in schema.fields
        if f.key in doc
        and f.present(version)
        and (doc[f.key] is not None or f.is_nullable(version))
    }
    if name == "RegisterBrokerRecord":
        fields.setdefault("rack", None)
        incarnation = str(fields.get("incarnation_id", ""))
        if len(incarnation) != 22:  # the engine's "incarnation-<id>-<epoch>": not a Uuid
            digest = hashlib.sha1(incarnation.encode()).digest()[:16]
            fields["incarnation_id"] = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    return metadata_value(name, version, **fields)


def write_engine_log(
    events: Iterable[Mapping[str, Any]], directory: Path, config: ControllerConfig | None = None
) -> Path:
    """Run the engine (kraft rules) over contract `events`; write its records as a log."""
    engine = Engine(config or ControllerConfig(mode="kraft"))
    mv = MetadataVersion.from_version_string(engine.config.metadata_version)
    batches: list[bytes] = []
    offset = 0
    for i, obj in enumerate(events):
        if obj["type"] == "ControllerFailover":
            leader = control_value("LeaderChange", 0, leader_id=int(obj["controller_id"]))
            batches.append(encode_batch([leader], offset, control=True))
            offset += 1
            if offset == 1:
                # the metadata records start at FIRST_OFFSET: the contract's broker epochs,
                # which stand in the records for Kafka's (the offsets of registrations), then
                # never name a record (verify would take one for the event's start)
                offset = FIRST_OFFSET
                # the first activation's bootstrap records (ActivationRecordsGenerator): the
                # features the engine runs at, which the log carries and the engine does not
                features = [feature("metadata.version", mv.feature_level)]
                if engine.config.eligible_leader_replicas_version:
                    level = engine.config.eligible_leader_replicas_version
                    features.append(feature("eligible.leader.replicas.version", level))
                batches.append(encode_batch(features, offset))
                offset += len(features)
        docs = [d for d in engine.process(parse_event(dict(obj), i)) if d["type"] in RECORD_TYPES]
        # issue 47 item 5: a cause's records in the quorum controller's append order
        docs.sort(key=lambda d: d["append_order"])
        values = [record_value(d) for d in docs]
        if values:
            batches.append(encode_batch(values, offset))
            offset += len(values)
    write_segment(directory, 0, batches)
    return directory


# A story for the engine: three brokers, a topic, a failure, a return, a controlled shutdown,
# a reassignment and an ISR change (contract events, docs/contract.md section 1)
STORY: list[dict[str, Any]] = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
    {"v": 1, "type": "BrokerStartup", "broker_id": 4, "broker_epoch": 104},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "v": 1,
        "type": "TopicCreation",
        "topic": "t",
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]},
    },
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 201},
    {"v": 1, "type": "ControlledShutdown", "broker_id": 2, "broker_epoch": 102},
    {
        "v": 1,
        "type": "PartitionReassignment",
        "topic": "t",
        "partition": 2,
        "target_replicas": [3, 4, 1],
    },
]

# A second story: an ISR shrink, a fence leaving a partition leaderless, an admin's unclean
# election once the topic allows it, the RECOVERING leader's recovery and ISR expansion, a
# preferred election and a reassignment that completes at once
STORY_2: list[dict[str, Any]] = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 11},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 12},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 13},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"v": 1, "type": "TopicCreation", "topic": "u", "partitions": {"0": [1, 2, 3], "1": [2, 1, 3]}},
    {"v": 1, "type": "AlterPartition", "topic": "u", "partition": 0, "broker_id": 1}
    | {"broker_epoch": 11, "leader_epoch": 0, "partition_epoch": 0, "isr": [1]},
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {"v": 1, "type": "TopicConfigChange", "topic": "u"}
    | {"configs": {"unclean.leader.election.enable": "true"}},
    {"v": 1, "type": "ReplicaLeaderElection", "election_type": "UNCLEAN"}
    | {"partitions": [{"topic": "u", "partition": 0}]},
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 21},
    {"v": 1, "type": "AlterPartition", "topic": "u", "partition": 0, "broker_id": 2}
    | {"broker_epoch": 12, "leader_epoch": 2, "partition_epoch": 3, "isr": [2]}
    | {"leader_recovery_state": "RECOVERED"},
    {"v": 1, "type": "AlterPartition", "topic": "u", "partition": 0, "broker_id": 2}
    | {"broker_epoch": 12, "leader_epoch": 2, "partition_epoch": 4, "isr": [2, 1]},
    {"v": 1, "type": "ReplicaLeaderElection", "election_type": "PREFERRED"}
    | {"partitions": [{"topic": "u", "partition": 0}]},
    {
        "v": 1,
        "type": "PartitionReassignment",
        "topic": "u",
        "partition": 1,
        "target_replicas": [3, 2],
    },
]

# ELR at 4.0 (metadata.version 4.0-IV3, eligible.leader.replicas.version 1): min ISR 2, the
# three brokers fail in turn, 2 and then 1 return (each unclean shutdown taking it out of
# the ELR: 1, the last known leader, is then elected as Kafka 4.0 does, KAFKA-19522), and
# min.insync.replicas changes (ClearElrRecord)
STORY_ELR: list[dict[str, Any]] = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 11},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 12},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 13},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"v": 1, "type": "TopicCreation", "topic": "e", "partitions": {"0": [1, 2, 3]}}
    | {"configs": {"min.insync.replicas": "2"}},
    {"v": 1, "type": "BrokerFailure", "broker_id": 3},
    {"v": 1, "type": "BrokerFailure", "broker_id": 2},
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 22},
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 21},
    {"v": 1, "type": "TopicConfigChange", "topic": "e", "configs": {"min.insync.replicas": "1"}},
]
ELR_CONFIG = ControllerConfig(
    mode="kraft", metadata_version="4.0-IV3", eligible_leader_replicas_version=1
)
