"""The reader against byte layouts worked out by hand from Kafka's serde code, not produced
by the project's encoder (which is then checked against the same bytes).

Sources: AbstractApiMessageSerde.write (frame version, api key, version as unsigned
varints); the generated messages' write (non-tagged fields in order, then the tagged
fields: count, then per field tag, size, data, by ascending tag; compact arrays and strings
as length+1); DefaultRecord.writeTo (zig-zag varints); DefaultRecordBatch.writeHeader;
ControlRecordType (key int16 version, int16 type); the codecs' framings (GZIPOutputStream,
snappy-java's SnappyOutputStream, Lz4BlockOutputStream, zstd).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c

from streaming.metadata_log.batches import RecordBatch, read_batches
from streaming.metadata_log.encode import encode_batch
from streaming.metadata_log.records import (
    ControlRecord,
    MetadataRecord,
    decode_control,
    decode_metadata,
    encode_metadata,
)

# Uuid.ONE_UUID = new Uuid(0, 1); DirectoryId.UNASSIGNED (0, 0), LOST (0, 1), MIGRATING (0, 2)
ONE_UUID = "AAAAAAAAAAAAAAAAAAAAAQ"
UNASSIGNED, LOST, MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA", ONE_UUID, "AAAAAAAAAAAAAAAAAAAAAg"
UUID_0 = "00" * 16
UUID_1 = "00" * 15 + "01"
UUID_2 = "00" * 15 + "02"
TS = 1_700_000_000_000  # 0x0000018BCFE56800


def h(text: str) -> bytes:
    """Hex with spaces, newlines and # comments allowed."""
    return bytes.fromhex(
        "".join(line.split("#", 1)[0] for line in text.splitlines()).replace(" ", "")
    )


# -- metadata record bodies -----------------------------------------------------------------

# PartitionChangeRecord v2 with every optional field set (each tagged: count 9, by tag)
PARTITION_CHANGE_ALL = h(f"""
    01 05 02                    # frame version 1, api key 5, version 2
    00000007                    # PartitionId 7
    {UUID_1}                    # TopicId ONE_UUID
    09                          # 9 tagged fields
    00 09 03 00000001 00000002  # tag 0 Isr, 9 bytes: compact array of 2 (2+1) = [1, 2]
    01 04 00000001              # tag 1 Leader = 1
    02 0d 04 00000001 00000002 00000003  # tag 2 Replicas [1, 2, 3]
    03 05 02 00000003           # tag 3 RemovingReplicas [3]
    04 05 02 00000004           # tag 4 AddingReplicas [4]
    05 01 01                    # tag 5 LeaderRecoveryState 1 (RECOVERING), int8
    06 05 02 00000002           # tag 6 EligibleLeaderReplicas [2]
    07 01 01                    # tag 7 LastKnownElr [] (empty, not null: differs from default)
    08 31 04 {UUID_0} {UUID_1} {UUID_2}  # tag 8 Directories, 49 bytes: 3 uuids
""")

PARTITION_CHANGE_ALL_FIELDS = {
    "partition_id": 7,
    "topic_id": ONE_UUID,
    "isr": (1, 2),
    "leader": 1,
    "replicas": (1, 2, 3),
    "removing_replicas": (3,),
    "adding_replicas": (4,),
    "leader_recovery_state": 1,
    "directories": (UNASSIGNED, LOST, MIGRATING),
    "eligible_leader_replicas": (2,),
    "last_known_elr": (),
}


def test_partition_change_record_with_every_optional_field() -> None:
    record = decode_metadata(PARTITION_CHANGE_ALL)
    assert record == MetadataRecord(5, 2, "PartitionChangeRecord", PARTITION_CHANGE_ALL_FIELDS)
    assert encode_metadata(record) == PARTITION_CHANGE_ALL


