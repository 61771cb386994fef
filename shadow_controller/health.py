"""`shadow-controller health --checkpoint DIR [--batch N] [--json]`: what an operator asks
of a Kafka controller, answered from the shadow's state at one micro-batch.

- **Offline partitions** and why each has no leader. Kafka's offline election
  (`OfflinePartitionLeaderElectionStrategy`) takes the first replica of the assignment that
  is live (its broker registered, not shutting down, and its log dir not failed:
  `isReplicaOnline`) and in the ISR, else, when unclean election is allowed for the topic,
  the first live replica. A partition is offline (`OfflinePartition`, or `NewPartition`
  never elected) when neither exists; the report names the dead replicas, the ISR, and
  where the unclean setting came from: the topic's config over the cluster's dynamic
  default (`BrokerConfigChange`) over the job's static setting. Like Kafka's
  `OfflinePartitionsCount`, topics queued for deletion are left out.
- **Under and at min ISR**: an online partition whose ISR is smaller than (equal to) its
  `min.insync.replicas`: the topic's config, else the cluster's dynamic default, else the
  job's `controller.min.insync.replicas` (Kafka's default 1). This is what an `acks=all`
  produce checks (`Partition.appendRecordsToLeader`), not the metrics' effective min ISR,
  which a replication factor below the setting caps.
- **Under-replicated partitions**, as `kafka-topics --describe
  --under-replicated-partitions` lists them (`TopicCommand.PartitionDescription
  .isUnderReplicated`): an ISR smaller than the replication factor, which during a
  reassignment is the replicas less the adding ones. They do not change the exit code; the
  status line counts them.
- **Reassignments in progress** (KIP-455: adding or removing replicas), with their age in
  events (and in event time, when the events carry `ts`) since the request that started
  them, and the target replicas not yet in the ISR: a reassignment completes only when
  every target replica is in the ISR (`KafkaController.isReassignmentComplete`), so those
  are the ones it is stuck on, adding or not.
- **Leader imbalance** per broker, as `checkAndTriggerAutoLeaderRebalance` computes it
  (`state_machines.leader_balance.imbalance`) against
  `leader.imbalance.per.broker.percentage`.
- **Brokers shutting down**, and the partitions each still leads (those with more than
  one replica are what its `ControlledShutdownResult` would list).

`report()` is plain data from a `ControllerState`; `render()` (health_render.py) and
`--json` are two views.
The exit code says what was found: `exits.OFFLINE` when a partition is offline,
`exits.UNDER_MIN_ISR` when none is but one is under its min ISR, 0 otherwise (an
under-replicated partition alone is status `under_replicated`, exit 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from state_machines.directory import BrokerRecord, TopicRecord, topic_key
from state_machines.leader_balance import imbalance
from state_machines.model import MIN_ISR_DYNAMIC, MIN_ISR_STATIC, MIN_ISR_TOPIC, UNKNOWN_BROKER
from state_machines.partition import PartitionRecord
from state_machines.partition_summaries import summary_of
from state_machines.states import PartitionState
from streaming import exits

from .controller_state import ControllerState, check_checkpoint, load_state
from .health_render import ids_text, render

BROKER_PREFIX = "broker-"
UNCLEAN = "unclean.leader.election.enable"
_NOT_ELECTED = (PartitionState.OfflinePartition, PartitionState.NewPartition)


# -- what the directory says of brokers and topics -----------------------------------------


def brokers_of(state: ControllerState) -> dict[int, BrokerRecord]:
    return {
        int(k[len(BROKER_PREFIX) :]): v
        for k, v in state.directory.items()
        if k.startswith(BROKER_PREFIX) and isinstance(v, BrokerRecord)
    }


def _topic(state: ControllerState, topic: str) -> TopicRecord | None:
    rec = state.directory.get(topic_key(topic))
    return rec if isinstance(rec, TopicRecord) else None


def unclean_setting(state: ControllerState, topic: str) -> tuple[bool, str]:
    """The topic's effective unclean.leader.election.enable and where it comes from."""
    rec = _topic(state, topic)
    configs = dict(rec.configs) if rec else {}
    dynamic = state.controller.dynamic_configs
    enabled = state.config.unclean_enabled_for(configs, dynamic)
    if UNCLEAN in configs:
        source = "topic config"
    elif UNCLEAN in dict(dynamic):
        source = "cluster dynamic config (BrokerConfigChange)"
    else:
        source = "cluster setting"
    return enabled, source


_MIN_ISR_SOURCES = {
    MIN_ISR_TOPIC: "topic config",
    MIN_ISR_DYNAMIC: "cluster dynamic config (BrokerConfigChange)",
    MIN_ISR_STATIC: "cluster setting",
}


def min_isr_setting(state: ControllerState, topic: str) -> tuple[int, str]:
    """The topic's min.insync.replicas and where it comes from: the core's resolution
    (`ControllerConfig.min_isr_for`), as the job's min-ISR metrics take it."""
    rec = _topic(state, topic)
    value, level = state.config.min_isr_for(
        rec.configs if rec else (), state.controller.dynamic_configs
    )
    return value, _MIN_ISR_SOURCES[level]


