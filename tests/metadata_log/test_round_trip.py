"""The encoder (an interpreter of the schema tables) and the decoders (code generated from
them) agree on every record type and version, metadata and control, over random values;
and every value survives a batch of every codec."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.metadata_log.batches import parse_batch
from streaming.metadata_log.encode import encode_batch
from streaming.metadata_log.records import (
    ControlRecord,
    MetadataRecord,
    decode_control,
    decode_metadata,
    encode_control,
    encode_metadata,
)
from streaming.metadata_log.schemas import CONTROL, METADATA, Field, Schema

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_UUIDS = st.binary(min_size=16, max_size=16).map(
    lambda raw: base64.urlsafe_b64encode(raw).decode()[:22]
)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


def _primitive(type_: str) -> st.SearchStrategy[Any]:
    if type_ in _INTS:
        return st.integers(*_INTS[type_])
    return {
        "float64": st.floats(allow_nan=False),
        "bool": st.booleans(),
        "uuid": _UUIDS,
        "string": _TEXT,
        "bytes": st.binary(max_size=20),
    }[type_]


def _field(f: Field, version: int) -> st.SearchStrategy[Any]:
    if f.type == "[]":
        base: st.SearchStrategy[Any] = st.lists(_struct(f.fields, version), max_size=3).map(tuple)
    elif f.type == "{}":
        base = _struct(f.fields, version)
    elif f.type.startswith("[]"):
        base = st.lists(_primitive(f.type[2:]), max_size=5).map(tuple)
    else:
        base = _primitive(f.type)
    return st.none() | base if f.is_nullable(version) else base


def _struct(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    present = {f.key: _field(f, version) for f in fields if f.present(version)}
    absent = {f.key: st.just(f.default) for f in fields if not f.present(version)}
    return st.fixed_dictionaries({**present, **absent})


def _versions(schema: Schema) -> range:
    assert schema.valid.high is not None
    return range(schema.valid.low, schema.valid.high + 1)


_METADATA = st.one_of(
    [
        st.tuples(st.just(s), st.just(v), _struct(s.fields, v))
        for s in METADATA
        for v in _versions(s)
    ]
)
_CONTROL = st.one_of(
    [
        st.tuples(st.just(t), st.just(v), _struct(s.fields[1:], v))  # Version: set below
        for t, s in CONTROL.items()
        for v in _versions(s)
    ]
)


@settings(max_examples=600, deadline=None)
@given(_METADATA)
def test_every_metadata_record_round_trips(item: tuple[Schema, int, dict[str, Any]]) -> None:
    schema, version, fields = item
    record = MetadataRecord(schema.api_key, version, schema.name, fields)
    value = encode_metadata(record)
    assert decode_metadata(value) == record


@settings(max_examples=200, deadline=None)
@given(_CONTROL)
def test_every_control_record_round_trips(item: tuple[str, int, dict[str, Any]]) -> None:
    type_, version, fields = item
    key, value = encode_control(ControlRecord(type_, version, fields))
    assert decode_control(key, value) == ControlRecord(
        type_, version, {"version": version, **fields}
    )


def test_every_schema_and_version_is_covered() -> None:
    pairs = {(s.name, v) for s in METADATA for v in _versions(s)}
    assert ("PartitionRecord", 2) in pairs and ("PartitionChangeRecord", 2) in pairs
    assert ("RegisterBrokerRecord", 3) in pairs and ("ClearElrRecord", 0) in pairs
    # 27 record types; RegisterBrokerRecord 0-3, Partition(Change)Record and
    # BrokerRegistrationChangeRecord 0-2
    assert len(pairs) == 27 + 3 + 2 * 3


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_METADATA, min_size=1, max_size=8),
    st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    st.integers(0, 2**40),
)
def test_batches_of_every_codec_round_trip(
    items: list[tuple[Schema, int, dict[str, Any]]], codec: str, base_offset: int
) -> None:
    records = [MetadataRecord(s.api_key, v, s.name, f) for s, v, f in items]
    data = encode_batch([encode_metadata(r) for r in records], base_offset, compression=codec)
    batch = parse_batch("mem", 0, data)
    assert batch.compression == codec and batch.size == len(data)
    assert [r.offset for r in batch.records] == [base_offset + i for i in range(len(records))]
    assert [decode_metadata(r.value or b"") for r in batch.records] == records


def test_records_differing_in_partition_id_alone_decode_apart() -> None:
    # PartitionRecord and PartitionChangeRecord are memoised by the bytes after the id
    from streaming.metadata_log.encode import metadata_value

    fields = {"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "replicas": (1, 2), "isr": (1, 2)}
    first = decode_metadata(metadata_value("PartitionRecord", partition_id=1, **fields))
    second = decode_metadata(metadata_value("PartitionRecord", partition_id=2, **fields))
    assert (first.fields["partition_id"], second.fields["partition_id"]) == (1, 2)
    first.fields["isr"] = ()  # type: ignore[index]  # a caller's change stays its own
    third = decode_metadata(metadata_value("PartitionRecord", partition_id=3, **fields))
    assert third.fields["isr"] == (1, 2) and third.fields["partition_id"] == 3
    assert second.fields["isr"] == (1, 2)
