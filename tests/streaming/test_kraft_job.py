"""The Spark job in kraft mode against the engine: the same multiset of decisions (KRaft's
metadata records and the answers) and the same dead letters, in both keyings.

Real local Spark, real files. Generated logs run over many micro-batches, so the
partitions' summaries (which unfencing and a shutdown heartbeat read) come back through
the feedback files between events.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from state_machines.model import ControllerConfig
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import assert_same_multiset, read_dlq, run_file_job, simulate_records

pytestmark = pytest.mark.spark

KRAFT = ControllerConfig(mode="kraft")
EXAMPLE = Path(__file__).parents[2] / "examples" / "three-brokers.jsonl"
MODES = [pytest.param(0, id="per-partition"), pytest.param(4, id="buckets-4")]


@pytest.mark.parametrize("buckets", MODES)
def test_example_same_records_as_the_engine(spark, tmp_path: Path, buckets: int) -> None:
    lines = EXAMPLE.read_bytes().splitlines()
    got, _ = run_file_job(spark, tmp_path, lines, buckets=buckets, config=KRAFT)
    expected = simulate_records(lines, KRAFT)
    assert any('"PartitionChangeRecord"' in r for r in expected)
    assert_same_multiset(got, expected)


@pytest.mark.parametrize("buckets", MODES)
@pytest.mark.parametrize("seed", [3, 29])
def test_generated_log_over_many_micro_batches(spark, tmp_path: Path, seed: int, buckets: int) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=50)]
    got, stats = run_file_job(spark, tmp_path, lines, max_offsets=9, files=3, buckets=buckets, config=KRAFT)
    assert len(stats) >= len(lines) // 9
    assert_same_multiset(got, simulate_records(lines, KRAFT))
    # StopReplicaResponse and ReplicaDirFailure cannot be applied in kraft mode: each is a
    # dead letter with the reason, in the job as in the engine
    unmapped = [i for i, line in enumerate(lines) if json.loads(line)["type"] in ("StopReplicaResponse", "ReplicaDirFailure")]
    assert unmapped
    letters = [d for d in read_dlq(tmp_path / "out") if "in kraft mode" in d["reason"]]
    assert sorted(d["offset"] for d in letters) == unmapped
