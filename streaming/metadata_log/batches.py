"""Record batches (format v2, magic 2) from a metadata log's segment and snapshot files.

`DefaultRecordBatch` (clients/.../common/record): a 61-byte header

    0 baseOffset int64 | 8 batchLength int32 (the bytes after it) | 12 partitionLeaderEpoch
    int32 | 16 magic int8 | 17 crc uint32 (CRC-32C of bytes 21..end) | 21 attributes int16
    (bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control, 6 delete horizon) |
    23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64 |
    43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32 | 57 records int32

then the records, compressed as one stream when the codec says so. `DefaultRecord`: length
(varint), attributes int8, timestampDelta (varlong), offsetDelta (varint), key and value
(varint length, -1 for null), header count (varint), headers (varint key length, UTF-8
key, varint value length, value).

Files are read as `FileLogInputStream.nextBatch` reads them: fewer than 17 bytes left, or a
batch whose stated length runs past the end of the file, is the end of what was written
(a segment still being appended), not an error. CRC-32C: the `crc32c` package (hardware
instructions where the CPU has them; the standard library has no CRC-32C).
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

from state_machines.speed import new_tuple

from .compression import CODECS, CodecError, decompress
from .errors import CorruptBatch, MetadataLogError, RecordDecodeError
from .wire import read_varint

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61: DefaultRecordBatch.RECORD_BATCH_OVERHEAD
LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: baseOffset and batchLength
HEADER_SIZE_UP_TO_MAGIC = 17  # Records.HEADER_SIZE_UP_TO_MAGIC
CRC_START = 21  # DefaultRecordBatch.ATTRIBUTES_OFFSET
CONTROL_FLAG = 0x20
LOG_APPEND_TIME_FLAG = 0x08
DELETE_HORIZON_FLAG = 0x40
TRANSACTIONAL_FLAG = 0x10

SEGMENT = re.compile(r"^(\d{20})\.log$")
SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class LogRecord(NamedTuple):
    """One record of a batch (a NamedTuple: immutable, and quick to build by the million)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class RecordBatch:
    path: str
    position: int  # byte offset of the batch in its file
    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    compression: str  # none, gzip, snappy, lz4, zstd
    is_control: bool
    is_transactional: bool
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[LogRecord, ...]
    size: int  # bytes on disk


_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()


def _records(b: bytes, count: int, base_offset: int, base_timestamp: int) -> tuple[LogRecord, ...]:
    """DefaultRecord.readFrom, `count` times from the start of `b`; every byte used. The
    varints of one and two bytes (every length below 8 KiB) are read inline, and the offset
    delta's of three (the 8193rd record of a batch on). Each LogRecord is built with
    `speed.new_tuple` (its values are always the five fields)."""
    out: list[LogRecord] = []
    append = out.append
    lb = len(b)
    p = 0
    for _ in range(count):
        c = b[p]
        if c < 0x80:
            length = (c >> 1) ^ -(c & 1)
            p += 1
        else:
            d = b[p + 1]
            if d < 0x80:
                c = (c & 0x7F) | (d << 7)
                length = (c >> 1) ^ -(c & 1)
                p += 2
            else:
                length, p = read_varint(b, p)
        end = p + length
        if end > lb or length < 0:
            raise RecordDecodeError("a record's length runs past its batch")
        # attributes (unused), then timestampDelta: 0 in every record a raft batch holds
        if b[p + 1] == 0:
            ts = base_timestamp
            p += 2
        else:
            ts, p = read_varint(b, p + 1)
            ts += base_timestamp
        c = b[p]
        if c < 0x80:
            offset = base_offset + ((c >> 1) ^ -(c & 1))
            p += 1
        else:
            d = b[p + 1]
            if d < 0x80:
                c = (c & 0x7F) | (d << 7)
                offset = base_offset + ((c >> 1) ^ -(c & 1))
                p += 2
            else:
                e = b[p + 2]
                if e < 0x80:
                    # a delta of 8192 or more: QuorumController.MAX_RECORDS_PER_BATCH is
                    # 10000, a snapshot's batch (KafkaRaftClient.MAX_BATCH_SIZE_BYTES) 8 MiB
                    c = (c & 0x7F) | (d & 0x7F) << 7 | e << 14
                    offset = base_offset + ((c >> 1) ^ -(c & 1))
                    p += 3
                else:
                    c, p = read_varint(b, p)
                    offset = base_offset + c
        if b[p] == 1:
            key = None
            p += 1
        else:
            n, p = read_varint(b, p)
            key = None if n < 0 else b[p : p + n]
            p += max(n, 0)
        # the value runs to the headers' count: one byte 0 at the record's end when there
        # are none, which is every metadata record
        c = b[p]
        if c < 0x80:
            n = -1 if c & 1 else c >> 1  # any negative length is a null value
            p += 1
        else:
            d = b[p + 1]
            if d < 0x80 and not c & 1:
                n = ((c & 0x7F) | (d << 7)) >> 1
                p += 2
            else:
                n, p = read_varint(b, p)
        if n < 0:
            value: bytes | None = None
        else:
            value = b[p : p + n]
            p += n
        if b[p] == 0:
            p += 1
            if p != end:
                raise RecordDecodeError(
                    f"a record's fields take {p - end + length} of its {length} bytes"
                )
            append(new_tuple(LogRecord, (offset, ts, key, value, _NO_HEADERS)))
        else:
            headers, p = _headers(b, p)
            if p != end:
                raise RecordDecodeError(
                    f"a record's fields take {p - end + length} of its {length} bytes"
                )
            append(LogRecord(offset, ts, key, value, headers))
    if p != lb:
        raise RecordDecodeError(f"{lb - p} byte(s) after the batch's {count} records")
    return tuple(out)


