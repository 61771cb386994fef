"""Shadow mode: a cluster that misbehaves is reported exactly, with the right severities,
by `simulate` and by the Spark job."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from tests.streaming.spark_helpers import assert_same_multiset, run_file_job, simulate_records

CLUSTER = [
    {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 10 + b} for b in (1, 2, 3)
] + [
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    *(
        {"v": 1, "type": "TopicCreation", "topic": t, "partitions": {"0": [1, 2, 3]}}
        for t in ("a", "b", "c", "d")
    ),
    # broker 2 crashes (leaves every ISR) and comes back (not yet in any ISR)
    {"v": 1, "type": "BrokerFailure", "broker_id": 2},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 20},
]
# here each partition has leader 1, leader epoch 1, ISR [1, 3], partition epoch 1
OBSERVED = [
    # the cluster agrees
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "d",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 1,
        "isr": [3, 1],
        "partition_epoch": 1,
        "id": "agrees",
    },
    # an unclean election nobody allowed: broker 2 was out of sync
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "a",
        "partition": 0,
        "leader": 2,
        "leader_epoch": 2,
        "isr": [2],
        "partition_epoch": 2,
        "id": "unclean",
    },
    # a leader outside its own ISR
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "b",
        "partition": 0,
        "leader": 3,
        "leader_epoch": 2,
        "isr": [1],
        "partition_epoch": 2,
        "id": "outside-isr",
    },
    # same leader and ISR one epoch ahead: the observation raced a change, harmless
    {
        "v": 1,
        "type": "ObservedPartitionState",
        "topic": "c",
        "partition": 0,
        "leader": 1,
        "leader_epoch": 2,
        "isr": [1, 3],
        "partition_epoch": 2,
        "id": "skew",
    },
    # with shadow.follow the shadow took the cluster's epoch: the leader's next request is accepted
    {
        "v": 1,
        "type": "AlterPartition",
        "topic": "c",
        "partition": 0,
        "broker_id": 1,
        "broker_epoch": 11,
        "leader_epoch": 2,
        "partition_epoch": 2,
        "isr": [1, 3, 2],
        "id": "isr-expand-after-follow",
    },
]
LINES = [json.dumps(e).encode() for e in CLUSTER + OBSERVED]
EXPECTED = {("a", "safety"), ("b", "safety"), ("c", "benign")}


def divergences(records: list[dict]) -> set[tuple[str, str]]:
    return {(r["topic"], r["severity"]) for r in records if r["type"] == "Divergence"}


def test_simulate_reports_exactly_the_injected_divergences() -> None:
    engine = Engine()
    records = []
    for i, line in enumerate(LINES):
        records.extend(engine.process(parse_event(json.loads(line), i)))
    found = [r for r in records if r["type"] == "Divergence"]
    assert divergences(found) == EXPECTED and len(found) == 3
    reasons = {r["topic"]: r["reason"] for r in found}
    assert "unclean election of 2" in reasons["a"]
    assert "outside its own ISR" in reasons["b"]
    assert "leader_epoch 2 (expected 1)" in reasons["c"]
    assert engine.observations == {"match": 1, "benign": 1, "safety": 2}
    alter = [r for r in records if r["type"] == "AlterPartitionResult"]
    assert alter[-1]["error"] is None and alter[-1]["isr"] == [1, 3, 2]


def test_without_follow_the_shadow_keeps_its_own_state() -> None:
    engine = Engine(ControllerConfig(shadow_follow=False))
    records = []
    for i, line in enumerate(LINES):
        records.extend(engine.process(parse_event(json.loads(line), i)))
    assert divergences(records) == EXPECTED
    alter = [r for r in records if r["type"] == "AlterPartitionResult"]
    assert alter[-1]["error"] == "NOT_CONTROLLER"  # its leader epoch 2 is ahead of ours


def test_unclean_allowed_for_the_topic_is_not_a_safety_issue() -> None:
    events = [dict(e) for e in CLUSTER + OBSERVED]
    events.insert(
        len(CLUSTER),
        {
            "v": 1,
            "type": "TopicConfigChange",
            "topic": "a",
            "configs": {"unclean.leader.election.enable": "true"},
        },
    )
    engine = Engine()
    records = []
    for i, event in enumerate(events):
        records.extend(engine.process(parse_event(event, i)))
    assert ("a", "benign") in divergences(records)


@pytest.mark.spark
def test_the_job_reports_the_same_divergences_and_counts(spark, tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="shadow_controller.job"):
        got, stats = run_file_job(spark, tmp_path, LINES, max_offsets=4)
    assert_same_multiset(got, simulate_records(LINES))
    assert divergences(got) == EXPECTED
    totals: dict[str, int] = {}
    for batch in stats.values():
        for key in ("shadow_match", "shadow_benign", "shadow_safety"):
            totals[key] = totals.get(key, 0) + batch.get(key, 0)
    assert totals == {"shadow_match": 1, "shadow_benign": 1, "shadow_safety": 2}
    # each safety divergence is a WARN line naming the partition, the cause offset and the reason
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    safety = {
        f"{r['topic']}-{r['partition']}": r
        for r in got
        if r["type"] == "Divergence" and r["severity"] == "safety"
    }
    assert len(warned) == len(safety) == 2
    for key, record in safety.items():
        assert any(
            f"on {key} at cause offset {record['cause_offset']}" in w and record["reason"] in w
            for w in warned
        )
