"""KRaft's periodic write events, on event time: leader balancing and unclean elections.

Source: QuorumController.java (`maybeScheduleNextBalancePartitionLeaders`,
`maybeScheduleNextElectUncleanLeaders`, `ImbalanceSchedule`) and ReplicationControlManager.java
(`maybeBalancePartitionLeaders`, `maybeElectUncleanLeaders`), apache/kafka 3.9.0.

Theory of operation
-------------------
After every write event (and at activation) Kafka schedules each task that is not already
scheduled, if it has work: leader balancing when `auto.leader.rebalance.enable` and some
partition's leader is not its preferred replica (`imbalancedPartitions`, leaderless ones
included), unclean elections when some partition has no leader. The deadline is now plus
`leader.imbalance.check.interval.seconds` (resp. `unclean.leader.election.interval.ms`), or
10 ms after a run that reached `maxElectionsPerImbalance` (1,000) records. A run writes a
PREFERRED election (resp. an UNCLEAN `electLeader` for topics that allow it) for each such
partition until it has written that many records.

Here the directory keeps the two counts and the two schedules (`KraftTasks`, under
`kraft-tasks`). The counts move with the partitions' summary reports, cause by cause, and a
task is scheduled at the time of the cause whose report gave it work (the report carries
its cause's `ts`), so the Spark job, which applies a batch's reports one micro-batch later,
schedules exactly as the engine does. A task whose deadline an event's `ts` reaches runs
before that event, under its cause, with that `ts` as its time; its second half waits for
the partitions to fold the run and then reschedules on the counts they report.

Where this cannot be Kafka's: Kafka iterates `imbalancedPartitions` (a HashSet of topic
ids, which the contract does not carry) and stops at 1,000 records; a run here tries the
first 1,000 candidates in (topic, partition) order, and reschedules immediately when there
were at least that many. Events without `ts` schedule nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, cast

from ..commands import PartitionSummary, SummaryReport
from ..directory import CONTROLLER_KEY, DirectoryRecord, DirectoryResult, DirectoryView, TopicRecord
from ..event_types import KraftTask
from ..model import NO_LEADER, ControllerConfig
from ..partition_summaries import apply_summaries
from .configuration_control import unclean_leader_election_enabled_for_topic
from .schedule import DEFERRED, IMMEDIATELY, SCHEDULED, TASKS_KEY, KraftTasks

# ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE
MAX_ELECTIONS_PER_IMBALANCE = 1_000
# QuorumController: an immediate reschedule is delayed by 10 ms
IMMEDIATE_DELAY_MS = 10
BALANCE, UNCLEAN = "balance", "unclean"


def is_imbalanced(s: PartitionSummary | None) -> bool:
    """`!hasPreferredLeader()`: the leader is not the first replica (no leader included)."""
    return s is not None and s.leader != s.preferred


def is_leaderless(s: PartitionSummary | None) -> bool:
    return s is not None and s.leader == NO_LEADER


def tasks_of(view: Mapping[str, Any]) -> KraftTasks:
    t = view.get(TASKS_KEY)
    return t if isinstance(t, KraftTasks) else KraftTasks()


def maybe_schedule(
    t: KraftTasks, config: ControllerConfig, now: int | None, active: bool
) -> KraftTasks:
    """`maybeScheduleNextBalancePartitionLeaders` and `maybeScheduleNextElectUncleanLeaders`."""
    if not active or now is None:
        return t
    if t.balance != SCHEDULED and config.auto_leader_rebalance_enable and t.imbalanced > 0:
        delay = (
            config.leader_imbalance_check_interval_seconds * 1000
            if t.balance == DEFERRED
            else IMMEDIATE_DELAY_MS
        )
        t = replace(t, balance=SCHEDULED, balance_due=now + delay)
    if t.unclean != SCHEDULED and t.leaderless > 0:
        delay = (
            config.unclean_leader_election_interval_ms
            if t.unclean == DEFERRED
            else IMMEDIATE_DELAY_MS
        )
        t = replace(t, unclean=SCHEDULED, unclean_due=now + delay)
    return t


def due_tasks(t: KraftTasks, ts: int | None) -> list[str]:
    """The tasks whose deadline `ts` reaches, earliest first (`EarliestDeadlineFunction`;
    on a tie, balancing first)."""
    if ts is None:
        return []
    due = [(t.balance_due, 0, BALANCE), (t.unclean_due, 1, UNCLEAN)]
    return [
        name for when, _, name in sorted((w, i, n) for w, i, n in due if w is not None and w <= ts)
    ]


def kraft_apply_summaries(
    view: Mapping[str, DirectoryRecord],
    reports: Iterable[SummaryReport],
    config: ControllerConfig,
    offset: int,
    cause_id: str | None = None,
) -> DirectoryResult:
    """`partition_summaries.apply_summaries`, and the counts and schedules they move: cause
    by cause, as Kafka schedules after each write event."""
    reports = list(reports)
    result = apply_summaries(view, reports, config, offset, cause_id)
    before = tasks_of(view)
    controller = view.get(CONTROLLER_KEY)
    active = bool(getattr(controller, "active", False))
    known: dict[str, dict[int, PartitionSummary]] = {}
    t = before
    for cause in sorted({r.cause_offset for r in reports}):
        group = [r for r in reports if r.cause_offset == cause]
        imbalanced, leaderless = t.imbalanced, t.leaderless
        for r in group:
            rec = view.get(f"topic-{r.topic}")
            if not isinstance(rec, TopicRecord):
                continue  # deleted since: its counts went with it
            summaries = known.get(r.topic)
            if summaries is None:
                summaries = known[r.topic] = dict(rec.summaries)
            old = summaries.get(r.partition)
            imbalanced += is_imbalanced(r.summary) - is_imbalanced(old)
            leaderless += is_leaderless(r.summary) - is_leaderless(old)
            if r.summary is None:
                summaries.pop(r.partition, None)
            else:
                summaries[r.partition] = r.summary
        t = maybe_schedule(
            replace(t, imbalanced=imbalanced, leaderless=leaderless),
            config,
            max((r.ts for r in group if r.ts is not None), default=None),
            active,
        )
    if t != before:
        result.changes[TASKS_KEY] = t
    return result


def forget_topic(d: DirectoryView, rec: TopicRecord) -> None:
    """A deleted topic's partitions leave the counts."""
    t = tasks_of(d.view) if TASKS_KEY not in d.changes else cast(KraftTasks, d.changes[TASKS_KEY])
    summaries = [s for _, s in rec.summaries]
    d.put(
        TASKS_KEY,
        replace(
            t,
            imbalanced=t.imbalanced - sum(map(is_imbalanced, summaries)),
            leaderless=t.leaderless - sum(map(is_leaderless, summaries)),
        ),
    )


