"""`same_summary`, the fold's test of whether a partition reports its summary, is
`summary_of(a) == summary_of(b)` without building either: checked on every pair of
records a partition step goes between over generated logs, and on pairs of different
partitions (other replicas, other adding replicas, a leader outside the replicas).
`apply_summaries` writes reports into their places as the sorted merge would."""

from __future__ import annotations

import itertools
import random

import pytest

import state_machines.engine as engine_module
from state_machines import partition as partition_module
from state_machines.directory import CONTROLLER_KEY, ControllerRecord, TopicRecord, topic_key
from state_machines.events import parse_event
from state_machines.model import ControllerConfig, LeaderAndIsr, ReplicaAssignment
from state_machines.partition_summaries import (
    SummaryReport,
    apply_summaries,
    interned_summary,
    same_summary,
    summary_of,
)
from state_machines.states import PartitionState
from tests.property.generator import generate_log


@pytest.mark.parametrize("seed", range(8))
def test_same_summary_is_equality_of_summaries(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    records = []
    original = partition_module.partition_step

    def recorded(state, cmd, config):
        result = original(state, cmd, config)
        records.append((state, result.state))
        return result

    monkeypatch.setattr(partition_module, "partition_step", recorded)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    assert engine.errors == [] and records
    for a, b in records:
        assert same_summary(a, b) == (summary_of(a) == summary_of(b)), (a, b)
    distinct = list({id(r): r for pair in records for r in pair if r is not None}.values())
    # reassigning records first (seeds 1 and 3 to 7 have some), then others, 60 in all
    sample = sorted(distinct, key=lambda r: not r.assignment.adding_replicas)[:60]
    for a, b in itertools.combinations(sample, 2):
        assert same_summary(a, b) == (summary_of(a) == summary_of(b)), (a, b)


def test_the_replica_counts_follow_kafkas_partition() -> None:
    """replication factor: the replicas less the adding ones (OngoingReassignmentState);
    replica count: the leader's followers and itself (effectiveMinIsr's cap)."""
    engine = engine_module.Engine()
    for i, e in enumerate(
        [{"v": 1, "type": "BrokerStartup", "broker_id": b} for b in (1, 2, 3, 4)]
        + [
            {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
            {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}},
            {
                "v": 1,
                "type": "PartitionReassignment",
                "topic": "t",
                "partition": 0,
                "target_replicas": [3, 4, 1],
            },
        ]
    ):
        engine.process(parse_event(e, i))
    rec = engine.partitions[("t", 0)]
    assert rec.assignment == ReplicaAssignment((3, 4, 1, 2), (3, 4), (2,))
    s = summary_of(rec)
    assert (s.leader, s.isr_size, s.replication_factor, s.replica_count) == (1, 2, 2, 4)
    # a leader outside the replicas (an adopted observation) counts itself on top
    outside = partition_module.PartitionRecord(
        "t", 0, ReplicaAssignment((1, 2)), rec.state, LeaderAndIsr(5, 3, (5,), 3)
    )
    assert summary_of(outside).replica_count == 3


@pytest.mark.parametrize("seed", range(6))
def test_apply_summaries_places_reports_as_the_sorted_merge_does(seed: int) -> None:
    """The reports written into their places (a topic whose partitions hold the places of
    their numbers) and, where they cannot be, the merge sorted again: the same summaries
    either way, with gaps, removals and partitions new to the topic."""
    rng = random.Random(seed)

    def summary() -> object:
        return interned_summary(
            rng.choice(list(PartitionState)),
            rng.randrange(3),
            rng.choice([None, 0, 1, 2]),
            rng.randrange(4),
            3,
            3,
        )

    for _ in range(200):
        numbers = (
            sorted(rng.sample(range(12), rng.randrange(13)))
            if rng.random() < 0.5
            else list(range(rng.randrange(12)))
        )
        before = tuple((p, summary()) for p in numbers)
        reports = [
            SummaryReport("t", rng.randrange(14), None if rng.random() < 0.15 else summary(), 7)
            for _ in range(rng.randrange(1, 6))
        ]
        view = {
            CONTROLLER_KEY: ControllerRecord(topics=frozenset({"t"})),
            topic_key("t"): TopicRecord(summaries=before),
        }
        expected = dict(before)
        for r in reports:
            expected[r.partition] = r.summary
        want = tuple(sorted((p, s) for p, s in expected.items() if s is not None))
        result = apply_summaries(view, reports, ControllerConfig(), 7)
        got = (
            result.changes[topic_key("t")].summaries if topic_key("t") in result.changes else before
        )
        assert got == want, (before, reports)
