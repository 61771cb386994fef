"""`shadow-controller what-if --checkpoint DIR [--batch N]
(--event JSON ... | --events FILE | --restart-broker ID) [--json]`:
the decisions Kafka's controller would make for hypothetical events at micro-batch N, and
their impact, without touching the checkpoint.

Theory of operation. The state after batch N is read once (`controller_state.load_state`:
the job's batches replayed without Spark and checked against its output, else Spark's state
readers; nothing written) and the events are folded in process with the
core's loop (`state_machines/loop.py`: the `Sequencer`, `fold_partition`, the directory's
records and the controlled-shutdown merge), the way the job's next micro-batches would:

1. **settle**: what the job has read but not yet applied runs first (the feedback of
   batch N, a cause waiting for it, events held behind that cause); its decisions are the
   job's own, owed whatever is asked, and are counted apart;
2. **the hypothetical events**, numbered from the offset the next input event would have,
   in one batch; a cause that waits for a fold (the summaries of a broker change, deletion
   reports) continues in the next round, as the job's next batch would continue it.

So the decisions are those the job writes when the same events are appended to its input
and it continues from batch N (a test holds them equal). An event is decoded by the job's
decoder (`events.parse_line`, with the checkpoint's input bounds) before Spark starts: one
that the job would dead-letter is refused with its reason. `v` may be left out (it is
filled with the contract's version); `ts` is not filled, as the job would not.

The impact compares the state before and after the events: the partitions that go offline
(or come back), go under (or back to) their min ISR (`health.py`'s rules), the unclean
elections, the leaders moved per broker, and each controlled shutdown's reply. A
controlled shutdown leaves the partitions its broker alone holds in the ISR where they are
(Kafka's `ControlledShutdown` answers them as `partitionsRemaining`): they go offline only
when the broker stops. So for each accepted controlled shutdown, the impact also folds
that broker's failure into a copy of the state and says what would go offline or under
its min ISR *when it stops*.

`--restart-broker ID` asks whether a rolling restart may take broker ID now
(`what_if_restart.py`: its controlled shutdown, its going away and its return, and a
verdict line).

The text view is what_if_render.py's.

The exit code is health's (`health.exit_code`) for the worst state the events pass
through: 7 when a partition is offline, 6 when one is under its min ISR, 0 otherwise
(Strimzi's rolling update refuses a roll that takes a partition below
min.insync.replicas; a script can gate on 0).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from state_machines.commands import Command
from state_machines.errors import InvalidEvent, InvariantViolation
from state_machines.events import parse_line
from state_machines.fold import (
    PartitionSlot,
    Replies,
    fold_partition,
    merge_shutdown_shares,
    number_directory_records,
)
from state_machines.loop import DIRECT, DeadLetter, RawEvent, Sequencer, Work
from state_machines.outputs import contract_key, to_contract
from state_machines.partition import PartitionRecord
from state_machines.update_metadata import merge as merge_update_metadata
from streaming.exits import UsageError

from . import health
from .controller_state import ControllerState, TopicPartition

CONTRACT_VERSION = 1
# a fold that has not settled after this many rounds waits for something no command sends
MAX_ROUNDS = 10_000


class WhatIfError(UsageError):
    """A hypothetical event the job would not apply, or no event at all."""


# -- the events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hypothesis:
    source: str  # `--event 2`, or `FILE:7`
    value: bytes


def _filled(text: str) -> str:
    """The event with `v` filled when it is missing (anything else is left to the decoder)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text  # the decoder names the problem
    if isinstance(doc, dict) and "v" not in doc:
        return json.dumps({"v": CONTRACT_VERSION, **doc})
    return text


def hypotheses(events: Sequence[str] | None, events_file: str | None) -> list[Hypothesis]:
    out = [Hypothesis(f"--event {i + 1}", _filled(e).encode()) for i, e in enumerate(events or ())]
    if events_file is not None:
        try:
            with open(events_file, "rb") as fh:
                lines = fh.read().splitlines()
        except OSError as exc:
            raise WhatIfError(
                f"{events_file}: cannot read the events file ({exc.strerror})"
            ) from None
        out += [
            Hypothesis(f"{events_file}:{n + 1}", _filled(line.decode("utf-8", "replace")).encode())
            for n, line in enumerate(lines)
            if line.strip()
        ]
    if not out:
        raise WhatIfError("no event: give --event JSON (repeatable) or --events FILE")
    return out


def check_events(events: Sequence[Hypothesis], state_limits: Any = None) -> None:
    """Refuse, naming the first, events the job would dead-letter (its decoder, its bounds)."""
    from state_machines.events import DEFAULT_LIMITS

    for i, h in enumerate(events):
        try:
            parse_line(h.value, i, state_limits or DEFAULT_LIMITS)
        except InvalidEvent as exc:
            raise WhatIfError(f"{h.source}: the job would dead-letter this event: {exc}") from None
        except Exception as exc:
            raise WhatIfError(
                f"{h.source}: the job would dead-letter this event: not decodable: "
                f"{type(exc).__name__}"
            ) from None