def current(d: DirectoryView) -> KraftTasks:
    rec = d.get(TASKS_KEY)
    return rec if isinstance(rec, KraftTasks) else KraftTasks()


def candidates(d: DirectoryView, task: str) -> list[tuple[str, int]]:
    """A run's partitions: the imbalanced ones (balancing), or the leaderless ones of
    topics that allow unclean election (`uncleanLeaderElectionEnabledForTopic`), as the
    summaries say, in (topic, partition) order."""
    out: list[tuple[str, int]] = []
    c = d.controller
    for topic in sorted(c.topics):
        rec = d.topic(topic)
        if rec is None:
            continue
        if task == BALANCE:
            out.extend((topic, p) for p, s in rec.summaries if is_imbalanced(s))
        elif unclean_leader_election_enabled_for_topic(d.config, rec.configs, c.dynamic_configs):
            out.extend((topic, p) for p, s in rec.summaries if is_leaderless(s))
    return out


def run(d: DirectoryView, step: KraftTask) -> tuple[list[tuple[str, int]], KraftTask | None]:
    """One due task (its first half): the partitions to try, and its second half. The
    schedule leaves SCHEDULED: IMMEDIATELY when the run reaches the limit, else DEFERRED."""
    t = current(d)
    if step.after:
        d.put(TASKS_KEY, maybe_schedule(t, d.config, step.ts, d.controller.active))
        return [], None
    found = candidates(d, step.task)
    hit_max = len(found) >= MAX_ELECTIONS_PER_IMBALANCE
    state = IMMEDIATELY if hit_max else DEFERRED
    if step.task == BALANCE:
        t = replace(t, balance=state, balance_due=None)
    else:
        t = replace(t, unclean=state, unclean_due=None)
    d.put(TASKS_KEY, t)
    return found[:MAX_ELECTIONS_PER_IMBALANCE], KraftTask(
        step.task, after=True, ts=d.ts, hit_max=hit_max
    )
