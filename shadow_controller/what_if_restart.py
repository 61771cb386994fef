"""`shadow-controller what-if --restart-broker ID`: is it safe to restart broker ID now?

A rolling restart takes a broker through three phases, and each is folded into the state
with what-if's fold (`what_if.advance`), one after the other, as the job would apply them:

1. its **controlled shutdown** (`ControlledShutdown` at its broker epoch): the ZK
   controller moves leadership off it and shrinks ISRs, but leaves where they are the
   partitions it alone holds in the ISR (`partitionsRemaining`);
2. the broker **going away** (`BrokerFailure`: its ZooKeeper session ends), when those go
   offline (no live ISR replica) unless unclean election is allowed;
3. its **return** (`BrokerStartup` at a broker epoch above every one the controller knows,
   as a new registration's czxid is).

Each phase is compared with the state before the restart (`health`'s rules): the
partitions offline, or under their min ISR, then that were not before. The answer ends
with one verdict line naming them, with the phase and the offset they go at, and the exit
code is `health`'s for the worst phase (7 offline, 6 under min ISR, 0 safe): the bar
Strimzi's rolling update sets, which refuses a roll that takes a partition below
min.insync.replicas. A partition already offline or under its min ISR before the restart
makes it unsafe too, and the verdict says so.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from state_machines.loop import RawEvent

from . import health
from .controller_state import ControllerState
from .what_if import WhatIfError, advance, event_bytes, newly
from .what_if_render import decision_line, harm_line

PHASES = (
    ("controlled shutdown", "during its controlled shutdown"),
    ("down", "while it is down"),
    ("back", "after it returns"),
)


def restart_broker(state: ControllerState, broker: int) -> dict[str, Any]:
    """Settle `state`, then fold broker `broker`'s restart phase by phase: its
    ControlledShutdown (at its broker epoch), its BrokerFailure, and its BrokerStartup at
    a broker epoch above every one the controller knows (a new registration's czxid). The
    state is changed."""
    brokers = health.brokers_of(state)
    fact = brokers[broker].fact if broker in brokers else None
    if fact is None or not fact.live:
        live = sorted(b for b, r in brokers.items() if r.fact.live)
        why = "not known to the controller" if fact is None else "not live"
        raise WhatIfError(
            f"--restart-broker {broker}: broker {broker} is {why} at batch {state.batch} "
            f"(live: {', '.join(map(str, live)) or 'none'})"
        )
    owed = advance(state)
    before = health.report(state)
    epochs = [r.fact.broker_epoch for r in brokers.values() if r.fact.broker_epoch is not None]
    events = (
        {"type": "ControlledShutdown", "broker_id": broker, "broker_epoch": fact.broker_epoch},
        {"type": "BrokerFailure", "broker_id": broker},
        {"type": "BrokerStartup", "broker_id": broker, "broker_epoch": max(epochs, default=0) + 1},
    )
    phases = []
    codes = [health.exit_code(before)]
    for (name, when), doc in zip(PHASES, events, strict=True):
        offset = state.next_offset
        fold = advance(
            state, [RawEvent(offset, event_bytes(doc), f"--restart-broker {broker}: {name}")]
        )
        state.next_offset = offset + 1
        now = health.report(state)
        codes.append(health.exit_code(now))
        phases.append(
            {
                "phase": name,
                "when": when,
                "offset": offset,
                "event": doc,
                "decisions": fold.decisions,
                "decisions_by_type": dict(
                    sorted(Counter(d["type"] for d in fold.decisions).items())
                ),
                **newly(before, now),
                "status": now["status"],
            }
        )
    return {
        "checkpoint": state.checkpoint,
        "batch": state.batch,
        "latest_committed": state.latest,
        "broker": broker,
        "owed_decisions": len(owed.decisions),
        "already_offline": [r["partition"] for r in before["offline"]],
        "already_under_min_isr": [r["partition"] for r in before["under_min_isr"]],
        "phases": phases,
        "verdict": verdict(broker, phases, before),
        "exit_code": max(codes),
    }


def verdict(broker: int, phases: list[dict[str, Any]], before: dict[str, Any]) -> str:
    """One line: whether restarting `broker` takes any partition offline or under its min
    ISR, which, and in which phase (at which offset)."""
    harms = []
    last = phases[-1]
    for p in phases:
        for key, label in (("newly_offline", "offline"), ("newly_under_min_isr", "under min ISR")):
            if p[key]:
                names = [r["partition"] for r in p[key]]
                back = p is not last and not {n for n in names} & {
                    r["partition"] for r in last[key]
                }
                harms.append(
                    f"{', '.join(names)} {label} {p['when']} (offset {p['offset']})"
                    + (" until it returns" if back else "")
                )
    already = [
        *(f"{r['partition']} offline" for r in before["offline"]),
        *(f"{r['partition']} under min ISR" for r in before["under_min_isr"]),
    ]
    tail = f"; already before it: {', '.join(already)}" if already else ""
    if harms:
        return f"verdict: NOT SAFE to restart broker {broker}: {'; '.join(harms)}{tail}"
    if already:
        return (
            f"verdict: NOT SAFE to restart broker {broker}: the restart itself takes no "
            f"partition offline or under its min ISR{tail}"
        )
    return (
        f"verdict: safe to restart broker {broker}: no partition goes offline or under its "
        "min ISR during its controlled shutdown, while it is down, or after it returns"
    )


def render_restart(result: dict[str, Any], limit: int) -> str:
    out = [
        f"what-if: restart broker {result['broker']} at batch {result['batch']} (latest committed: "
        f"{result['latest_committed']}); the checkpoint is not changed"
    ]
    if result["owed_decisions"]:
        out.append(
            f"  first, {result['owed_decisions']} decisions the job still owes for what it has read"
        )
    for i, p in enumerate(result["phases"], 1):
        counts = ", ".join(f"{n} {t}" for t, n in p["decisions_by_type"].items()) or "none"
        out.append("")
        out.append(
            f"{i}. {p['phase']} (offset {p['offset']}: "
            f"{json.dumps(p['event'], separators=(',', ':'))})"
        )
        out.append(f"  decisions: {len(p['decisions'])} ({counts})")
        out += ["    " + decision_line(d) for d in p["decisions"][:limit]]
        if len(p["decisions"]) > limit:
            out.append(
                f"    ... and {len(p['decisions']) - limit} more (--limit, or --json for all)"
            )
        out.append(f"  {harm_line(p)}; status: {p['status']}")
    out += ["", result["verdict"]]
    return "\n".join(out) + "\n"
