"""The writing side of the record bodies, as a generated message's `write(Writable,
cache, version)` does it: the version's non-tagged fields in order, then the tagged-field
section with each tagged field whose value differs from its default, by ascending tag
(unsigned varint count; per field the tag, the size and the data). A non-default value in
a field the version lacks is refused, as Kafka's UnsupportedVersionException refuses it.

An interpreter of the tables, deliberately not the decoders' generated code: the encoder
builds test data, and a round trip through two independent readings of one table
checks both. Speed is not its concern."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from state_machines.speed import IdentityMemo

from .schemas import Field
from .wire import uuid_bytes, uvarint

_FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "int64": ">q"}
_UUIDS: dict[object, bytes] = {}
# By identity of the tables' objects, which each memo holds (`speed.IdentityMemo`): a
# table loaded again is new objects and misses, never another table's entry.
_ELEMENTS: IdentityMemo[Field] = IdentityMemo(65536)
_KEYS: IdentityMemo[frozenset[str]] = IdentityMemo(65536)
_PLANS: dict[int, IdentityMemo[tuple[tuple[Field, bool, bool], ...]]] = {}


def _value(f: Field, version: int, value: Any, where: str) -> bytes:
    t = f.type
    if t in _FIXED:
        return struct.pack(_FIXED[t], value)
    if t == "float64":
        return struct.pack(">d", value)
    if t == "bool":
        return b"\x01" if value else b"\x00"
    if t == "uuid":
        raw = _UUIDS.get(value)
        if raw is None:
            raw = uuid_bytes(str(value))
            if len(_UUIDS) < 65536:
                _UUIDS[value] = raw
        return raw
    if value is None:
        if t == "{}" or not f.is_nullable(version):
            raise ValueError(f"{where}: non-nullable field {f.name} is null")
        return b"\x00"
    if t == "string":
        data = str(value).encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError(f"{where}: '{f.name}' field is too long to be serialized")
        return uvarint(len(data) + 1) + data
    if t == "bytes":
        return uvarint(len(value) + 1) + bytes(value)
    if t == "{}":
        return write_body(f.fields, version, value, where)
    if t.startswith("[]"):
        items: Sequence[Any] = value
        head = uvarint(len(items) + 1)
        if t == "[]int32":
            return head + struct.pack(f">{len(items)}i", *items)
        if t == "[]":
            return head + b"".join(write_body(f.fields, version, item, where) for item in items)
        element = _ELEMENTS.get(f)
        if element is None:
            element = _ELEMENTS.put(
                (f,), Field(f.name, f.key, t[2:], f.versions, f.nullable, None, None)
            )
        return head + b"".join(_value(element, version, item, where) for item in items)
    raise ValueError(f"{where}: no encoder for type {t} of {f.name}")


def write_body(
    fields: tuple[Field, ...], version: int, values: Mapping[str, Any], where: str
) -> bytes:
    """A message body or struct at `version` from `values` by snake_case name (a missing
    key is the field's default)."""
    keys = _KEYS.get(fields)
    if keys is None:
        keys = _KEYS.put((fields,), frozenset(f.key for f in fields))
    if not keys.issuperset(values):
        raise ValueError(f"{where}: no field(s) {sorted(set(values) - keys)}")
    out: list[bytes] = []
    tagged: list[tuple[int, bytes]] = []
    plans = _PLANS.get(version)
    if plans is None:
        plans = _PLANS[version] = IdentityMemo(65536)
    plan = plans.get(fields)
    if plan is None:
        plan = plans.put(
            (fields,), tuple((f, f.present(version), f.tagged(version)) for f in fields)
        )
    for f, present, is_tagged in plan:
        value = values.get(f.key, f.default)
        if not present:
            if not f.is_default(value):
                raise ValueError(
                    f"{where}: attempted to write a non-default {f.name} at version {version}"
                )
            continue
        if is_tagged:
            if not f.is_default(value):
                assert f.tag is not None
                tagged.append((f.tag, _value(f, version, value, where)))
            continue
        out.append(_value(f, version, value, where))
    out.append(uvarint(len(tagged)))
    for tag, data in sorted(tagged):
        out += [uvarint(tag), uvarint(len(data)), data]
    return b"".join(out)