# -- the fold --------------------------------------------------------------------------------


@dataclass
class Fold:
    decisions: list[dict[str, Any]]
    dead_letters: list[DeadLetter]
    rounds: int


def _order(d: dict[str, Any]) -> tuple[int, str, int]:
    return d["cause_offset"], contract_key(d), d["seq"]


def advance(state: ControllerState, events: Sequence[RawEvent] = ()) -> Fold:
    """Fold `events` into `state` (changed in place) as the job's next micro-batches would,
    after what it has read but not applied, until nothing waits."""
    pending, rest = state.pending, list(state.buffered)
    reports, summaries = list(state.reports), list(state.summaries)
    queue = list(events)
    slots: dict[
        str, PartitionSlot
    ] = {}  # partitions folded so far: their `seq` goes on across rounds
    decisions: list[dict[str, Any]] = []
    dead: list[DeadLetter] = []
    rounds = 0
    while queue or pending is not None or rest or reports or summaries:
        if rounds >= MAX_ROUNDS:
            raise InvariantViolation(f"the controller has not settled after {MAX_ROUNDS} rounds")
        seq = Sequencer(state.directory, state.config, state.limits)
        pending, rest = seq.run(pending, rest, queue, reports, summaries)
        queue = []
        if not seq.work and (pending is not None or rest):
            raise InvariantViolation(
                "the sequencer waits for deletion reports that no command will send"
            )
        replies = Replies()
        number_directory_records((w for w in seq.work if w.target == DIRECT), replies)
        _fold_partitions(state, slots, [w for w in seq.work if w.target != DIRECT], replies)
        decisions.extend(
            to_contract(d.record, d.cause_offset, d.cause_id, d.seq)
            for d in merge_shutdown_shares(replies.decisions, replies.still)
        )
        decisions.extend(
            to_contract(m.record, m.cause_offset, m.cause_id, m.seq)
            for m in merge_update_metadata(replies.metadata)
        )
        dead.extend(replies.dead_letters)
        reports, summaries = [r for _, r in replies.reports], list(replies.summaries)
        rounds += 1
    state.pending, state.buffered, state.reports, state.summaries = None, [], [], []
    decisions.sort(key=_order)
    return Fold(decisions, dead, rounds)


def _fold_partitions(
    state: ControllerState, slots: dict[str, PartitionSlot], work: list[Work], replies: Replies
) -> None:
    by_target: dict[str, list[Work]] = {}
    for w in work:
        by_target.setdefault(w.target, []).append(w)
    for target, items in sorted(by_target.items()):
        # a partition's target is sent only Commands (fold.fold_partition reads them so)
        cmd = cast(Command, items[0].item)
        tp: TopicPartition = (cmd.topic, cmd.partition)
        slot = slots.get(target) or PartitionSlot(state.partitions.get(tp))
        slot = slots[target] = fold_partition(slot, items, state.config, replies)
        if slot.record is None:
            state.partitions.pop(tp, None)
        else:
            # ZooKeeper rules only (controller_state refuses a KRaft checkpoint)
            assert isinstance(slot.record, PartitionRecord)
            state.partitions[tp] = slot.record


# -- the impact ------------------------------------------------------------------------------


def _leaders(partitions: dict[TopicPartition, PartitionRecord]) -> dict[TopicPartition, int]:
    return {tp: rec.leadership.leader if rec.leadership else -1 for tp, rec in partitions.items()}


def _names(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["partition"]: r for r in rows}


