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

import re
from typing import Any

from .errors import InvalidEvent
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
from .model import config_boolean
from .record_bounds import DEFAULT_LIMITS, InputLimits, decode_record
from .record_bounds import shown as _shown

CONTRACT_VERSION = 1
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


# ---------------------------------------------------------------------------------------
# validation


def _req(obj: dict[str, Any], name: str) -> Any:
    if name not in obj or obj[name] is None:
        raise InvalidEvent(f"missing required field '{name}'")
    return obj[name]


def _int(value: Any, name: str, *, minimum: int | None = None, bits: int = 32) -> int:
    """An integer field within its Kafka type: int32 (broker ids, partitions, epochs) unless
    `bits` says int64 (broker epochs, times)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidEvent(f"field '{name}' must be an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise InvalidEvent(f"field '{name}' must be >= {minimum}, got {value}")
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise InvalidEvent(f"field '{name}' is outside int{bits}: {value}")
    return value


def _opt(obj: dict[str, Any], name: str, default: Any) -> Any:
    """An optional field: absent or null is `default`; any other value is checked as given
    (a `false` or `[]` where an object belongs is refused, not read as the default)."""
    value = obj.get(name)
    return default if value is None else value


def _opt_int(
    obj: dict[str, Any], name: str, *, minimum: int | None = None, bits: int = 32
) -> int | None:
    value = obj.get(name)
    return None if value is None else _int(value, name, minimum=minimum, bits=bits)


def _broker_id(value: Any, name: str) -> int:
    return _int(value, name, minimum=0)


def _topic(obj: dict[str, Any]) -> str:
    value = _req(obj, "topic")
    # Kafka's Topic.validate (clients/.../common/internals/Topic.java): 1 to 249 of the
    # legal characters, and neither "." nor ".."; fullmatch, as `$` would match before a
    # final newline
    if not isinstance(value, str) or not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        raise InvalidEvent(f"field 'topic' is not a valid Kafka topic name: {_shown(value)}")
    return value


_INT32_MAX = 2**31 - 1

# Only `int` itself: a bool is an int to isinstance, and not a broker id.
_INT_ONLY = frozenset((int,))
# lists of ints already found distinct and within int32 (only ints reach it: True == 1)
_GOOD_LISTS: set[tuple[int, ...]] = set()


def _broker_list(
    value: Any, name: str, *, allow_empty: bool = False, allow_duplicates: bool = False
) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise InvalidEvent(f"field '{name}' must be a list of broker ids")
    ids = tuple(value)
    # the common case, distinct non-negative ints, checked without a Python call per id (a
    # creation at a million partitions names three million); anything else is checked id
    # by id below, and refused with the same message
    if ids and _INT_ONLY.issuperset(map(type, ids)):
        if ids in _GOOD_LISTS:  # a cluster has few distinct replica lists
            return ids
        if min(ids) >= 0 and max(ids) <= _INT32_MAX and len(set(ids)) == len(ids):
            if len(_GOOD_LISTS) >= 65536:
                _GOOD_LISTS.clear()
            _GOOD_LISTS.add(ids)
            return ids
    ids = tuple(_broker_id(v, name) for v in value)
    if not ids and not allow_empty:
        raise InvalidEvent(f"field '{name}' must not be empty")
    if len(set(ids)) != len(ids) and not allow_duplicates:
        raise InvalidEvent(f"field '{name}' has duplicate broker ids: {_shown(list(ids))}")
    return ids


def _partition_map(value: Any) -> tuple[tuple[int, tuple[int, ...]], ...]:
    if not isinstance(value, dict) or not value:
        raise InvalidEvent(
            "field 'partitions' must be a non-empty object of partition -> replica list"
        )
    out = []
    for key, replicas in value.items():
        # ASCII digits: str.isdigit alone takes "²", which int() refuses, and "٣"
        if not isinstance(key, str) or not (key.isascii() and key.isdigit()):
            raise InvalidEvent(
                f"partition number must be a non-negative integer string, got {_shown(key)}"
            )
        # Kafka's partition ids are Java ints (TopicPartition.partition); int() refuses a
        # string of thousands of digits, so no more than ten reach it (leading zeros off)
        if len(key) > 10:
            digits = key.lstrip("0") or "0"
            number = int(digits) if len(digits) <= 10 else _INT32_MAX + 1
        else:
            number = int(key)
        if number > _INT32_MAX:
            raise InvalidEvent(f"partition number {_shown(key)} is outside int32")
        out.append((number, _broker_list(replicas, f"partitions.{number}")))
    if len({number for number, _ in out}) != len(out):
        # "1" and "01": two keys of the object, one partition (`out` is in the keys' order)
        keys: dict[int, list[str]] = {}
        for key, (number, _) in zip(value, out, strict=True):
            keys.setdefault(number, []).append(key)
        number = min(n for n, named in keys.items() if len(named) > 1)
        raise InvalidEvent(
            f"field 'partitions' names partition {number} more than once: {_shown(keys[number])}"
        )
    out.sort()
    return tuple(out)


def _configs(value: Any, name: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidEvent(f"field '{name}' must be an object of string -> string")
    _check_booleans(value)
    return tuple(sorted(value.items()))


def _recovery(value: Any, name: str) -> str:
    if value is None:
        return "RECOVERED"
    if value not in ("RECOVERED", "RECOVERING"):
        raise InvalidEvent(f"field '{name}' must be RECOVERED or RECOVERING, got {_shown(value)}")
    return str(value)


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


# Kafka's boolean config values (ConfigDef.Type.BOOLEAN parses "true"/"false", any case)
_BOOLEAN_CONFIGS = frozenset({"unclean.leader.election.enable"})


def _dynamic_configs(value: Any) -> tuple[tuple[str, str | None], ...]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    ):
        raise InvalidEvent("field 'configs' must be an object of string -> string or null")
    _check_booleans(value)
    return tuple(sorted(value.items()))


def _check_booleans(configs: dict[str, str | None]) -> None:
    """A boolean config Kafka would refuse (LogConfig and KafkaConfig validate before
    anything is stored, so no controller ever reads one)."""
    for key in _BOOLEAN_CONFIGS & configs.keys():
        value = configs[key]
        if value is not None and config_boolean(value) is None:
            raise InvalidEvent(f"config '{key}' must be true or false, got {_shown(value)}")


def _topic_partitions(value: Any, name: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(value, list) or not value:
        raise InvalidEvent(f"field '{name}' must be a non-empty list of {{topic, partition}}")
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise InvalidEvent(f"field '{name}' must be a non-empty list of {{topic, partition}}")
        out.append((_topic(item), _int(_req(item, "partition"), "partition", minimum=0)))
    if len(set(out)) != len(out):
        raise InvalidEvent(f"field '{name}' names a partition twice")
    return tuple(sorted(out))


def _reassignment_target(value: Any) -> tuple[int, ...]:
    # Kafka validates the list itself (empty, duplicates, negative ids) and answers
    # INVALID_REPLICA_ASSIGNMENT, so only the type is checked here.
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise InvalidEvent("field 'target_replicas' must be a list of broker ids or null")
    # ...but an id outside int32 cannot be on the wire (AlterPartitionReassignments' []int32)
    for v in value:
        _int(v, "target_replicas")
    return tuple(value)


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