# PartitionChangeRecord v0: Leader, then tag 6 (ELR, a tag only from version 2: unknown at
# version 0, so skipped), then tag 9 (unknown at every version). Tags out of order: the
# reader takes any order (the generated read loops over whatever tags come).
PARTITION_CHANGE_TAGGED = h(f"""
    01 05 00                # frame 1, PartitionChangeRecord, version 0
    00000000                # PartitionId 0
    {UUID_1}                # TopicId
    03                      # 3 tagged fields
    01 04 00000002          # tag 1 Leader = 2
    09 03 616263            # tag 9, 3 bytes: unknown, skipped
    06 05 02 00000001       # tag 6, 5 bytes: not a field of v0, skipped
""")


def test_partition_change_record_tagged_fields_and_unknown_tags() -> None:
    record = decode_metadata(PARTITION_CHANGE_TAGGED)
    assert record.version == 0
    assert record.fields == {
        "partition_id": 0,
        "topic_id": ONE_UUID,
        "isr": None,  # absent tags hold their defaults
        "leader": 2,
        "replicas": None,
        "removing_replicas": None,
        "adding_replicas": None,
        "leader_recovery_state": -1,
        "directories": None,  # versions 1+: the default
        "eligible_leader_replicas": None,  # tag 6 was not read as the ELR at v0
        "last_known_elr": None,
    }


def test_a_tagged_field_longer_than_127_bytes_has_a_two_byte_size() -> None:
    # Directories of 8 uuids: 1 + 128 = 129 bytes, the unsigned varint 0x81 0x01
    value = h(f"01 05 01 00000001 {UUID_1} 01 08 8101 09 {UUID_2 * 8}")
    record = decode_metadata(value)
    assert record.fields["directories"] == (MIGRATING,) * 8
    assert encode_metadata(record) == value


