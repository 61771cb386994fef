"""The job's logic in micro-batches (no Spark) against the in-process engine.

`run_batches` runs the sequencer, the partition fold and the batch sink exactly as the
Spark job chains them, deletion feedback rounds included, so a difference here is a
difference the Spark job would have. Batch sizes 1, 2 and 7 cut the log at every kind of
place: inside deletions waiting for reports, between a bounce's failure and startup.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from state_machines.model import ControllerConfig
from streaming.batches import run_batches
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import canonical, simulate_records

LOGS = sorted((Path(__file__).parents[1] / "scenarios" / "logs").glob("*.jsonl"))
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.jsonl"))


def engine_records(lines: list[bytes]) -> list[str]:
    return simulate_records(lines)


def check(
    lines: list[bytes], batch_size: int, buckets: int = 0, parts_base: str | None = None
) -> None:
    expected = engine_records(lines)
    got, _dlq, _batches = run_batches(lines, batch_size, buckets=buckets, parts_base=parts_base)
    got_json = [canonical(r) for r in got]
    assert Counter(got_json) == Counter(expected)
    assert got_json == expected, "same records, but not in (cause_offset, key, seq) order"


@pytest.mark.parametrize("log", LOGS + EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("batch_size", [1, 7])
def test_scenario_logs_in_micro_batches_equal_the_engine(log: Path, batch_size: int) -> None:
    check(log.read_bytes().splitlines(), batch_size)


@pytest.mark.parametrize("seed", range(40))
def test_generated_logs_in_micro_batches_equal_the_engine(seed: int) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=60)]
    check(lines, batch_size=1 + seed % 5)


@pytest.mark.parametrize("log", LOGS + EXAMPLES, ids=lambda p: p.stem)
def test_scale_mode_buckets_give_the_same_decisions(log: Path) -> None:
    check(log.read_bytes().splitlines(), batch_size=3, buckets=3)


@pytest.mark.parametrize("log", LOGS + EXAMPLES, ids=lambda p: p.stem)
def test_decisions_merged_from_the_executors_parts_equal_the_engine(
    log: Path, tmp_path: Path
) -> None:
    """File output: sorted parts, written by three tasks after the partition stage (keyed
    per partition) or by the stage's groups (scale mode), merged by the driver with the
    shares it merged itself (decision_parts.py)."""
    lines = log.read_bytes().splitlines()
    check(lines, batch_size=3, parts_base=str(tmp_path / "a"))
    check(lines, batch_size=2, buckets=2, parts_base=str(tmp_path / "b"))
    assert not list(tmp_path.glob("*/_parts/*")), "the parts are removed once merged"


@pytest.mark.parametrize("seed", range(20))
def test_scale_mode_on_generated_logs(seed: int) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(seed + 100, n_events=60)]
    check(lines, batch_size=1 + seed % 4, buckets=1 + seed % 4)


# The generated logs the Spark tests run over many micro-batches (test_spark_file_mode,
# test_kraft_job: 50 events, 9 a micro-batch), each under both rule sets' runs and in both
# keyings. Spark runs each of them once, in one keying (`SPARK_GENERATED_RUNS` there).
@pytest.mark.parametrize("buckets", [0, 4], ids=["per-partition", "buckets-4"])
@pytest.mark.parametrize(
    ("seed", "mode"), [(3, "zk"), (11, "zk"), (29, "zk"), (3, "kraft"), (29, "kraft")]
)
def test_the_spark_tests_generated_logs_in_both_keyings(seed: int, mode: str, buckets: int) -> None:
    config = ControllerConfig(mode=mode)
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=50)]
    expected = simulate_records(lines, config)
    got, _dlq, _batches = run_batches(lines, 9, config=config, buckets=buckets)
    got_json = [canonical(r) for r in got]
    assert Counter(got_json) == Counter(expected)
    assert got_json == expected, "same records, but not in (cause_offset, key, seq) order"


def test_deletion_waits_for_reports_across_batches() -> None:
    log = (
        [{"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": b} for b in (1, 2, 3)]
        + [
            {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
            {
                "v": 1,
                "type": "TopicCreation",
                "topic": "t",
                "partitions": {"0": [1, 2], "1": [2, 3]},
            },
            {"v": 1, "type": "TopicDeletion", "topic": "t"},
            {"v": 1, "type": "BrokerFailure", "broker_id": 3},
        ]
        + [
            {
                "v": 1,
                "type": "StopReplicaResponse",
                "topic": "t",
                "partition": p,
                "broker_id": b,
                "error": None,
            }
            for p, b in ((0, 1), (0, 2), (1, 2))
        ]
    )
    lines = [json.dumps(e).encode() for e in log]
    expected = engine_records(lines)
    got, _dlq, batches = run_batches(lines, batch_size=len(lines))
    assert [canonical(r) for r in got] == expected
    # the deletion needed report rounds: more micro-batches than the one that held every event
    assert batches > 1


def test_bad_lines_go_to_the_dead_letters_with_their_offset() -> None:
    lines = [
        b"{not json",
        b'{"v":1,"type":"Nope"}',
        b'{"v":1,"type":"BrokerStartup","broker_id":-3}',
        b'{"v":1,"type":"BrokerStartup","broker_id":1}',
    ]
    _got, dlq, _ = run_batches(lines, batch_size=2)
    assert [d["offset"] for d in dlq] == [0, 1, 2]
    assert "not JSON" in dlq[0]["reason"]
    assert "unknown event type" in dlq[1]["reason"]
    assert "broker_id" in dlq[2]["reason"]
