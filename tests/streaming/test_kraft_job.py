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
from tests.streaming.spark_helpers import (
    assert_same_multiset,
    read_dlq,
    run_file_job,
    simulate_records,
)

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


# Each generated log through Spark once, in the keying the ZooKeeper rules' run of the same
# seed does not use (test_spark_file_mode.SPARK_GENERATED_RUNS); both keyings of each are
# checked without Spark (test_pipeline_batches).
@pytest.mark.parametrize(
    ("seed", "buckets"),
    [pytest.param(3, 4, id="3-buckets-4"), pytest.param(29, 4, id="29-buckets-4")],
)
def test_generated_log_over_many_micro_batches(
    spark, tmp_path: Path, seed: int, buckets: int
) -> None:
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=50)]
    got, stats = run_file_job(
        spark, tmp_path, lines, max_offsets=9, files=3, buckets=buckets, config=KRAFT
    )
    assert len(stats) >= len(lines) // 9
    assert_same_multiset(got, simulate_records(lines, KRAFT))
    # StopReplicaResponse and ReplicaDirFailure cannot be applied in kraft mode: each is a
    # dead letter with the reason, in the job as in the engine
    unmapped = [
        i
        for i, line in enumerate(lines)
        if json.loads(line)["type"] in ("StopReplicaResponse", "ReplicaDirFailure")
    ]
    assert unmapped
    letters = [d for d in read_dlq(tmp_path / "out") if "in kraft mode" in d["reason"]]
    assert sorted(d["offset"] for d in letters) == unmapped


MIN = 60_000
# leaders imbalanced by a fencing, a leaderless partition that a later config allows to
# elect uncleanly: both periodic tasks run on event time (kraft/periodic_tasks.py)
PERIODIC = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101, "ts": 0},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102, "ts": 0},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103, "ts": 0},
    {"v": 1, "type": "ControllerFailover", "controller_id": 3000, "controller_epoch": 1, "ts": 0},
    {
        "v": 1,
        "type": "TopicCreation",
        "topic": "t",
        "partitions": {"0": [1, 2], "1": [2, 1]},
        "ts": 0,
    },
    {"v": 1, "type": "TopicCreation", "topic": "u", "partitions": {"0": [3, 1]}, "ts": 0},
    {"v": 1, "type": "BrokerFailure", "broker_id": 1, "ts": 1 * MIN},
    {"v": 1, "type": "BrokerFailure", "broker_id": 3, "ts": 1 * MIN},
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101, "ts": 2 * MIN},
    {
        "v": 1,
        "type": "AlterPartition",
        "topic": "t",
        "partition": 0,
        "broker_id": 2,
        "broker_epoch": 102,
        "leader_epoch": 1,
        "partition_epoch": 1,
        "isr": [2, 1],
        "ts": 3 * MIN,
    },
    {
        "v": 1,
        "type": "TopicConfigChange",
        "topic": "u",
        "configs": {"unclean.leader.election.enable": "true"},
        "ts": 4 * MIN,
    },
    {"v": 1, "type": "ControllerTick", "ts": 6 * MIN},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 203, "ts": 7 * MIN},
    {"v": 1, "type": "ControllerTick", "ts": 12 * MIN},
    {"v": 1, "type": "ControllerTick", "ts": 30 * MIN},
]


@pytest.mark.parametrize("buckets", MODES)
def test_periodic_tasks_run_at_the_same_events_in_the_job(
    spark, tmp_path: Path, buckets: int
) -> None:
    """The schedule rides on the partitions' summary reports, which the job applies a
    micro-batch later: one event per micro-batch, the same records as the engine."""
    lines = [json.dumps(e).encode() for e in PERIODIC]
    expected = simulate_records(lines, KRAFT)
    at_tick = [
        json.loads(r)
        for r in expected
        if '"PartitionChangeRecord"' in r and json.loads(r)["cause_offset"] == 11
    ]
    # the first tick runs both: t-0's leader back to its preferred replica, u-0's unclean election
    assert sorted((d["topic"], d["leader"], d.get("leader_recovery_state")) for d in at_tick) == [
        ("t", 1, None),
        ("u", 1, 1),
    ]
    got, _ = run_file_job(spark, tmp_path, lines, max_offsets=1, buckets=buckets, config=KRAFT)
    assert_same_multiset(got, expected)


