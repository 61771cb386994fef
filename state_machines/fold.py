"""The controller's loop, parts 2 and 3: the partitions' fold, and the directory's own
records and the merge (part 1, sequencing, and the loop's theory of operation are in
loop.py).

`fold_partition` applies one partition's commands in (cause, round, index) order and
numbers its records per (cause, key): the contract's `seq`. Its replies (a deletion report,
a controlled shutdown's `StillLeads` share, a shadow comparison's outcome, a changed
summary) come back as typed values in `Replies`. `number_directory_records` numbers the
records the directory step wrote itself, and `merge_shutdown_shares` gives each
`ControlledShutdownResult` the partitions its broker still leads. The in-process engine and
the Spark job's stages call these same functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .appended_record import AppendedRecord
from .commands import Command, DeletionReport, SummaryReport
from .kraft.commands import KraftContext, KraftPartition
from .loop import DeadLetter, Wake, Work
from .model import ControllerConfig
from .outputs import ControlledShutdownResultRecord, ObservationOutcome, Record, StillLeads
from .partition import PartitionRecord
from .rule_sets import rules_for
from .update_metadata import Piece
from .update_metadata_records import UpdateMetadataSend, UpdateMetadataShare

# ---------------------------------------------------------------------------------------
# 2. the partitions' fold


class PartitionSlot(NamedTuple):
    """What a partition keeps between steps: its record and its `seq` counter, which
    continues across micro-batches while a cause waits for reports."""

    record: PartitionRecord | KraftPartition | None
    seq_cause: int = -1
    seq_next: int = 0


class Decision(NamedTuple):
    """A record numbered for the contract: (cause_offset, key, seq) is its place."""

    cause_offset: int
    key: str
    seq: int
    record: Record
    cause_id: str | None


@dataclass(slots=True)
class Replies:
    """What the fold and the directory send on: numbered decisions, controlled-shutdown
    shares (with their cause), shadow outcomes, deletion reports (with the target that
    sent them) and dead letters.

    Decisions arrive through `decision`, which keeps them as `Decision` values. A shell
    that only ships them on may override it to encode each one as it comes (the Spark
    job's partition stage does): a fan-out then never holds hundreds of thousands of
    record objects at once, which the cyclic collector would have to walk."""

    decisions: list[Decision] = field(default_factory=list)
    still: list[tuple[int, StillLeads]] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    reports: list[tuple[str, DeletionReport]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    summaries: list[SummaryReport] = field(default_factory=list)
    # UpdateMetadata shares and sends, merged by update_metadata.merge
    metadata: list[Piece] = field(default_factory=list)

    def decision(
        self, cause_offset: int, key: str, seq: int, record: Record, cause_id: str | None
    ) -> None:
        self.decisions.append(Decision(cause_offset, key, seq, record, cause_id))


def fold_partition(
    slot: PartitionSlot, work: Iterable[Work], config: ControllerConfig, replies: Replies
) -> PartitionSlot:
    """Apply one partition's commands in (cause, round, index) order; its records go to
    `replies.decisions`, numbered per (cause, key)."""
    record, seq_cause, seq_next = slot
    start = prior = record
    decision = replies.decision
    rules = rules_for(config)
    step = rules.partition_step
    if not isinstance(work, list) or len(work) > 1:  # one command, the common case, needs no sort
        work = sorted(work, key=lambda w: (w.cause_offset, w.round, w.idx))
    for w in work:
        cmd: Command = w.item  # type: ignore[assignment]
        result, error = step(record, cmd, config)
        record = result.state
        if record is None:
            prior = None  # gone: a record made after it is a new partition's
        cause = cmd.cause_offset
        if cause != seq_cause:
            seq_cause, seq_next = cause, 0
        if error is not None:
            replies.dead_letters.append(
                DeadLetter(cause, f"partition:{w.target}", error, None, cmd)
            )
        if result.outputs:
            cause_id = cmd.cause_id
            # the internal outputs are final classes: told apart by identity (`type(o) is`),
            # which mypy does not narrow through `kind`; hence `Any` for the items
            outputs: tuple[Any, ...] = result.outputs
            for k, o in enumerate(outputs):
                kind = type(o)
                if kind is AppendedRecord:
                    o = o.placed((w.round, w.idx, k))
                    decision(cause, o.key(), seq_next, o, cause_id)
                    seq_next += 1
                elif kind is UpdateMetadataShare:
                    replies.metadata.append(Piece(cause, cause_id, w.round, o))
                elif kind is StillLeads:
                    replies.still.append((cause, o))
                elif kind is ObservationOutcome:
                    replies.outcomes.append(o.outcome)
                else:
                    decision(cause, o.key(), seq_next, o, cause_id)
                    seq_next += 1
        if result.report is not None:
            replies.reports.append((w.target, result.report))
    # the summary is reported when it changed: compared field by field, without building
    # the two summaries of every partition a fan-out reaches
    if record is not start and not rules.same_summary(start, record):
        ts = cmd.ctx.ts if isinstance(cmd.ctx, KraftContext) else None
        before = None if prior is None else rules.summary_of(prior)
        replies.summaries.append(
            SummaryReport(
                cmd.topic, cmd.partition, rules.summary_of(record), cmd.cause_offset, ts, before
            )
        )
    return PartitionSlot(record, seq_cause, seq_next)


def fold_partitions(
    slots: MutableMapping[str, PartitionSlot],
    work: Iterable[Work],
    config: ControllerConfig,
    replies: Replies,
) -> None:
    """Fold each partition's commands on its own slot (updated in place; a removed
    partition leaves), partitions in key order."""
    by_target: dict[str, list[Work]] = {}
    for w in work:
        by_target.setdefault(w.target, []).append(w)
    for target in sorted(by_target):
        slot = fold_partition(slots.get(target, EMPTY_SLOT), by_target[target], config, replies)
        if slot.record is None:
            slots.pop(target, None)
        else:
            slots[target] = slot


EMPTY_SLOT = PartitionSlot(None)


# ---------------------------------------------------------------------------------------
# 3. the directory's own records, and the merge


def number_directory_records(work: Iterable[Work], replies: Replies) -> None:
    """The directory's records and dead letters: records numbered per (cause, key) in
    production order."""
    counters: dict[tuple[int, str], int] = {}
    for w in sorted(work, key=lambda w: (w.cause_offset, w.round, w.idx)):
        item = w.item
        if isinstance(item, Wake):
            continue
        if isinstance(item, DeadLetter):
            replies.dead_letters.append(item)
        elif isinstance(item, ObservationOutcome):
            replies.outcomes.append(item.outcome)
        elif isinstance(item, UpdateMetadataSend):
            replies.metadata.append(Piece(w.cause_offset, w.cause_id, w.round, item))
        else:
            if type(item) is AppendedRecord:
                item = item.placed((w.round, w.idx, 0))
            key = item.key()  # type: ignore[union-attr]
            seq = counters.get((w.cause_offset, key), 0)
            counters[(w.cause_offset, key)] = seq + 1
            replies.decision(w.cause_offset, key, seq, item, w.cause_id)  # type: ignore[arg-type]


def merge_shutdown_shares(
    decisions: Iterable[Decision], still: Iterable[tuple[int, StillLeads]]
) -> Iterator[Decision]:
    """Each accepted `ControlledShutdownResult` with the partitions its broker still leads
    (Kafka's `partitionLeadersOnBroker`, a set; the contract sorts it by topic, then
    partition number)."""
    shares: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for cause, s in still:
        shares.setdefault((cause, s.broker_id), []).append((s.topic, s.partition))
    for d in decisions:
        rec = d.record
        if isinstance(rec, ControlledShutdownResultRecord) and rec.error is None:
            remaining = tuple(
                f"{t}-{p}" for t, p in sorted(shares.get((d.cause_offset, rec.broker_id), ()))
            )
            d = d._replace(record=ControlledShutdownResultRecord(rec.broker_id, remaining, None))
        yield d
