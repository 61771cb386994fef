"""`run --input metadata-log:DIR` with real Spark (issue 45 §3): the job follows a directory
as the quorum controller's log grows in it, across a segment roll, a torn tail and a
restart from the checkpoint; it writes every event's verdict once, folds the log's events
into the same decisions as the engine, never changes the directory, and dead-letters a
corrupt batch with its file and byte position and goes on. The ranges' exactness over many
more cuts is test_live_source.py's (no Spark)."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.log_verify.entries import LogEntry
from state_machines.log_verify.live import LiveLog
from state_machines.log_verify.verifier import verify_entries
from state_machines.model import ControllerConfig
from streaming.job import start
from streaming.metadata_log.encode import encode_batch, metadata_value, segment_name
from streaming.settings.schema import JobSettings
from tests.metadata_log import scenarios as S
from tests.metadata_log.test_live_source import Appender, encoded, files_state
from tests.streaming.spark_helpers import assert_same_multiset, canonical, read_dlq, read_output

pytestmark = pytest.mark.spark

KRAFT = ControllerConfig(mode="kraft")


def settings_for(base: Path) -> JobSettings:
    return JobSettings(
        input=f"metadata-log:{base / 'log'}",
        output=f"file:{base / 'out'}",
        checkpoint=str(base / "ckpt"),
        controller=KRAFT,
        trigger_interval="100 milliseconds",
    )


def verdicts_written(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted(glob.glob(str(out / "verdicts" / "verdicts-*.jsonl")))
        for line in open(f)
    ]


def catch_up(spark: Any, settings: JobSettings, directory: Path, query: Any = None) -> Any:
    """Let the job (started now, unless given) read all the directory holds; the directory
    must be exactly as it was."""
    before = files_state(directory)
    if query is None:
        query, _ = start(spark, settings)
    query.processAllAvailable()
    assert query.exception() is None, query.exception()
    assert files_state(directory) == before
    return query


def test_follows_the_log_across_a_roll_a_torn_tail_and_a_restart(spark, tmp_path: Path) -> None:
    log = S.rolling_restart()
    batches = encoded(log)
    settings = settings_for(tmp_path)
    out = Appender(tmp_path / "log")
    third = len(batches) // 3
    for b in batches[:third]:
        out.append(b)
    torn = batches[third]
    out.append(torn[:20])  # being written: no range may take it yet
    query = catch_up(spark, settings, tmp_path / "log")
    query.stop()
    first_run = len(verdicts_written(tmp_path / "out"))
    assert first_run > 0

    out.append(torn[20:])
    for i, b in enumerate(batches[third + 1 : 2 * third]):
        out.append(b, roll=i == 0)
    query = catch_up(spark, settings, tmp_path / "log")  # a restart from the checkpoint
    for i, b in enumerate(batches[2 * third :]):
        out.append(b, roll=i == 0)  # a roll while it runs
    out.append(encode_batch([metadata_value("NoOpRecord")], log.next_offset))
    catch_up(spark, settings, tmp_path / "log", query).stop()
    assert len(list((tmp_path / "log").glob("*.log"))) == 3

    entries = log.entries()
    expected, _ = verify_entries(entries)
    assert verdicts_written(tmp_path / "out") == [v.to_json() for v in expected]
    live = LiveLog()
    engine = Engine(KRAFT)
    decisions: list[str] = []
    for e in [*entries, LogEntry(log.next_offset, log.next_offset, "NoOpRecord")]:
        live.feed(e, 1 if e.control else None)
        for offset, event in live.drain().events:
            line = json.dumps(event).encode()
            decisions += [canonical(r) for r in engine.process(parse_line(line, offset))]
    assert decisions
    assert_same_multiset(read_output(tmp_path / "out"), decisions)
    assert read_dlq(tmp_path / "out") == []


def test_a_corrupt_batch_is_a_dead_letter_and_the_job_goes_on(spark, tmp_path: Path) -> None:
    batches = encoded(S.broker_failure(False))
    bad = bytearray(batches[4])
    bad[30] ^= 0xFF  # inside the CRC-covered part: the CRC no longer matches
    out = Appender(tmp_path / "log")
    for i, b in enumerate(batches):
        out.append(bytes(bad) if i == 4 else b)
    settings = settings_for(tmp_path)
    catch_up(spark, settings, tmp_path / "log").stop()
    [letter] = read_dlq(tmp_path / "out")
    assert letter["source"] == f"{segment_name(0)}:{sum(len(b) for b in batches[:4])}"
    assert letter["reason"].startswith("metadata log: ")
    offsets = [v["offsets"][0] for v in verdicts_written(tmp_path / "out")]
    assert offsets and max(offsets) > int.from_bytes(batches[4][:8], "big")  # read past it
