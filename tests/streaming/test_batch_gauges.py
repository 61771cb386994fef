"""Each micro-batch's gauges describe the cluster as that batch's decisions leave it
(`streaming/batch_gauges.py`; issue 47, item 4).

The job runs on real Spark, a few events to a micro-batch, under both rule sets. After
every batch the gauges the sink holds for it (what its log line and the endpoint show) are
held to a count made again from the decisions written up to and including that batch, by
Kafka's definitions (`KafkaController.updateMetrics` and `ControllerContext`'s partition
states for the ZK controller, `ControllerMetadataMetricsPublisher` for KRaft, the leader's
`Partition.isUnderReplicated` for the brokers'). Before the fix the partition gauges were
counted from the partitions' summaries the *previous* batch reported, so the batch that took
`audit-0` offline logged `OfflinePartitionsCount=0`.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from state_machines.model import ControllerConfig
from streaming.job import start
from streaming.prometheus import serve
from streaming.runner import ProgressListener, metrics_text
from streaming.settings.schema import JobSettings
from streaming.shadow_health import ShadowHealth
from streaming.sink import BatchSink
from tests.streaming.spark_helpers import write_input

EVENTS: list[dict[str, Any]] = [
    {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 1},
    {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 2},
    {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 3},
    {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"type": "TopicCreation", "topic": "audit", "partitions": {"0": [1], "1": [2, 3], "2": [3, 1]}},
    {"type": "TopicCreation", "topic": "orders", "partitions": {"0": [2, 1], "1": [1, 3]}},
    # audit-0 (only on 1) goes offline; orders-1 moves to 3; ISRs lose 1
    {"type": "BrokerFailure", "broker_id": 1},
    # audit-1 moves to 2, audit-2 has no live ISR replica: offline too
    {"type": "BrokerFailure", "broker_id": 3},
    {"type": "TopicCreation", "topic": "late", "partitions": {"0": [2]}},
    # 1 returns: audit-0 and audit-2 are elected again
    {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 11},
    {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 13},
]
LINES = [json.dumps({"v": 1, **e}).encode() for e in EVENTS]

# the gauges the recount checks; the rest are the directory's own, never behind
CHECKED = (
    "GlobalTopicCount",
    "GlobalPartitionCount",
    "OfflinePartitionsCount",
    "PreferredReplicaImbalanceCount",
    "UnderReplicatedPartitions",
)


def _decisions(out: Path, batch: int) -> list[dict[str, Any]]:
    path = out / f"decisions-{batch:012d}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class ZkRecount:
    """The ZK controller's gauges from its decisions: a partition's state is its last
    `PartitionStateChange`; its leader, ISR and replicas its last `LeaderAndIsr`, except
    that an OfflinePartition has no leader (the request that says so goes to no live
    broker, so it is not written: contract, `recipients`)."""

    def __init__(self) -> None:
        self.state: dict[tuple[str, int], str] = {}
        self.lai: dict[tuple[str, int], dict[str, Any]] = {}

    def add(self, d: dict[str, Any]) -> None:
        key = (d.get("topic"), d.get("partition"))
        if d["type"] == "PartitionStateChange":
            self.state[key] = d["to_state"]  # type: ignore[index]
        elif d["type"] == "LeaderAndIsr":
            self.lai[key] = d  # type: ignore[index]

    def gauges(self) -> dict[str, int]:
        live = [k for k, s in self.state.items() if s != "NonExistentPartition"]
        offline = [k for k in live if self.state[k] == "OfflinePartition"]
        leader = {k: -1 if k in offline else self.lai[k]["leader"] for k in live if k in self.lai}
        return {
            "GlobalTopicCount": len({t for t, _ in live}),
            # partitionWithLeadersCount: every partition past NewPartition
            "GlobalPartitionCount": sum(self.state[k] != "NewPartition" for k in live),
            "OfflinePartitionsCount": len(offline),
            "PreferredReplicaImbalanceCount": sum(
                leader[k] != self.lai[k]["replicas"][0] for k in leader
            ),
            "UnderReplicatedPartitions": sum(
                leader[k] >= 0 and len(self.lai[k]["isr"]) < len(self.lai[k]["replicas"])
                for k in leader
            ),
        }


class KraftRecount:
    """KRaft's gauges from its metadata records: each partition as its `PartitionRecord`
    and the `PartitionChangeRecord`s after it leave it (a change names only what changes)."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], dict[str, Any]] = {}
        self.topics: set[str] = set()

    def add(self, d: dict[str, Any]) -> None:
        kind = d["type"]
        if kind == "TopicRecord":
            self.topics.add(d["name"])
        elif kind == "RemoveTopicRecord":
            self.topics.discard(d["topic"])
            self.partitions = {k: v for k, v in self.partitions.items() if k[0] != d["topic"]}
        elif kind == "PartitionRecord":
            self.partitions[(d["topic"], d["partition"])] = dict(d)
        elif kind == "PartitionChangeRecord":
            p = self.partitions[(d["topic"], d["partition"])]
            p.update({f: d[f] for f in ("leader", "isr", "replicas") if f in d})

    def gauges(self) -> dict[str, int]:
        ps = self.partitions.values()
        return {
            "GlobalTopicCount": len(self.topics),
            "GlobalPartitionCount": len(ps),
            "OfflinePartitionsCount": sum(p["leader"] == -1 for p in ps),
            "PreferredReplicaImbalanceCount": sum(p["leader"] != p["replicas"][0] for p in ps),
            "UnderReplicatedPartitions": sum(
                p["leader"] >= 0 and len(p["isr"]) < len(p["replicas"]) for p in ps
            ),
        }


