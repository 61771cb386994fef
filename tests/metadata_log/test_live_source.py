"""The live shadow's reading of a growing metadata-log directory (issue 45 §3), without Spark:
the source's offsets and ranges (`streaming/metadata_log_source.py`) and the verifier fed
range by range (`state_machines/log_verify/live.py`). Real files, written as the quorum
controller writes them (scenarios.py); the Spark job over them is test_live_job.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.log_verify.entries import LogEntry
from state_machines.log_verify.live import LiveLog
from state_machines.log_verify.verifier import verify_entries
from state_machines.model import ControllerConfig
from streaming.metadata_log.encode import encode_batch, metadata_value, segment_name
from streaming.metadata_log_source import BEFORE_ALL, MetadataLogReader, complete_end
from tests.metadata_log import scenarios as S

SCENARIOS = {
    "rolling-restart": S.rolling_restart,
    "broker-failure-unclean": lambda: S.broker_failure(True),
    "reassignment": S.reassignment,
    "controlled-shutdown": S.controlled_shutdown,
    "elr-4.0": S.elr_4_0,
}


def encoded(log: S.KafkaLog) -> list[bytes]:
    """The log's batches as the quorum controller appends them, its LeaderChange first."""
    out = [S.control_batch(0)]
    for b in log.batches:
        out.append(
            encode_batch([metadata_value(r.name, r.version, **r.fields) for _, r in b], b[0][0])
        )
    return out


def base_of(batch: bytes) -> int:
    return int.from_bytes(batch[:8], "big")


