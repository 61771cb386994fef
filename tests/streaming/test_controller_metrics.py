"""Kafka's controller metrics (`streaming/controller_metrics.py`, `streaming/prometheus.py`)
against values computed by hand on one scenario: in process, and through the real job in
file mode with its Prometheus endpoint scraped and parsed."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from state_machines.engine import Engine
from state_machines.events import parse_event, parse_line
from state_machines.loop import Pending
from state_machines.model import ControllerConfig
from streaming.controller_metrics import ALL, GAUGES, REPLICA_GAUGES, controller_metrics
from streaming.prometheus import metric_name, serve
from streaming.runner import metrics_text
from streaming.settings.schema import JobSettings
from streaming.sink import BatchSink
from tests.streaming.spark_helpers import write_input

ZK_GAUGES = GAUGES + REPLICA_GAUGES

EVENTS = [
    {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 1},
    {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 2},
    {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 3},
    {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"type": "TopicCreation", "topic": "a", "partitions": {"0": [1, 2], "1": [2, 1], "2": [3]}},
    {
        "type": "TopicCreation",
        "topic": "u",
        "partitions": {"0": [1, 2]},
        "configs": {"unclean.leader.election.enable": "true"},
    },
    {"type": "TopicCreation", "topic": "d", "partitions": {"0": [2, 3]}},
    {"type": "TopicCreation", "topic": "e", "partitions": {"0": [2]}},
    # u-0's ISR shrinks to its leader alone
    {
        "type": "AlterPartition",
        "topic": "u",
        "partition": 0,
        "broker_id": 1,
        "leader_epoch": 0,
        "partition_epoch": 0,
        "isr": [1],
    },
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
    {
        "type": "StopReplicaResponse",
        "topic": "e",
        "partition": 0,
        "broker_id": 2,
        "error": "UNKNOWN_SERVER_ERROR",
    },
]
LINES = [json.dumps({"v": 1, **e}).encode() for e in EVENTS]

# By hand, from KafkaController.updateMetrics (3.9.0) over the state the log leaves:
EXPECTED = {
    "ActiveControllerCount": 1,
    # a-2; d-0 and e-0 went Offline then NonExistent when their deletion started
    "OfflinePartitionsCount": 1,
    # a-0 (2, not 1), u-0 (2, not 1), a-2 (-1, not 3); d and e are queued
    "PreferredReplicaImbalanceCount": 3,
    "GlobalTopicCount": 4,  # a, u, d, e (a queued topic stays until its deletion completes)
    # every partition keeps its leader-and-ISR until its topic is removed
    "GlobalPartitionCount": 6,
    "TopicsToDeleteCount": 2,  # d, e
    "ReplicasToDeleteCount": 3,  # d's 2 and 3, e's 2: none ReplicaDeletionSuccessful
    "TopicsIneligibleToDeleteCount": 2,  # d (a dead replica), e (a failed StopReplica)
    "ReplicasIneligibleToDeleteCount": 1,  # d's 3 (e's 2 went back to OfflineReplica)
    "ControllerState": 0,  # Idle: nothing held
    "ActiveBrokerCount": 1,  # liveOrShuttingDownBrokerIds: 2 (1 and 3 failed)
    "FencedBrokerCount": 0,  # a constant 0 in the ZK controller
    # the brokers' (Partition.scala on each leader): a-0, a-1 and u-0 are led by 2 with ISR [2]
    # of 2 replicas; a-2 has no leader; d-0 and e-0 are being deleted (no broker leads them)
    "UnderReplicatedPartitions": 3,
    "UnderMinIsrPartitionCount": 0,  # min.insync.replicas 1 (the static default) everywhere
    "AtMinIsrPartitionCount": 3,
}
UNCLEAN_ELECTIONS = 1  # u-0


def test_gauges_in_process() -> None:
    engine = Engine()
    for i, line in enumerate(LINES):
        engine.process(parse_line(line, i))
    assert controller_metrics(engine.directory, None, engine.config) == EXPECTED
    waiting = Pending(cause_offset=12, cause_id=None, round=0, expected=1, continuation=None)
    assert (
        controller_metrics(engine.directory, waiting, engine.config)["ControllerState"] == 4
    )  # TopicDeletion


# Kafka's replica metrics against min.insync.replicas from each level. The static setting is 2.
MIN_ISR = [
    *({"type": "BrokerStartup", "broker_id": b, "broker_epoch": b} for b in (1, 2, 3, 4, 5)),
    {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "type": "TopicCreation",
        "topic": "t",
        "partitions": {"0": [1, 2, 3]},
        "configs": {"min.insync.replicas": "3"},
    },
    {"type": "TopicCreation", "topic": "c", "partitions": {"0": [1, 2, 3]}},
    {"type": "TopicCreation", "topic": "n", "partitions": {"0": [5]}},
    {
        "type": "TopicCreation",
        "topic": "r",
        "partitions": {"0": [1, 2]},
        "configs": {"min.insync.replicas": "3"},
    },
    {
        "type": "AlterPartition",
        "topic": "c",
        "partition": 0,
        "broker_id": 1,
        "leader_epoch": 0,
        "partition_epoch": 0,
        "isr": [1, 2],
    },
    {"type": "BrokerFailure", "broker_id": 5},  # n-0 has no leader
    {"type": "PartitionReassignment", "topic": "r", "partition": 0, "target_replicas": [3, 4]},
]


def replica_gauges(engine: Engine) -> tuple[int, int, int]:
    m = controller_metrics(engine.directory, None, engine.config)
    return (
        m["UnderReplicatedPartitions"],
        m["UnderMinIsrPartitionCount"],
        m["AtMinIsrPartitionCount"],
    )


def test_replica_metrics_with_min_isr_from_topic_cluster_and_static_settings() -> None:
    """(under-replicated, under min ISR, at min ISR), by hand from Partition.scala's
    isUnderReplicated, isUnderMinIsr and isAtMinIsr on each partition's leader."""
    engine = Engine(ControllerConfig(min_insync_replicas=2))
    for i, e in enumerate(MIN_ISR):
        engine.process(parse_event({"v": 1, **e}, i))
    r0 = engine.partitions[("r", 0)]
    assert (r0.assignment.replicas, r0.assignment.adding_replicas, r0.leadership.isr) == (
        (3, 4, 1, 2),
        (3, 4),
        (1, 2),
    )
    # t-0: ISR 3 of 3, min 3 (topic config): at min.
    # c-0: ISR [1,2] of 3: under-replicated; min 2 (the static setting): at min.
    # n-0: leader -1: not counted by any broker (it would be under min ISR, and at it).
    # r-0: reassigning [1,2] -> [3,4]: the replication factor is the replicas less the adding
    #   ones, 2, so ISR [1,2] is not under-replicated (4 replicas would say it is); min 3
    #   (topic config) capped by the 4 replicas the leader knows is 3: under min ISR (capped
    #   by the replication factor it would be 2, at min)
    assert replica_gauges(engine) == (1, 1, 2)

    # the cluster's dynamic default: c-0's min ISR is 3, and its ISR of 2 is under it
    change = {"v": 1, "type": "BrokerConfigChange", "configs": {"min.insync.replicas": "3"}}
    engine.process(parse_event(change, len(MIN_ISR)))
    assert replica_gauges(engine) == (1, 2, 1)

    # r-0's reassignment completes: replicas [3,4], leader 3, ISR [3,4]; min 3 (topic) capped
    # by its 2 replicas (effectiveMinIsr) is 2: at min, no longer under
    la = engine.partitions[("r", 0)].leadership
    alter = {
        "v": 1,
        "type": "AlterPartition",
        "topic": "r",
        "partition": 0,
        "broker_id": la.leader,
        "leader_epoch": la.leader_epoch,
        "partition_epoch": la.partition_epoch,
        "isr": [1, 2, 3, 4],
    }
    engine.process(parse_event(alter, len(MIN_ISR) + 1))
    r0 = engine.partitions[("r", 0)]
    assert (r0.assignment.replicas, r0.leadership.leader, r0.leadership.isr) == ((3, 4), 3, (3, 4))
    assert replica_gauges(engine) == (1, 1, 2)

    # the dynamic default goes: the static 2 again, and c-0 is at it
    engine.process(
        parse_event({**change, "configs": {"min.insync.replicas": None}}, len(MIN_ISR) + 2)
    )
    assert replica_gauges(engine) == (1, 0, 3)


