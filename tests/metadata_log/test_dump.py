"""`shadow-controller metadata-log dump` as a user runs it: the real command line (`main`),
real files, Kafka's DumpLogSegments format; each mistake one line and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadow_controller.cli import main
from streaming.metadata_log.encode import (
    control_value,
    encode_batch,
    metadata_value,
    write_segment,
    write_snapshot,
)

TOPIC = "AAAAAAAAAAAAAAAAAAAAAQ"
TS = 1_700_000_000_000


def _log(tmp_path: Path) -> Path:
    """__cluster_metadata-0 with a snapshot at 2 and segments from 0 and 3."""
    d = tmp_path / "__cluster_metadata-0"
    feature = metadata_value("FeatureLevelRecord", name="metadata.version", feature_level=21)
    topic = metadata_value("TopicRecord", name="orders", topic_id=TOPIC)
    part = metadata_value(
        "PartitionRecord", 0, partition_id=0, topic_id=TOPIC, replicas=(1, 2), isr=(1, 2),
        leader=1, leader_epoch=0, partition_epoch=0,
    )  # fmt: skip
    change = metadata_value("PartitionChangeRecord", 0, partition_id=0, topic_id=TOPIC, isr=(1,))
    leader = control_value("LeaderChange", leader_id=1, voters=[{"voter_id": 1}])
    write_segment(
        d,
        0,
        [
            encode_batch([leader], 0, control=True, timestamp=TS),
            encode_batch([feature, topic], 1, timestamp=TS),
        ],
    )
    write_segment(d, 3, [encode_batch([part, change], 3, compression="zstd", timestamp=TS)])
    write_snapshot(d, 3, 1, [feature, topic], timestamp=TS)
    return d


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["metadata-log", "dump", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_dump_a_directory_like_kafka_dump_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _log(tmp_path)
    code, out, err = _run(capsys, str(d))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    dumping = [line for line in lines if line.startswith("Dumping ")]
    assert [Path(line.split()[1]).name for line in dumping] == [
        "00000000000000000003-0000000001.checkpoint",
        "00000000000000000000.log",
        "00000000000000000003.log",
    ]
    assert "Snapshot end offset: 3, epoch: 1" in lines
    assert "Log starting offset: 3" in lines
    # DumpLogSegments.printBatchLevel's line, field by field
    first_log = lines.index("Log starting offset: 0") + 1
    assert lines[first_log] == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false "
        "isControl: true deleteHorizonMs: OptionalLong.empty position: 0 "
        f"CreateTime: {TS} size: 86 magic: 2 compresscodec: none crc: "
        + lines[first_log].split("crc: ")[1].split()[0]
        + " isvalid: true"
    )
    assert lines[first_log + 1] == (
        f"| offset: 0 CreateTime: {TS} keySize: 4 valueSize: 14 sequence: -1 headerKeys: [] "
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[]}'
    )
    assert (
        f"| offset: 2 CreateTime: {TS} keySize: -1 valueSize: 27 sequence: -1 headerKeys: [] "
        'payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"orders",'
        f'"topicId":"{TOPIC}"}}}}'
    ) in lines
    # a PartitionChangeRecord shows only the tagged fields it has (the JsonConverter's way)
    assert (
        '"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
        f'"topicId":"{TOPIC}","isr":[1]}}}}'
    ) in out
    assert "compresscodec: zstd" in out
    assert "SnapshotHeader {" in out and "SnapshotFooter {" in out


def test_json_one_object_per_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, str(_log(tmp_path) / "00000000000000000003.log"), "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["offset"], r["type"]) for r in rows] == [
        (3, "PARTITION_RECORD"),
        (4, "PARTITION_CHANGE_RECORD"),
    ]
    assert rows[0]["data"]["replicas"] == [1, 2] and rows[0]["control"] is False
    assert rows[0]["file"].endswith("00000000000000000003.log") and rows[0]["position"] == 0


def test_from_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, str(_log(tmp_path)), "--from-offset", "2", "--json")
    assert code == 0
    # the snapshot is left out (its offsets are not the log's); offsets 0-1 are skipped
    assert [json.loads(line)["offset"] for line in out.splitlines()] == [2, 3, 4]
    code, out, _ = _run(capsys, str(_log(tmp_path)), "--from-offset", "4")
    # the first segment is wholly below 4: not even opened
    assert "00000000000000000000.log" not in out and "| offset: 4 " in out
    assert "| offset: 3 " not in out


def test_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, str(tmp_path / "nope.log"))
    assert (code, out) == (2, "")
    assert (
        err
        == f"shadow-controller metadata-log: {tmp_path / 'nope.log'}: no such file or directory\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _run(capsys, str(empty))
    assert code == 2 and err.count("\n") == 1 and "no segment (.log) or snapshot" in err
    with pytest.raises(SystemExit) as caught:
        main(["metadata-log", "dump", "--frm-offset", "3", str(tmp_path)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments: --frm-offset" in err
    with pytest.raises(SystemExit):
        main(["metadata-log", "dump", "--from-offset", "x", str(tmp_path)])
    assert "not an offset: 'x'" in capsys.readouterr().err


def test_corrupt_batch_stops_or_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _log(tmp_path)
    segment = d / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    # the first batch: 61 header bytes + a 25-byte record (LeaderChange: 14-byte value)
    data[86 + 70] ^= 0x01  # a byte of the second batch: CRC mismatch
    segment.write_bytes(bytes(data))
    code, _, err = _run(capsys, str(segment))
    assert code == 2
    assert err.startswith(f"shadow-controller metadata-log: {segment}: byte 86: CRC mismatch")
    assert err.count("\n") == 1
    code, out, err = _run(capsys, str(d), "--skip-corrupt", "--json")
    assert code == 1  # something was skipped
    assert err.count("\n") == 1 and f"{segment}: byte 86: CRC mismatch" in err
    assert [json.loads(line)["offset"] for line in out.splitlines()][-2:] == [3, 4]


def test_unknown_record_type_names_file_byte_and_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fence = metadata_value("FenceBrokerRecord", id=1, epoch=2)
    odd = bytes.fromhex("01 63 00 00".replace(" ", ""))  # type 99
    path = write_segment(tmp_path, 7, [encode_batch([fence], 7), encode_batch([odd, fence], 8)])
    code, _, err = _run(capsys, str(path))
    assert code == 2
    assert err == (
        # the first batch: 61 + a 23-byte record (FenceBrokerRecord: 16-byte value)
        f"shadow-controller metadata-log: {path}: byte 84: offset 8: "
        "unknown metadata record type 99 (version 0)\n"
    )
    code, out, err = _run(capsys, str(path), "--skip-corrupt")
    assert code == 1 and "offset 8: unknown metadata record type 99" in err
    assert "| offset: 9 " in out  # the record after it is shown


def test_torn_tail_is_reported_as_kafka_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fence = metadata_value("FenceBrokerRecord", id=1, epoch=2)
    path = write_segment(tmp_path, 0, [encode_batch([fence], 0), encode_batch([fence], 1)])
    whole = path.read_bytes()
    path.write_bytes(whole[:-10])  # the second batch is still being written
    code, out, err = _run(capsys, str(path))
    assert (code, err) == (0, "")
    assert (
        out.splitlines()[-1]
        == f"Found {len(whole) - 10 - 84} invalid bytes at the end of {path.name}"
    )


def test_metadata_log_dir_itself_is_read_through_its_partition_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log(tmp_path)  # tmp_path is metadata.log.dir: __cluster_metadata-0 is inside
    code, out, _ = _run(capsys, str(tmp_path), "--json")
    assert code == 0 and len(out.splitlines()) == 9  # 4 snapshot records, 5 log records


def test_transaction_markers_and_unknown_control_types_as_kafka_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # EndTransactionMarker: int16 version 0, int32 coordinator epoch; a type id 9 unknown
    commit = (bytes.fromhex("00000001"), bytes.fromhex("0000 00000005".replace(" ", "")))
    odd = (bytes.fromhex("00000009"), b"")
    path = write_segment(tmp_path, 0, [encode_batch([commit, odd], 0, control=True)])
    code, out, err = _run(capsys, str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[-2].endswith(" endTxnMarker: COMMIT coordinatorEpoch: 5")
    assert lines[-1].endswith(" controlType: UNKNOWN(9)")