def _headers(b: bytes, p: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    n, p = read_varint(b, p)
    if n < 0:
        raise RecordDecodeError(f"invalid header count {n}")
    headers = []
    for _ in range(n):
        klen, p = read_varint(b, p)
        if klen < 0:
            raise RecordDecodeError("a header with a null key")
        key = str(b[p : p + klen], "utf-8")
        p += klen
        vlen, p = read_varint(b, p)
        value = None if vlen < 0 else b[p : p + vlen]
        p += max(vlen, 0)
        headers.append((key, value))
    return tuple(headers), p


def parse_batch(path: str, position: int, data: bytes) -> RecordBatch:
    """One whole batch (`data` is its bytes, header included) into a RecordBatch."""
    (
        base_offset,
        _length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_delta,
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = HEADER.unpack_from(data)
    if magic != 2:
        raise RecordDecodeError(f"record batch magic {magic}: only format v2 (magic 2) is read")
    actual = crc32c(memoryview(data)[CRC_START:])
    if actual != crc:
        raise RecordDecodeError(
            f"CRC mismatch: the batch says {crc:#010x}, its bytes give {actual:#010x}"
        )
    codec = attributes & 0x07
    if codec >= len(CODECS):
        raise RecordDecodeError(f"unknown compression codec {codec}")
    if count < 0:
        raise RecordDecodeError(f"negative record count {count}")
    body = data[HEADER_SIZE:]
    if codec:
        try:
            body = decompress(codec, body)
        except CodecError as exc:
            raise RecordDecodeError(str(exc)) from None
    try:
        records = _records(body, count, base_offset, first_ts)
    except (IndexError, struct.error):
        raise RecordDecodeError(
            f"truncated records: fewer than the {count} the batch counts"
        ) from None
    except UnicodeDecodeError:
        raise RecordDecodeError("a header key that is not UTF-8") from None
    if attributes & LOG_APPEND_TIME_FLAG:
        # DefaultRecordBatch: under LogAppendTime every record's timestamp is the batch's
        # max timestamp (KRaft writes CreateTime; a copied log could hold either)
        records = tuple(r._replace(timestamp=max_ts) for r in records)
    return RecordBatch(
        path,
        position,
        base_offset,
        base_offset + last_delta,
        leader_epoch,
        magic,
        crc,
        attributes,
        CODECS[codec],
        bool(attributes & CONTROL_FLAG),
        bool(attributes & TRANSACTIONAL_FLAG),
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        records,
        len(data),
    )


def read_batches(
    path: str | Path, start_position: int = 0, *, skip_corrupt: bool = False
) -> Iterator[RecordBatch | CorruptBatch]:
    """The batches of one segment or snapshot file from `start_position`. A torn tail (a
    batch still being written) ends the file quietly. A corrupt batch raises
    MetadataLogError, or with `skip_corrupt` is yielded as a CorruptBatch, and reading goes
    on after it when its stated length is sane (else the rest of the file is unreadable,
    and one CorruptBatch says so)."""
    name = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the `with` below)
    except OSError as exc:
        raise MetadataLogError(name, None, (exc.strerror or str(exc)).lower()) from None
    with fh:
        size = fh.seek(0, 2)
        if size <= start_position:
            return
        with mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) as mm:
            p = start_position
            while size - p > HEADER_SIZE_UP_TO_MAGIC:
                (length,) = struct.unpack_from(">i", mm, p + 8)
                total = LOG_OVERHEAD + length
                reason = ""
                if length == 0 and _zeros_to_end(mm, p, size):
                    return  # a preallocated segment (log.preallocate): zeros after the data
                if length < HEADER_SIZE - LOG_OVERHEAD:
                    reason = f"batch length {length} is below the v2 header's 49 bytes"
                elif mm[p + 16] != 2:
                    # the magic comes with the length in the first write of a batch: a bad
                    # one is corruption (or not a log file), not a batch being written
                    reason = f"record batch magic {mm[p + 16]}: only format v2 (magic 2) is read"
                if reason:
                    if not skip_corrupt:
                        raise MetadataLogError(name, p, reason)
                    yield CorruptBatch(name, p, reason + "; the rest of the file is not read")
                    return
                if p + total > size:
                    return  # torn tail: the batch is still being written
                try:
                    yield parse_batch(name, p, mm[p : p + total])
                except RecordDecodeError as exc:
                    if not skip_corrupt:
                        raise MetadataLogError(name, p, exc.reason) from None
                    yield CorruptBatch(name, p, exc.reason)
                p += total