def test_an_inactive_controller_reports_zeros() -> None:
    engine = Engine()
    for i, line in enumerate(LINES[:3]):  # brokers, no failover
        engine.process(parse_line(line, i))
    assert controller_metrics(engine.directory, None, engine.config) == dict.fromkeys(ZK_GAUGES, 0)


PROMTOOL = shutil.which("promtool")


def promtool_check(text: bytes) -> tuple[int, str]:
    """`promtool check metrics` on the text: its exit code and what it said."""
    assert PROMTOOL is not None
    result = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=60
    )
    return result.returncode, (result.stdout + result.stderr).decode()


def fetch(port: int) -> bytes:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()


def test_the_replica_gauges_count_while_the_controller_is_not_active() -> None:
    """They are the brokers' metrics: a partition loaded while inactive (its snapshot:
    leader 1, ISR [1] of [1,2]) is under-replicated and at min ISR; the controller's are 0."""
    engine = Engine()
    for i, e in enumerate(
        [
            {"type": "BrokerStartup", "broker_id": 1},
            {"type": "BrokerStartup", "broker_id": 2},
            {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}},
            {
                "type": "PartitionStateSnapshot",
                "topic": "t",
                "partition": 0,
                "replicas": [1, 2],
                "leader": 1,
                "leader_epoch": 3,
                "isr": [1],
                "partition_epoch": 4,
                "controller_epoch": 1,
            },
        ]
    ):
        engine.process(parse_event({"v": 1, **e}, i))
    assert controller_metrics(engine.directory, None, engine.config) == {
        **dict.fromkeys(ZK_GAUGES, 0),
        "UnderReplicatedPartitions": 1,
        "AtMinIsrPartitionCount": 1,
    }