def impact(
    before: dict[str, Any],
    after: dict[str, Any],
    before_leaders: dict[TopicPartition, int],
    after_leaders: dict[TopicPartition, int],
    decisions: list[dict[str, Any]],
) -> dict[str, Any]:
    """What changed between two health reports and two leader maps, and what the decisions say."""
    out: dict[str, Any] = {}
    for key in ("offline", "under_min_isr"):
        was, now = _names(before[key]), _names(after[key])
        out[f"newly_{key}"] = [now[p] for p in sorted(now.keys() - was.keys())]
        out[f"no_longer_{key}"] = sorted(was.keys() - now.keys())
    out["unclean_elections"] = [
        {
            "partition": f"{d['topic']}-{d['partition']}",
            "leader": d["leader"],
            "leader_epoch": d["leader_epoch"],
            "isr": d["isr"],
            "cause_offset": d["cause_offset"],
        }
        for d in decisions
        if d["type"] == "LeaderAndIsr" and d["election"] == "unclean"
    ]
    moves: list[dict[str, Any]] = []
    lost: Counter[int] = Counter()
    gained: Counter[int] = Counter()
    for tp in sorted(before_leaders.keys() | after_leaders.keys()):
        old, new = before_leaders.get(tp, -1), after_leaders.get(tp, -1)
        if old != new:
            moves.append({"partition": f"{tp[0]}-{tp[1]}", "from": old, "to": new})
            if old >= 0:
                lost[old] += 1
            if new >= 0:
                gained[new] += 1
    led_before = Counter(b for b in before_leaders.values() if b >= 0)
    led_after = Counter(b for b in after_leaders.values() if b >= 0)
    out["leaders_moved"] = {
        "partitions": moves,
        "brokers": [
            {
                "broker": b,
                "led_before": led_before[b],
                "led_after": led_after[b],
                "lost": lost[b],
                "gained": gained[b],
            }
            for b in sorted(lost.keys() | gained.keys())
        ],
    }
    out["controlled_shutdown"] = [
        {
            "broker": d["broker_id"],
            "error": d["error"],
            "partitions_remaining": d["partitions_remaining"],
            "cause_offset": d["cause_offset"],
        }
        for d in decisions
        if d["type"] == "ControlledShutdownResult"
    ]
    return out


def what_if(state: ControllerState, events: Sequence[Hypothesis]) -> dict[str, Any]:
    """Settle `state`, then fold the hypothetical events into it (the state is changed)."""
    owed = advance(state)
    before = health.report(state)
    before_leaders = _leaders(state.partitions)
    first = state.next_offset
    raws = [RawEvent(first + i, h.value, h.source) for i, h in enumerate(events)]
    fold = advance(state, raws)
    state.next_offset = first + len(raws)
    after = health.report(state)
    by_type = Counter(d["type"] for d in fold.decisions)
    # the brokers the events left shutting down: what happens when each one stops
    still = {
        b for b, r in health.brokers_of(state).items() if r.fact.registered and r.fact.shutting_down
    }
    stopped = [
        when_stopped(state, d["broker_id"], after)
        for d in fold.decisions
        if d["type"] == "ControlledShutdownResult" and not d["error"] and d["broker_id"] in still
    ]
    code = max([health.exit_code(after), *(s["exit_code"] for s in stopped)])
    return {
        "checkpoint": state.checkpoint,
        "batch": state.batch,
        "latest_committed": state.latest,
        "events": [
            {"offset": r.offset, "source": r.source, "event": json.loads(r.value or b"null")}
            for r in raws
        ],
        "owed_decisions": len(owed.decisions),
        "decisions": fold.decisions,
        "decisions_by_type": dict(sorted(by_type.items())),
        "dead_letters": [
            {"offset": d.offset, "source": d.source, "reason": d.reason}
            for d in [*owed.dead_letters, *fold.dead_letters]
        ],
        "impact": impact(before, after, before_leaders, _leaders(state.partitions), fold.decisions),
        "when_stopped": stopped,
        "status_before": before["status"],
        "status_after": after["status"],
        "exit_code": code,
    }


def _copy(state: ControllerState) -> ControllerState:
    """A state to fold into without changing `state` (its values are frozen)."""
    return dataclasses.replace(
        state,
        directory=dict(state.directory),
        partitions=dict(state.partitions),
        buffered=list(state.buffered),
        reports=list(state.reports),
        summaries=list(state.summaries),
    )


def event_bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps({"v": CONTRACT_VERSION, **doc}, separators=(",", ":")).encode()


def newly(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The partitions offline (under their min ISR) in `after` that were not in `before`;
    one already offline that goes under min ISR is not newly under."""
    was_offline = {r["partition"] for r in before["offline"]}
    was_under = was_offline | {r["partition"] for r in before["under_min_isr"]}
    return {
        "newly_offline": [r for r in after["offline"] if r["partition"] not in was_offline],
        "newly_under_min_isr": [
            r for r in after["under_min_isr"] if r["partition"] not in was_under
        ],
    }


def when_stopped(state: ControllerState, broker: int, now: dict[str, Any]) -> dict[str, Any]:
    """What would go offline or under its min ISR when `broker`, in controlled shutdown in
    `state`, stops: its failure (a BrokerFailure, as its ZooKeeper session ends) folded
    into a copy of the state, against `now`, the state's health."""
    copy = _copy(state)
    advance(
        copy,
        [
            RawEvent(
                copy.next_offset,
                event_bytes({"type": "BrokerFailure", "broker_id": broker}),
                f"broker {broker} stops",
            )
        ],
    )
    then = health.report(copy)
    return {
        "broker": broker,
        **newly(now, then),
        "status": then["status"],
        "exit_code": health.exit_code(then),
    }
