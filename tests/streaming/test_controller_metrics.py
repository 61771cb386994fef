"""Kafka's controller metrics (`streaming/controller_metrics.py`, `streaming/prometheus.py`)
against values computed by hand on one scenario: in process, and through the real job in
file mode with its Prometheus endpoint scraped and parsed."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.loop import Pending
from streaming.controller_metrics import GAUGES, controller_metrics
from streaming.prometheus import serve
from streaming.runner import metrics_text
from streaming.settings.schema import JobSettings
from streaming.sink import BatchSink
from tests.streaming.spark_helpers import write_input

EVENTS = [
    {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 1},
    {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 2},
    {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 3},
    {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"type": "TopicCreation", "topic": "a", "partitions": {"0": [1, 2], "1": [2, 1], "2": [3]}},
    {"type": "TopicCreation", "topic": "u", "partitions": {"0": [1, 2]},
     "configs": {"unclean.leader.election.enable": "true"}},
    {"type": "TopicCreation", "topic": "d", "partitions": {"0": [2, 3]}},
    {"type": "TopicCreation", "topic": "e", "partitions": {"0": [2]}},
    # u-0's ISR shrinks to its leader alone
    {"type": "AlterPartition", "topic": "u", "partition": 0, "broker_id": 1, "leader_epoch": 0,
     "partition_epoch": 0, "isr": [1]},
    # a-2 (only on 3) goes offline; d-0 keeps leader 2
    {"type": "BrokerFailure", "broker_id": 3},
    # a-0 moves to 2 (in its ISR); u-0 has no live ISR replica and its topic allows an
    # unclean election: 2 leads
    {"type": "BrokerFailure", "broker_id": 1},
    # d: replica 3 is dead, so the deletion starts and the topic is ineligible (3 in
    # ReplicaDeletionIneligible, 2 in ReplicaDeletionStarted)
    {"type": "TopicDeletion", "topic": "d"},
    # e: its one replica fails its StopReplica: ReplicaDeletionIneligible, then
    # resumeDeletions retries it (retryDeletionForIneligibleReplicas: OfflineReplica) and
    # the topic stays ineligible
    {"type": "TopicDeletion", "topic": "e"},
    {"type": "StopReplicaResponse", "topic": "e", "partition": 0, "broker_id": 2, "error": "UNKNOWN_SERVER_ERROR"},
]
LINES = [json.dumps({"v": 1, **e}).encode() for e in EVENTS]

# By hand, from KafkaController.updateMetrics (3.9.0) over the state the log leaves:
EXPECTED = {
    "ActiveControllerCount": 1,
    "OfflinePartitionsCount": 1,  # a-2; d-0 and e-0 went Offline then NonExistent when their deletion started
    "PreferredReplicaImbalanceCount": 3,  # a-0 (2, not 1), u-0 (2, not 1), a-2 (-1, not 3); d and e are queued
    "GlobalTopicCount": 4,  # a, u, d, e (a queued topic stays until its deletion completes)
    "GlobalPartitionCount": 6,  # every partition keeps its leader-and-ISR until its topic is removed
    "TopicsToDeleteCount": 2,  # d, e
    "ReplicasToDeleteCount": 3,  # d's 2 and 3, e's 2: none ReplicaDeletionSuccessful
    "TopicsIneligibleToDeleteCount": 2,  # d (a dead replica), e (a failed StopReplica)
    "ReplicasIneligibleToDeleteCount": 1,  # d's 3 (e's 2 went back to OfflineReplica)
    "ControllerState": 0,  # Idle: nothing held
}
UNCLEAN_ELECTIONS = 1  # u-0


def test_gauges_in_process() -> None:
    engine = Engine()
    for i, line in enumerate(LINES):
        engine.process(parse_line(line, i))
    assert controller_metrics(engine.directory, None) == EXPECTED
    waiting = Pending(cause_offset=12, cause_id=None, round=0, expected=1, continuation=None)
    assert controller_metrics(engine.directory, waiting)["ControllerState"] == 4  # TopicDeletion


def test_an_inactive_controller_reports_zeros() -> None:
    engine = Engine()
    for i, line in enumerate(LINES[:3]):  # brokers, no failover
        engine.process(parse_line(line, i))
    assert controller_metrics(engine.directory, None) == dict.fromkeys(GAUGES, 0)


def scrape(port: int) -> dict[str, float]:
    """name{labels} -> value of every sample, parsed by prometheus_client's own parser."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return samples


