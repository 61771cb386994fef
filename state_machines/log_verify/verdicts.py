"""The verifier's answers: a divergence, an event's verdict, the log's summary, and the
event being checked while its records come in (verifier.py has the theory)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..kraft.partition_change import PartitionChange
from ..kraft.records import (
    PartitionChangeRecord,
)
from .entries import (
    LogEntry,
)
from .log_state import TopicPartition
from .severity import BENIGN, SAFETY

MATCH = "match"
RANK = {MATCH: 0, BENIGN: 1, SAFETY: 2}


@dataclass(frozen=True, slots=True)
class Divergence:
    severity: str
    reasons: tuple[str, ...]
    method: str
    offsets: tuple[int, ...] = ()
    partition: str | None = None
    log: dict[str, Any] | None = None  # the log's record (the fields it sets)
    predicted: dict[str, Any] | None = None  # what the rules write (None: nothing)

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "partition": self.partition,
            "offsets": list(self.offsets),
            "reasons": list(self.reasons),
            "log": self.log,
            "predicted": self.predicted,
            "kafka_method": self.method,
        }


@dataclass(frozen=True, slots=True)
class EventVerdict:
    kind: str
    method: str
    first_offset: int
    last_offset: int
    records: int
    decisions: int  # decisions compared (partitions the log or the rules changed)
    matched: int
    inputs: int  # inputs checked
    outcome: str  # match | benign | safety
    divergences: tuple[Divergence, ...] = ()
    grouping: str | None = None  # why the grouping is ambiguous, if it is
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kafka_method": self.method,
            "offsets": [self.first_offset, self.last_offset],
            "records": self.records,
            "decisions": self.decisions,
            "matched": self.matched,
            "inputs": self.inputs,
            "outcome": self.outcome,
            "grouping": self.grouping,
            "note": self.note,
            "divergences": [d.to_json() for d in self.divergences],
        }


@dataclass
class Summary:
    batches: int = 0
    records: int = 0
    control_records: int = 0
    snapshot_records: int = 0
    snapshot_end_offset: int | None = None
    events: int = 0
    decisions: int = 0
    matched: int = 0
    inputs: int = 0
    divergent: Counter[str] = field(default_factory=Counter)  # divergences by class
    events_by_outcome: Counter[str] = field(default_factory=Counter)
    events_by_kind: Counter[str] = field(default_factory=Counter)
    ambiguous: int = 0
    not_checked: Counter[str] = field(default_factory=Counter)  # records the rules do not read
    metadata_version: str | None = None
    elr_enabled: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "records": self.records,
            "control_records": self.control_records,
            "snapshot": {"records": self.snapshot_records, "end_offset": self.snapshot_end_offset},
            "events": self.events,
            "events_by_kind": dict(sorted(self.events_by_kind.items())),
            "events_by_outcome": {k: self.events_by_outcome.get(k, 0) for k in RANK},
            "decisions_checked": self.decisions,
            "matched": self.matched,
            "inputs_checked": self.inputs,
            "divergent": {k: self.divergent.get(k, 0) for k in (BENIGN, SAFETY)},
            "ambiguous_groupings": self.ambiguous,
            "records_not_checked": dict(sorted(self.not_checked.items())),
            "metadata_version": self.metadata_version,
            "eligible_leader_replicas": self.elr_enabled,
        }


# -- one event being checked ---------------------------------------------------------------


@dataclass
class OpenEvent:
    kind: str
    method: str
    first: int
    last: int
    records: int = 0
    decisions: int = 0
    matched: int = 0
    inputs: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    grouping: str | None = None
    note: str | None = None
    topic_id: str | None = None
    replication_factor: int | None = None
    next_partition: int = 0
    pending_clear: list[str] = field(default_factory=list)  # ClearElrRecords still due

    def add(self, e: LogEntry) -> None:
        self.records += 1
        self.last = max(self.last, e.offset)
        self.first = min(self.first, e.offset)

    def verdict(self) -> EventVerdict:
        outcome = MATCH
        for d in self.divergences:
            if RANK[d.severity] > RANK[outcome]:
                outcome = d.severity
        return EventVerdict(
            self.kind,
            self.method,
            self.first,
            self.last,
            self.records,
            self.decisions,
            self.matched,
            self.inputs,
            outcome,
            tuple(self.divergences),
            self.grouping,
            self.note,
        )


@dataclass
class Claim:
    """An anchored broker event's share of a run of PartitionChangeRecords."""

    kind: str
    broker_id: int
    anchor: LogEntry | None
    predicted: dict[TopicPartition, PartitionChange]
    claimed: list[tuple[LogEntry, PartitionChangeRecord]] = field(default_factory=list)
    errors: list[Divergence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
