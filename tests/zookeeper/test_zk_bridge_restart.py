"""The bridge's state file (a restart emits nothing twice) and its reading only (the tree,
every znode's versions included, is the same after it ran)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.zk_bridge import ZkBridgeSettings, run
from tests.zookeeper.conftest import CONFIG
from tests.zookeeper.kafka_zk import KafkaZkCluster

pytestmark = pytest.mark.zookeeper


def tree(zk: Any, path: str = "/") -> dict[str, tuple[bytes, int, int, int, int]]:
    """Every znode with its data, version, cversion, aversion and mzxid."""
    data, stat = zk.get(path)
    out = {path: (data, stat.version, stat.cversion, stat.aversion, stat.mzxid)}
    for child in zk.get_children(path):
        out.update(tree(zk, f"{path.rstrip('/')}/{child}"))
    return out


def once(connect: str, root: Path) -> list[dict[str, Any]]:
    settings = ZkBridgeSettings(
        zookeeper=connect,
        state=str(root / "state.json"),
        events_file=str(root / "events.jsonl"),
        verdicts=str(root / "verdicts.jsonl"),
        once=True,
        config=CONFIG,
    )
    assert run(settings, out=lambda line: None) == 0
    return [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]


def test_a_restart_emits_nothing_twice_and_the_bridge_writes_nothing(
    cluster: KafkaZkCluster, tmp_path: Path
) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.elect_controller(1)
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.write_initial("orders", 0, 1, [1, 2, 3])
    before = tree(cluster.admin)

    first = once(cluster.connect, tmp_path)
    assert [e["type"] for e in first] == ["BrokerStartup"] * 3 + [
        "PartitionStateSnapshot",
        "ControllerFailover",
    ]
    assert [e["broker_epoch"] for e in first[:3]] == [
        cluster.brokers[b].exists(f"/brokers/ids/{b}").czxid for b in (1, 2, 3)
    ]
    assert tree(cluster.admin) == before  # read only: no znode created, changed or deleted

    assert once(cluster.connect, tmp_path) == first  # a restart: nothing new, nothing twice

    cluster.write_state("orders", 0, 1, 0, [1, 2])  # AlterPartition from leader 1
    third = once(cluster.connect, tmp_path)[len(first) :]
    assert [e["type"] for e in third] == ["AlterPartition", "ObservedPartitionState"]
    assert third[1]["partition_epoch"] == 1 and third[1]["isr"] == [1, 2]
    verdicts = [json.loads(v) for v in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert [v["verdict"] for v in verdicts] == ["inferred", "match"]