def scrape(port: int) -> dict[str, float]:
    """name{labels} -> value of every sample, parsed by prometheus_client's own parser."""
    text = fetch(port).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return samples


def expected_samples(unclean: int) -> dict[str, float]:
    out: dict[str, float] = {metric_name(k): v for k, v in EXPECTED.items()}
    out["kafka_controller_controllerstats_uncleanleaderelections_total"] = unclean
    for outcome in ("match", "benign", "safety"):
        out[f'shadow_controller_observations_total{{outcome="{outcome}"}}'] = 0
    # the shadow's own health (no lag or last batch without the runner's listener)
    for severity in ("benign", "safety"):
        out[f'shadow_controller_divergences_total{{severity="{severity}"}}'] = 0
    out['shadow_controller_rule_set_info{rule_set="zk"}'] = 1
    return out


def test_endpoint_before_any_batch_has_only_the_counters(tmp_path: Path) -> None:
    sink = BatchSink(JobSettings(input="", output="", checkpoint=str(tmp_path)))
    server, _ = serve(sink, 0, addr="127.0.0.1")
    try:
        got = scrape(server.server_port)
    finally:
        server.shutdown()
    assert not any(k in got for k in map(metric_name, ALL))
    assert got["kafka_controller_controllerstats_uncleanleaderelections_total"] == 0


@pytest.mark.spark
@pytest.mark.parametrize(
    "buckets", [pytest.param(0, id="per-partition"), pytest.param(4, id="buckets-4")]
)
def test_the_job_serves_kafkas_metrics(spark, tmp_path: Path, buckets: int) -> None:
    from streaming.job import start

    write_input(tmp_path / "in", LINES)
    settings = JobSettings(
        input=f"file:{tmp_path / 'in'}",
        output=f"file:{tmp_path / 'out'}",
        checkpoint=str(tmp_path / "ckpt"),
        max_offsets_per_trigger=5,
        partition_buckets=buckets,
    )
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
        text = fetch(server.server_port)
    finally:
        server.shutdown()
    if PROMTOOL is not None:  # tests/streaming/test_prometheus_lint.py says when it is not
        assert promtool_check(text) == (0, "")
    assert len(sink.stats) >= 3  # several micro-batches, the deletions through the feedback files
    assert sink.metrics == EXPECTED
    assert sink.unclean_elections == UNCLEAN_ELECTIONS
    assert got.pop("shadow_controller_batch") == max(sink.stats)
    assert got.pop("shadow_controller_events_total") == len(LINES)
    assert got.pop("shadow_controller_dead_letters_total") == sum(
        s["dlq"] for s in sink.stats.values()
    )
    assert got == expected_samples(UNCLEAN_ELECTIONS)
    line = metrics_text(sink)
    assert "OfflinePartitionsCount=1" in line and "UncleanLeaderElections=1" in line


