"""The text view of `shadow-controller what-if` (what_if.py, what_if_restart.py): each
decision as one line, then the impact (what goes offline or under its min ISR, the unclean
elections, the leaders moved, each controlled shutdown's reply) and the harm a stopped
broker would do. `--json` prints the result itself.
"""

from __future__ import annotations

import json
from typing import Any

from state_machines.outputs import contract_key

# -- rendering -------------------------------------------------------------------------------

_HEAD = ("v", "type", "cause_offset", "cause_id", "seq", "topic", "partition")


def decision_line(d: dict[str, Any]) -> str:
    where = contract_key(d)
    t = d["type"]
    if t == "UpdateMetadata":
        where = "metadata"
        names = (
            ", ".join(f"{p['topic']}-{p['partition']}" for p in d["partitions"]) or "no partitions"
        )
        what = f"{names} to {_ids(d['recipients'])}"
    elif t == "LeaderAndIsr":
        what = (
            f"leader {d['leader']} epoch {d['leader_epoch']} isr {_ids(d['isr'])} replicas "
            f"{_ids(d['replicas'])}"
            f"{' (' + d['election'] + ' election)' if d['election'] else ''} to "
            f"{_ids(d['recipients'])}"
        )
    elif t == "PartitionStateChange":
        what = f"{d['from_state']} -> {d['to_state']}"
    elif t == "ReplicaStateChange":
        what = f"replica {d['broker_id']} {d['from_state']} -> {d['to_state']}"
    elif t == "StopReplica":
        what = f"to broker {d['broker_id']}{' delete' if d['delete_partition'] else ''}"
    elif t == "StateChangeFailed":
        what = (
            f"{'replica ' + str(d['broker_id']) + ' ' if d['broker_id'] is not None else ''}"
            f"to {d['target_state']}: {d['reason']}"
        )
    elif t == "ControlledShutdownResult":
        what = (
            f"refused: {d['error']}"
            if d["error"]
            else f"accepted, still leads {', '.join(d['partitions_remaining']) or 'nothing'}"
        )
    else:
        what = json.dumps({k: v for k, v in d.items() if k not in _HEAD}, separators=(",", ":"))
    return f"{d['cause_offset']:>6} {where:<20} {t:<24} {what}"


def _ids(values: list[int]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def render(result: dict[str, Any], limit: int) -> str:
    out = [
        f"what-if at batch {result['batch']} (latest committed: {result['latest_committed']}); "
        "the checkpoint is "
        "not changed"
    ]
    for e in result["events"]:
        out.append(
            f"  offset {e['offset']} ({e['source']}): "
            f"{json.dumps(e['event'], separators=(',', ':'))}"
        )
    if result["owed_decisions"]:
        out.append(
            f"  first, {result['owed_decisions']} decisions the job still owes for what it has read"
        )
    decisions = result["decisions"]
    counts = ", ".join(f"{n} {t}" for t, n in result["decisions_by_type"].items()) or "none"
    out += ["", f"decisions: {len(decisions)} ({counts})"]
    out += ["  " + decision_line(d) for d in decisions[:limit]]
    if len(decisions) > limit:
        out.append(f"  ... and {len(decisions) - limit} more (--limit, or --json for all)")
    for d in result["dead_letters"]:
        out.append(f"dead letter: {d['source']} (offset {d['offset']}): {d['reason']}")
    imp = result["impact"]
    out += ["", "impact:"]
    for key, label in (("offline", "offline"), ("under_min_isr", "under min ISR")):
        newly = imp[f"newly_{key}"]
        out.append(f"  would go {label}: {len(newly)}")
        for r in newly:
            detail = (
                f"why: {r['why']}"
                if key == "offline"
                else f"isr {_ids(r['isr'])}, min.insync.replicas {r['min_insync_replicas']}"
            )
            out.append(f"    {r['partition']}  {detail}")
        if imp[f"no_longer_{key}"]:
            out.append(f"  would no longer be {label}: {', '.join(imp[f'no_longer_{key}'])}")
    out.append(f"  unclean elections: {len(imp['unclean_elections'])}")
    for u in imp["unclean_elections"]:
        out.append(
            f"    {u['partition']}  leader {u['leader']} (epoch {u['leader_epoch']}), isr "
            f"{_ids(u['isr'])}"
        )
    moved = imp["leaders_moved"]
    out.append(f"  leaders moved: {len(moved['partitions'])}")
    for b in moved["brokers"]:
        out.append(
            f"    broker {b['broker']}: leads {b['led_before']} -> {b['led_after']} "
            f"(lost {b['lost']}, gained {b['gained']})"
        )
    for m in moved["partitions"][:limit]:
        out.append(f"    {m['partition']}  {m['from']} -> {m['to']}")
    if len(moved["partitions"]) > limit:
        out.append(f"    ... and {len(moved['partitions']) - limit} more")
    stopped = {w["broker"]: w for w in result.get("when_stopped", ())}
    for s in imp["controlled_shutdown"]:
        if s["error"]:
            out.append(f"  controlled shutdown of broker {s['broker']}: refused, {s['error']}")
            continue
        remaining = s["partitions_remaining"]
        out.append(
            f"  controlled shutdown of broker {s['broker']}: accepted; still leads "
            f"{len(remaining)}: {', '.join(remaining) or 'nothing'}"
        )
        w = stopped.get(s["broker"])
        if w is not None:
            out.append(f"    when broker {s['broker']} stops: {harm_line(w)}")
    out.append(f"  status: {result['status_before']} -> {result['status_after']}")
    return "\n".join(out) + "\n"


def harm_line(p: dict[str, Any]) -> str:
    """`would go offline: 2 (orders-1, orders-2); under min ISR: 0`."""
    parts = []
    for key, label in (
        ("newly_offline", "would go offline"),
        ("newly_under_min_isr", "under min ISR"),
    ):
        names = [r["partition"] for r in p[key]]
        parts.append(f"{label}: {len(names)}" + (f" ({', '.join(names)})" if names else ""))
    return "; ".join(parts)
