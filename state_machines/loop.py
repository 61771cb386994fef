"""The controller's event loop: what happens to one event, written once.

Kafka's controller is one thread over one `ControllerContext`. Here the context is split by
owner so that Spark can key it (`directory.py`, `partition_record.py`), and this module is
the loop that joins the owners again. The in-process `Engine` and the Spark job drive the
same three functions; they differ only in where the pieces run and when reports come back.

1. **Sequencing** (`Sequencer`, the directory's owner). Events are applied in offset order.
   For one event (a *cause*) the directory step decides the controller-wide facts and
   sends each partition it concerns a `Command`; a bounce (a failure then a startup) and
   similar follow-ups run in turn under the same cause. Each piece of work is a `Work`
   item, numbered by (cause, round, index) so that its order survives any shuffle.
   Commands to partitions of a topic queued for deletion make those partitions report
   back (Kafka's TopicDeletionManager decides on all replicas of a topic at once): the
   cause then waits as a `Pending` until the reports are in, and later events wait behind
   it. The engine feeds the reports back at once; the Spark job, which cannot loop inside
   a micro-batch, feeds them in the next one.
2. **The partitions' fold** (`fold.fold_partition`, the partitions' owner). A partition applies
   its commands in (cause, round, index) order and numbers its records per (cause, key):
   the contract's `seq`. Its replies (a deletion report, a controlled shutdown's
   `StillLeads` share, a shadow comparison's outcome) come back as typed values.
3. **The directory's own records and the merge** (`fold.number_directory_records`,
   `fold.merge_shutdown_shares`). Records the directory step writes itself are numbered the same
   way; a `ControlledShutdownResult` receives the shares of the partitions its broker still
   leads.

Nothing here raises on input. `parse_line` turns any record into an event or a dead letter;
an exception inside a step (a bug of this project) becomes a `DeadLetter` as well (see
`guarded_partition_step`), and the engine and the job lose exactly the same decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from .commands import Command, DeletionReport, SummaryReport
from .directory import Continuation, DirectoryResult
from .errors import InvalidEvent
from .event_types import CauseStep, KraftTask, RebalanceCheck
from .events import DEFAULT_LIMITS, Envelope, InputLimits, parse_line
from .model import ControllerConfig
from .outputs import ObservationOutcome, Record
from .partition import describe_error
from .rule_sets import rules_for
from .topic_deletion import after_reports
from .update_metadata_records import UpdateMetadataSend

# The target of work that is not a partition's: the directory's own records and dead letters.
DIRECT = "__direct__"


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One input record as the source delivers it."""

    offset: int
    value: bytes | None  # None: a Kafka record with a null value (a tombstone)
    source: str


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that could not be applied, or the part of a cause a bug stopped.
    `command` is set when one partition's step raised: the command it could not apply."""

    offset: int
    source: str
    reason: str
    value: bytes | None = None
    command: Command | None = None


@dataclass(frozen=True, slots=True)
class Wake:
    """The sequencer holds a cause or an event until what it sent is folded: a shell that
    runs it only on input (the Spark job) must run it again after the fold, even if the
    fold reports nothing."""


class Work(NamedTuple):
    """One piece of a cause's work: a command to a partition (`target` "<topic>-<partition>"),
    or, for `DIRECT`, a record the directory wrote or a dead letter. (A named tuple: a
    fan-out makes tens of thousands per event.)"""

    target: str
    cause_offset: int
    round: int
    idx: int
    item: Command | Record | ObservationOutcome | UpdateMetadataSend | DeadLetter | Wake
    cause_id: str | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    """A cause waiting: for `expected` deletion reports, or (`barrier`) for the partitions
    to fold everything it sent so far, so that its next step reads their summaries."""

    cause_offset: int
    cause_id: str | None
    round: int
    expected: int
    continuation: Continuation | None
    followups: tuple[CauseStep, ...] = ()
    reports: tuple[DeletionReport, ...] = ()
    barrier: bool = False
    ts: int | None = None


# ---------------------------------------------------------------------------------------
# 1. sequencing


