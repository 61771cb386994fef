"""The job writes the golden bytes: on `examples/` and on the benchmark's cluster story at
10,000 partitions, the decisions the job writes (file mode and Kafka mode, one Spark group
per partition and scale mode's buckets) are byte for byte those of `simulate`, whose digest
`tests/golden/decisions.json` records (issue 11's acceptance).

The job writes decisions in its own order (partitions run side by side), so the comparison
is of the sorted decision bytes; `simulate`'s bytes are first checked against the golden
digest, which is of its own order. The job runs with UpdateMetadata (the default) and
`simulate` with it too: the golden digest is of the decisions without it, and
`test_update_metadata_only_adds_records` relates the two.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pytest

from shadow_controller.broker import create_topics
from state_machines.model import ControllerConfig
from streaming.settings.schema import JobSettings
from tests.golden.test_golden_decisions import ALL, GOLDEN, simulate
from tests.integration.kafka_helpers import consume_all
from tests.streaming.spark_helpers import run_to_end, write_input

pytestmark = pytest.mark.spark

LOGS = ["examples/three-brokers.jsonl", "bench-10k"]
KEYINGS = [pytest.param(0, id="per-partition"), pytest.param(16, id="buckets-16")]


@functools.cache
def simulate_bytes(name: str) -> tuple[bytes, ...]:
    """`simulate --out`'s lines for the log (with UpdateMetadata), once those without it are
    checked against the golden digest. Once per log and process: the four tests of a log
    compare with the same lines (bench-10k's two simulations take about 10 s)."""
    without, _ = simulate(ALL[name])
    golden = json.loads(GOLDEN.read_text())[name]
    assert (
        hashlib.sha256(b"".join(x + b"\n" for x in without)).hexdigest()
        == golden["decisions_sha256"]
    )
    lines, _ = simulate(ALL[name], ControllerConfig())
    return tuple(lines)


def assert_same_bytes(got: list[bytes], expected: tuple[bytes, ...]) -> None:
    assert len(got) == len(expected)
    mismatch = next(
        (i for i, (a, b) in enumerate(zip(sorted(got), sorted(expected), strict=True)) if a != b),
        None,
    )
    assert mismatch is None, (
        f"first difference: {sorted(got)[mismatch]!r} != {sorted(expected)[mismatch]!r}"
    )


@pytest.mark.parametrize("buckets", KEYINGS)
@pytest.mark.parametrize("name", LOGS)
def test_file_mode_writes_the_golden_bytes(spark, tmp_path: Path, name: str, buckets: int) -> None:
    expected = simulate_bytes(name)
    write_input(tmp_path / "in", ALL[name])
    settings = JobSettings(
        input=f"file:{tmp_path / 'in'}",
        output=f"file:{tmp_path / 'out'}",
        checkpoint=str(tmp_path / "ckpt"),
        partition_buckets=buckets,
    )
    run_to_end(spark, settings)
    got = [
        line.rstrip(b"\n")
        for f in sorted((tmp_path / "out").glob("decisions-*.jsonl"))
        for line in f.read_bytes().splitlines(keepends=True)
    ]
    assert_same_bytes(got, expected)


@pytest.mark.broker
@pytest.mark.parametrize("buckets", KEYINGS)
@pytest.mark.parametrize("name", LOGS)
def test_kafka_mode_writes_the_golden_bytes(
    spark, bootstrap, new_topic, produce, tmp_path: Path, name: str, buckets: int
) -> None:
    expected = simulate_bytes(name)
    events, decisions = new_topic(prefix="events"), new_topic(prefix="decisions")
    create_topics(bootstrap, {f"{events}.dlq": 1})
    produce(events, [(None, line) for line in ALL[name]], linger_ms=50)
    settings = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint=str(tmp_path / "ckpt"),
        bootstrap_servers=bootstrap,
        events_topic=events,
        decisions_topic=decisions,
        partition_buckets=buckets,
    )
    run_to_end(spark, settings)
    got = consume_all(bootstrap, decisions, len(expected), deadline_s=300.0)
    assert_same_bytes([m.value() for m in got], expected)
