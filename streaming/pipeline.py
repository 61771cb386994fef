"""The job's logic between Spark's operators, in plain Python.

The Spark query is: events (and the job's own feedback) -> the **sequencer**, in
`transformWithStateInPandas` under one key -> the **partition fold**, in
`applyInPandasWithState` keyed by topic-partition -> the **batch sink**, in `foreachBatch`.
Each stage is a function here so the same code runs under Spark and in `run_batches`,
which replays a log in micro-batches without Spark (tests compare it with the engine).

The sequencer applies events in offset order through `directory_step`. A command to a
partition of a topic queued for deletion makes that partition report back; Spark cannot
loop inside one micro-batch, so the reports travel through the feedback files to the next
micro-batch, and meanwhile the sequencer holds every later event in its buffer. Decisions
are therefore exactly the engine's, only later; and the rounds happen only while topics
are being deleted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from state_machines.commands import Command, DeletionReport
from state_machines.directory import Continuation, after_reports, directory_step
from state_machines.errors import InvalidEvent
from state_machines.events import DEFAULT_LIMITS, Event, InputLimits, parse_line
from state_machines.model import ControllerConfig
from state_machines.outputs import ControlledShutdownResultRecord, ObservationOutcome, Record, StillLeads
from state_machines.partition import PartitionRecord, describe_error, guarded_partition_step

from . import codec
from .spark_hash import balanced_labels

DIRECT = "__direct__"  # group of rows that pass the partition stage untouched


def group_of(gkey: str, buckets: int = 0, shuffle_partitions: int = 1) -> str:
    """The Spark group of a partition's rows. Per-partition keying (buckets = 0) is the
    default; scale mode packs partitions into `buckets` groups by a stable hash, so Spark's
    per-group cost is paid per bucket. Each partition keeps its own state either way.
    Bucket labels are chosen to spread evenly over the shuffle partitions (`spark_hash`)."""
    if gkey == DIRECT or not buckets:
        return gkey
    return balanced_labels(buckets, shuffle_partitions)[zlib.crc32(gkey.encode()) % buckets]


@dataclass(frozen=True, slots=True)
class RawEvent:
    offset: int
    value: bytes | None  # None: a Kafka record with a null value (a tombstone)
    source: str


# A dead-letter reason is one line; what it quotes of the input is already bounded.
MAX_REASON_CHARS = 1000


def dead_letter(value: bytes | None, reason: str, source: str, offset: int, max_value_bytes: int) -> dict[str, Any]:
    """The dead-letter document of one record. A value over `max_value_bytes` keeps its
    prefix, and says so with its original size and SHA-256 (the Kafka output turns these
    into headers)."""
    doc: dict[str, Any] = {"reason": reason[:MAX_REASON_CHARS], "source": source, "offset": offset}
    if value is None:
        doc["value_base64"] = None
    elif len(value) > max_value_bytes:
        doc.update(value_base64=base64.b64encode(value[:max_value_bytes]).decode("ascii"), truncated=True,
                   original_size=len(value), original_sha256=hashlib.sha256(value).hexdigest())
    else:
        doc["value_base64"] = base64.b64encode(value).decode("ascii")
    return doc


class Row(NamedTuple):
    """A row between the sequencer and the partition stage. (A named tuple, like
    `PartitionSlot`: tens of thousands are made per batch, and a tuple is cheaper to build
    than a frozen dataclass.)"""

    gkey: str
    cause_offset: int
    round: int
    idx: int
    kind: str  # cmd | out | dlq
    payload: str
    cause_id: str | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    """A cause waiting for deletion reports."""

    cause_offset: int
    cause_id: str | None
    round: int
    expected: int
    continuation: Continuation | None
    followups: tuple[Event, ...] = ()
    reports: tuple[DeletionReport, ...] = ()


@dataclass
class Sequencer:
    """One micro-batch of the sequencer over a working copy of the directory records."""

    directory: dict[str, Any]
    config: ControllerConfig
    limits: InputLimits = DEFAULT_LIMITS
    dlq_max_value_bytes: int = 900_000
    changed: set[str] = field(default_factory=set)
    rows: list[Row] = field(default_factory=list)
    # the record of the cause being run, for the dead letter of an exception it causes
    _cause: RawEvent | None = None

    def _apply(self, changes: dict[str, Any]) -> None:
        for key, record in changes.items():
            self.changed.add(key)
            if record is None:
                self.directory.pop(key, None)
            else:
                self.directory[key] = record

    def run(
        self, pending: Pending | None, buffered: Sequence[RawEvent], events: Iterable[RawEvent],
        reports: Iterable[DeletionReport],
    ) -> tuple[Pending | None, list[RawEvent]]:
        if pending is not None:
            got = pending.reports + tuple(reports)
            if len(got) < pending.expected:
                return replace(pending, reports=got), sorted([*buffered, *events], key=lambda e: e.offset)
            pending = self._resume(pending, got)
        queue = sorted([*buffered, *events], key=lambda e: e.offset)
        while queue and pending is None:
            raw = queue.pop(0)
            try:
                env = parse_line(raw.value, raw.offset, self.limits)
            except InvalidEvent as exc:
                self._dlq(raw, str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - parse_line raises only InvalidEvent; never crash on input
                self._dlq(raw, f"not decodable: {type(exc).__name__}")
                continue
            self._cause = raw
            pending = self._events(env.offset, env.id, [env.event], 0)
        return pending, queue

    # -- one cause -------------------------------------------------------------------------

    def _events(self, offset: int, cause_id: str | None, events: list[Event], round_: int) -> Pending | None:
        """Run the events of one cause (the input event, then any follow-ups) in order."""
        if not events:
            return None
        event, rest = events[0], events[1:]
        try:
            result = directory_step(self.directory, event, self.config, offset, cause_id)
        except Exception as exc:  # noqa: BLE001 - as Engine.process: the cause ends here
            self._controller_error(offset, describe_error(exc, "the directory step"))
            return None
        self._apply(result.changes)
        for i, rec in enumerate(result.outputs):
            self.rows.append(Row(DIRECT, offset, round_, i, "out", codec.dumps(rec), cause_id))
        return self._settle(offset, cause_id, round_, result.commands, result.continuation,
                            (*result.followups, *rest))

    def _settle(self, offset: int, cause_id: str | None, round_: int, commands: Sequence[Command],
                cont: Continuation | None, followups: tuple[Event, ...]) -> Pending | None:
        while True:
            for i, cmd in enumerate(commands):
                self.rows.append(Row(f"{cmd.topic}-{cmd.partition}", offset, round_, i, "cmd", codec.dumps(cmd), cause_id))
            expected = sum(1 for cmd in commands if cmd.ctx.queued_for_deletion)
            if expected:
                return Pending(offset, cause_id, round_, expected, cont, followups)
            if cont is None:
                break
            try:
                result = after_reports(self.directory, (), cont, self.config, offset, cause_id)
            except Exception as exc:  # noqa: BLE001
                self._controller_error(offset, describe_error(exc, "the directory step"))
                return None
            self._apply(result.changes)
            round_ += 1
            commands, cont = result.commands, None
        if followups:
            return self._events(offset, cause_id, list(followups), round_ + 1)
        return None

    def _resume(self, pending: Pending, reports: tuple[DeletionReport, ...]) -> Pending | None:
        ordered = sorted(reports, key=lambda r: (r.topic, r.partition))
        try:
            result = after_reports(self.directory, ordered, pending.continuation, self.config,
                                   pending.cause_offset, pending.cause_id)
        except Exception as exc:  # noqa: BLE001
            self._controller_error(pending.cause_offset, describe_error(exc, "the directory step"))
            return None
        self._apply(result.changes)
        return self._settle(pending.cause_offset, pending.cause_id, pending.round + 1, result.commands, None,
                            pending.followups)

    def _dlq(self, raw: RawEvent, reason: str) -> None:
        doc = dead_letter(raw.value, reason, raw.source, raw.offset, self.dlq_max_value_bytes)
        self.rows.append(Row(DIRECT, raw.offset, 0, 0, "dlq", json.dumps(doc, sort_keys=True)))

    def _controller_error(self, offset: int, reason: str) -> None:
        """The cause's record goes to the dead letters. (After a deletion-report round the
        record is no longer at hand, as its batch has committed: the letter then names
        the offset only.)"""
        raw = self._cause if self._cause is not None and self._cause.offset == offset else RawEvent(offset, None, "")
        self._dlq(raw, reason)


# ---------------------------------------------------------------------------------------
# Rows cross Spark packed: the sequencer's rows of one group, and the partition stage's
# outputs of one group, travel as a few strings rather than one Spark row each. A fan-out
# to 30,000 partitions then moves 64 rows (scale mode) through Arrow, the shuffle and the
# collect, instead of 30,000. Entries are separated by RS and their fields by US: neither
# byte appears raw in JSON, in a topic name or in an encoded command. `cause_id` (free
# text from the event) travels as JSON. A packed string holds at most PACK_ENTRIES
# entries, so a large batch still leaves in rows Arrow and the JVM can hold.

RS, US = "\x1e", "\x1f"
PACK_ENTRIES = 4096
OutputRow = tuple[str, int, str, int, str]  # kind, cause_offset, key, seq, payload


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), PACK_ENTRIES):
        yield items[i:i + PACK_ENTRIES]


def pack_rows(rows: Sequence[Row]) -> list[str]:
    ids: dict[str | None, str] = {}
    out = []
    for chunk in _chunks(rows):
        entries = []
        for r in chunk:
            cid = ids.get(r.cause_id)
            if cid is None:
                cid = ids[r.cause_id] = json.dumps(r.cause_id)
            entries.append(f"{r.gkey}{US}{r.cause_offset}{US}{r.round}{US}{r.idx}{US}{r.kind}{US}{cid}{US}{r.payload}")
        out.append(RS.join(entries))
    return out


def unpack_rows(packed: Iterable[str]) -> list[Row]:
    ids: dict[str, str | None] = {}
    rows = []
    for text in packed:
        for entry in text.split(RS):
            gkey, cause, round_, idx, kind, cid, payload = entry.split(US, 6)
            if cid in ids:
                cause_id = ids[cid]
            else:
                cause_id = ids[cid] = json.loads(cid)
            rows.append(Row(gkey, int(cause), int(round_), int(idx), kind, payload, cause_id))
    return rows


def pack_outputs(out: Sequence[OutputRow]) -> list[str]:
    return [RS.join([f"{kind}{US}{cause}{US}{key}{US}{seq}{US}{payload}" for kind, cause, key, seq, payload in chunk])
            for chunk in _chunks(out)]


def unpack_outputs(packed: Iterable[str]) -> list[OutputRow]:
    rows: list[OutputRow] = []
    for text in packed:
        for entry in text.split(RS):
            kind, cause, key, seq, payload = entry.split(US, 4)
            rows.append((kind, int(cause), key, int(seq), payload))
    return rows


# ---------------------------------------------------------------------------------------
# the partition stage


class PartitionSlot(NamedTuple):
    """What the partition stage keeps per key: the partition and its seq counter."""

    record: PartitionRecord | None
    seq_cause: int = -1
    seq_next: int = 0


def fold_partition(slot: PartitionSlot, commands: Iterable[Row], config: ControllerConfig) -> tuple[PartitionSlot, list[OutputRow]]:
    """Apply one key's commands in (cause_offset, round, idx) order. Returns the new slot and
    output tuples (kind, cause_offset, key, seq, payload) with kind decision | still | report.

    A partition's decisions for one cause are consecutive in the contract's order (cause,
    key, seq), so they leave as one row: `seq` is the first one's and `payload` their JSON
    documents joined by newlines (`assemble_batch` splits them). A fan-out to thousands of
    partitions then moves one row per partition through Spark, not one per record."""
    out: list[OutputRow] = []
    record, seq_cause, seq_next = slot.record, slot.seq_cause, slot.seq_next
    key = None
    run: list[str] = []
    run_cause = run_seq = 0
    for row in sorted(commands, key=lambda r: (r.cause_offset, r.round, r.idx)):
        cmd: Command = codec.loads(row.payload, Command)
        result, error = guarded_partition_step(record, cmd, config)
        record = result.state
        cause = cmd.cause_offset
        if error is not None:
            # the letter carries the command the partition could not apply
            letter = dead_letter(row.payload.encode(), error, f"partition:{row.gkey}", cause, 900_000)
            out.append(("dlq", cause, "", 0, json.dumps(letter, sort_keys=True)))
        if cause != seq_cause:
            seq_cause, seq_next = cause, 0
        for o in result.outputs:
            if isinstance(o, StillLeads):
                out.append(("still", cause, f"broker-{o.broker_id}", 0, f"{o.topic}\t{o.partition}"))
                continue
            if isinstance(o, ObservationOutcome):
                out.append(("stat", cause, "", 0, o.outcome))
                continue
            k = o.key()
            if run and (run_cause != cause or k != key):
                out.append(("decision", run_cause, key, run_seq, "\n".join(run)))
                run = []
            if not run:
                key, run_cause, run_seq = k, cause, seq_next
            run.append(codec.decision_json(o, cause, cmd.cause_id, seq_next))
            seq_next += 1
        if result.report is not None:
            out.append(("report", cause, row.gkey, 0, codec.dumps(result.report)))
    if run:
        out.append(("decision", run_cause, key, run_seq, "\n".join(run)))
    return PartitionSlot(record, seq_cause, seq_next), out


def fold_bucket(slots: dict[str, PartitionSlot], rows: Iterable[Row], config: ControllerConfig) -> list[OutputRow]:
    """Scale mode: fold each partition of a bucket on its own slot (updated in place)."""
    by_partition: dict[str, list[Row]] = {}
    for row in rows:
        by_partition.setdefault(row.gkey, []).append(row)
    out: list[OutputRow] = []
    for gkey in sorted(by_partition):
        slot, partition_out = fold_partition(slots.get(gkey, PartitionSlot(None)), by_partition[gkey], config)
        if slot.record is None:
            slots.pop(gkey, None)
        else:
            slots[gkey] = slot
        out.extend(partition_out)
    return out


def direct_outputs(rows: Iterable[Row]) -> list[OutputRow]:
    """Directory records get their seq here: per (cause, key) in production order."""
    out: list[OutputRow] = []
    counters: dict[tuple[int, str], int] = {}
    for row in sorted(rows, key=lambda r: (r.cause_offset, r.round, r.idx, r.kind)):
        if row.kind == "dlq":
            out.append(("dlq", row.cause_offset, "", 0, row.payload))
            continue
        rec = codec.loads(row.payload, Record)
        if isinstance(rec, ObservationOutcome):
            out.append(("stat", row.cause_offset, "", 0, rec.outcome))
            continue
        seq = counters.get((row.cause_offset, rec.key()), 0)
        counters[(row.cause_offset, rec.key())] = seq + 1
        out.append(("decision", row.cause_offset, rec.key(), seq, codec.decision_json(rec, row.cause_offset, row.cause_id, seq)))
    return out


# ---------------------------------------------------------------------------------------
# the batch sink


@dataclass(frozen=True, slots=True)
class BatchOutput:
    # (record key, the record's JSON) in (cause_offset, key, seq) order
    decisions: list[tuple[str, str]]
    dlq: list[dict[str, Any]]
    reports: list[str]
    observations: dict[str, int] = field(default_factory=dict)


def assemble_batch(rows: Iterable[OutputRow]) -> BatchOutput:
    """Merge controlled-shutdown shares into their results and order the decisions as the
    contract does: (cause_offset, key, seq)."""
    decisions: list[tuple[int, str, int, str]] = []
    still: dict[tuple[int, str], list[tuple[str, int]]] = {}
    dlq: list[dict[str, Any]] = []
    reports: list[str] = []
    observations: dict[str, int] = {}
    for kind, cause, key, _seq, payload in rows:
        if kind == "decision":
            decisions.append((cause, key, _seq, payload))
        elif kind == "still":
            topic, partition = payload.split("\t")
            still.setdefault((cause, key), []).append((topic, int(partition)))
        elif kind == "dlq":
            dlq.append(json.loads(payload))
        elif kind == "report":
            reports.append(payload)
        elif kind == "stat":
            observations[payload] = observations.get(payload, 0) + 1
    # Only broker-keyed records (ControlledShutdownResult) are parsed: they get their shares.
    # (They come from the directory, one record per row.)
    for i, (cause, key, seq, payload) in enumerate(decisions):
        if key.startswith("broker-"):
            d = json.loads(payload)
            if d["type"] == ControlledShutdownResultRecord.TYPE and d.get("error") is None:
                d["partitions_remaining"] = [f"{t}-{p}" for t, p in sorted(still.get((cause, key), []))]
                decisions[i] = (cause, key, seq, json.dumps(d, separators=(",", ":")))
    decisions.sort(key=lambda d: (d[0], d[1], d[2]))
    dlq.sort(key=lambda d: d["offset"])
    # a row holds a run of one partition's records for one cause (fold_partition)
    records = [(key, doc) for _, key, _, payload in decisions for doc in payload.split("\n")]
    return BatchOutput(records, dlq, reports, observations)


def _order(d: dict[str, Any]) -> tuple[int, str, int]:
    if d["type"] == ControlledShutdownResultRecord.TYPE:
        key = f"broker-{d['broker_id']}"
    else:
        key = f"{d['topic']}-{d['partition']}"
    return (d["cause_offset"], key, d["seq"])


# ---------------------------------------------------------------------------------------
# the whole job without Spark


def run_batches(lines: Sequence[bytes], batch_size: int, config: ControllerConfig = ControllerConfig(),
                buckets: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Replay lines in micro-batches of `batch_size` events as the Spark job does (feedback
    included). Returns (decisions, dlq records, number of micro-batches)."""
    directory: dict[str, Any] = {}
    slots: dict[str, Any] = {}
    pending: Pending | None = None
    buffer: list[RawEvent] = []
    feedback: list[DeletionReport] = []
    decisions: list[dict[str, Any]] = []
    dlq: list[dict[str, Any]] = []
    position, batches = 0, 0
    while True:
        chunk = [RawEvent(i, lines[i], f"line:{i}") for i in range(position, min(position + batch_size, len(lines)))]
        position += len(chunk)
        if not chunk and not feedback:
            if pending is not None or buffer:
                raise RuntimeError("the sequencer waits for deletion reports that no command will send")
            break
        seq = Sequencer(directory, config)
        pending, buffer = seq.run(pending, buffer, chunk, feedback)
        groups: dict[str, list[Row]] = {}
        for row in seq.rows:
            groups.setdefault(group_of(row.gkey, buckets), []).append(row)
        packed: list[str] = []
        for gkey, group in groups.items():
            group = unpack_rows(pack_rows(group))  # as they cross Spark
            if gkey == DIRECT:
                packed.extend(pack_outputs(direct_outputs(group)))
            elif buckets:
                packed.extend(pack_outputs(fold_bucket(slots.setdefault(gkey, {}), group, config)))
            else:
                slot, out = fold_partition(slots.get(gkey, PartitionSlot(None)), group, config)
                slots[gkey] = slot
                packed.extend(pack_outputs(out))
        batch = assemble_batch(unpack_outputs(packed))
        decisions.extend(json.loads(payload) for _, payload in batch.decisions)
        dlq.extend(batch.dlq)
        feedback = [codec.loads(r, DeletionReport) for r in batch.reports]
        batches += 1
    decisions.sort(key=_order)
    return decisions, dlq, batches
