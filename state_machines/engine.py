"""The in-process engine: routes events through the directory and partition steps with
plain dictionaries. It is the reference the Spark job must match record for record.

For one input event (one cause) the engine runs the directory step, then rounds: the
partition commands of a round, in (topic, partition) order, then `after_reports` with the
deletion reports of that round, whose commands form the next round, until none are left.
A bounce (a known broker restarting with a higher epoch) is a failure followed by a
startup, each settled in turn, as Kafka's `processBrokerChange` runs them.

An exception the controller raises (a bug here, never bad input) does not stop the loop.
In the directory step it ends the cause there: what earlier steps of the cause produced
stands, the rest is not run. In a partition step only that partition's command is lost.
Each becomes an entry of `errors` (cause offset, reason); the job writes the same entries
to its dead letters, so the two stay equal decision for decision.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .commands import Command, DeletionReport
from .directory import (
    CONTROLLER_KEY, BrokerRecord, ControllerRecord, TopicRecord, after_reports, directory_step, topic_key,
)
from .events import Envelope
from .model import ControllerConfig
from .outputs import ObservationOutcome, Output, Record, assemble_controlled_shutdown_results, to_contract
from .partition import PartitionRecord, describe_error, guarded_partition_step

TopicPartition = tuple[str, int]


def sequence_records(records: Iterable[Record], cause_offset: int, cause_id: str | None) -> list[dict[str, Any]]:
    """Number one cause's records per key (`seq`) in production order; return them in the
    contract's canonical order: (cause_offset, key, seq)."""
    counters: dict[str, int] = {}
    out = []
    for rec in records:
        key = rec.key()
        seq = counters.get(key, 0)
        counters[key] = seq + 1
        out.append((key, seq, to_contract(rec, cause_offset, cause_id, seq)))
    out.sort(key=lambda x: (x[0], x[1]))
    return [d for _, _, d in out]


@dataclass
class Engine:
    config: ControllerConfig = field(default_factory=ControllerConfig)
    directory: dict[str, Any] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionRecord] = field(default_factory=dict)
    # shadow mode: running counts of observed states that matched or diverged, by severity
    observations: Counter = field(default_factory=Counter)
    # exceptions the controller raised: (cause offset, reason), as the job dead-letters them
    errors: list[tuple[int, str]] = field(default_factory=list)

    def process(self, envelope: Envelope) -> list[dict[str, Any]]:
        """Apply one event; return its decision records (contract dicts, canonical order)."""
        outputs: list[Output] = []
        pending = [envelope.event]
        offset = envelope.offset
        while pending:
            event = pending.pop(0)
            try:
                result = directory_step(self.directory, event, self.config, offset, envelope.id)
            except Exception as exc:  # noqa: BLE001 - see the module docstring
                self.errors.append((offset, describe_error(exc, "the directory step")))
                break
            followups = result.followups
            self._apply(result.changes)
            outputs.extend(result.outputs)
            commands, cont = result.commands, result.continuation
            while commands or cont is not None:
                reports = self._run(commands, outputs, offset)
                if not reports and cont is None:
                    break
                try:
                    result = after_reports(self.directory, reports, cont, self.config, offset, envelope.id)
                except Exception as exc:  # noqa: BLE001
                    self.errors.append((offset, describe_error(exc, "the directory step")))
                    pending, followups = [], ()
                    break
                self._apply(result.changes)
                outputs.extend(result.outputs)
                commands, cont = result.commands, None
            pending[:0] = list(followups)
        self.observations.update(o.outcome for o in outputs if isinstance(o, ObservationOutcome))
        records = assemble_controlled_shutdown_results(outputs)
        return sequence_records(records, envelope.offset, envelope.id)

    def _run(self, commands: Iterable[Command], outputs: list[Output], offset: int) -> list[DeletionReport]:
        reports = []
        for cmd in commands:
            tp = (cmd.topic, cmd.partition)
            res, error = guarded_partition_step(self.partitions.get(tp), cmd, self.config)
            if error is not None:
                self.errors.append((offset, error))
            if res.state is None:
                self.partitions.pop(tp, None)
            else:
                self.partitions[tp] = res.state
            outputs.extend(res.outputs)
            if res.report is not None:
                reports.append(res.report)
        return reports

    def _apply(self, changes: dict[str, Any]) -> None:
        for key, record in changes.items():
            if record is None:
                self.directory.pop(key, None)
            else:
                self.directory[key] = record

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
        for (t, p), rec in sorted(self.partitions.items()):
            partitions[f"{t}-{p}"] = partition_json(rec)
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