class Appender:
    """Appends batches to a directory as Kafka does: to the active segment, a new segment
    (named by its first offset) on a roll, and a batch in two writes when torn."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.active: Path | None = None

    def append(self, data: bytes, roll: bool = False) -> None:
        if self.active is None or roll:
            self.active = self.dir / segment_name(base_of(data))
        with open(self.active, "ab") as fh:
            fh.write(data)


def files_state(directory: Path) -> dict[str, tuple[int, int, int]]:
    return {
        n: (st.st_ino, st.st_size, st.st_mtime_ns)
        for n in sorted(os.listdir(directory))
        if (st := os.stat(directory / n))
    }


def drive(
    reader: MetadataLogReader, start: dict[str, Any]
) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """One micro-batch as Spark drives the source: the latest offset, the range's rows, what
    the sink writes out (verdicts, dead letters), the commit."""
    end = reader.latestOffset(start, None)  # type: ignore[arg-type]
    rows = [r for p in reader.partitions(start, end) for r in reader.read(p)]
    doc = reader.files.written_out(
        (start["segment"], start["position"]), (end["segment"], end["position"])
    )
    reader.commit(end)
    return end, rows, doc or {"verdicts": [], "dead_letters": []}


def whole_log(log: S.KafkaLog) -> tuple[list[Any], list[str]]:
    """What reading the whole log at once gives: the verdicts, and the events."""
    verdicts, _ = verify_entries(log.entries())
    live = LiveLog()
    events: list[str] = []
    noop = LogEntry(log.next_offset, log.next_offset, "NoOpRecord")
    for e in [*log.entries(), noop]:
        live.feed(e, 1 if e.control else None)
        events += [json.dumps(ev, separators=(",", ":")) for _, ev in live.drain().events]
    return [v.to_json() for v in verdicts], events


@pytest.mark.parametrize("name", SCENARIOS)
def test_ranges_across_rolls_torn_tails_and_restarts_read_each_record_once(
    tmp_path: Path, name: str
) -> None:
    log = SCENARIOS[name]()
    batches = encoded(log)
    directory, state = tmp_path / "__cluster_metadata-0", tmp_path / "ckpt"
    options = {"path": str(directory), "shadow.stateDir": str(state)}
    out = Appender(directory)
    reader = MetadataLogReader(options)
    offset: dict[str, Any] = dict(BEFORE_ALL)
    verdicts: list[Any] = []
    events: list[bytes] = []
    for i, batch in enumerate(batches):
        roll = i > 0 and i % 4 == 0
        if i % 3 == 1:
            # torn: the first half now, which no range may take, the rest in the next step
            out.append(batch[: len(batch) // 2], roll)
            end, rows, doc = drive(reader, offset)
            assert rows == [] and doc["verdicts"] == []
            offset = end
            out.append(batch[len(batch) // 2 :])
        else:
            out.append(batch, roll)
        if i % 5 == 2:
            reader = MetadataLogReader(options)  # a restart: the state comes from the checkpoint
        before = files_state(directory)
        end, rows, doc = drive(reader, offset)
        assert files_state(directory) == before  # read only
        verdicts += doc["verdicts"]
        events += [r[0] for r in rows]
        offset = end
    # the last events close with the log's next record (a NoOpRecord in a live cluster)
    out.append(encode_batch([metadata_value("NoOpRecord")], log.next_offset))
    end, rows, doc = drive(reader, offset)
    verdicts += doc["verdicts"]
    events += [r[0] for r in rows]
    expected_verdicts, expected_events = whole_log(log)
    assert verdicts == expected_verdicts
    assert [e.decode() for e in events] == expected_events
    assert len(os.listdir(state)) == 1  # after the commit: the state at its position only


def test_the_events_fold_into_the_decisions_the_log_holds() -> None:
    """The KRaft rules folding the events read from a log write the log's own partition
    changes (the same multiset of partitions' leaders, ISRs and epochs)."""
    log = S.rolling_restart()
    _, events = whole_log(log)
    engine = Engine(ControllerConfig(mode="kraft"))
    records = [
        r for i, line in enumerate(events) for r in engine.process(parse_line(line.encode(), i))
    ]
    kinds = {r["type"] for r in records}
    assert {"TopicRecord", "PartitionRecord", "PartitionChangeRecord"} <= kinds
    types = [json.loads(e)["type"] for e in events]
    assert types[0] == "ControllerFailover"
    assert {"BrokerStartup", "ControlledShutdown", "BrokerFailure", "AlterPartition"} <= set(types)


def test_a_header_scan_ends_at_a_torn_tail_and_at_preallocated_zeros(tmp_path: Path) -> None:
    a, b = encoded(S.rolling_restart())[:2]
    f = tmp_path / segment_name(0)
    f.write_bytes(a + b[:30])
    assert complete_end(f, 0) == len(a)
    f.write_bytes(a + b + bytes(4096))
    assert complete_end(f, 0) == len(a) + len(b)
    assert complete_end(f, len(a)) == len(a) + len(b)


def test_a_corrupt_batch_is_a_dead_letter_naming_the_file_and_byte(tmp_path: Path) -> None:
    batches = encoded(S.broker_failure(False))
    bad = bytearray(batches[3])
    bad[-1] ^= 0xFF  # the CRC no longer matches
    directory = tmp_path / "log"
    out = Appender(directory)
    for i, batch in enumerate(batches):
        out.append(bytes(bad) if i == 3 else batch)
    position = sum(len(x) for x in batches[:3])
    reader = MetadataLogReader({"path": str(directory), "shadow.stateDir": str(tmp_path / "st")})
    _, rows, doc = drive(reader, dict(BEFORE_ALL))
    [letter] = doc["dead_letters"]
    assert letter["source"] == f"{segment_name(0)}:{position}"
    assert "crc" in letter["reason"].lower()
    assert rows and doc["verdicts"]  # the batches after it are read


def test_a_segment_deleted_before_it_was_read_is_one_dead_letter(tmp_path: Path) -> None:
    batches = encoded(S.rolling_restart())
    directory = tmp_path / "log"
    out = Appender(directory)
    reader = MetadataLogReader({"path": str(directory), "shadow.stateDir": str(tmp_path / "st")})
    out.append(batches[0])
    offset, _, _ = drive(reader, dict(BEFORE_ALL))
    out.append(batches[1], roll=True)
    out.append(batches[2])
    out.append(batches[3], roll=True)
    (directory / segment_name(base_of(batches[1]))).unlink()  # retention, while the job lagged
    _, rows, doc = drive(reader, offset)
    [letter] = doc["dead_letters"]
    first, last = base_of(batches[1]), base_of(batches[3]) - 1
    assert f"offsets {first}-{last} are not in the directory" in letter["reason"]
    assert letter["source"] == f"{segment_name(base_of(batches[3]))}:0"