def _zeros_to_end(mm: mmap.mmap, p: int, size: int) -> bool:
    """Whether the file holds nothing but zero bytes from `p` on: what follows the last
    batch of an active segment Kafka preallocated (`log.preallocate`, LogSegment's
    FileRecords.open with preallocate; trimmed when the segment rolls)."""
    chunk = 1 << 20
    return all(not mm[q : min(q + chunk, size)].strip(b"\0") for q in range(p, size, chunk))


def file_base_offset(path: Path) -> int | None:
    """The offset a file's name carries: a segment's base offset, a snapshot's end offset."""
    m = SEGMENT.match(path.name) or SNAPSHOT.match(path.name)
    return int(m.group(1)) if m else None


def log_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named on the command line, with each directory expanded into its snapshots
    (`<end offset>-<epoch>.checkpoint`) and segments (`<base offset>.log`), snapshots
    first, each kind by offset. A missing path is a MetadataLogError."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            out += _expand(path)
        except OSError as exc:
            raise MetadataLogError(str(path), None, (exc.strerror or str(exc)).lower()) from None
    return out


def _expand(path: Path) -> list[Path]:
    """One path: a file as it is, a directory as its snapshots and segments."""
    if not path.is_dir():
        if not path.exists():
            raise MetadataLogError(str(path), None, "no such file or directory")
        return [path]
    inner = path / "__cluster_metadata-0"
    if inner.is_dir() and not any(SEGMENT.match(f.name) for f in path.iterdir()):
        path = inner  # metadata.log.dir itself: its one partition directory
    found = [f for f in path.iterdir() if SEGMENT.match(f.name) or SNAPSHOT.match(f.name)]
    if not found:
        raise MetadataLogError(
            str(path), None, "no segment (.log) or snapshot (.checkpoint) files in it"
        )
    found.sort(key=lambda f: (not f.name.endswith(".checkpoint"), file_base_offset(f)))
    return found
