"""The text view of `shadow-controller health` (health.py): its report, plain data, as the
lines an operator reads, ending with the status line (`--json` prints the report itself).

The rows and their Kafka rules are health.py's; this module only words them.
"""

from __future__ import annotations

from typing import Any


def ids_text(values: list[int]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def _duration(ms: int) -> str:
    seconds = ms // 1000
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def render(result: dict[str, Any]) -> str:
    b = result["brokers"]
    head = (
        f"batch {result['batch']} (latest committed: {result['latest_committed']}); "
        f"{result['partitions']} partitions; "
        f"brokers live {ids_text(b['live'])}, shutting down {ids_text(b['shutting_down'])}, down "
        f"{ids_text(b['down'])}"
    )
    out = [head]
    held = result["held"]
    if held["cause"] is not None or held["events"]:
        what = [
            *([f"cause {held['cause']}"] if held["cause"] is not None else []),
            *([f"events {ids_text(held['events'])}"] if held["events"] else []),
        ]
        out.append(
            f"  note: the job still holds {' and '.join(what)}; this is the state before "
            f"{'they are' if len(what) > 1 or len(held['events']) > 1 else 'it is'} applied"
        )
    out.append("")
    out.append(f"offline partitions: {len(result['offline'])}")
    for r in result["offline"]:
        dead = ", ".join(f"{k} {v}" for k, v in r["dead_replicas"].items()) or "none"
        unclean = r["unclean_election"]
        out.append(
            f"  {r['partition']}  {r['state']}  replicas {ids_text(r['replicas'])}  isr "
            f"{ids_text(r['isr'])}  "
            f"dead: {dead}  unclean election {'allowed' if unclean['allowed'] else 'disabled'} "
            f"({unclean['source']})"
        )
        out.append(f"      why: {r['why']}")
    urp = result["under_replicated"]
    out.append(f"under-replicated partitions: {len(urp)}")
    for r in urp:  # kafka-topics --describe --under-replicated-partitions's line
        out.append(
            f"  Topic: {r['topic']}  Partition: {r['partition_id']}  "
            f"Leader: {r['leader'] if r['leader'] >= 0 else 'none'}  "
            f"Replicas: {','.join(map(str, r['replicas']))}  Isr: {','.join(map(str, r['isr']))}"
        )
    for name, rows in (
        ("under min ISR", result["under_min_isr"]),
        ("at min ISR", result["at_min_isr"]),
    ):
        out.append(f"{name}: {len(rows)}")
        for r in rows:
            out.append(
                f"  {r['partition']}  leader {r['leader']}  isr {ids_text(r['isr'])}  replicas "
                f"{ids_text(r['replicas'])}  "
                f"min.insync.replicas {r['min_insync_replicas']} "
                f"({r['min_insync_replicas_source']})"
            )
    out.append(f"reassignments in progress: {len(result['reassignments'])}")
    for r in result["reassignments"]:
        if r["started_offset"] is None:
            age = "started before this controller's log (age unknown)"
        else:
            n = r["events_since"]
            age = f"asked at offset {r['started_offset']}, {n} event{'' if n == 1 else 's'}"
            age += (
                f" and {_duration(r['age_ms'])} of event time ago"
                if r["age_ms"] is not None
                else " ago (no event time: the events carry no ts)"
            )
        stuck = (
            f"stuck: target {ids_text(r['target_not_in_isr'])} not in the ISR"
            + (
                f" ({', '.join(f'{k} {v}' for k, v in r['target_not_online'].items())})"
                if r["target_not_online"]
                else ""
            )
            if r["stuck"]
            else "every target replica is in the ISR"
        )
        out.append(
            f"  {r['partition']}  {ids_text(r['replicas'])} -> {ids_text(r['target'])}  adding "
            f"{ids_text(r['adding'])}  "
            f"removing {ids_text(r['removing'])}  isr {ids_text(r['isr'])}  {age}; {stuck}"
        )
    li = result["leader_imbalance"]
    over = [x for x in li["brokers"] if x["over_threshold"]]
    out.append(
        f"leader imbalance (leader.imbalance.per.broker.percentage {li['percentage']}, auto "
        "rebalance "
        f"{'on' if li['auto_rebalance'] else 'off'}): {len(over)} "
        f"broker{'' if len(over) == 1 else 's'} over"
    )
    for x in li["brokers"]:
        out.append(
            f"  broker {x['broker']}: {x['led_by_another']} of {x['preferred_partitions']} "
            "preferred partitions "
            "led by another broker "
            f"({x['imbalance_percent']}%){'  OVER' if x['over_threshold'] else ''}"
        )
    out.append(f"brokers shutting down: {len(result['shutting_down'])}")
    for s in result["shutting_down"]:
        out.append(
            f"  broker {s['broker']} still leads {len(s['leads'])}: {', '.join(s['leads']) or '-'}"
            " (replicated, what ControlledShutdown reports: "
            f"{', '.join(s['leads_replicated']) or 'none'})"
        )
    out.append("")
    out.append(status_line(result))
    return "\n".join(out) + "\n"


def status_line(result: dict[str, Any]) -> str:
    """`status: <worst>; <n> offline, <n> under min ISR, <n> of <N> under-replicated`."""
    head = {
        "offline": "OFFLINE partitions",
        "under_min_isr": "partitions UNDER MIN ISR",
        "under_replicated": "partitions UNDER-REPLICATED",
        "ok": "ok",
    }[result["status"]]
    return (
        f"status: {head}; {len(result['offline'])} offline, "
        f"{len(result['under_min_isr'])} under min ISR, "
        f"{len(result['under_replicated'])} of {result['partitions']} under-replicated"
    )