@dataclass
class Sequencer:
    """The directory's side of the loop, over a working copy of the directory records
    (changed in place; `changed` names the keys written)."""

    directory: MutableMapping[str, Any]
    config: ControllerConfig
    limits: InputLimits = DEFAULT_LIMITS
    changed: set[str] = field(default_factory=set)
    work: list[Work] = field(default_factory=list)
    # the record of the cause being run, for the dead letter of an exception it causes
    _cause: RawEvent | None = None
    # the partitions the cause being run has reached so far, and its event time
    _touched: set[tuple[str, int]] = field(default_factory=set)
    _ts: int | None = None
    # whether the cause sent commands since its last wait (which folded everything before it)
    _unfolded: bool = False
    # a partition 0 was sent a command this run, under rules whose decisions read partition
    # 0's replica count (KRaft with ELR: `getTopicEffectiveMinIsr`): later events wait for its fold
    _unsettled: bool = False

    def run(
        self,
        pending: Pending | None,
        buffered: Sequence[RawEvent],
        events: Iterable[RawEvent],
        reports: Iterable[DeletionReport],
        summaries: Iterable[SummaryReport] = (),
    ) -> tuple[Pending | None, list[RawEvent]]:
        """Apply the partitions' summaries (everything sent before this run is folded),
        resume a waiting cause with `reports`, then apply events in offset order until one
        waits. Returns the waiting cause (or None) and the events held behind it; when the
        sequencer holds only for a fold, its work ends with a `Wake`."""
        pending, rest = self._run(pending, buffered, events, reports, summaries)
        if (pending is not None and pending.barrier) or (pending is None and rest):
            offset = pending.cause_offset if pending is not None else rest[0].offset
            self.work.append(Work(DIRECT, offset, 0, 0, Wake()))
        return pending, rest

    def _run(
        self,
        pending: Pending | None,
        buffered: Sequence[RawEvent],
        events: Iterable[RawEvent],
        reports: Iterable[DeletionReport],
        summaries: Iterable[SummaryReport],
    ) -> tuple[Pending | None, list[RawEvent]]:
        ordered = sorted(summaries, key=lambda s: s.cause_offset)
        if ordered:
            self.apply_summaries(ordered[-1].cause_offset, ordered)
        if pending is not None:
            got = pending.reports + tuple(reports)
            if len(got) < pending.expected:
                return replace(pending, reports=got), sorted(
                    [*buffered, *events], key=lambda e: e.offset
                )
            pending = self.resume(pending, got)
        queue = sorted([*buffered, *events], key=lambda e: e.offset)
        position = 0
        while position < len(queue) and pending is None:
            raw = queue[position]
            position += 1
            try:
                env = parse_line(raw.value, raw.offset, self.limits)
            except InvalidEvent as exc:
                self.work.append(
                    Work(
                        DIRECT,
                        raw.offset,
                        0,
                        0,
                        DeadLetter(raw.offset, raw.source, str(exc), raw.value),
                    )
                )
                continue
            except Exception as exc:
                reason = f"not decodable: {type(exc).__name__}"
                self.work.append(
                    Work(
                        DIRECT,
                        raw.offset,
                        0,
                        0,
                        DeadLetter(raw.offset, raw.source, reason, raw.value),
                    )
                )
                continue
            if (self._unsettled or self._reads_summaries(env)) and any(
                w.target != DIRECT for w in self.work
            ):
                # what this run sent has not been folded yet, and this event reads every
                # partition's summary: it waits for the next run (partition_summaries.py)
                position -= 1
                break
            self._cause = raw
            pending = self.start(env)
        return pending, queue[position:]

    def _reads_summaries(self, env: Envelope) -> bool:
        """Whether the event reads the partitions' summaries (the rule set says which do),
        or a due rebalance check, which reads every partition's leader."""
        return rules_for(self.config).reads_summaries(env, self.directory)

    def start(self, env: Envelope) -> Pending | None:
        """Apply one parsed event (one cause)."""
        self._touched = set()
        self._ts = env.ts
        self._unfolded = False
        return self._events(env.offset, env.id, [env.event], 0)

    def apply_summaries(self, offset: int, reports: Sequence[SummaryReport]) -> None:
        """The partitions' summary reports (partition_summaries.py), in the order they were
        made; `offset` names the cause whose record a failure would dead-letter."""
        if reports:
            self._step(offset, rules_for(self.config).apply_summaries, reports, self.config, offset)

    def resume(self, pending: Pending, reports: Iterable[DeletionReport]) -> Pending | None:
        """A waiting cause with its round's reports in (they are taken in partition order),
        or past its barrier (everything it sent is folded, the summaries applied)."""
        self._ts = pending.ts
        self._unfolded = False
        if pending.barrier:
            return self._events(
                pending.cause_offset, pending.cause_id, list(pending.followups), pending.round + 1
            )
        ordered = sorted(reports, key=lambda r: (r.topic, r.partition))
        result = self._step(
            pending.cause_offset,
            after_reports,
            ordered,
            pending.continuation,
            self.config,
            pending.cause_offset,
            pending.cause_id,
        )
        if result is None:
            return None
        return self._settle(
            pending.cause_offset,
            pending.cause_id,
            pending.round + 1,
            replace(result, continuation=None),
            pending.followups,
        )

    # -- one cause -------------------------------------------------------------------------

    def _step(self, offset: int, step: Any, *args: Any) -> DirectoryResult | None:
        """A directory step, applied. An exception ends the cause: its record goes to the
        dead letters and what earlier steps of the cause did stands."""
        try:
            result: DirectoryResult = step(self.directory, *args)
        except Exception as exc:
            raw = self._cause if self._cause is not None and self._cause.offset == offset else None
            letter = DeadLetter(
                offset,
                raw.source if raw else "",
                describe_error(exc, "the directory step"),
                raw.value if raw else None,
            )
            self.work.append(Work(DIRECT, offset, 0, 0, letter))
            return None
        if result.rejected is not None:
            raw = self._cause if self._cause is not None and self._cause.offset == offset else None
            self.work.append(
                Work(
                    DIRECT,
                    offset,
                    0,
                    0,
                    DeadLetter(
                        offset,
                        raw.source if raw else "",
                        result.rejected,
                        raw.value if raw else None,
                    ),
                )
            )
        for key, record in result.changes.items():
            self.changed.add(key)
            if record is None:
                self.directory.pop(key, None)
            else:
                self.directory[key] = record
        return result

    def _events(
        self, offset: int, cause_id: str | None, events: list[CauseStep], round_: int
    ) -> Pending | None:
        """Run the steps of one cause (the input event, then any follow-ups) in order."""
        if not events:
            return None
        if isinstance(events[0], (RebalanceCheck, KraftTask)) and self._unfolded:
            # a check reads every partition's summary: what this cause sent must fold first
            return Pending(
                offset, cause_id, round_ - 1, 0, None, tuple(events), barrier=True, ts=self._ts
            )
        result = self._step(
            offset,
            rules_for(self.config).directory_step,
            events[0],
            self.config,
            offset,
            cause_id,
            frozenset(self._touched),
            self._ts,
        )
        if result is None:
            return None
        return self._settle(offset, cause_id, round_, result, (*result.followups, *events[1:]))

    def _settle(
        self,
        offset: int,
        cause_id: str | None,
        round_: int,
        result: DirectoryResult,
        followups: tuple[CauseStep, ...],
    ) -> Pending | None:
        while True:
            # each item's index: its place in the step's production order where the rule set
            # gives one (kraft: the metadata records' append order), else its index
            output_order = result.output_order or range(len(result.outputs))
            for i, rec in zip(output_order, result.outputs, strict=True):
                self.work.append(Work(DIRECT, offset, round_, i, rec, cause_id))
            commands = result.commands
            touched, work = self._touched, self.work
            expected = 0
            command_order = result.command_order or range(len(commands))
            for i, cmd in zip(command_order, commands, strict=True):
                tp = (cmd.topic, cmd.partition)
                work.append(Work(f"{tp[0]}-{tp[1]}", offset, round_, i, cmd, cause_id))
                touched.add(tp)
                if cmd.ctx.queued_for_deletion:
                    expected += 1
            if commands:
                self._unfolded = True
                if rules_for(self.config).reads_partition_zero(self.config) and any(
                    c.partition == 0 for c in commands
                ):
                    self._unsettled = True
            if expected:
                return Pending(
                    offset, cause_id, round_, expected, result.continuation, followups, ts=self._ts
                )
            if result.continuation is None:
                break
            # no partition reports back: the continuation runs on at once
            nxt = self._step(
                offset, after_reports, (), result.continuation, self.config, offset, cause_id
            )
            if nxt is None:
                return None
            result = replace(nxt, continuation=None)
            round_ += 1
        if followups:
            return self._events(offset, cause_id, list(followups), round_ + 1)
        return None