class Lines(logging.Handler):
    """The job's log lines (the runner's logger), as a user reads them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Run:
    mode: str
    base: Path
    sink: BatchSink
    health: ShadowHealth
    lines: list[str]


@pytest.fixture(scope="module", params=["zk", "kraft"])
def job(request: Any, spark: Any, tmp_path_factory: Any) -> Iterator[Run]:
    """The job over the story, two events to a micro-batch, with the runner's progress
    listener (its batch lines, and the shadow's health) on the session."""
    mode = request.param
    base = tmp_path_factory.mktemp(f"gauges-{mode}")
    write_input(base / "in", LINES)
    settings = JobSettings(
        input=f"file:{base / 'in'}",
        output=f"file:{base / 'out'}",
        checkpoint=str(base / "ckpt"),
        controller=ControllerConfig(mode=mode),
        max_offsets_per_trigger=2,
    )
    sink, health, handler = BatchSink(settings), ShadowHealth(settings), Lines()
    listener = ProgressListener(sink, health)
    logger = logging.getLogger("shadow_controller")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    spark.streams.addListener(listener)
    try:
        query, _ = start(spark, settings, available_now=True, sink=sink)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        assert query.exception() is None, query.exception()
        # the listener hears of each batch on Spark's listener bus, after the batch
        deadline = time.monotonic() + 60
        while health.last_batch != max(sink.stats) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert health.last_batch == max(sink.stats)
        yield Run(mode, base, sink, health, handler.lines)
    finally:
        spark.streams.removeListener(listener)
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_each_batch_logs_the_gauges_its_decisions_leave(job: Run) -> None:
    sink = job.sink
    recount: ZkRecount | KraftRecount = ZkRecount() if job.mode == "zk" else KraftRecount()
    seen = []
    for batch in sorted(sink.stats):
        for d in _decisions(job.base / "out", batch):
            recount.add(d)
        if batch not in sink.gauges:
            continue  # the sequencer did not run
        want = recount.gauges()
        got = {k: sink.gauges[batch][k] for k in CHECKED}
        assert got == want, f"batch {batch}"
        seen.append(want["OfflinePartitionsCount"])
    # the story was told over several batches, partitions went offline and came back
    assert len(seen) >= 5 and max(seen) >= 1 and seen[-1] == 0, seen
    # each batch's line shows its own batch's gauges
    for batch, gauges in sink.gauges.items():
        line = next(x for x in job.lines if x.startswith(f"batch {batch}:"))
        assert f"OfflinePartitionsCount={gauges['OfflinePartitionsCount']} " in line
        assert metrics_text(sink, batch) in line


# -- the batch line (issue 47, "The batch log line") -------------------------------------

BATCH_LINE = re.compile(
    r"batch (\d+): events in (\d+)(?: \(offsets? (\d+)(?:-(\d+))?\))?, decisions out (\d+), "
    r"dlq (\d+)(, deletion reports \d+)?, \d+ ms"
)


def test_each_batch_line_counts_the_events_it_applied(job: Run) -> None:
    """`events in` is the events the batch's sequencer applied, with their offsets: over
    the run every event once, in order; the feedback-only batches apply none. Nothing was
    deleted, so no line speaks of deletion reports."""
    lines = [m for m in map(BATCH_LINE.match, job.lines) if m is not None]
    assert len(lines) == len(job.sink.stats) >= 5
    covered: list[int] = []
    for m in lines:
        n, first, last = int(m[2]), m[3], m[4] or m[3]
        assert m[7] is None, m[0]  # no deletion reports
        if n:
            assert first is not None and int(last) - int(first) + 1 == n, m[0]
            covered.extend(range(int(first), int(last) + 1))
        else:
            assert first is None, m[0]
        stats = job.sink.stats[int(m[1])]
        assert (int(m[5]), int(m[6])) == (stats["decisions"], stats["dlq"])
    assert covered == list(range(len(LINES)))
    assert any(int(m[2]) == 0 for m in lines)  # a batch of the partitions' feedback alone


def test_an_available_now_run_ends_with_one_summary_line(job: Run) -> None:
    from streaming.runner import run_summary

    decisions = sum(len(_decisions(job.base / "out", b)) for b in job.sink.stats)
    assert run_summary(job.sink, job.sink.settings) == (
        f"done: {len(job.sink.stats)} batches, {len(LINES)} events, {decisions} decisions "
        f"to {job.base / 'out' / 'decisions-*.jsonl'}, 0 dead letters"
    )


# -- the shadow's own health on the endpoint ----------------------------------------------


def test_the_shadow_health_metrics_are_served_and_pass_promtool(job: Run) -> None:
    """The endpoint serves the shadow's health from the run: no lag once the input is
    decided, then the lag of a file that comes while no batch runs (a stalled shadow's),
    the last batch's time and duration, dead letters, divergences by severity and the
    rule set; `promtool check metrics` passes the text."""
    from tests.streaming.test_controller_metrics import PROMTOOL, promtool_check, scrape

    assert job.health.lag() == 0
    write_input(job.base / "in2", LINES[:3])
    (job.base / "in2" / "0000.jsonl").rename(job.base / "in" / "0001.jsonl")
    server, _ = serve(job.sink, 0, addr="127.0.0.1", health=job.health)
    try:
        got = scrape(server.server_port)
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{server.server_port}/metrics", timeout=10
        ).read()
    finally:
        server.shutdown()
        (job.base / "in" / "0001.jsonl").unlink()
    assert got["shadow_controller_lag_events"] == 3
    assert got["shadow_controller_batch"] == max(job.sink.stats)
    assert 0 < time.time() - got["shadow_controller_last_batch_timestamp_seconds"] < 600
    assert got["shadow_controller_last_batch_duration_seconds"] >= 0
    assert got["shadow_controller_dead_letters_total"] == 0
    assert got["shadow_controller_events_total"] == len(LINES)
    assert got['shadow_controller_divergences_total{severity="benign"}'] == 0
    assert got['shadow_controller_divergences_total{severity="safety"}'] == 0
    assert got[f'shadow_controller_rule_set_info{{rule_set="{job.mode}"}}'] == 1
    if PROMTOOL is not None:  # test_prometheus_lint.py says when it is not
        assert promtool_check(text) == (0, "")
        print(text.decode())  # the report's paste (pytest -s)
