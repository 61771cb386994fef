"""A ZooKeeper outage of 30 s and a server restart in the middle of a history (slow), and a
lost session: the bridge waits, reconnects, reads everything again and resumes, with
nothing lost (every write checked) and nothing doubled (every write and every event
once)."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.zookeeper.scenarios import T, start

pytestmark = pytest.mark.zookeeper

OUTAGE_S = 30.0


@pytest.mark.slow
def test_the_bridge_waits_out_an_outage_and_a_restart(
    zookeeper: Any, cluster: Any, bridge_at: Any, caplog: Any
) -> None:
    caplog.set_level(logging.INFO, logger="shadow_controller")
    w = start(cluster, bridge_at, None)
    bridge = w.bridge
    cluster.fail_broker(2)
    w.state(1, 3, 1, [3, 1])
    w.state(0, 1, 1, [1, 3])
    w.state(2, 3, 1, [3, 1])

    # the outage: the server stops for 30 s, then starts again on its port and data dir
    zookeeper.stop()
    down = time.monotonic()
    time.sleep(OUTAGE_S)  # the outage itself, not a wait for anything
    zookeeper.start()
    outage_s = time.monotonic() - down
    cluster.wait_connected()
    # written while the bridge may still be reconnecting: its resync must find them
    cluster.start_broker(2)
    for p, (leader, isr) in enumerate([(1, [1, 3, 2]), (3, [3, 1, 2]), (3, [3, 1, 2])]):
        cluster.write_state(T, p, leader, 1, isr)
        w.writes += 1
    bridge.wait_checked(w.writes, deadline_s=120)

    # a server restart in the middle of the controlled shutdown of broker 3
    # (doControlledShutdown: the partitions broker 3 leads elect, then it leaves p0's ISR)
    w.state(2, 1, 2, [1, 2])
    zookeeper.stop()
    zookeeper.start()
    cluster.wait_connected()
    w.state(1, 2, 2, [1, 2])
    w.state(0, 1, 2, [1, 2])
    checked = bridge.wait_checked(w.writes, deadline_s=120)

    seen = Counter((v["znode"], v["version"]) for v in checked)
    assert [k for k, n in seen.items() if n > 1] == []  # nothing doubled
    assert len(checked) == w.writes  # nothing lost
    assert [v for v in bridge.verdicts() if v["verdict"] == "gap"] == []
    events = bridge.events()
    keys = Counter(tuple(sorted((k, str(v)) for k, v in e.items() if k != "ts")) for e in events)
    assert [k for k, n in keys.items() if n > 1] == []
    log = [r.getMessage() for r in caplog.records if r.name.startswith("shadow_controller")]
    assert any("connection lost" in m or "session lost" in m for m in log)
    assert any("connected; reading everything again" in m for m in log)
    out = Path("/tmp/zkbridge/outage.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"outage {outage_s:.1f} s\n"
        + "\n".join(log)
        + "\n\n"
        + "\n".join(f"{v['verdict']} {v['znode']} v{v['version']}" for v in bridge.verdicts())
        + f"\n\n{len(events)} events, {len(checked)} writes checked\n"
    )


def test_a_lost_session_is_read_again_and_carried_on(
    cluster: Any, tmp_path: Path, caplog: Any
) -> None:
    """The bridge's session expires (another client takes its id and closes it, ZooKeeper's
    way of expiring a session on purpose): kazoo opens a new one, the bridge reads
    everything again and checks what was written meanwhile, once."""
    import threading

    from kazoo.client import KazooClient

    from shadow_controller.zk_bridge import ZkBridgeSettings, run
    from shadow_controller.zk_reader import ZkReader
    from tests.zookeeper.conftest import CONFIG

    caplog.set_level(logging.INFO, logger="shadow_controller")
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.elect_controller(1)
    cluster.create_topic(T, {0: [1, 2, 3]})
    cluster.write_initial(T, 0, 1, [1, 2, 3])
    settings = ZkBridgeSettings(
        zookeeper=cluster.connect,
        state=str(tmp_path / "state.json"),
        events_file=str(tmp_path / "events.jsonl"),
        verdicts=str(tmp_path / "verdicts.jsonl"),
        config=CONFIG,
    )
    reader = ZkReader(cluster.connect, 10.0)
    stop = threading.Event()
    thread = threading.Thread(
        target=run, args=(settings,), kwargs={"stop": stop.is_set, "out": print, "reader": reader}
    )
    thread.start()

    def lines(name: str) -> list[str]:
        path = tmp_path / name
        return path.read_text().splitlines() if path.exists() else []

    def until(condition: Any, what: str) -> None:
        deadline = time.monotonic() + 60
        while not condition():
            assert time.monotonic() < deadline, what
            time.sleep(0.02)

    try:
        until(lambda: len(lines("events.jsonl")) >= 5, "the bootstrap")
        session_id, password = reader._client.client_id
        cluster.write_state(T, 0, 1, 0, [1, 2])  # AlterPartition, while the session goes
        thief = KazooClient(hosts=cluster.connect, client_id=(session_id, password))
        thief.start(timeout=30)
        thief.stop()
        thief.close()
        until(
            lambda: any("session lost" in r.getMessage() for r in caplog.records),
            "the bridge never saw its session lost",
        )
        until(lambda: len(lines("verdicts.jsonl")) >= 2, "the write was never checked")
        cluster.write_state(T, 0, 1, 0, [1, 2, 3])  # and after: the new session's watches
        until(lambda: len(lines("verdicts.jsonl")) >= 4, "the next write was never checked")
    finally:
        stop.set()
        thread.join(30)
    verdicts = [json.loads(v) for v in lines("verdicts.jsonl")]
    assert [(v["verdict"], v["version"]) for v in verdicts] == [
        ("inferred", 1),
        ("match", 1),
        ("inferred", 2),
        ("match", 2),
    ]
    assert reader._client is None or reader._client.client_id[0] != session_id
