"""How long `bridge --zookeeper` takes to read a cluster at start: a standalone ZooKeeper
loaded by the test cluster writer (tests/zookeeper/kafka_zk.py's encoders) with TOPICS x
PARTITIONS partitions (replicas of 3 over 6 brokers, every state znode written), then the
bridge's first read (`ZkReader.read_all`: every znode, with watches) and its bootstrap
(`zk_events.bootstrap` + the checker's engine) timed apart.

    .venv/bin/python -m bench.zk_bridge_startup --topics 1000 --partitions 100 --record

`--record` writes the figures as JSON under bench/results/zk_bridge_startup/.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.record import RESULTS_DIR, commit, machine
from shadow_controller.zk_bridge import states_of
from shadow_controller.zk_checks import Checker
from shadow_controller.zk_events import bootstrap
from shadow_controller.zk_reader import ZkReader
from shadow_controller.zk_state import StateFile
from state_machines.model import ControllerConfig
from tests.zookeeper.kafka_zk import KafkaZkCluster, _topic_id, state_znode, topic_znode
from tests.zookeeper.zk_server import ZooKeeperServer


def load(cluster: KafkaZkCluster, topics: int, partitions: int, brokers: int) -> None:
    zk = cluster.admin
    for t in range(topics):
        name = f"topic-{t:05d}"
        assignment = {
            p: ([(t + p + i) % brokers + 1 for i in range(3)], [], []) for p in range(partitions)
        }
        zk.create(f"/config/topics/{name}", b'{"version":1,"config":{}}')
        zk.create(f"/brokers/topics/{name}", topic_znode(_topic_id(), assignment))
        pending = [zk.create_async(f"/brokers/topics/{name}/partitions")]
        for r in pending:
            r.get()
        pending = [
            zk.create_async(f"/brokers/topics/{name}/partitions/{p}") for p in range(partitions)
        ]
        for r in pending:
            r.get()
        pending = [
            zk.create_async(
                f"/brokers/topics/{name}/partitions/{p}/state",
                state_znode(replicas[0], 0, replicas, 1),
            )
            for p, (replicas, _, _) in assignment.items()
        ]
        for r in pending:
            r.get()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--brokers", type=int, default=6)
    ap.add_argument("--record", action="store_true", help="write the figures under bench/results")
    args = ap.parse_args()
    head, started = commit(), time.time()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir="/tmp") as root:
        server = ZooKeeperServer(Path(root))
        server.start()
        try:
            cluster = KafkaZkCluster(server.connect)
            for b in range(1, args.brokers + 1):
                cluster.start_broker(b)
            cluster.elect_controller(1)
            t0 = time.perf_counter()
            load(cluster, args.topics, args.partitions, args.brokers)
            print(
                f"loaded {args.topics * args.partitions:,} partitions in "
                f"{time.perf_counter() - t0:.1f} s"
            )
            reader = ZkReader(server.connect, 30.0)
            reader.start()
            t1 = time.perf_counter()
            nodes = reader.read_all()
            t2 = time.perf_counter()
            checker = Checker(ControllerConfig(auto_leader_rebalance_enable=False))
            events = checker.prime(bootstrap(nodes), states_of(nodes))
            t3 = time.perf_counter()
            reader.stop()
            t4 = time.perf_counter()
            StateFile(f"{root}/state.json", server.connect).save(nodes)
            save_s = time.perf_counter() - t4
            print(
                f"state file: {Path(root, 'state.json').stat().st_size / 2**20:.1f} MiB "
                f"written in {save_s:.2f} s (after every batch)"
            )
            print(f"read_all: {len(nodes):,} znodes in {t2 - t1:.2f} s (with watches)")
            print(f"bootstrap: {len(events):,} events through the engine in {t3 - t2:.2f} s")
            print(f"start-up total: {t3 - t1:.2f} s")
            figures.update(
                znodes=len(nodes),
                read_all_s=round(t2 - t1, 2),
                bootstrap_events=len(events),
                bootstrap_s=round(t3 - t2, 2),
                startup_s=round(t3 - t1, 2),
                state_file_s=round(save_s, 2),
            )
            cluster.close()
        finally:
            server.stop()
    if args.record:
        partitions = args.topics * args.partitions
        doc = {
            "format": 1,
            "bench": "zk_bridge_startup",
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "commit": head,
            "machine": machine(),
            "args": {**vars(args), "partitions_total": partitions},
            "figures": figures,
        }
        out_dir = RESULTS_DIR / "zk_bridge_startup"
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
        out = out_dir / f"{stamp}-{partitions}p-{(head['sha'] or 'nogit')[:8]}.json"
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"recorded: {out.relative_to(RESULTS_DIR.parents[1])}")


if __name__ == "__main__":
    main()
