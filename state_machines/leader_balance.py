"""Automatic preferred-leader rebalance (`checkAndTriggerAutoLeaderRebalance`,
KafkaController.scala at 3.9.0), in event time.

Theory of operation
-------------------
Schedule. With `auto.leader.rebalance.enable`, `onControllerFailover` schedules the first
check 5 seconds after the controller took over (`scheduleAutoLeaderRebalanceTask(delay =
5, unit = TimeUnit.SECONDS)`), and each check schedules the next one
`leader.imbalance.check.interval.seconds` later (`processAutoPreferredReplicaLeaderElection`).
Time here is the envelopes' `ts` (epoch ms), never a clock: the directory keeps the due
time (`ControllerRecord.rebalance_due`); a check that is due runs before the event whose
`ts` reaches it, under that event's `cause_offset`; the next one is due one interval after
the previous due time. A failover without `ts` starts the schedule at the first event that
has one (`PENDING_START`).

When one event's `ts` passes several due times, the checks run in turn before it, each
seeing the elections of the one before (the loop holds the cause until they are folded). A check
that elects nothing changes nothing, so every later check of the same event would elect
nothing either: the schedule then moves past the event's `ts` at once.

The check. Partitions of topics not queued for deletion are grouped by preferred replica
(the head of the assignment); for each broker, the share of its group with a stored leader
other than it is compared with `leader.imbalance.per.broker.percentage` / 100, strictly
greater, on doubles. Over the threshold, each of those partitions whose topic exists and
is not queued for deletion is sent `AutoRebalance`; the partition itself checks
`canPreferredReplicaBeLeader` (its preferred replica online and in the ISR) and runs the
preferred election. No ElectionResult is written: no client asked. There is no filter on
partitions being reassigned (KAFKA-10149 removed it in 3.4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .commands import AutoRebalance, PartitionSummary
from .directory import CONTROLLER_KEY, ControllerRecord, DirectoryView
from .event_types import RebalanceCheck

__all__ = [
    "FIRST_DELAY_MS",
    "PENDING_START",
    "BrokerImbalance",
    "RebalanceCheck",
    "check",
    "due_check",
    "imbalance",
    "is_due",
    "schedule_at_failover",
]

# onControllerFailover: scheduleAutoLeaderRebalanceTask(delay = 5, unit = TimeUnit.SECONDS)
FIRST_DELAY_MS = 5_000
# a failover without `ts`: the first event with one starts the schedule
PENDING_START = -1


def schedule_at_failover(d: DirectoryView) -> None:
    """onControllerFailover: the first check, 5 s after the failover's `ts`."""
    due = None
    if d.config.auto_leader_rebalance_enable:
        due = PENDING_START if d.ts is None else d.ts + FIRST_DELAY_MS
    c = d.controller
    if c.rebalance_due != due:
        d.put(CONTROLLER_KEY, replace(c, rebalance_due=due))


def is_due(c: ControllerRecord, ts: int | None) -> bool:
    """Whether a check is due before an event at `ts`."""
    due = c.rebalance_due
    return c.active and due is not None and due != PENDING_START and ts is not None and ts >= due


def due_check(d: DirectoryView) -> bool:
    """Whether a check runs before this cause's event (starting a pending schedule first)."""
    c = d.controller
    if c.active and c.rebalance_due == PENDING_START and d.ts is not None:
        d.put(CONTROLLER_KEY, replace(c, rebalance_due=d.ts + FIRST_DELAY_MS))
        return False
    return is_due(c, d.ts)


def check(d: DirectoryView) -> None:
    """One due check (`processAutoPreferredReplicaLeaderElection`), and the next due time."""
    c = d.controller
    assert c.rebalance_due is not None and c.rebalance_due >= 0 and d.ts is not None
    interval = d.config.leader_imbalance_check_interval_seconds * 1000
    sent = _check_and_trigger(d)
    due = c.rebalance_due + interval
    if not sent and due <= d.ts:
        # every later check before this event would see what this one saw
        due += ((d.ts - due) // interval + 1) * interval
    d.put(CONTROLLER_KEY, replace(d.controller, rebalance_due=due))


@dataclass(frozen=True, slots=True)
class BrokerImbalance:
    """One broker's share in `checkAndTriggerAutoLeaderRebalance`: the partitions whose
    preferred replica it is, and those of them led by another broker."""

    broker: int
    preferred: int
    not_preferred: tuple[tuple[str, int], ...]

    @property
    def ratio(self) -> float:
        """`imbalanceRatio`: not-preferred over preferred, on doubles."""
        return len(self.not_preferred) / self.preferred

    def over(self, percentage: int) -> bool:
        """`imbalanceRatio > leaderImbalancePerBrokerPercentage / 100`, strictly."""
        return self.ratio > percentage / 100


def led_by_another(s: PartitionSummary) -> bool:
    """A partition its preferred replica's broker counts as led by another broker: it has a
    preferred replica and a stored leader that is not it."""
    return s.preferred >= 0 and s.leader is not None and s.leader != s.preferred


def imbalance(summaries: Iterable[tuple[str, int, PartitionSummary]]) -> list[BrokerImbalance]:
    """Each broker that is some partition's preferred replica, in broker order, from the
    partitions' summaries (topic, partition, summary) of topics not queued for deletion."""
    by_preferred: dict[int, list[tuple[str, int, PartitionSummary]]] = {}
    for topic, p, s in summaries:
        if s.preferred >= 0:
            by_preferred.setdefault(s.preferred, []).append((topic, p, s))
    return [
        BrokerImbalance(broker, len(group), tuple((t, p) for t, p, s in group if led_by_another(s)))
        for broker, group in sorted(by_preferred.items())
    ]


def _check_and_trigger(d: DirectoryView) -> bool:
    """checkAndTriggerAutoLeaderRebalance; returns whether any partition was sent."""
    summaries: list[tuple[str, int, PartitionSummary]] = []
    for topic in sorted(d.controller.topics):
        rec = d.topic(topic)
        if rec is None or rec.queued:
            continue
        summaries.extend((topic, p, s) for p, s in rec.summaries)
    percentage = d.config.leader_imbalance_per_broker_percentage
    sent = False
    op = AutoRebalance()
    for broker in imbalance(summaries):
        if broker.over(percentage):
            for t, p in broker.not_preferred:
                d.send(t, p, op)
                sent = True
    return sent