def _queued(state: ControllerState, topic: str) -> bool:
    rec = _topic(state, topic)
    return bool(rec and rec.queued)


# -- liveness as the partition sees it -----------------------------------------------------


def replica_status(brokers: dict[int, BrokerRecord], rec: PartitionRecord, broker: int) -> str:
    """ "online", or why the replica is not (`isReplicaOnline`)."""
    b = brokers.get(broker)
    fact = b.fact if b else UNKNOWN_BROKER
    if not fact.registered:
        return "broker down" if b is not None else "broker unknown"
    if fact.shutting_down:
        return "broker shutting down"
    if broker in rec.offline_dirs:
        return "log dir failed"
    return "online"


def _leader(rec: PartitionRecord) -> int:
    return rec.leadership.leader if rec.leadership else -1


def _isr(rec: PartitionRecord) -> list[int]:
    return list(rec.leadership.isr) if rec.leadership else []


def is_offline(rec: PartitionRecord, registered: frozenset[int]) -> bool:
    """No leader: not elected (Offline or New), or an online partition whose leader is not
    serving (`registered`: the brokers live or shutting down). A leader on a broker shutting
    down still serves (a controlled shutdown leaves a partition without another replica
    where it is, still OnlinePartition in Kafka)."""
    if rec.state in _NOT_ELECTED:
        return True
    leader = _leader(rec)
    return rec.state is PartitionState.OnlinePartition and (
        leader not in registered or leader in rec.offline_dirs
    )


# -- the report ------------------------------------------------------------------------------


def _offline_row(
    state: ControllerState, brokers: dict[int, BrokerRecord], rec: PartitionRecord
) -> dict[str, Any]:
    replicas = list(rec.assignment.replicas)
    isr = _isr(rec)
    status = {b: replica_status(brokers, rec, b) for b in replicas}
    dead = {str(b): s for b, s in status.items() if s != "online"}
    live = [b for b in replicas if status[b] == "online"]
    live_isr = [b for b in live if b in isr]
    unclean, unclean_source = unclean_setting(state, rec.topic)
    if not live:
        why = "no replica is live" + (" (unclean election would not help)" if not unclean else "")
    elif live_isr:
        why = f"ISR replica {live_isr[0]} is live: the controller elects it at its next retry"
    elif unclean:
        why = (
            f"no ISR replica is live; unclean election is allowed and would elect {live[0]} "
            "at the next retry"
        )
    else:
        why = (
            f"no ISR replica is live, and unclean election is disabled ({unclean_source}) for "
            "the live "
            f"out-of-sync replica{'s' if len(live) > 1 else ''} {ids_text(live)}"
        )
    return {
        "partition": f"{rec.topic}-{rec.partition}",
        "state": rec.state.value if rec.state else "NonExistentPartition",
        "leader": _leader(rec),
        "replicas": replicas,
        "isr": isr,
        "dead_replicas": dead,
        "unclean_election": {"allowed": unclean, "source": unclean_source},
        "why": why,
    }


def _reassignment_row(
    state: ControllerState, brokers: dict[int, BrokerRecord], rec: PartitionRecord
) -> dict[str, Any]:
    a = rec.assignment
    isr = _isr(rec)
    # isReassignmentComplete: targetReplicas.subsetOf(isr)
    waiting = [b for b in a.target_replicas if b not in isr]
    started = rec.reassignment_started
    events_since = age_ms = None
    if started is not None:
        events_since = max(0, state.next_offset - 1 - started[0])
        now = state.controller.event_time
        if started[1] is not None and now is not None:
            age_ms = max(0, now - started[1])
    return {
        "partition": f"{rec.topic}-{rec.partition}",
        "replicas": list(a.replicas),
        "target": list(a.target_replicas),
        "adding": list(a.adding_replicas),
        "removing": list(a.removing_replicas),
        "isr": isr,
        "leader": _leader(rec),
        "started_offset": started[0] if started else None,
        "started_ts": started[1] if started else None,
        "events_since": events_since,
        "age_ms": age_ms,
        "target_not_in_isr": waiting,
        "target_not_online": {
            str(b): s for b in waiting if (s := replica_status(brokers, rec, b)) != "online"
        },
        "stuck": bool(waiting),
    }


def _under_replicated_row(rec: PartitionRecord) -> dict[str, Any] | None:
    """`TopicCommand.PartitionDescription.isUnderReplicated`: the replication factor (the
    replicas, less the adding ones during a reassignment: `getReplicationFactor`) exceeds
    the ISR's size. None when it does not."""
    a = rec.assignment
    factor = len(a.replicas) - len(a.adding_replicas)
    isr = _isr(rec)
    if factor - len(isr) <= 0:
        return None
    return {
        "partition": f"{rec.topic}-{rec.partition}",
        "topic": rec.topic,
        "partition_id": rec.partition,
        "leader": _leader(rec),
        "replicas": list(a.replicas),
        "isr": isr,
        "replication_factor": factor,
    }


