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


def test_writes_made_while_the_bridge_was_away_are_a_gap_not_filled_in(
    cluster: KafkaZkCluster, tmp_path: Path
) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.elect_controller(1)
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.write_initial("orders", 0, 1, [1, 2, 3])
    once(cluster.connect, tmp_path)
    cluster.write_state("orders", 0, 1, 0, [1, 2])  # v1, never seen
    cluster.write_state("orders", 0, 1, 0, [1, 2, 3])  # v2
    once(cluster.connect, tmp_path)
    verdicts = [json.loads(v) for v in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert verdicts[0]["verdict"] == "gap" and verdicts[0]["version"] == 2
    assert "versions 1..1 were written and never seen" in verdicts[0]["reason"]
    # what was seen is checked as seen, not as an AlterPartition the bridge made up
    assert [v["verdict"] for v in verdicts[1:]] == ["benign"]


def test_a_chroot_without_a_cluster_is_one_line(zookeeper: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "bridge",
            "--zookeeper",
            f"{zookeeper.connect}/kafka",
            "--events-file",
            str(tmp_path / "e.jsonl"),
            "--state",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"shadow-controller bridge: ZooKeeper {zookeeper.connect}/kafka holds no Kafka cluster "
        "(no /brokers/ids); is the chroot the one in the brokers' zookeeper.connect?"
    ]
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "e.jsonl").exists()
