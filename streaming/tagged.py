"""The generic JSON form of the core's values, derived from their type hints.

A dataclass is written as an object of its fields by name plus `_t`, its class name;
tuples become lists, enums their Kafka names, frozensets sorted lists. Reading walks the
type hints back: a union of dataclasses is resolved by `_t`, through `TAGGED`, every
dataclass of the `state_machines` package by class name. The registry is built by walking
the package, so a class that moves between core modules, or a new module, needs nothing
here; two core dataclasses with one name would make `_t` ambiguous and are refused when
this module is imported (`DuplicateTag`).

`codec.py` puts a schema version around these documents; this module knows no versions.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, Union

import state_machines
from state_machines.errors import ShadowControllerError


class DuplicateTag(ShadowControllerError):
    """Two dataclasses of the core share a name: a tagged document could not say which one
    it holds."""


def dataclasses_by_name(package: types.ModuleType) -> dict[str, type]:
    """Every dataclass defined in a module of `package`, by class name."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
            ):
                other = found.setdefault(obj.__name__, obj)
                if other is not obj:
                    raise DuplicateTag(
                        f"{other.__module__}.{other.__name__} and {module.__name__}.{obj.__name__} "
                        f"share the name {obj.__name__!r}, which tags encoded values: rename one"
                    )
    return found


# Every dataclass that may appear inside a tagged union, by name.
TAGGED: dict[str, type] = dataclasses_by_name(state_machines)


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
            return from_jsonable(data, TAGGED[data["_t"]])
        non_none = [a for a in args if a is not type(None)]
        return from_jsonable(data, non_none[0]) if len(non_none) == 1 else data
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(v, args[0]) for v in data)
        return tuple(from_jsonable(v, a) for v, a in zip(data, args, strict=False))
    if origin is frozenset:
        return frozenset(from_jsonable(v, args[0]) for v in data)
    if origin is dict:
        return {k: from_jsonable(v, args[1]) for k, v in data.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(data)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        cls = TAGGED.get(data.get("_t", ""), hint) if isinstance(data, dict) else hint
        hints = _hints(cls)
        kwargs = {
            f.name: from_jsonable(data[f.name], hints[f.name])
            for f in dataclasses.fields(cls)
            if f.name in data
        }
        return cls(**kwargs)
    return data
