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
from operator import itemgetter
from typing import Any

from .commands import Command
from .directory import CONTROLLER_KEY, ControllerRecord, TopicRecord, topic_key
from .events import Envelope
from .fold import (
    PartitionSlot,
    Replies,
    fold_partition,
    merge_shutdown_shares,
    number_directory_records,
)
from .kraft.cluster_control import BrokerRegistration
from .kraft.commands import KraftPartition, kraft_partition_json
from .loop import DIRECT, Sequencer, Work
from .model import ControllerConfig
from .outputs import _WRITERS, ControlledShutdownResultRecord, Record, to_contract
from .outputs import _writer as to_contract_writer
from .partition import PartitionRecord
from .update_metadata import merge as merge_update_metadata

TopicPartition = tuple[str, int]


# a decision's (key, seq), read without a Python call per decision
_KEY_SEQ = itemgetter(0, 1)


class _ContractReplies(Replies):
    """Each decision becomes its contract document as it arrives, so a fan-out does not
    hold a `Decision` per record as well (more objects for the cyclic collector to walk).
    A `ControlledShutdownResult` stays typed until its shares are merged in."""

    __slots__ = ("contract",)

    def __init__(self) -> None:
        super().__init__()
        self.contract: list[tuple[str, int, dict[str, Any]]] = []

    def decision(
        self, cause_offset: int, key: str, seq: int, record: Record, cause_id: str | None
    ) -> None:
        cls = type(record)
        if cls is ControlledShutdownResultRecord:
            super().decision(cause_offset, key, seq, record, cause_id)
        else:
            # to_contract's body: one call less for every decision of a fan-out
            writer = _WRITERS.get(cls) or to_contract_writer(cls)
            self.contract.append((key, seq, writer(record, cause_offset, cause_id, seq)))


@dataclass
class Engine:
    config: ControllerConfig = field(default_factory=ControllerConfig)
    directory: dict[str, Any] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionRecord | KraftPartition] = field(default_factory=dict)
    # shadow mode: running counts of observed states that matched or diverged, by severity
    observations: Counter[str] = field(default_factory=Counter)
    # exceptions the controller raised: (cause offset, reason), as the job dead-letters them
    errors: list[tuple[int, str]] = field(default_factory=list)

    def process(self, envelope: Envelope) -> list[dict[str, Any]]:
        """Apply one event; return its decision records (contract dicts, canonical order)."""
        sequencer = Sequencer(self.directory, self.config)
        pending = sequencer.start(envelope)
        replies = _ContractReplies()
        seq_next: dict[str, int] = {}  # each partition's `seq` counter for this cause
        applied = 0
        while True:
            work, sequencer.work = sequencer.work, []
            number_directory_records((w for w in work if w.target == DIRECT), replies)
            reported = len(replies.reports)
            self._fold([w for w in work if w.target != DIRECT], envelope.offset, seq_next, replies)
            # the partitions' summaries, before anything reads them again
            sequencer.apply_summaries(envelope.offset, replies.summaries[applied:])
            applied = len(replies.summaries)
            if pending is None:
                break
            pending = sequencer.resume(pending, [r for _, r in replies.reports[reported:]])
        number_directory_records(sequencer.work, replies)
        self.errors.extend((d.offset, d.reason) for d in replies.dead_letters)
        self.observations.update(replies.outcomes)
        out = replies.contract
        for d in merge_shutdown_shares(replies.decisions, replies.still):
            out.append((d.key, d.seq, to_contract(d.record, d.cause_offset, d.cause_id, d.seq)))
        for m in merge_update_metadata(replies.metadata):
            out.append((m.key, m.seq, to_contract(m.record, m.cause_offset, m.cause_id, m.seq)))
        out.sort(key=_KEY_SEQ)  # one cause: the contract's order is (key, seq)
        return [doc for _, _, doc in out]

    def _fold(
        self, work: Iterable[Work], offset: int, seq_next: dict[str, int], replies: Replies
    ) -> None:
        # The work comes in the loop's order, (round, index); partitions are independent,
        # so each command is folded as it comes, with no grouping by partition.
        config, partitions = self.config, self.partitions
        for w in work:
            cmd: Command = w.item  # type: ignore[assignment]
            tp = (cmd.topic, cmd.partition)
            target = w.target
            record, _, seq_next[target] = fold_partition(
                PartitionSlot(partitions.get(tp), offset, seq_next.get(target, 0)),
                [w],
                config,
                replies,
            )
            if record is None:
                partitions.pop(tp, None)
            else:
                partitions[tp] = record

    def run(self, envelopes: Iterable[Envelope]) -> Iterator[dict[str, Any]]:
        for envelope in envelopes:
            yield from self.process(envelope)

    # -- the final state, as `simulate --state-out` writes it ------------------------------

    def state_json(self) -> dict[str, Any]:
        c: ControllerRecord = self.directory.get(CONTROLLER_KEY) or ControllerRecord()
        brokers = {}
        for b in sorted(c.brokers):
            rec = self.directory[f"broker-{b}"]
            if isinstance(
                rec, BrokerRegistration
            ):  # kraft mode: ClusterControlManager's registration
                brokers[str(b)] = {
                    "fenced": rec.fenced,
                    "in_controlled_shutdown": rec.in_controlled_shutdown,
                    "broker_epoch": rec.epoch,
                    "incarnation_id": rec.incarnation_id,
                }
            elif rec.fact.registered or rec.fact.broker_epoch is not None:
                brokers[str(b)] = {
                    "live": rec.fact.live,
                    "shutting_down": rec.fact.shutting_down,
                    "broker_epoch": rec.fact.broker_epoch,
                }
        topics = {}
        for t in sorted(c.topics):
            trec: TopicRecord = self.directory[topic_key(t)]
            topics[t] = {"configs": dict(trec.configs), "deletion": trec.deletion}
        partitions = {}
        for (t, p), prec in sorted(self.partitions.items()):
            partitions[f"{t}-{p}"] = partition_json(prec)
        out: dict[str, Any] = {
            "active": c.active,
            "controller_epoch": c.controller_epoch,
            "brokers": brokers,
            "topics": topics,
            "partitions": partitions,
        }
        # what only the controller-wide rules set: shown once set, so older states read the same
        if c.dynamic_configs:
            out["dynamic_configs"] = dict(c.dynamic_configs)
        if c.rebalance_due is not None and c.rebalance_due >= 0:
            out["next_rebalance_check_ts"] = c.rebalance_due
        return out


def partition_json(rec: PartitionRecord | KraftPartition) -> dict[str, Any]:
    if isinstance(rec, KraftPartition):
        return kraft_partition_json(rec)
    la = rec.leadership
    out: dict[str, Any] = {
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
    if rec.offline_dirs:
        out["offline_dirs"] = list(rec.offline_dirs)
    return out
