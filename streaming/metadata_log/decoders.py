"""Per-version decoders of the record bodies, compiled once from the tables in `schemas.py`.

A generated message's `read(Readable, version)` in Kafka walks the fields the version has,
in order, then the tagged-field section (`_readable.readUnsignedVarint()` fields, each a tag,
a size and the data; unknown tags are kept aside, here skipped). Interpreting the table per
record would cost several times the decoding itself, so each (schema, version) becomes one
Python function, written out as source: runs of fixed-size fields are one
`struct.unpack_from`, one-byte varints (every length under 128) are read inline, and the
fields a version lacks are constants. The result is the fields as a dict keyed by
snake_case name. A read past the end raises IndexError or struct.error, which
`records.decode_metadata` turns into a `RecordDecodeError`; so does a body whose length
does not match what the fields consumed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from state_machines.speed import new_tuple

from .errors import RecordDecodeError
from .schemas import Field, Schema
from .wire import UUID_CACHE, read_uvarint, uuid_text

Decoder = Callable[[bytes, int], tuple[dict[str, Any], int]]

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "float64": "d"}
_FIXED["bool"] = "?"
_SIZES = {"b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "d": 8, "?": 1}

_INT32_ARRAYS = [struct.Struct(f">{n}i").unpack_from for n in range(256)]


def _int32s(b: bytes, p: int, n: int) -> tuple[int, ...]:
    if p + 4 * n > len(b):
        raise RecordDecodeError(f"an array of {n} int32s runs past the end")
    if n < 256:
        return _INT32_ARRAYS[n](b, p)
    return struct.unpack_from(f">{n}i", b, p)


def _null(name: str) -> RecordDecodeError:
    return RecordDecodeError(f"non-nullable field {name} was serialized as null")


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, object] = {}
        self.count = 0

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def const(self, value: object) -> str:
        self.count += 1
        name = f"_c{self.count}"
        self.names[name] = value
        return name

    def uvar(self, indent: int, var: str) -> None:
        self.emit(indent, f"{var} = b[p]")
        self.emit(indent, "p += 1")
        self.emit(indent, f"if {var} > 127: {var}, p = _uvar(b, p - 1)")


def _read_field(w: _Writer, indent: int, f: Field, version: int, var: str) -> None:
    """Source reading one non-fixed field into `var` at `p`."""
    t = f.type
    if t in _FIXED:
        fmt = _FIXED[t]
        w.emit(indent, f"{var}, = {w.const(struct.Struct('>' + fmt).unpack_from)}(b, p)")
        w.emit(indent, f"p += {_SIZES[fmt]}")
    elif t == "uuid":
        w.emit(indent, "s = b[p:p + 16]")
        w.emit(indent, "p += 16")
        w.emit(indent, f"{var} = _UC.get(s) or _uuid(s)")
    elif t in ("string", "bytes") or t.startswith("[]"):
        if t == "[]int32":
            # the usual array: a one-byte length of 2-127 (1 to 126 elements)
            w.emit(indent, "n = b[p]")
            w.emit(indent, "if 1 < n < 128:")
            w.emit(indent + 1, "n -= 1")
            w.emit(indent + 1, f"{var} = _I32[n](b, p + 1)")
            w.emit(indent + 1, "p += 1 + 4 * n")
            w.emit(indent, "else:")
            indent += 1
            w.emit(indent, "p += 1")
            w.emit(indent, "if n > 127: n, p = _uvar(b, p - 1)")
        else:
            w.uvar(indent, "n")
        if t.startswith("[]"):
            # an empty array (length byte 1) is common: no call, no allocation
            w.emit(indent, "if n == 1:")
            w.emit(indent + 1, f"{var} = ()")
            w.emit(indent, "elif n == 0:")
        else:
            w.emit(indent, "if n == 0:")
        if f.is_nullable(version):
            w.emit(indent + 1, f"{var} = None")
        else:
            w.emit(indent + 1, f"raise _null({f.name!r})")
        w.emit(indent, "else:")
        w.emit(indent + 1, "n -= 1")
        inner = indent + 1
        if t == "string":
            # the generated read's "string field X had invalid length"
            w.emit(
                inner,
                f"if n > 0x7FFF: raise _E('string field {f.name} had invalid length ' + str(n))",
            )
            w.emit(inner, f"{var} = str(b[p:p + n], 'utf-8')")
            w.emit(inner, "p += n")
        elif t == "bytes":
            w.emit(inner, f"{var} = bytes(b[p:p + n])")
            w.emit(inner, "p += n")
        elif t == "[]int32":
            # struct.error past the end of the value
            w.emit(inner, f"{var} = _I32[n](b, p) if n < 256 else _int32s(b, p, n)")
            w.emit(inner, "p += 4 * n")
        elif t == "[]uuid":
            # a broker's few log directories recur in every partition: cache whole arrays
            w.emit(inner, "s = b[p:p + 16 * n]")
            w.emit(inner, "p += 16 * n")
            w.emit(inner, f"{var} = _UA.get(s)")
            w.emit(inner, f"if {var} is None: {var} = _uuids(s, n)")
        elif t == "[]string":
            w.emit(inner, "if n > len(b) - p: raise _E('an array runs past the end')")
            w.emit(inner, "a = []")
            w.emit(inner, "for _ in range(n):")
            w.uvar(inner + 1, "m")
            w.emit(inner + 1, "if m == 0: raise _null('an element of " + f.name + "')")
            w.emit(inner + 1, "a.append(str(b[p:p + m - 1], 'utf-8'))")
            w.emit(inner + 1, "p += m - 1")
            w.emit(inner, f"{var} = tuple(a)")
        elif t == "[]":
            sub = w.const(compile_struct(f.fields, version))
            w.emit(inner, "if n > len(b) - p: raise _E('an array runs past the end')")
            w.emit(inner, "a = []")
            w.emit(inner, "for _ in range(n):")
            w.emit(inner + 1, f"e, p = {sub}(b, p)")
            w.emit(inner + 1, "a.append(e)")
            w.emit(inner, f"{var} = tuple(a)")
        else:
            raise ValueError(f"no decoder for type {t} of {f.name}")
    elif t == "{}":
        sub = w.const(compile_struct(f.fields, version))
        w.emit(indent, f"{var}, p = {sub}(b, p)")
    else:
        raise ValueError(f"no decoder for type {t} of {f.name}")


def _body(
    w: _Writer,
    fields: tuple[Field, ...],
    version: int,
    where: str,
    top: str | None,
    memo: bool = False,
) -> None:
    """The source of a body (or struct): its fields, then its tagged fields, into v<i>."""
    run: list[tuple[int, Field]] = []

    def flush() -> None:
        # one unpack for a run of fixed-size fields, a Uuid's 16 bytes among them
        if not run:
            return
        fmt = ">" + "".join("16s" if f.type == "uuid" else _FIXED[f.type] for _, f in run)
        targets = ", ".join(f"v{i}" for i, _ in run) + ","
        w.emit(1, f"{targets} = {w.const(struct.Struct(fmt).unpack_from)}(b, p)")
        w.emit(1, f"p += {struct.calcsize(fmt)}")
        for i, f in run:
            if f.type == "uuid":
                w.emit(1, f"v{i} = _UC.get(v{i}) or _uuid(v{i})")
        run.clear()

    tagged: list[tuple[int, Field]] = []
    for i, f in enumerate(fields):
        if not f.present(version):
            w.emit(1, f"v{i} = {w.const(f.default)}")
        elif f.tagged(version):
            w.emit(1, f"v{i} = {w.const(f.default)}")
            tagged.append((i, f))
        elif f.type in _FIXED or f.type == "uuid":
            run.append((i, f))
        else:
            flush()
            _read_field(w, 1, f, version, f"v{i}")
    flush()
    w.emit(1, "nt = b[p]")
    w.emit(1, "p += 1")
    w.emit(1, "if nt:")
    w.emit(2, "if nt > 127: nt, p = _uvar(b, p - 1)")
    w.emit(2, "for _ in range(nt):")
    w.uvar(3, "tag")
    w.uvar(3, "size")
    w.emit(3, "q = p + size")
    keyword = "if"
    for i, f in sorted(tagged, key=lambda item: item[1].tag or 0):
        w.emit(3, f"{keyword} tag == {f.tag}:")
        _read_field(w, 4, f, version, f"v{i}")
        w.emit(4, "if p != q:")
        w.emit(5, f"raise _E('tagged field {f.name} of {where}: size ' + str(size) + ' but read '")
        w.emit(5, "         + str(size + p - q))")
        keyword = "elif"
    w.emit(3, "p = q  # an unknown tag is skipped, as Kafka keeps it aside")
    items = ", ".join(f"{f.key!r}: v{i}" for i, f in enumerate(fields))
    if top is None:
        w.emit(1, f"return {{{items}}}, p")
    else:
        # the whole value is the record: what is left is Kafka's "garbage"
        w.emit(1, "if p != len(b): _end(b, p)")
        if memo:
            w.emit(1, f"d = {{{items}}}")
            w.emit(1, "if k is not None:")
            w.emit(2, "if len(_M) >= _MEMO_SIZE: _M.clear()")
            w.emit(2, "_M[k] = d.copy()")
            w.emit(1, f"return _new(_R, ({top}, d))")
        else:
            w.emit(1, f"return _new(_R, ({top}, {{{items}}}))")
    if memo:
        # see _memo_head: runs before the fields
        w.lines[:0] = _memo_head(top or "", fields[0].key)


# A topic's partitions are written with the same few placements: a creation's
# PartitionRecords, a fenced broker's PartitionChangeRecords differ in their partition id
# alone. Those two records are memoised by the bytes after it (the frame is 3 bytes, the id
# 4): the same bytes decode to the same fields, so a hit copies the fields and sets the id.
# Bounded: cleared when full. A miss costs (the slice, the lookup, the copy kept), so after
# _MISSES misses in a row (a log of unlike records) the memo rests for _REST records.
MEMOISED = frozenset({"PartitionRecord", "PartitionChangeRecord"})
_MEMO_SIZE = 4096
_MISSES = 256
_REST = 8192


def _memo_head(top: str, first: str) -> list[str]:
    # _S: [misses in a row, records left to rest]
    return [
        "    k = None",
        "    if p == 3:",
        "        if _S[1]:",
        "            _S[1] -= 1",
        "        else:",
        "            k = b[7:]",
        "            d = _M.get(k)",
        "            if d is not None:",
        "                _S[0] = 0",
        "                d = d.copy()",
        f"                d[{first!r}] = _i32(b, 3)[0]",
        f"                return _new(_R, ({top}, d))",
        "            _S[0] += 1",
        "            if _S[0] > _MISSES:",
        "                _S[0] = 0",
        "                _S[1] = _REST",
    ]


def _end(b: bytes, p: int, where: str) -> None:
    if p > len(b):
        raise RecordDecodeError(f"truncated {where}")
    raise RecordDecodeError(
        f"{len(b) - p} byte(s) of garbage after {where} (AbstractApiMessageSerde.read)"
    )


def _uuids(raw: bytes, n: int) -> tuple[str, ...]:
    if len(raw) != 16 * n:
        raise RecordDecodeError("an array of uuids runs past the end")
    value = tuple(uuid_text(raw[q : q + 16]) for q in range(0, 16 * n, 16))
    if len(_UUID_ARRAYS) > 4096:
        _UUID_ARRAYS.clear()
    _UUID_ARRAYS[raw] = value
    return value


_UUID_ARRAYS: dict[bytes, tuple[str, ...]] = {}


def _compile(
    fields: tuple[Field, ...],
    version: int,
    where: str,
    result: type | None = None,
    top: str = "",
    memo: bool = False,
) -> Any:
    w = _Writer()
    _body(w, fields, version, where, top or None, memo)
    if memo:
        assert fields[0].type == "int32" and fields[0].tag is None, where
    namespace: dict[str, Any] = {
        "_uvar": read_uvarint,
        "_uuid": uuid_text,
        "_UC": UUID_CACHE,
        "_UA": _UUID_ARRAYS,
        "_uuids": _uuids,
        "_I32": _INT32_ARRAYS,
        "_int32s": _int32s,
        "_null": _null,
        "_end": lambda b, p: _end(b, p, where),
        "_E": RecordDecodeError,
        "_R": result,
        "_new": new_tuple,  # speed.new_tuple: the result NamedTuple without its __new__
        "_M": {},  # this decoder's memo
        "_S": [0, 0],  # and its state
        "_MEMO_SIZE": _MEMO_SIZE,
        "_MISSES": _MISSES,
        "_REST": _REST,
        "_i32": struct.Struct(">i").unpack_from,
        **w.names,
    }
    # every name a local (bound as a default): LOAD_FAST, not a global lookup per use
    used = [name for name in namespace if any(name in line for line in w.lines)]
    head = "def decode(b, p, " + ", ".join(f"{name}={name}" for name in used) + "):"
    source = "\n".join([head, *w.lines])
    exec(compile(source, f"<decoder of {where}>", "exec"), namespace)
    return namespace["decode"]


def compile_struct(fields: tuple[Field, ...], version: int) -> Decoder:
    """(bytes, position) -> (the struct's fields, the position after it)."""
    decoder: Decoder = _compile(fields, version, "a struct")
    return decoder


def _versions(schema: Schema) -> range:
    high = schema.valid.high
    assert high is not None, schema.name
    return range(schema.valid.low, high + 1)


def compile_schema(schema: Schema) -> dict[int, Decoder]:
    """Per valid version: (bytes, position) -> (the body's fields, the position after)."""
    return {v: compile_struct_named(schema, v) for v in _versions(schema)}


def compile_struct_named(schema: Schema, version: int) -> Decoder:
    decoder: Decoder = _compile(schema.fields, version, f"{schema.name} v{version}")
    return decoder


def compile_record(schema: Schema, result: type) -> dict[int, Callable[[bytes, int], Any]]:
    """Per valid version: (the value, the position after the frame) -> `result(api_key,
    version, name, fields)`, `result` a NamedTuple; the whole value must be the body."""
    return {
        v: _compile(
            schema.fields,
            v,
            f"{schema.name} v{v}",
            result,
            f"{schema.api_key}, {v}, {schema.name!r}",
            schema.name in MEMOISED,
        )
        for v in _versions(schema)
    }