# a healthy KRaft cluster as the bridge would show it: a follower's broker is fenced and
# returns, the leader's broker is fenced, leadership moves, the ISR expands again
HEALTHY = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
    {"v": 1, "type": "ControllerFailover", "controller_id": 3000, "controller_epoch": 1},
    {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}},
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1, 2, 3],
        "partition_epoch": 0,
    },
    {"v": 1, "type": "BrokerFailure", "broker_id": 3},
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1, 2],
        "partition_epoch": 1,
    },
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 1,
        "leader": 2,
        "leader_epoch": 0,
        "isr": [2, 1],
        "partition_epoch": 1,
    },
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 203},
    {
        "v": 1,
        "type": "AlterPartition",
        "topic": "t",
        "partition": 0,
        "broker_id": 1,
        "broker_epoch": 101,
        "leader_epoch": 0,
        "partition_epoch": 1,
        "isr": [1, 2, 3],
    },
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1, 2, 3],
        "partition_epoch": 2,
    },
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 0,
        "leader": 2,
        "leader_epoch": 1,
        "isr": [2, 3],
        "partition_epoch": 3,
    },
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "t",
        "partition": 1,
        "leader": 2,
        "leader_epoch": 0,
        "isr": [2],
        "partition_epoch": 2,
    },
]


@pytest.mark.parametrize("buckets", MODES)
def test_the_shadow_job_reports_no_divergence_on_a_healthy_kraft_cluster(
    spark, tmp_path: Path, buckets: int
) -> None:
    lines = [json.dumps(e).encode() for e in HEALTHY]
    got, stats = run_file_job(spark, tmp_path, lines, max_offsets=3, buckets=buckets, config=KRAFT)
    assert [r for r in got if r["type"] == "Divergence"] == []
    observed = sum(1 for e in HEALTHY if e["type"] == "ObservedPartitionState")
    assert sum(s.get("shadow_match", 0) for s in stats.values()) == observed
    assert sum(s.get("shadow_safety", 0) + s.get("shadow_benign", 0) for s in stats.values()) == 0


ELR = ControllerConfig(mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1)
# partition 0's reassignment completes, and in the same micro-batch another partition of the
# topic is decided against the min ISR it caps (getTopicEffectiveMinIsr)
PARTITION_ZERO = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "v": 1,
        "type": "TopicCreation",
        "topic": "t0",
        "partitions": {"0": [1, 2], "1": [1, 2]},
        "configs": {"min.insync.replicas": "2"},
    },
    {
        "v": 1,
        "type": "PartitionReassignment",
        "topic": "t0",
        "partition": 0,
        "target_replicas": [1],
    },
    {
        "v": 1,
        "type": "AlterPartition",
        "topic": "t0",
        "partition": 0,
        "broker_id": 1,
        "leader_epoch": 1,
        "partition_epoch": 1,
        "isr": [1],
        "broker_epoch": 101,
    },
    {"v": 1, "type": "ControlledShutdown", "broker_id": 1, "broker_epoch": 101},
]


@pytest.mark.parametrize("buckets", MODES)
def test_elr_reads_partition_zero_after_its_fold(spark, tmp_path: Path, buckets: int) -> None:
    lines = [json.dumps(e).encode() for e in PARTITION_ZERO]
    expected = simulate_records(lines, ELR)
    # min ISR 1 after partition 0 shrank to one replica: t0-1 at ISR [2] clears no ELR, keeps none
    t0_1 = [
        json.loads(r) for r in expected if '"PartitionChangeRecord"' in r and '"partition":1' in r
    ]
    assert t0_1 and "eligible_leader_replicas" not in t0_1[-1]
    got, _ = run_file_job(spark, tmp_path, lines, buckets=buckets, config=ELR)
    assert_same_multiset(got, expected)
