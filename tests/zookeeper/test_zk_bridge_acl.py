"""Reading only, proven by ZooKeeper itself: with every znode's ACL giving the bridge's
digest user READ and nothing else, the bridge reads the cluster and checks its writes; the
same user cannot write; without the user, the bridge says so in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from shadow_controller.zk_bridge import ZkBridgeSettings, run
from streaming.exits import UsageError
from tests.zookeeper.conftest import CONFIG
from tests.zookeeper.kafka_zk import KafkaZkCluster

pytestmark = pytest.mark.zookeeper

ADMIN, SHADOW = ("admin", "admin-secret"), ("shadow", "shadow-secret")


def lock_down(zk: KafkaZkCluster) -> None:
    """Every znode: the admin may do anything, the shadow user may read."""
    zk.admin.add_auth("digest", ":".join(ADMIN))
    acl = [make_digest_acl(*ADMIN, all=True), make_digest_acl(*SHADOW, read=True)]

    def walk(path: str) -> None:
        for child in zk.admin.get_children(path):
            walk(f"{path.rstrip('/')}/{child}")
        if path not in ("/", "/zookeeper") and not path.startswith("/zookeeper/"):
            zk.admin.set_acls(path, acl)

    walk("/")


def once(connect: str, root: Path, auth: str | None) -> list[dict[str, Any]]:
    settings = ZkBridgeSettings(
        zookeeper=connect,
        state=str(root / "state.json"),
        events_file=str(root / "events.jsonl"),
        verdicts=str(root / "verdicts.jsonl"),
        once=True,
        auth=auth,
        config=CONFIG,
    )
    assert run(settings, out=lambda line: None) == 0
    return [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]


def test_a_read_only_user_is_all_the_bridge_needs(cluster: KafkaZkCluster, tmp_path: Path) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.elect_controller(1)
    cluster.create_topic("orders", {0: [1, 2, 3]})
    cluster.write_initial("orders", 0, 1, [1, 2, 3])
    lock_down(cluster)

    with pytest.raises(UsageError, match="refuses the bridge's reads"):
        once(cluster.connect, tmp_path / "anonymous", None)

    events = once(cluster.connect, tmp_path, ":".join(SHADOW))
    assert [e["type"] for e in events][-2:] == ["PartitionStateSnapshot", "ControllerFailover"]

    reader = KazooClient(hosts=cluster.connect, auth_data=[("digest", ":".join(SHADOW))])
    reader.start(timeout=30)
    try:
        with pytest.raises(NoAuthError):
            reader.set("/brokers/topics/orders/partitions/0/state", b"{}")
        with pytest.raises(NoAuthError):
            reader.delete("/admin/delete_topics")
    finally:
        reader.stop()
        reader.close()

    cluster.write_state("orders", 0, 1, 0, [1, 2])  # the controller may; the bridge checks it
    later = once(cluster.connect, tmp_path, ":".join(SHADOW))[len(events) :]
    assert [e["type"] for e in later] == ["AlterPartition", "ObservedPartitionState"]
