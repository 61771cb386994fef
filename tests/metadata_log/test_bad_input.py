"""Bad input: a bad CRC, a truncated batch, a torn tail, an unknown record type or version.
Each is one line naming the file and the byte offset; `skip_corrupt` reports and goes on;
a segment still being written ends at its last complete batch."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.metadata_log.batches import RecordBatch, read_batches
from streaming.metadata_log.encode import encode_batch, metadata_value, write_segment
from streaming.metadata_log.errors import CorruptBatch, MetadataLogError, RecordDecodeError
from streaming.metadata_log.records import decode_metadata

FENCE = metadata_value("FenceBrokerRecord", id=1, epoch=7)


def _segment(tmp_path: Path) -> tuple[Path, list[bytes]]:
    batches = [encode_batch([FENCE] * 2, 0), encode_batch([FENCE], 2), encode_batch([FENCE], 3)]
    return write_segment(tmp_path, 0, batches), batches


def test_bad_crc_names_file_and_byte(tmp_path: Path) -> None:
    path, batches = _segment(tmp_path)
    data = bytearray(path.read_bytes())
    second = len(batches[0])
    data[second + 70] ^= 0xFF  # a byte of the second batch's record
    path.write_bytes(bytes(data))
    with pytest.raises(MetadataLogError) as caught:
        list(read_batches(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: byte {second}: CRC mismatch")
    assert "\n" not in message
    # skip_corrupt: reported in place, and the third batch is still read
    items = list(read_batches(path, skip_corrupt=True))
    assert [type(i).__name__ for i in items] == ["RecordBatch", "CorruptBatch", "RecordBatch"]
    assert isinstance(items[1], CorruptBatch) and items[1].position == second
    assert isinstance(items[2], RecordBatch) and items[2].base_offset == 3


def test_torn_tail_ends_quietly(tmp_path: Path) -> None:
    path, batches = _segment(tmp_path)
    whole = path.read_bytes()
    for cut in (len(whole) - 1, len(batches[0]) + len(batches[1]) + 20, len(batches[0]) + 5):
        path.write_bytes(whole[:cut])
        read = [b.base_offset for b in read_batches(path) if isinstance(b, RecordBatch)]
        expected = [0, 2] if cut > len(batches[0]) + len(batches[1]) else [0]
        assert read == expected, cut


def test_truncated_batch_inside_its_stated_length(tmp_path: Path) -> None:
    # a batch whose records end before its count says: the length fits, the records do not
    one = encode_batch([FENCE], 0)
    two = encode_batch([FENCE, FENCE], 0)
    lying = bytearray(one)
    lying[57:61] = (2).to_bytes(4, "big")  # record count 2, one record present
    from crc32c import crc32c

    lying[17:21] = crc32c(bytes(lying[21:])).to_bytes(4, "big")
    path = write_segment(tmp_path, 0, [bytes(lying), two])
    with pytest.raises(MetadataLogError, match=r"byte 0: truncated records"):
        list(read_batches(path))


def test_bad_length_stops_the_file(tmp_path: Path) -> None:
    short = bytes(8) + (5).to_bytes(4, "big") + bytes(18)  # a batch length of 5
    path = write_segment(tmp_path, 0, [encode_batch([FENCE], 0), short])
    with pytest.raises(MetadataLogError, match=r"byte \d+: batch length 5 is below"):
        list(read_batches(path))
    items = list(read_batches(path, skip_corrupt=True))
    assert isinstance(items[-1], CorruptBatch)
    assert "rest of the file is not read" in items[-1].reason


def test_not_a_log_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.log"
    path.write_text("this is not a record batch, it is text written by a person\n")
    with pytest.raises(MetadataLogError, match=r"byte 0: record batch magic"):
        list(read_batches(path))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (bytes.fromhex("016300"), "unknown metadata record type 99 (version 0)"),
        (bytes.fromhex("010507"), "unknown version 7 of PartitionChangeRecord"),
        (bytes.fromhex("000700"), "frame version 0"),
        (bytes.fromhex("020700"), "unknown frame version 2"),
        (FENCE[:-3], "truncated FenceBrokerRecord"),
        (FENCE + b"\x00", "1 byte(s) of garbage after FenceBrokerRecord v0"),
        (bytes.fromhex("01020000"), "non-nullable field Name was serialized as null"),
        (b"", "truncated record"),
        # a TopicRecord's Name of 32768 bytes (length+1 = 0x8001 as 81 80 02)
        (bytes.fromhex("010200818002"), "string field Name had invalid length 32768"),
    ],
)
def test_undecodable_values(value: bytes, reason: str) -> None:
    with pytest.raises(RecordDecodeError) as caught:
        decode_metadata(value)
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_every_control_and_metadata_name_is_kafkas() -> None:
    from streaming.metadata_log.schemas import CONTROL, METADATA_BY_KEY

    # MetadataRecordType's ids (metadata/*.json apiKey): 6, 13 and 16 are retired
    assert sorted(METADATA_BY_KEY) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15] + [
        *range(17, 30)
    ]
    assert set(CONTROL) == {
        "LeaderChange",
        "SnapshotHeader",
        "SnapshotFooter",
        "KRaftVersion",
        "KRaftVoters",
    }


def test_a_preallocated_segment_ends_at_its_zeros(tmp_path: Path) -> None:
    # log.preallocate: the active segment's file is longer than its data, zeros after it
    path = write_segment(tmp_path, 0, [encode_batch([FENCE], 0), encode_batch([FENCE], 1)])
    path.write_bytes(path.read_bytes() + bytes(5000))
    assert [b.base_offset for b in read_batches(path) if isinstance(b, RecordBatch)] == [0, 1]
    # zeros followed by data are not a preallocated tail: corrupt
    path.write_bytes(path.read_bytes() + encode_batch([FENCE], 2))
    with pytest.raises(MetadataLogError, match="batch length 0 is below"):
        list(read_batches(path))
