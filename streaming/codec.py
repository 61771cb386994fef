"""Encoding of the core's values for Spark state and for rows between operators.

Checkpoints outlive code, so everything persisted goes through here: one JSON document per
value, with the schema version `SCHEMA_VERSION` stored beside it. Values are the core's
frozen dataclasses; the encoding is derived from their type hints (a field is written by
name; tuples become lists, enums their Kafka names, frozensets sorted lists; a union of
dataclasses is tagged with the class name), so adding a field with a default is a
compatible change and anything else bumps the version and adds a migration to `_MIGRATIONS`.

JSON strings are used rather than Spark map/array state fields because those crash the
Python worker in 4.3.0 (spark-notes).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, Union

from state_machines import commands, directory, events, model, outputs, partition

SCHEMA_VERSION = 1

# Every dataclass that may appear inside a tagged union, by name.
_TAGGED: dict[str, type] = {}
for _module in (commands, directory, model, outputs, partition, events):
    for _name in dir(_module):
        _obj = getattr(_module, _name)
        if isinstance(_obj, type) and dataclasses.is_dataclass(_obj) and _obj.__module__ == _module.__name__:
            _TAGGED[_obj.__name__] = _obj


def to_jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value.value if isinstance(value, Enum) else value
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        out = {"_t": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = to_jsonable(getattr(value, f.name))
        return out
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    raise TypeError(f"cannot encode {type(value).__name__}")


@cache
def _hints(cls: type) -> dict[str, Any]:
    module = __import__(cls.__module__, fromlist=["_"])
    return typing.get_type_hints(cls, vars(module))


def from_jsonable(data: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return data
    if origin in (Union, types.UnionType):
        if data is None:
            return None
        if isinstance(data, dict) and "_t" in data:
            return from_jsonable(data, _TAGGED[data["_t"]])
        non_none = [a for a in args if a is not type(None)]
        return from_jsonable(data, non_none[0]) if len(non_none) == 1 else data
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(v, args[0]) for v in data)
        return tuple(from_jsonable(v, a) for v, a in zip(data, args))
    if origin is frozenset:
        return frozenset(from_jsonable(v, args[0]) for v in data)
    if origin is dict:
        return {k: from_jsonable(v, args[1]) for k, v in data.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(data)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        cls = _TAGGED.get(data.get("_t", ""), hint) if isinstance(data, dict) else hint
        hints = _hints(cls)
        kwargs = {f.name: from_jsonable(data[f.name], hints[f.name]) for f in dataclasses.fields(cls) if f.name in data}
        return cls(**kwargs)
    return data


_MIGRATIONS: dict[int, Any] = {}  # version -> function(document) -> document of version + 1


def dumps(value: Any) -> str:
    return json.dumps({"v": SCHEMA_VERSION, "d": to_jsonable(value)}, separators=(",", ":"), sort_keys=True)


def loads(text: str, hint: Any) -> Any:
    doc = json.loads(text)
    version = doc.get("v")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"state written by schema version {version!r}; this build reads up to {SCHEMA_VERSION}")
    while version < SCHEMA_VERSION:
        doc = _MIGRATIONS[version](doc)
        version += 1
    return from_jsonable(doc["d"], hint)


DirectoryRecord = Union[directory.ControllerRecord, directory.BrokerRecord, directory.TopicRecord]
PartitionRecordType = partition.PartitionRecord
