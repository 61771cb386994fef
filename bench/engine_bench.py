"""Benchmark of the in-process engine (not a test).

Generates a cluster log: B brokers register, a controller is elected over the empty
cluster, topics are created until P partitions exist (replication factor RF, replicas
placed round-robin like Kafka's rack-unaware assignment), then one broker fails and another
shuts down cleanly. Prints, per phase, events, decision records, wall time, events/s and
decisions/s, and the process's peak resident memory. Each event runs under the collector
policy `simulate` runs the engine with (`streaming/collector.process_settled`).

    .venv/bin/python bench/engine_bench.py --partitions 100000 --brokers 30
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming.collector import collect_less, process_settled


def _leader_after_failure(replicas: list[int], failed: int) -> int:
    return next(r for r in replicas if r != failed)


def cluster_log(
    brokers: int,
    partitions: int,
    rf: int,
    partitions_per_topic: int,
    full: bool = False,
    shutdown_broker: int | None = None,
) -> dict[str, list[dict]]:
    """The phases of the benchmark log. `full` adds the scale story: a controller failover
    over the loaded cluster, the failed broker's return and a preferred election of every
    partition. The controlled shutdown is of `shutdown_broker` (default: one leading P/B
    partitions, the size of Kafka's published anchor)."""
    phases: dict[str, list[dict]] = {}
    phases["register brokers"] = [
        {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b}
        for b in range(1, brokers + 1)
    ]
    phases["controller failover (empty)"] = [
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1}
    ]
    creations = []
    made = 0
    topic = 0
    while made < partitions:
        count = min(partitions_per_topic, partitions - made)
        assignment = {}
        for p in range(count):
            first = (made + p) % brokers
            assignment[str(p)] = [((first + i) % brokers) + 1 for i in range(rf)]
        creations.append(
            {
                "v": 1,
                "type": "TopicCreation",
                "topic": f"topic-{topic:05d}",
                "partitions": assignment,
            }
        )
        made += count
        topic += 1
    phases[f"create {partitions} partitions"] = creations
    if full:
        phases[f"controller failover ({partitions})"] = [
            {"v": 1, "type": "ControllerFailover", "controller_id": 2, "controller_epoch": 2}
        ]
    phases["broker 1 fails"] = [{"v": 1, "type": "BrokerFailure", "broker_id": 1}]
    # Kafka's anchor is a broker leading P/B partitions. Broker 2 would lead twice that: it
    # follows broker 1 in a third of the assignments and takes over their leadership when
    # 1 fails. The broker half-way round the ring is untouched by 1's failure.
    down = shutdown_broker or (brokers // 2 + 1 if brokers >= 4 else 2)
    leads = sum(
        1
        for c in creations
        for replicas in c["partitions"].values()
        if _leader_after_failure(replicas, failed=1) == down
    )
    phases[f"broker {down} controlled shutdown (leads {leads})"] = [
        {"v": 1, "type": "ControlledShutdown", "broker_id": down, "broker_epoch": 100 + down}
    ]
    if full:
        phases["broker 1 returns"] = [
            {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 201}
        ]
        phases["preferred election (all)"] = [
            {
                "v": 1,
                "type": "ReplicaLeaderElection",
                "election_type": "PREFERRED",
                "partitions": None,
            }
        ]
    return phases


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--rf", type=int, default=3)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--full", action="store_true", help="the scale story (see cluster_log)")
    ap.add_argument(
        "--shutdown-broker", type=int, help="the broker shut down (default: one leading P/B)"
    )
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args()

    phases = cluster_log(
        args.brokers,
        args.partitions,
        args.rf,
        args.partitions_per_topic,
        args.full,
        args.shutdown_broker,
    )
    engine = Engine(ControllerConfig())
    collect_less()  # the collector policy simulate runs the engine with (streaming/collector.py)
    offset = 0
    rows = []
    total_events = total_decisions = 0
    total_seconds = 0.0
    print(f"in-process engine: {args.partitions} partitions, RF {args.rf}, {args.brokers} brokers")
    print(
        f"{'phase':34} {'events':>8} {'decisions':>10} {'seconds':>9} {'events/s':>10} "
        f"{'decisions/s':>12}"
    )
    for name, events in phases.items():
        envelopes = []
        for obj in events:
            envelopes.append(parse_event(obj, offset))
            offset += 1
        decisions = 0
        start = time.perf_counter()
        for env in envelopes:
            decisions += len(process_settled(engine, env))
        seconds = time.perf_counter() - start
        total_events += len(envelopes)
        total_decisions += decisions
        total_seconds += seconds
        row = {
            "phase": name,
            "events": len(envelopes),
            "decisions": decisions,
            "seconds": round(seconds, 3),
            "events_per_s": round(len(envelopes) / seconds, 1) if seconds else None,
            "decisions_per_s": round(decisions / seconds, 1) if seconds else None,
        }
        rows.append(row)
        print(
            f"{name:34} {len(envelopes):>8} {decisions:>10} {seconds:>9.3f} "
            f"{row['events_per_s'] or 0:>10.1f} {row['decisions_per_s'] or 0:>12.1f}"
        )
    print(
        f"{'total':34} {total_events:>8} {total_decisions:>10} {total_seconds:>9.3f} "
        f"{total_events / total_seconds:>10.1f} {total_decisions / total_seconds:>12.1f}"
    )
    print(f"peak resident memory: {peak_rss_mib():.0f} MiB")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"args": vars(args), "phases": rows, "peak_rss_mib": peak_rss_mib()}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
