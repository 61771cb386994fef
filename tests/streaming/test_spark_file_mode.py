"""The Spark job in file mode against `simulate`: the same multiset of decision records.

Real local Spark (one session per test run), real files. Scenario logs run in one
micro-batch, each log in the file shell `scenario_runs` deals it (the others run on the
Kafka connector); generated logs, which hold every kind of event, run in both keyings with
a small `maxOffsetsPerTrigger`, so they span many micro-batches and their topic deletions
go through the feedback files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from state_machines.model import ControllerConfig
from tests.property.generator import generate_log
from tests.streaming.scenario_runs import scenario_params
from tests.streaming.spark_helpers import (
    assert_same_multiset,
    read_dlq,
    run_file_job,
    simulate_records,
)

pytestmark = pytest.mark.spark

# both keyings: one Spark group per partition (default), and scale mode's 4 buckets
MODES = [pytest.param(0, id="per-partition"), pytest.param(4, id="buckets-4")]


@pytest.mark.parametrize(("log", "buckets"), scenario_params("file"))
def test_scenario_log_same_decisions_as_simulate(
    spark, tmp_path: Path, log: Path, buckets: int
) -> None:
    lines = log.read_bytes().splitlines()
    got, _ = run_file_job(spark, tmp_path, lines, buckets=buckets)
    assert_same_multiset(got, simulate_records(lines))


# Each generated log runs through Spark once, the keyings dealt round the seeds; every
# seed in both keyings, at the same 9 events a micro-batch, is checked against the engine
# without Spark (test_pipeline_batches.test_the_spark_tests_generated_logs_in_both_keyings):
# the keying is the shell's, not the log's.
SPARK_GENERATED_RUNS = [
    pytest.param(3, 0, id="3-per-partition"),
    pytest.param(11, 4, id="11-buckets-4"),
    pytest.param(29, 0, id="29-per-partition"),
]


@pytest.mark.parametrize(("seed", "buckets"), SPARK_GENERATED_RUNS)
def test_generated_log_over_many_micro_batches(
    spark, tmp_path: Path, seed: int, buckets: int
) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=50)]
    got, stats = run_file_job(spark, tmp_path, lines, max_offsets=9, files=3, buckets=buckets)
    assert len(stats) >= len(lines) // 9
    assert_same_multiset(got, simulate_records(lines))


def test_cluster_setting_reaches_the_job(spark, tmp_path: Path) -> None:
    events = [
        {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 1},
        {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 2},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}},
        {"v": 1, "type": "BrokerFailure", "broker_id": 2},
        {"v": 1, "type": "BrokerFailure", "broker_id": 1},
        # only the out-of-sync replica comes back: an unclean election, if allowed
        {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 3},
    ]
    lines = [json.dumps(e).encode() for e in events]
    config = ControllerConfig(unclean_leader_election_enable=True)
    got, _ = run_file_job(spark, tmp_path, lines, config=config)
    expected = simulate_records(lines, config)
    assert expected != simulate_records(lines), "the log must depend on the setting"
    assert_same_multiset(got, expected)


BAD = [
    (b"{not json at all", "not JSON"),
    (b'{"v":1,"type":"BrokerExploded","broker_id":1}', "unknown event type"),
    (b'{"v":1,"type":"BrokerFailure"}', "missing required field 'broker_id'"),
    (b'{"v":1,"type":"BrokerStartup","broker_id":-4}', "broker_id"),
    (b'{"v":1,"type":"TopicCreation","topic":"x","partitions":{"0":[]}}', "must not be empty"),
    (b'{"v":1,"type":"TopicCreation","topic":"x","partitions":{"0":[1,1]}}', "duplicate"),
    (
        '{"v":1,"type":"TopicCreation","topic":"x","partitions":{"\u00b2":[1]}}'.encode(),
        "non-negative integer string",
    ),
    (b'{"v":2,"type":"BrokerFailure","broker_id":1}', "unsupported contract version"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"[1,2,3]", "must be a JSON object"),
]


def test_bad_input_goes_to_the_dlq_and_good_decisions_are_unchanged(spark, tmp_path: Path) -> None:
    good = (
        (Path(__file__).parents[2] / "examples" / "three-brokers.jsonl").read_bytes().splitlines()
    )
    lines: list[bytes] = []
    bad_offsets = {}
    for i, line in enumerate(good):
        lines.append(line)
        if i < len(BAD):
            bad_offsets[len(lines)] = BAD[i]
            lines.append(BAD[i][0])
    got, _ = run_file_job(spark, tmp_path, lines, max_offsets=5)
    # the good records decide exactly what they decide without the bad ones around them
    without_bad = [json.loads(r) for r in simulate_records(good)]
    assert len(got) == len(without_bad)
    assert [(r["type"], r.get("topic"), r.get("leader_epoch")) for r in got] == [
        (r["type"], r.get("topic"), r.get("leader_epoch")) for r in without_bad
    ]
    assert_same_multiset(got, simulate_records(lines))
    dlq = read_dlq(tmp_path / "out")
    assert sorted(d["offset"] for d in dlq) == sorted(bad_offsets)
    import base64

    for d in dlq:
        original, reason = bad_offsets[d["offset"]]
        assert base64.b64decode(d["value_base64"]) == original
        assert reason in d["reason"], d
        # one input file: its 1-based line, as simulate names it
        assert d["source"] == f"0000.jsonl:{d['offset'] + 1}"