def test_each_safety_divergence_is_one_warn_line(caplog: pytest.LogCaptureFixture) -> None:
    """The sink's WARN line (sink.log_safety_divergences, left as it is) names the
    partition, the cause offset and the reason; a benign divergence and other records
    are not logged."""
    from streaming.sink import log_safety_divergences

    safety = {
        "type": "Divergence",
        "topic": "a",
        "partition": 0,
        "severity": "safety",
        "reason": "two leaders",
        "cause_offset": 41,
    }
    benign = {**safety, "severity": "benign", "reason": "epoch lag"}
    with caplog.at_level("WARNING", logger="shadow_controller.job"):
        log_safety_divergences(
            7,
            [
                ("a-0", json.dumps(safety, separators=(",", ":"))),
                ("a-0", json.dumps(benign, separators=(",", ":"))),
                ("a-1", '{"type":"LeaderAndIsr","election":"unclean"}'),
            ],
        )
    assert [r.getMessage() for r in caplog.records] == [
        "safety divergence on a-0 at cause offset 41 (batch 7): two leaders"
    ]


@pytest.mark.spark
def test_a_restart_serves_the_gauges_before_its_first_batch(spark, tmp_path: Path) -> None:
    """The gauges are computed again from the checkpoint's directory at start
    (`runner.restore_gauges`): the endpoint serves what the last committed batch left
    before the restarted query runs a batch; the counters start again at 0."""
    from streaming.job import start
    from streaming.runner import restore_gauges

    write_input(tmp_path / "in", LINES)
    settings = JobSettings(
        input=f"file:{tmp_path / 'in'}",
        output=f"file:{tmp_path / 'out'}",
        checkpoint=str(tmp_path / "ckpt"),
        max_offsets_per_trigger=5,
    )
    fresh = BatchSink(settings)
    restore_gauges(spark, settings, fresh)  # nothing committed yet: nothing to serve
    assert fresh.metrics == {}
    query, _ = start(spark, settings, available_now=True, sink=BatchSink(settings))
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()

    restarted = BatchSink(settings)
    restore_gauges(spark, settings, restarted)
    server, _ = serve(restarted, 0, addr="127.0.0.1")
    try:
        got = scrape(server.server_port)
    finally:
        server.shutdown()
    assert restarted.stats == {}  # no batch of the new run
    # the shadow's counters start again at 0 too
    assert got.pop("shadow_controller_events_total") == 0
    assert got.pop("shadow_controller_dead_letters_total") == 0
    assert got == expected_samples(0)


