"""Decoding and validation of the input events of contract v1 (the values: event_types.py).

`parse_event` turns one decoded JSON object into an event value or raises `InvalidEvent`
with a one-line reason (the dead-letter reason). It checks shape and impossible values only;
whether the controller accepts a well-formed event is decided by the state machines.

`parse_line` decodes a record within `InputLimits` first (`record_bounds.py`: its size,
nesting depth and number lengths before the JSON decoder builds anything), then validates
it. Whatever a record holds, `parse_line` returns an envelope or raises `InvalidEvent`,
never anything else.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidEvent
from .event_fields import (
    _broker_id,
    _broker_list,
    _configs,
    _dynamic_configs,
    _int,
    _opt,
    _opt_int,
    _partition_map,
    _reassignment_target,
    _recovery,
    _req,
    _topic,
    _topic_partitions,
)
from .event_types import (
    AlterPartition,
    BrokerConfigChange,
    BrokerFailure,
    BrokerStartup,
    ControlledShutdown,
    ControllerFailover,
    ControllerTick,
    Envelope,
    Event,
    ObservedPartitionState,
    PartitionExpansion,
    PartitionReassignment,
    PartitionStateSnapshot,
    ReplicaDirFailure,
    ReplicaLeaderElection,
    StopReplicaResponse,
    TopicConfigChange,
    TopicCreation,
    TopicDeletion,
)
from .record_bounds import DEFAULT_LIMITS, InputLimits, decode_record
from .record_bounds import shown as _shown

CONTRACT_VERSION = 1


def _parse_body(kind: str, obj: dict[str, Any]) -> Event:
    if kind == "ControllerFailover":
        return ControllerFailover(
            _broker_id(_req(obj, "controller_id"), "controller_id"),
            _int(_req(obj, "controller_epoch"), "controller_epoch", minimum=0),
        )
    if kind == "BrokerStartup":
        return BrokerStartup(
            _broker_id(_req(obj, "broker_id"), "broker_id"),
            _opt_int(obj, "broker_epoch", minimum=0, bits=64),
        )
    if kind == "BrokerFailure":
        return BrokerFailure(_broker_id(_req(obj, "broker_id"), "broker_id"))
    if kind == "ControlledShutdown":
        return ControlledShutdown(
            _broker_id(_req(obj, "broker_id"), "broker_id"),
            _opt_int(obj, "broker_epoch", minimum=-1, bits=64),
        )
    if kind == "TopicCreation":
        return TopicCreation(
            _topic(obj),
            _partition_map(_req(obj, "partitions")),
            _configs(_opt(obj, "configs", {}), "configs"),
        )
    if kind == "PartitionExpansion":
        return PartitionExpansion(_topic(obj), _partition_map(_req(obj, "partitions")))
    if kind == "TopicDeletion":
        return TopicDeletion(_topic(obj))
    if kind == "StopReplicaResponse":
        error = obj.get("error")
        if error is not None and not isinstance(error, str):
            raise InvalidEvent("field 'error' must be a string or null")
        if "error" not in obj:
            raise InvalidEvent("missing required field 'error'")
        return StopReplicaResponse(
            _topic(obj),
            _int(_req(obj, "partition"), "partition", minimum=0),
            _broker_id(_req(obj, "broker_id"), "broker_id"),
            error,
        )
    if kind == "PartitionReassignment":
        if "target_replicas" not in obj:
            raise InvalidEvent("missing required field 'target_replicas'")
        target = obj["target_replicas"]
        return PartitionReassignment(
            _topic(obj),
            _int(_req(obj, "partition"), "partition", minimum=0),
            None if target is None else _reassignment_target(target),
        )
    if kind == "AlterPartition":
        return AlterPartition(
            _topic(obj),
            _int(_req(obj, "partition"), "partition", minimum=0),
            _broker_id(_req(obj, "broker_id"), "broker_id"),
            _opt_int(obj, "broker_epoch", minimum=-1, bits=64),
            # Kafka takes any int32 epoch here and answers FENCED_LEADER_EPOCH /
            # INVALID_UPDATE_VERSION; a stale -1 is a request to refuse, not bad input.
            _int(_req(obj, "leader_epoch"), "leader_epoch"),
            _int(_req(obj, "partition_epoch"), "partition_epoch"),
            # an empty or repeating ISR is a request the controller answers, not bad input:
            # KRaft's validateAlterPartitionData says INVALID_REQUEST, ZK's
            # processAlterPartition (3.9) writes it
            _broker_list(_req(obj, "isr"), "isr", allow_empty=True, allow_duplicates=True),
            _recovery(obj.get("leader_recovery_state"), "leader_recovery_state"),
        )
    if kind == "ReplicaLeaderElection":
        election_type = _req(obj, "election_type")
        if election_type not in ("PREFERRED", "UNCLEAN"):
            raise InvalidEvent(
                f"field 'election_type' must be PREFERRED or UNCLEAN, got {_shown(election_type)}"
            )
        trigger = _opt(obj, "trigger", "admin")
        if trigger == "auto":
            # the automatic rebalance is the controller's own (ControllerTick drives it):
            # Kafka never runs one on request
            raise InvalidEvent(
                "field 'trigger' auto is not an input: the controller runs its own automatic "
                "rebalance on ControllerTick; use admin or zk"
            )
        if trigger not in ("admin", "zk"):
            raise InvalidEvent(f"field 'trigger' must be admin or zk, got {_shown(trigger)}")
        if "partitions" not in obj:
            raise InvalidEvent("missing required field 'partitions'")
        raw = obj["partitions"]
        partitions = None
        if raw is not None:
            if not isinstance(raw, list):
                raise InvalidEvent(
                    "field 'partitions' must be a list of {topic, partition} or null"
                )
            items = []
            for item in raw:
                if not isinstance(item, dict):
                    raise InvalidEvent(
                        "field 'partitions' must be a list of {topic, partition} or null"
                    )
                items.append((_topic(item), _int(_req(item, "partition"), "partition", minimum=0)))
            partitions = tuple(dict.fromkeys(items))
        return ReplicaLeaderElection(election_type, partitions, trigger)
    if kind == "TopicConfigChange":
        return TopicConfigChange(_topic(obj), _configs(_req(obj, "configs"), "configs"))
    if kind == "PartitionStateSnapshot":
        replicas = _broker_list(_req(obj, "replicas"), "replicas")
        return PartitionStateSnapshot(
            _topic(obj),
            _int(_req(obj, "partition"), "partition", minimum=0),
            replicas,
            _int(_req(obj, "leader"), "leader", minimum=-1),
            _int(_req(obj, "leader_epoch"), "leader_epoch", minimum=0),
            _broker_list(_req(obj, "isr"), "isr", allow_empty=True),
            _int(_req(obj, "partition_epoch"), "partition_epoch", minimum=0),
            _int(_req(obj, "controller_epoch"), "controller_epoch", minimum=0),
            _broker_list(_opt(obj, "adding_replicas", []), "adding_replicas", allow_empty=True),
            _broker_list(_opt(obj, "removing_replicas", []), "removing_replicas", allow_empty=True),
            _recovery(obj.get("leader_recovery_state"), "leader_recovery_state"),
        )
    if kind == "ObservedPartitionState":
        observed_replicas = obj.get("replicas")
        return ObservedPartitionState(
            _topic(obj),
            _int(_req(obj, "partition"), "partition", minimum=0),
            _int(_req(obj, "leader"), "leader", minimum=-1),
            _int(_req(obj, "leader_epoch"), "leader_epoch", minimum=0),
            _broker_list(_req(obj, "isr"), "isr", allow_empty=True),
            _opt_int(obj, "partition_epoch", minimum=0),
            _opt_int(obj, "controller_epoch", minimum=0),
            None if observed_replicas is None else _broker_list(observed_replicas, "replicas"),
        )
    if kind == "BrokerConfigChange":
        return BrokerConfigChange(_dynamic_configs(_req(obj, "configs")))
    if kind == "ReplicaDirFailure":
        return ReplicaDirFailure(
            _broker_id(_req(obj, "broker_id"), "broker_id"),
            _topic_partitions(_req(obj, "partitions"), "partitions"),
        )
    if kind == "ControllerTick":
        return ControllerTick()
    raise InvalidEvent(f"unknown event type {_shown(kind)}")


def parse_event(obj: Any, offset: int, limits: InputLimits = DEFAULT_LIMITS) -> Envelope:
    """Validate one decoded JSON value against contract v1."""
    if not isinstance(obj, dict):
        raise InvalidEvent(f"an event must be a JSON object, got {type(obj).__name__}")
    version = obj.get("v")
    if version is None:
        raise InvalidEvent("missing required field 'v'")
    # the contract's version is an integer: 1.0 equals 1 in Python but is not the contract
    if version != CONTRACT_VERSION or type(version) is not int:
        raise InvalidEvent(f"unsupported contract version {_shown(version)} (this build reads v1)")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise InvalidEvent("missing required field 'type'")
    event_id = obj.get("id")
    if event_id is not None and not isinstance(event_id, str):
        raise InvalidEvent("field 'id' must be a string")
    if event_id is not None and len(event_id) > limits.max_id_chars:
        raise InvalidEvent(
            f"field 'id' has {len(event_id)} characters, over the limit of {limits.max_id_chars}"
        )
    ts = obj.get("ts")
    if ts is not None:
        ts = _int(ts, "ts", bits=64)
    elif kind == "ControllerTick":
        raise InvalidEvent("a ControllerTick needs the envelope's 'ts' (epoch milliseconds)")
    return Envelope(offset, _parse_body(kind, obj), event_id, ts)


def parse_line(
    line: str | bytes | None, offset: int, limits: InputLimits = DEFAULT_LIMITS
) -> Envelope:
    """Decode one record within `limits` (`record_bounds.decode_record`) and validate it.
    Every way a record can be bad is an InvalidEvent."""
    return parse_event(decode_record(line, limits), offset, limits)


# the values are re-exported: callers read one module for the input side of the contract
__all__ = [
    "AlterPartition",
    "BrokerConfigChange",
    "BrokerFailure",
    "BrokerStartup",
    "CONTRACT_VERSION",
    "ControlledShutdown",
    "ControllerFailover",
    "ControllerTick",
    "DEFAULT_LIMITS",
    "Envelope",
    "Event",
    "InputLimits",
    "ObservedPartitionState",
    "PartitionExpansion",
    "PartitionReassignment",
    "PartitionStateSnapshot",
    "ReplicaDirFailure",
    "ReplicaLeaderElection",
    "StopReplicaResponse",
    "TopicConfigChange",
    "TopicCreation",
    "TopicDeletion",
    "parse_event",
    "parse_line",
]
