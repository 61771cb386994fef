"""The job sees the partitions' summaries where the engine does (issue 15).

A broker change retries every offline partition, as the directory knows them from the
partitions' summary reports, and a due rebalance check reads every partition's leader. In
the engine a cause's reports are applied before the next event; in the job they come back
through the feedback files, so the sequencer holds such an event (or a second due check)
until the micro-batch that folds what came before it. These logs put the event that needs
the summaries in the same micro-batch as the events that change them: without the hold the
job would retry too few partitions, or check leaders it has not heard about.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from state_machines.model import ControllerConfig
from streaming.batches import run_batches
from tests.streaming.spark_helpers import assert_same_multiset, run_file_job, simulate_records


def lines_of(events: list[dict]) -> list[bytes]:
    return [json.dumps({"v": 1, "id": f"e{i}", **e}).encode() for i, e in enumerate(events)]


START = [
    {"type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b, "ts": 0} for b in (1, 2, 3)
] + [{"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1, "ts": 0}]

# t-0 goes offline (its only replica dies), is moved to live broker 3 (nothing elects it),
# and broker 4, which hosts nothing of t, starts: Kafka elects 3, unclean (t allows it).
RETRY = lines_of(
    START
    + [
        {
            "type": "TopicCreation",
            "topic": "t",
            "partitions": {"0": [1]},
            "configs": {"unclean.leader.election.enable": "true"},
            "ts": 10,
        },
        {"type": "BrokerFailure", "broker_id": 1, "ts": 20},
        {
            "type": "PartitionReassignment",
            "topic": "t",
            "partition": 0,
            "target_replicas": [3],
            "ts": 30,
        },
        {"type": "BrokerStartup", "broker_id": 4, "broker_epoch": 104, "ts": 40},
    ]
)

# Both partitions end up led by 2 though 1 is preferred; one tick passes two due checks (at
# 5 s and 65 s): the first elects, the second must see its elections.
REBALANCE = lines_of(
    START
    + [
        {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2], "1": [1, 2]}, "ts": 10},
        {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 201, "ts": 20},
        *[
            {
                "type": "AlterPartition",
                "topic": "t",
                "partition": p,
                "broker_id": 2,
                "broker_epoch": 102,
                "leader_epoch": 1,
                "partition_epoch": 1,
                "isr": [2, 1],
                "ts": 30,
            }
            for p in (0, 1)
        ],
        {"type": "ControllerTick", "ts": 70_000},
    ]
)
REBALANCE_CONFIG = ControllerConfig(leader_imbalance_check_interval_seconds=60)

CASES = [
    pytest.param(RETRY, ControllerConfig(), id="retry-after-a-fold"),
    pytest.param(REBALANCE, REBALANCE_CONFIG, id="second-check-after-a-fold"),
]


def test_the_cases_need_the_summaries() -> None:
    retried = [
        r for r in simulate_records(RETRY) if '"cause_id":"e7"' in r and '"LeaderAndIsr"' in r
    ]
    assert retried and '"leader":3' in retried[0] and '"election":"unclean"' in retried[0]
    checked = [
        r for r in simulate_records(REBALANCE, REBALANCE_CONFIG) if '"election":"preferred"' in r
    ]
    assert len(checked) == 2


@pytest.mark.parametrize("buckets", [0, 4])
@pytest.mark.parametrize(("lines", "config"), CASES)
def test_the_pipeline_holds_until_the_fold(
    lines: list[bytes], config: ControllerConfig, buckets: int
) -> None:
    decisions, dlq, batches = run_batches(
        lines, batch_size=len(lines), config=config, buckets=buckets
    )
    assert dlq == []
    assert batches >= 2  # the held event (or check) ran in a batch of its own
    assert_same_multiset(decisions, simulate_records(lines, config))


@pytest.mark.spark
@pytest.mark.parametrize("buckets", [0, 4])
@pytest.mark.parametrize(("lines", "config"), CASES)
def test_the_job_holds_until_the_fold(
    spark, tmp_path: Path, lines: list[bytes], config: ControllerConfig, buckets: int
) -> None:
    got, stats = run_file_job(spark, tmp_path, lines, config=config, buckets=buckets)
    assert len(stats) >= 2
    assert_same_multiset(got, simulate_records(lines, config))