def test_kraft_mode_serves_kraft_gauges_computed_by_hand() -> None:
    """kraft mode: ControllerMetadataMetricsPublisher's gauges. t-0 [1,2,3] and u-0 [2,3];
    brokers 1 and 2 are fenced: both partitions are led by 3 with ISR [3], so both are off
    their preferred replica, under-replicated and at min ISR (1); one broker active, two
    fenced. The ZK controller's deletion and state gauges are not served."""
    config = ControllerConfig(mode="kraft")
    engine = Engine(config)
    events = [
        {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
        {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
        {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
        {"type": "ControllerFailover", "controller_id": 3000, "controller_epoch": 1},
        {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2, 3]}},
        {"type": "TopicCreation", "topic": "u", "partitions": {"0": [2, 3]}},
        {"type": "BrokerFailure", "broker_id": 1},
        {"type": "BrokerFailure", "broker_id": 2},
    ]
    for offset, event in enumerate(events):
        engine.process(parse_event({"v": 1, **event}, offset))
    assert controller_metrics(engine.directory, None, config) == {
        "ActiveControllerCount": 1,
        "OfflinePartitionsCount": 0,
        "PreferredReplicaImbalanceCount": 2,
        "GlobalTopicCount": 2,
        "GlobalPartitionCount": 2,
        "UnderReplicatedPartitions": 2,
        "UnderMinIsrPartitionCount": 0,
        "AtMinIsrPartitionCount": 2,
        "FencedBrokerCount": 2,
        "ActiveBrokerCount": 1,
        "MigratingZkBrokerCount": 0,
    }
    # the last replica fenced: both partitions offline, still off their preferred replica
    engine.process(parse_event({"v": 1, "type": "BrokerFailure", "broker_id": 3}, len(events)))
    got = controller_metrics(engine.directory, None, config)
    assert (
        got["OfflinePartitionsCount"],
        got["PreferredReplicaImbalanceCount"],
        got["FencedBrokerCount"],
        got["UnderReplicatedPartitions"],
    ) == (2, 2, 3, 0)


@pytest.mark.parametrize("mode", ["zk", "kraft"])
@pytest.mark.parametrize("seed", range(6))
def test_gauges_counted_again_from_scratch_are_the_same(mode: str, seed: int) -> None:
    """The gauges keep each topic's share with the record it was counted from
    (`gauge_shares._SHARES`) and count only topics whose record, min ISR or
    controller activity changed. After every event of a generated log (creations,
    failures, elections, deletions, min ISR configs, controller moves) the kept shares
    give what a count from scratch gives."""
    import streaming.gauge_shares as cm
    from tests.property.generator import generate_log

    config = ControllerConfig(mode=mode)
    engine = Engine(config)
    events = generate_log(seed, n_events=80, config=config, min_isr_configs=True)
    recounted = 0
    for i, e in enumerate(events):
        engine.process(parse_event({"v": 1, **e}, i))
        kept = controller_metrics(engine.directory, None, config)
        recounted += len(cm._SHARES)
        cm._SHARES = {}
        assert kept == controller_metrics(engine.directory, None, config), f"after event {i}: {e}"
        controller_metrics(engine.directory, None, config)  # warm again, from the fresh count
    assert recounted > 0


@pytest.mark.parametrize("mode", ["zk", "kraft"])
@pytest.mark.parametrize("seed", range(4))
def test_gauges_of_shared_summary_objects_are_those_of_distinct_ones(mode: str, seed: int) -> None:
    """Each summary object is counted once and its counts found again by its id for every
    pair holding it (`gauge_shares._summed`): the sequencer holds equal summaries as
    one object.
    A directory whose topics hold every summary as one object, as the sequencer reads them,
    has the gauges of the same directory whose every pair holds its own copy."""
    import dataclasses

    import streaming.gauge_shares as cm
    from state_machines.directory import TopicRecord
    from tests.property.generator import generate_log

    config = ControllerConfig(mode=mode)
    engine = Engine(config)
    compared = 0
    for i, e in enumerate(generate_log(seed, n_events=80, config=config, min_isr_configs=True)):
        engine.process(parse_event({"v": 1, **e}, i))
        one: dict = {}
        shared = {
            k: dataclasses.replace(
                r, summaries=tuple((p, one.setdefault(s, s)) for p, s in r.summaries * 3)
            )
            if isinstance(r, TopicRecord)
            else r
            for k, r in engine.directory.items()
        }
        copied = {
            k: dataclasses.replace(
                r, summaries=tuple((p, dataclasses.replace(s)) for p, s in r.summaries)
            )
            if isinstance(r, TopicRecord)
            else r
            for k, r in shared.items()
        }
        cm._SHARES = {}
        got = controller_metrics(shared, None, config)
        cm._SHARES = {}
        assert got == controller_metrics(copied, None, config), f"after event {i}: {e}"
        # some summary object is held by more than one pair
        compared += any(
            len(set(map(id, (s for _, s in r.summaries)))) < len(r.summaries)
            for r in shared.values()
            if isinstance(r, TopicRecord)
        )
    assert compared > 0
