"""Test data Kafka would write: record batches, segment files and snapshots built from the
same schema tables the reader uses.

What the quorum controller's raft client writes (`BatchBuilder`, `MemoryRecordsBuilder`,
`RecordsSnapshotWriter`): format v2, CreateTime, no producer (id -1, epoch -1, sequence
-1), the batch's partition leader epoch the raft epoch, each record the append time with
no key and no headers; control records carry ControlRecordType's 4-byte key. A snapshot
(`<end offset>-<epoch>.checkpoint`) starts with a control batch at offset 0 holding the
SnapshotHeader (and, from kraft.version 1, KRaftVersion and KRaftVoters), then the
metadata batches, then a control batch with the SnapshotFooter.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from crc32c import crc32c

from .batches import CONTROL_FLAG, HEADER
from .compression import CODECS, compress
from .records import ControlRecord, MetadataRecord, encode_control, encode_metadata
from .schemas import METADATA_BY_NAME
from .wire import varint

Record = bytes | tuple[bytes | None, bytes | None]  # a value, or (key, value)


def metadata_value(name: str, version: int | None = None, /, **fields: object) -> bytes:
    """One metadata record's value: `metadata_value("FenceBrokerRecord", id=1, epoch=5)`;
    the newest version when none is given."""
    schema = METADATA_BY_NAME[name]
    if version is None:
        assert schema.valid.high is not None
        version = schema.valid.high
    return encode_metadata(MetadataRecord(schema.api_key, version, name, fields))


def control_value(type_: str, version: int = 0, /, **fields: object) -> tuple[bytes, bytes]:
    """One control record's (key, value): `control_value("LeaderChange", leader_id=1)`."""
    return encode_control(ControlRecord(type_, version, fields))


def _record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"".join(
        (
            b"\x00",  # attributes
            varint(ts_delta),
            varint(offset_delta),
            varint(-1) if key is None else varint(len(key)) + key,
            varint(-1) if value is None else varint(len(value)) + value,
            varint(0),  # headers
        )
    )
    return varint(len(body)) + body


def encode_batch(
    records: Sequence[Record],
    base_offset: int,
    *,
    compression: str = "none",
    control: bool = False,
    leader_epoch: int = 1,
    timestamp: int = 1_700_000_000_000,
    timestamps: Sequence[int] | None = None,
) -> bytes:
    """One v2 record batch holding `records` at offsets base_offset.. (DefaultRecordBatch
    .writeHeader; the CRC-32C over the attributes to the end)."""
    if not records:
        raise ValueError("a batch holds at least one record")
    stamps = list(timestamps) if timestamps is not None else [timestamp] * len(records)
    body = b"".join(
        _record(i, stamps[i] - stamps[0], *((None, r) if isinstance(r, bytes) else r))
        for i, r in enumerate(records)
    )
    body = compress(compression, body)
    attributes = CODECS.index(compression) | (CONTROL_FLAG if control else 0)
    header = HEADER.pack(
        base_offset,
        HEADER.size - 12 + len(body),
        leader_epoch,
        2,
        0,
        attributes,
        len(records) - 1,
        stamps[0],
        max(stamps),
        -1,
        -1,
        -1,
        len(records),
    )
    crc = crc32c(header[21:] + body)
    return header[:17] + struct.pack(">I", crc) + header[21:] + body


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def write_segment(directory: str | Path, base_offset: int, batches: Iterable[bytes]) -> Path:
    """`<base offset>.log` in `directory`, the batches one after another."""
    path = Path(directory) / segment_name(base_offset)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for batch in batches:
            fh.write(batch)
    return path


def write_snapshot(
    directory: str | Path,
    end_offset: int,
    epoch: int,
    records: Sequence[bytes],
    *,
    timestamp: int = 1_700_000_000_000,
    records_per_batch: int = 1000,
    compression: str = "none",
    kraft_version: int | None = None,
    voters: Sequence[Mapping[str, object]] | None = None,
) -> Path:
    """A snapshot as RecordsSnapshotWriter writes it: the header control batch (with
    KRaftVersion and KRaftVoters when `kraft_version` is given), the metadata records in
    batches, the footer control batch."""
    head: list[Record] = [control_value("SnapshotHeader", last_contained_log_timestamp=timestamp)]
    if kraft_version is not None:
        head.append(control_value("KRaftVersion", kraft_version=kraft_version))
        if voters is not None:
            head.append(control_value("KRaftVoters", voters=list(voters)))
    batches = [encode_batch(head, 0, control=True, leader_epoch=epoch, timestamp=timestamp)]
    offset = len(head)
    for start in range(0, len(records), records_per_batch):
        chunk = records[start : start + records_per_batch]
        batches.append(
            encode_batch(
                chunk, offset, compression=compression, leader_epoch=epoch, timestamp=timestamp
            )
        )
        offset += len(chunk)
    footer = [control_value("SnapshotFooter")]
    batches.append(
        encode_batch(footer, offset, control=True, leader_epoch=epoch, timestamp=timestamp)
    )
    path = Path(directory) / snapshot_name(end_offset, epoch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(batches))
    return path