def report(state: ControllerState) -> dict[str, Any]:
    """The health of the controller's state, as plain data."""
    brokers = brokers_of(state)
    registered = frozenset(b for b, r in brokers.items() if r.fact.registered)
    offline, under, at_min, moving, under_replicated = [], [], [], [], []
    summaries = []
    topics: dict[str, tuple[bool, int, str]] = {}  # per topic: queued, min ISR and its source
    for (topic, p), rec in sorted(state.partitions.items()):
        known = topics.get(topic)
        if known is None:
            known = topics[topic] = (_queued(state, topic), *min_isr_setting(state, topic))
        queued, min_isr, source = known
        if not queued:
            s = summary_of(rec)
            if s is not None:
                summaries.append((topic, p, s))
        if is_offline(rec, registered):
            if not queued:
                offline.append(_offline_row(state, brokers, rec))
        else:
            isr = _isr(rec)
            row = {
                "partition": f"{topic}-{p}",
                "leader": _leader(rec),
                "isr": isr,
                "replicas": list(rec.assignment.replicas),
                "min_insync_replicas": min_isr,
                "min_insync_replicas_source": source,
            }
            if len(isr) < min_isr:
                under.append(row)
            elif len(isr) == min_isr:
                at_min.append(row)
        if rec.assignment.is_being_reassigned:
            moving.append(_reassignment_row(state, brokers, rec))
        row_urp = _under_replicated_row(rec)
        if row_urp is not None:
            under_replicated.append(row_urp)

    percentage = state.config.leader_imbalance_per_broker_percentage
    balance = [
        {
            "broker": b.broker,
            "preferred_partitions": b.preferred,
            "led_by_another": len(b.not_preferred),
            "imbalance_percent": round(100 * b.ratio, 2),
            "over_threshold": b.over(percentage),
        }
        for b in imbalance(summaries)
    ]

    shutting = []
    for broker_id, broker in sorted(brokers.items()):
        if broker.fact.registered and broker.fact.shutting_down:
            led = [r for _, r in sorted(state.partitions.items()) if _leader(r) == broker_id]
            shutting.append(
                {
                    "broker": broker_id,
                    "leads": [f"{r.topic}-{r.partition}" for r in led],
                    "leads_replicated": [
                        f"{r.topic}-{r.partition}" for r in led if len(r.assignment.replicas) > 1
                    ],
                }
            )

    c = state.controller
    return {
        "checkpoint": state.checkpoint,
        "batch": state.batch,
        "latest_committed": state.latest,
        "next_offset": state.next_offset,
        "event_time": c.event_time,
        "active": c.active,
        "controller_epoch": c.controller_epoch,
        "held": {
            "cause": state.pending.cause_offset if state.pending else None,
            "events": [e.offset for e in state.buffered],
        },
        "partitions": len(state.partitions),
        "brokers": {
            "live": sorted(b for b, r in brokers.items() if r.fact.live),
            "shutting_down": sorted(
                b for b, r in brokers.items() if r.fact.registered and r.fact.shutting_down
            ),
            "down": sorted(b for b, r in brokers.items() if not r.fact.registered),
        },
        "offline": offline,
        "under_replicated": under_replicated,
        "under_min_isr": under,
        "at_min_isr": at_min,
        "reassignments": moving,
        "leader_imbalance": {
            "percentage": percentage,
            "auto_rebalance": state.config.auto_leader_rebalance_enable,
            "next_check_ts": c.rebalance_due
            if c.rebalance_due is not None and c.rebalance_due >= 0
            else None,
            "brokers": balance,
        },
        "shutting_down": shutting,
        "status": "offline"
        if offline
        else "under_min_isr"
        if under
        else "under_replicated"
        if under_replicated
        else "ok",
    }


def exit_code(result: dict[str, Any]) -> int:
    if result["offline"]:
        return exits.OFFLINE
    if result["under_min_isr"]:
        return exits.UNDER_MIN_ISR
    return exits.OK


# -- the command line ------------------------------------------------------------------------


def cmd_health(args: argparse.Namespace) -> int:
    check_checkpoint(args.checkpoint, args.batch)
    result = report(load_state(args.checkpoint, args.batch, "shadow-controller-health"))
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else render(result))
    return exit_code(result)


def add_parser(subparsers: Any) -> None:
    """Register `health` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "health",
        help="offline and under-min-ISR partitions, reassignments, leader imbalance, "
        "shutting-down brokers at one micro-batch",
    )
    p.add_argument("--checkpoint", required=True, help="the job's checkpoint directory (only read)")
    p.add_argument("--batch", type=int, help="micro-batch id (default: the latest committed)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")
    p.set_defaults(func=cmd_health)
