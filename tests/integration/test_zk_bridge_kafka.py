"""`bridge --zookeeper` beside the job: its events go to the events topic (on the embedded
Tansu broker), each with its znode's time, and a restart adds only what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadow_controller.zk_bridge import ZkBridgeSettings, run
from tests.integration.kafka_helpers import consume_all
from tests.zookeeper.conftest import CONFIG
from tests.zookeeper.kafka_zk import KafkaZkCluster
from tests.zookeeper.zk_server import ZooKeeperServer

pytestmark = [pytest.mark.broker, pytest.mark.zookeeper]


def test_the_events_go_to_the_events_topic_once_each(
    bootstrap: str, new_topic, tmp_path: Path
) -> None:
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    cluster = KafkaZkCluster(server.connect)
    try:
        for b in (1, 2, 3):
            cluster.start_broker(b)
        cluster.elect_controller(1)
        cluster.create_topic("orders", {0: [1, 2, 3]})
        cluster.write_initial("orders", 0, 1, [1, 2, 3])
        events_topic = new_topic(prefix="zk-events")

        def once(**sink: str) -> None:
            settings = ZkBridgeSettings(
                zookeeper=server.connect, once=True, config=CONFIG, timeout_s=10.0, **sink
            )
            assert run(settings, out=lambda line: None) == 0

        to_kafka = {
            "events_bootstrap_servers": bootstrap,
            "topic": events_topic,
            "state": str(tmp_path / "kafka-state.json"),
        }
        to_file = {
            "events_file": str(tmp_path / "events.jsonl"),
            "state": str(tmp_path / "file-state.json"),
        }
        once(**to_kafka)
        once(**to_file)
        got = [json.loads(m.value()) for m in consume_all(bootstrap, events_topic, 5)]
        written = [
            json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()
        ]
        assert got == written  # the same events, each with its own ts (the znodes' mtime)
        assert all(e["ts"] > 0 for e in got)

        once(**to_kafka)  # a restart with nothing new: nothing
        cluster.write_state("orders", 0, 1, 0, [1, 2])
        once(**to_kafka)
        later = [json.loads(m.value()) for m in consume_all(bootstrap, events_topic, len(got) + 2)]
        assert [e["type"] for e in later[len(got) :]] == [
            "AlterPartition",
            "ObservedPartitionState",
        ]
    finally:
        cluster.close()
        server.stop()