def expected_samples(unclean: int) -> dict[str, float]:
    out: dict[str, float] = {f"kafka_controller_KafkaController_{k}": v for k, v in EXPECTED.items()}
    out["kafka_controller_ControllerStats_UncleanLeaderElections_total"] = unclean
    for outcome in ("match", "benign", "safety"):
        out[f'shadow_controller_observations_total{{outcome="{outcome}"}}'] = 0
    return out


def test_endpoint_before_any_batch_has_only_the_counters(tmp_path: Path) -> None:
    sink = BatchSink(JobSettings(input="", output="", checkpoint=str(tmp_path)))
    server, _ = serve(sink, 0, addr="127.0.0.1")
    try:
        got = scrape(server.server_port)
    finally:
        server.shutdown()
    assert not any(k.startswith("kafka_controller_KafkaController_") for k in got)
    assert got["kafka_controller_ControllerStats_UncleanLeaderElections_total"] == 0


@pytest.mark.spark
@pytest.mark.parametrize("buckets", [pytest.param(0, id="per-partition"), pytest.param(4, id="buckets-4")])
def test_the_job_serves_kafkas_metrics(spark, tmp_path: Path, buckets: int) -> None:
    from streaming.job import start

    write_input(tmp_path / "in", LINES)
    settings = JobSettings(input=f"file:{tmp_path / 'in'}", output=f"file:{tmp_path / 'out'}",
                           checkpoint=str(tmp_path / "ckpt"), max_offsets_per_trigger=5, partition_buckets=buckets)
    sink = BatchSink(settings)
    server, _ = serve(sink, 0, addr="127.0.0.1")
    try:
        query, _ = start(spark, settings, available_now=True, sink=sink)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        assert query.exception() is None, query.exception()
        got = scrape(server.server_port)
    finally:
        server.shutdown()
    assert len(sink.stats) >= 3  # several micro-batches, the deletions through the feedback files
    assert sink.metrics == EXPECTED
    assert sink.unclean_elections == UNCLEAN_ELECTIONS
    assert got.pop("shadow_controller_batch") == max(sink.stats)
    assert got == expected_samples(UNCLEAN_ELECTIONS)
    line = metrics_text(sink)
    assert "OfflinePartitionsCount=1" in line and "UncleanLeaderElections=1" in line


def test_each_safety_divergence_is_one_warn_line(caplog: pytest.LogCaptureFixture) -> None:
    """The sink's WARN line (sink.log_safety_divergences, left as it is) names the
    partition, the cause offset and the reason; a benign divergence and other records
    are not logged."""
    from streaming.sink import log_safety_divergences

    safety = {"type": "Divergence", "topic": "a", "partition": 0, "severity": "safety", "reason": "two leaders",
              "cause_offset": 41}
    benign = {**safety, "severity": "benign", "reason": "epoch lag"}
    with caplog.at_level("WARNING", logger="shadow_controller.job"):
        log_safety_divergences(7, [("a-0", json.dumps(safety, separators=(",", ":"))),
                                   ("a-0", json.dumps(benign, separators=(",", ":"))),
                                   ("a-1", '{"type":"LeaderAndIsr","election":"unclean"}')])
    assert [r.getMessage() for r in caplog.records] == [
        "safety divergence on a-0 at cause offset 41 (batch 7): two leaders"]
