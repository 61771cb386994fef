"""Running the Spark job over a log in file mode, for tests."""

from __future__ import annotations

import glob
import json
from collections import Counter
from pathlib import Path
from typing import Any

from state_machines.engine import Engine
from state_machines.errors import InvalidEvent
from state_machines.events import parse_line
from state_machines.model import ControllerConfig
from streaming.job import start
from streaming.settings.schema import JobSettings


def canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def simulate_records(
    lines: list[bytes], config: ControllerConfig = ControllerConfig()
) -> list[str]:
    engine = Engine(config)
    out = []
    for i, line in enumerate(lines):
        try:
            env = parse_line(line, i)
        except InvalidEvent:
            continue
        out.extend(canonical(r) for r in engine.process(env))
    return out


def write_input(directory: Path, lines: list[bytes], files: int = 1) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    per = max(1, -(-len(lines) // files))
    for n, first in enumerate(range(0, len(lines), per)):
        tmp = directory / f".{n:04d}.tmp"
        tmp.write_bytes(b"".join(line + b"\n" for line in lines[first : first + per]))
        tmp.rename(directory / f"{n:04d}.jsonl")


def read_output(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted(glob.glob(str(directory / "decisions-*.jsonl")))
        for line in open(f)
    ]


def read_dlq(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted(glob.glob(str(directory / "dlq" / "dlq-*.jsonl")))
        for line in open(f)
    ]


def run_to_end(spark: Any, settings: JobSettings) -> Any:
    """Run the job over everything its input holds now; return its sink (with per-batch stats)."""
    query, sink = start(spark, settings, available_now=True)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return sink


def run_file_job(
    spark: Any,
    base: Path,
    lines: list[bytes],
    *,
    max_offsets: int | None = None,
    config: ControllerConfig = ControllerConfig(),
    files: int = 1,
    buckets: int = 0,
) -> tuple[list[dict[str, Any]], dict[int, Any]]:
    write_input(base / "in", lines, files)
    settings = JobSettings(
        input=f"file:{base / 'in'}",
        output=f"file:{base / 'out'}",
        checkpoint=str(base / "ckpt"),
        controller=config,
        max_offsets_per_trigger=max_offsets,
        partition_buckets=buckets,
    )
    sink = run_to_end(spark, settings)
    return read_output(base / "out"), sink.stats


def assert_same_multiset(got: list[dict[str, Any]], expected: list[str]) -> None:
    got_c = Counter(canonical(r) for r in got)
    exp_c = Counter(expected)
    missing = exp_c - got_c
    extra = got_c - exp_c
    assert not missing and not extra, (
        f"{sum(missing.values())} records missing, {sum(extra.values())} unexpected; "
        f"first missing: {next(iter(missing), None)}; first unexpected: {next(iter(extra), None)}"
    )
