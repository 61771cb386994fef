"""The field checks of the input events' decoder (events.py): each reads one field of a
contract v1 event and returns it within its Kafka type, or raises `InvalidEvent` with a
one-line reason.

Kafka's types: int32 for broker ids, partitions and epochs, int64 for broker epochs and
times (the request schemas under clients/src/main/resources/common/message/), topic names
as `Topic.validate` allows them, boolean configs as `ConfigDef.Type.BOOLEAN` parses them.
The names keep their underscore: they are the decoder's helpers, read by events.py only.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidEvent
from .model import config_boolean
from .record_bounds import shown as _shown

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


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
