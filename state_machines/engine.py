"""The in-process engine: the controller's event loop (`loop.py`) run in one process, with
plain dictionaries for the directory and the partitions. It is the reference the Spark job
must match record for record, and it is the same loop: the Spark job runs its pieces in
operators and feeds deletion reports back a micro-batch later, the engine at once.

An exception the controller raises (a bug here, never bad input) does not stop the loop
(see `loop.py`); each becomes an entry of `errors` (cause offset, reason), as the job
writes it to its dead letters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .commands import Command
from .directory import CONTROLLER_KEY, BrokerRecord, ControllerRecord, TopicRecord, topic_key
from .events import Envelope
from .loop import (
    DIRECT, PartitionSlot, Replies, Sequencer, Work, decision_order, fold_partition, merge_shutdown_shares,
    number_directory_records,
)
from .model import ControllerConfig
from .outputs import to_contract
from .partition import PartitionRecord

TopicPartition = tuple[str, int]


@dataclass
class Engine:
    config: ControllerConfig = field(default_factory=ControllerConfig)
    directory: dict[str, Any] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionRecord] = field(default_factory=dict)
    # shadow mode: running counts of observed states that matched or diverged, by severity
    observations: Counter[str] = field(default_factory=Counter)
    # exceptions the controller raised: (cause offset, reason), as the job dead-letters them
    errors: list[tuple[int, str]] = field(default_factory=list)

    def process(self, envelope: Envelope) -> list[dict[str, Any]]:
        """Apply one event; return its decision records (contract dicts, canonical order)."""
        sequencer = Sequencer(self.directory, self.config)
        pending = sequencer.start(envelope)
        replies = Replies()
        seq_next: dict[str, int] = {}  # each partition's `seq` counter for this cause
        while True:
            work, sequencer.work = sequencer.work, []
            number_directory_records((w for w in work if w.target == DIRECT), replies)
            reported = len(replies.reports)
            self._fold([w for w in work if w.target != DIRECT], envelope.offset, seq_next, replies)
            if pending is None:
                break
            pending = sequencer.resume(pending, [r for _, r in replies.reports[reported:]])
        self.errors.extend((d.offset, d.reason) for d in replies.dead_letters)
        self.observations.update(replies.outcomes)
        decisions = sorted(merge_shutdown_shares(replies.decisions, replies.still), key=decision_order)
        return [to_contract(d.record, d.cause_offset, d.cause_id, d.seq) for d in decisions]

    def _fold(self, work: Iterable[Work], offset: int, seq_next: dict[str, int], replies: Replies) -> None:
        by_target: dict[str, list[Work]] = {}
        for w in work:
            by_target.setdefault(w.target, []).append(w)
        for target in sorted(by_target):
            cmd: Command = by_target[target][0].item  # type: ignore[assignment]
            tp = (cmd.topic, cmd.partition)
            slot = PartitionSlot(self.partitions.get(tp), offset, seq_next.get(target, 0))
            slot = fold_partition(slot, by_target[target], self.config, replies)
            seq_next[target] = slot.seq_next
            if slot.record is None:
                self.partitions.pop(tp, None)
            else:
                self.partitions[tp] = slot.record

    def run(self, envelopes: Iterable[Envelope]) -> Iterator[dict[str, Any]]:
        for envelope in envelopes:
            yield from self.process(envelope)

    # -- the final state, as `simulate --state-out` writes it ------------------------------

    def state_json(self) -> dict[str, Any]:
        c: ControllerRecord = self.directory.get(CONTROLLER_KEY) or ControllerRecord()
        brokers = {}
        for b in sorted(c.brokers):
            rec: BrokerRecord = self.directory[f"broker-{b}"]
            if rec.fact.registered or rec.fact.broker_epoch is not None:
                brokers[str(b)] = {
                    "live": rec.fact.live, "shutting_down": rec.fact.shutting_down,
                    "broker_epoch": rec.fact.broker_epoch,
                }
        topics = {}
        for t in sorted(c.topics):
            trec: TopicRecord = self.directory[topic_key(t)]
            topics[t] = {"configs": dict(trec.configs), "deletion": trec.deletion}
        partitions = {}
        for (t, p), prec in sorted(self.partitions.items()):
            partitions[f"{t}-{p}"] = partition_json(prec)
        return {
            "active": c.active, "controller_epoch": c.controller_epoch,
            "brokers": brokers, "topics": topics, "partitions": partitions,
        }


def partition_json(rec: PartitionRecord) -> dict[str, Any]:
    la = rec.leadership
    return {
        "state": (rec.state.value if rec.state else "NonExistentPartition"),
        "replicas": list(rec.assignment.replicas),
        "adding_replicas": list(rec.assignment.adding_replicas),
        "removing_replicas": list(rec.assignment.removing_replicas),
        "leader": la.leader if la else -1,
        "leader_epoch": la.leader_epoch if la else -1,
        "isr": list(la.isr) if la else [],
        "partition_epoch": la.partition_epoch if la else -1,
        "leader_recovery_state": la.leader_recovery_state.value if la else "RECOVERED",
        "replica_states": {str(b): s.value for b, s in rec.replica_states},
    }
