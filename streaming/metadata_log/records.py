"""The values of the metadata log's records: metadata records as Kafka's
`MetadataRecordSerde` frames them, and the raft control records.

`AbstractApiMessageSerde.read` (server-common): the frame version (1; 0 is the 2.8 preview
and refused), the api key and the record version, each an unsigned varint, then the
message body at that version; bytes left over are "garbage" and refused. A control
record's key is `ControlRecordType`'s (int16 version >= 0, int16 type); its value is the
type's message at the version `ControlRecordUtils` reads (the body's first field, an int16
`Version`, says which).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import NamedTuple

from .decoders import Decoder, compile_record, compile_schema
from .errors import RecordDecodeError
from .schemas import CONTROL, CONTROL_TYPES, METADATA, METADATA_BY_KEY, METADATA_BY_NAME
from .wire import read_uvarint, uvarint
from .writer import write_body

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION


class MetadataRecord(NamedTuple):
    """One metadata record: Kafka's api key, record version and name, and its fields by
    snake_case name (a field the version lacks, or an absent tagged field, holds its
    default). Immutable; a NamedTuple rather than a frozen dataclass because a log holds
    millions and a frozen dataclass takes three times as long to build."""

    api_key: int
    version: int
    name: str
    fields: Mapping[str, object]


class ControlRecord(NamedTuple):
    """A raft control record: never metadata, reported as what it is."""

    type: str  # LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters
    version: int
    fields: Mapping[str, object]


_DECODERS: dict[int, Callable[[bytes, int], MetadataRecord]] = {}
_NAMES: dict[int, str] = {}
for _schema in METADATA:
    for _version, _decoder in compile_record(_schema, MetadataRecord).items():
        _DECODERS[_schema.api_key << 16 | _version] = _decoder
    _NAMES[_schema.api_key] = _schema.name
# by the frame's first three bytes, when each is a one-byte varint (every record today)
_BY_PREFIX: dict[bytes, Callable[[bytes, int], MetadataRecord]] = {
    bytes([FRAME_VERSION, key >> 16, key & 0xFFFF]): decoder
    for key, decoder in _DECODERS.items()
    if key >> 16 < 128 and key & 0xFFFF < 128
}

_CONTROL_DECODERS: dict[str, dict[int, Decoder]] = {
    type_: compile_schema(schema) for type_, schema in CONTROL.items()
}
_CONTROL_BY_NAME = {name: type_id for type_id, name in CONTROL_TYPES.items()}


def _describe(frame: int, api_key: int, version: int) -> str:
    if frame != FRAME_VERSION:
        if frame == 0:
            return "frame version 0 (KRaft's 2.8 preview, which Kafka does not read)"
        return f"unknown frame version {frame} (only 1 is known)"
    schema = METADATA_BY_KEY.get(api_key)
    if schema is None:
        return f"unknown metadata record type {api_key} (version {version})"
    return (
        f"unknown version {version} of {schema.name} (type {api_key}; "
        f"this reader knows versions {schema.valid.low}-{schema.valid.high})"
    )


def decode_metadata(value: bytes) -> MetadataRecord:
    """`MetadataRecordSerde.read` of one record value."""
    decoder = _BY_PREFIX.get(value[:3])
    try:
        if decoder is not None:
            return decoder(value, 3)
        frame, api_key, version = value[0], value[1], value[2]
        p = 3
        if frame > 127 or api_key > 127 or version > 127:
            frame, p = read_uvarint(value, 0)
            api_key, p = read_uvarint(value, p)
            version, p = read_uvarint(value, p)
        decoder = _DECODERS.get(api_key << 16 | version)
        if decoder is None or frame != FRAME_VERSION:
            raise RecordDecodeError(_describe(frame, api_key, version))
        return decoder(value, p)
    except (IndexError, struct.error):
        name = _NAMES.get(value[1], "record") if len(value) > 1 else "record"
        raise RecordDecodeError(f"truncated {name}") from None
    except UnicodeDecodeError:
        raise RecordDecodeError("a string that is not UTF-8") from None


def encode_metadata(record: MetadataRecord) -> bytes:
    """`MetadataRecordSerde.write`: the frame, then the body at the record's version. The
    test-data builder; written from the tables, apart from the decoders."""
    schema = METADATA_BY_NAME.get(record.name) or METADATA_BY_KEY.get(record.api_key)
    if schema is None or schema.api_key != record.api_key:
        raise ValueError(f"unknown metadata record {record.name} (type {record.api_key})")
    if record.version not in schema.valid:
        raise ValueError(f"{schema.name} has no version {record.version}")
    frame = uvarint(FRAME_VERSION) + uvarint(record.api_key) + uvarint(record.version)
    return frame + write_body(schema.fields, record.version, record.fields, schema.name)


def control_type(key: bytes | None) -> tuple[int, str]:
    """ControlRecordType.parse: the type id and name of a control record's key."""
    if key is None or len(key) < 4:
        raise RecordDecodeError(
            "control record key shorter than 4 bytes (ControlRecordType.parseTypeId)"
        )
    version, type_id = struct.unpack_from(">hh", key)
    if version < 0:
        raise RecordDecodeError(f"control record key version {version}: corrupt")
    return type_id, CONTROL_TYPES.get(type_id, f"Unknown({type_id})")


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """A control record: its type from the key, its value by that type's schema."""
    type_id, name = control_type(key)
    if value is None:
        raise RecordDecodeError(f"{name} control record without a value")
    if name in ("Abort", "Commit"):  # EndTransactionMarker: int16 version, int32 epoch
        try:
            version, epoch = struct.unpack_from(">hi", value)
        except struct.error:
            raise RecordDecodeError(f"truncated {name} marker") from None
        return ControlRecord(name, version, {"version": version, "coordinator_epoch": epoch})
    decoders = _CONTROL_DECODERS.get(name)
    if decoders is None:
        raise RecordDecodeError(f"unknown control record type {type_id}")
    try:
        (version,) = struct.unpack_from(">h", value)
        decoder = decoders.get(version)
        if decoder is None:
            raise RecordDecodeError(f"unknown version {version} of the {name} control record")
        fields, p = decoder(value, 0)
    except (IndexError, struct.error):
        raise RecordDecodeError(f"truncated {name} control record") from None
    except UnicodeDecodeError:
        raise RecordDecodeError("a string that is not UTF-8") from None
    if p != len(value):
        raise RecordDecodeError(f"{name} control record: length {len(value)}, read {p}")
    return ControlRecord(name, version, fields)


def encode_control(record: ControlRecord) -> tuple[bytes, bytes]:
    """The key and value Kafka's MemoryRecordsBuilder.appendControlRecord writes."""
    type_id = _CONTROL_BY_NAME.get(record.type)
    if type_id is None or record.type not in CONTROL:
        raise ValueError(f"no encoder for control record {record.type}")
    schema = CONTROL[record.type]
    fields = {"version": record.version, **record.fields}
    key = struct.pack(">hh", 0, type_id)
    return key, write_body(schema.fields, record.version, fields, schema.name)