def test_register_broker_record_v3_struct_arrays_and_nullable_rack() -> None:
    value = h(f"""
        01 00 03            # RegisterBrokerRecord v3
        00000001            # BrokerId 1
        00                  # IsMigratingZkBroker false (v2+)
        {UUID_1}            # IncarnationId
        000000000000000a    # BrokerEpoch 10
        02                  # EndPoints: 1 element
          0a 504c41494e54455854   # Name "PLAINTEXT" (9+1)
          02 68                   # Host "h"
          2384                    # Port 9092 (uint16)
          0000                    # SecurityProtocol 0
          00                      # the struct's tagged fields
        02                  # Features: 1 element
          11 6d657461646174612e76657273696f6e  # "metadata.version" (16+1)
          0001 0015 00            # min 1, max 21, tagged fields
        00                  # Rack null
        01                  # Fenced true
        00                  # InControlledShutdown false
        01                  # 1 tagged field
        00 11 02 {UUID_2}   # tag 0 LogDirs: [MIGRATING], 17 bytes
    """)
    record = decode_metadata(value)
    assert record.fields == {
        "broker_id": 1,
        "is_migrating_zk_broker": False,
        "incarnation_id": ONE_UUID,
        "broker_epoch": 10,
        "end_points": ({"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": 0},),
        "features": (
            {"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 21},
        ),
        "rack": None,
        "fenced": True,
        "in_controlled_shutdown": False,
        "log_dirs": (MIGRATING,),
    }
    assert encode_metadata(record) == value


# -- batches ----------------------------------------------------------------------------------

# FeatureLevelRecord v0 ("metadata.version", 21): 23 bytes
FEATURE_LEVEL = h("01 0c 00  11 6d657461646174612e76657273696f6e  0015  00")
# DefaultRecord: length 29 (zig-zag 0x3a), attributes 0, timestampDelta 0, offsetDelta 0,
# key null (-1: 0x01), value length 23 (0x2e), value, 0 headers
RECORD = h("3a 00 00 00 01 2e") + FEATURE_LEVEL + h("00")
assert len(RECORD) == 30


def hand_batch(
    base_offset: int, attributes: int, count: int, last_delta: int, body: bytes, max_ts: int = TS
) -> bytes:
    """DefaultRecordBatch.writeHeader by hand: the CRC-32C covers attributes..end."""
    after_crc = struct.pack(">hiqqqhii", attributes, last_delta, TS, max_ts, -1, -1, -1, count)
    after_crc += body
    head = struct.pack(">qiib", base_offset, 49 + len(body), 3, 2)  # epoch 3, magic 2
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def test_crc32c_is_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # RFC 3720's check value


def _one_batch(tmp_path: Path, data: bytes) -> RecordBatch:
    path = tmp_path / "00000000000000000005.log"
    path.write_bytes(data)
    [batch] = list(read_batches(path))
    assert isinstance(batch, RecordBatch)
    return batch


def test_uncompressed_batch(tmp_path: Path) -> None:
    data = hand_batch(5, 0, 1, 0, RECORD)
    batch = _one_batch(tmp_path, data)
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (5, 5, 3)
    assert (batch.compression, batch.is_control, batch.size) == ("none", False, 91)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.crc == crc32c(data[21:])
    [record] = batch.records
    assert (record.offset, record.timestamp, record.key, record.headers) == (5, TS, None, ())
    assert decode_metadata(record.value or b"").fields == {
        "name": "metadata.version",
        "feature_level": 21,
    }
    # the encoder writes the same bytes
    assert encode_batch([FEATURE_LEVEL], 5, leader_epoch=3, timestamp=TS) == data


def _gzip_stored(data: bytes) -> bytes:
    # RFC 1952 header (no name, OS 255), one stored deflate block (BFINAL 1, BTYPE 00,
    # LEN, NLEN little-endian), then CRC-32 and ISIZE little-endian
    n = len(data)
    block = bytes([1]) + struct.pack("<HH", n, n ^ 0xFFFF) + data
    return h("1f8b 08 00 00000000 00 ff") + block + struct.pack("<II", zlib.crc32(data), n)


def _snappy_xerial(data: bytes) -> bytes:
    # SnappyOutputStream: magic, version 1, compatible 1; a block: int32 length, then raw
    # snappy: the uncompressed length (varint 30 = 0x1e), one literal (tag (30-1)<<2 = 0x74)
    raw = bytes([len(data), (len(data) - 1) << 2]) + data
    return h("82 534e41505059 00 00000001 00000001") + struct.pack(">i", len(raw)) + raw


def _lz4_frame(data: bytes) -> bytes:
    # magic 0x184D2204 (LE), FLG 0x60 (version 01, independent blocks), BD 0x40 (64 KiB),
    # HC 0x82 (xxh32 of FLG BD >> 8); one block stored (size | 0x80000000, LE); end mark 0
    return h("04224d18 60 40 82") + struct.pack("<I", len(data) | 0x80000000) + data + bytes(4)


def _zstd_frame(data: bytes) -> bytes:
    # magic 0xFD2FB528 (LE); frame header descriptor 0 (no content size, as
    # ZstdOutputStreamNoFinalizer), window descriptor 0 (1 KiB); one raw block, last:
    # 3 bytes LE of (size << 3) | (raw 0 << 1) | last 1
    return h("28b52ffd 00 00") + ((len(data) << 3) | 1).to_bytes(3, "little") + data


@pytest.mark.parametrize(
    ("codec", "attributes", "frame"),
    [
        ("gzip", 1, _gzip_stored),
        ("snappy", 2, _snappy_xerial),
        ("lz4", 3, _lz4_frame),
        ("zstd", 4, _zstd_frame),
    ],
)
def test_compressed_batch(tmp_path: Path, codec: str, attributes: int, frame: object) -> None:
    two = RECORD + RECORD[:3] + h("02") + RECORD[4:]  # the second: offsetDelta 1
    body = frame(two)  # type: ignore[operator]
    batch = _one_batch(tmp_path, hand_batch(5, attributes, 2, 1, body))
    assert batch.compression == codec
    assert [r.offset for r in batch.records] == [5, 6]
    assert [decode_metadata(r.value or b"").name for r in batch.records] == [
        "FeatureLevelRecord"
    ] * 2
    # and the encoder's own compression is read back
    encoded = encode_batch([FEATURE_LEVEL] * 2, 5, compression=codec, timestamp=TS)
    again = _one_batch(tmp_path, encoded)
    assert [r.value for r in again.records] == [FEATURE_LEVEL] * 2


def test_snappy_without_xerial_framing_is_read_as_raw(tmp_path: Path) -> None:
    raw = bytes([len(RECORD), (len(RECORD) - 1) << 2]) + RECORD
    batch = _one_batch(tmp_path, hand_batch(5, 2, 1, 0, raw))
    assert batch.records[0].value == FEATURE_LEVEL


# LeaderChange (ControlRecordType 2) v0: leader 1, voters [1, 2], granting voters [1]
LEADER_CHANGE_KEY = h("0000 0002")
LEADER_CHANGE_VALUE = h("""
    0000                      # Version 0
    00000001                  # LeaderId 1
    03 00000001 00 00000002 00  # Voters: 2 structs, each VoterId and tagged fields
    02 00000001 00            # GrantingVoters: [1]
    00                        # tagged fields
""")


def _control_record(offset_delta: int, key: bytes, value: bytes) -> bytes:
    body = h("00 00") + bytes([offset_delta * 2, len(key) * 2]) + key
    body += bytes([len(value) * 2]) + value + h("00")
    return bytes([len(body) * 2]) + body


def test_control_batch(tmp_path: Path) -> None:
    data = hand_batch(5, 0x20, 1, 0, _control_record(0, LEADER_CHANGE_KEY, LEADER_CHANGE_VALUE))
    batch = _one_batch(tmp_path, data)
    assert batch.is_control
    [record] = batch.records
    control = decode_control(record.key, record.value)
    assert control == ControlRecord(
        "LeaderChange",
        0,
        {
            "version": 0,
            "leader_id": 1,
            "voters": ({"voter_id": 1, "voter_directory_id": UNASSIGNED},)
            + ({"voter_id": 2, "voter_directory_id": UNASSIGNED},),
            "granting_voters": ({"voter_id": 1, "voter_directory_id": UNASSIGNED},),
        },
    )


def test_snapshot_file(tmp_path: Path) -> None:
    # RecordsSnapshotWriter: header control batch at offset 0, the records, footer batch
    header = _control_record(0, h("0000 0003"), h("0000") + struct.pack(">q", TS) + h("00"))
    footer = _control_record(0, h("0000 0004"), h("0000 00"))
    data = (
        hand_batch(0, 0x20, 1, 0, header)
        + hand_batch(1, 0, 1, 0, RECORD)
        + hand_batch(2, 0x20, 1, 0, footer)
    )
    path = tmp_path / "00000000000000000042-0000000003.checkpoint"
    path.write_bytes(data)
    batches = [b for b in read_batches(path) if isinstance(b, RecordBatch)]
    assert [(b.base_offset, b.is_control) for b in batches] == [(0, True), (1, False), (2, True)]
    first, middle, last = (b.records[0] for b in batches)
    assert decode_control(first.key, first.value) == ControlRecord(
        "SnapshotHeader", 0, {"version": 0, "last_contained_log_timestamp": TS}
    )
    assert decode_metadata(middle.value or b"").name == "FeatureLevelRecord"
    assert decode_control(last.key, last.value) == ControlRecord(
        "SnapshotFooter", 0, {"version": 0}
    )


def test_log_append_time_gives_every_record_the_max_timestamp(tmp_path: Path) -> None:
    # attributes bit 3: LogAppendTime; DefaultRecordBatch's records then carry maxTimestamp
    batch = _one_batch(tmp_path, hand_batch(5, 0x08, 1, 0, RECORD, max_ts=TS + 500))
    assert batch.records[0].timestamp == TS + 500
    assert _one_batch(tmp_path, hand_batch(5, 0, 1, 0, RECORD, TS + 500)).records[0].timestamp == TS
