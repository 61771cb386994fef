"""What crosses Spark between the job's operators, and how each operator drives the core loop.

The Spark query is: events (and the job's own feedback) -> the **sequencer**, in
`transformWithStateInPandas` under one key -> the **partition stage**, in
`applyInPandasWithState` keyed by topic-partition (or bucket, `storage.py`) -> the **batch
sink**, in `foreachBatch`. The controller's loop itself is the core's
(`state_machines/loop.py`): the sequencer runs `Sequencer`, the partition stage
`fold_partition`, the direct group `number_directory_records` and the sink
`merge_shutdown_shares` and `update_metadata.merge`, exactly as the in-process engine
does. This module only encodes what they return so it can cross Spark, and decodes it on
the other side (the packing of those strings: `packing.py`); `batches.run_batches` runs
the same path without Spark, for tests.

Deletion reports and the partitions' summaries cannot loop inside one micro-batch: they
travel through the feedback files to the next one (`assemble.Assembled.reports`, `read_feedback`).
Meanwhile the sequencer holds a cause that waits for them, and every later event; when it
holds only for the fold, a wake line makes sure it runs in the next batch. Decisions are
therefore exactly the engine's, only later.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from state_machines.commands import DeletionReport, SummaryReport
from state_machines.fold import (
    PartitionSlot,
    Replies,
    fold_partition,
    fold_partitions,
    number_directory_records,
)
from state_machines.loop import Wake, Work
from state_machines.model import ControllerConfig
from state_machines.outputs import ControlledShutdownResultRecord, Record
from state_machines.update_metadata import Piece, Round, gather
from state_machines.update_metadata_records import UpdateMetadataSend

from . import codec
from .batch_gauges import shift_rows
from .decision_json import decision_json, metadata_state_json
from .json_text import canonical_json, compact_json, json_str
from .packing import (
    DEFAULT_DLQ_MAX_VALUE_BYTES,
    GS,
    LetterText,
    MetricsText,
    OutputRow,
    dead_letter,
)
from .summary_text import summary_of_fields

__all__ = [
    "bucket_stage",
    "direct_stage",
    "metadata_rows",
    "partition_stage_rows",
    "read_feedback",
    "read_metadata",
]


# ---------------------------------------------------------------------------------------
# the partition stage: the core's fold, its replies encoded as output rows


class EncodedReplies(Replies):
    """The core's replies with each decision encoded as it arrives. Decisions leave as
    runs: a partition's records for one cause are consecutive in the contract's order
    (cause, key, seq), so they travel as one row whose `seq` is the first one's and whose
    payload is their JSON documents joined by newlines (`assemble_batch` splits them). A
    fan-out to thousands of partitions moves one row per partition. A
    `ControlledShutdownResult` travels typed, to receive its shares at the sink."""

    __slots__ = ("rows", "_run", "_key", "_cause", "_seq")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[OutputRow] = []
        self._run: list[str] = []
        self._key = ""
        self._cause = self._seq = 0

    def decision(
        self, cause_offset: int, key: str, seq: int, record: Record, cause_id: str | None
    ) -> None:
        if isinstance(record, ControlledShutdownResultRecord):
            self.rows.append(
                (
                    "shutdown",
                    cause_offset,
                    key,
                    seq,
                    f"{json.dumps(cause_id)}\t{codec.dumps(record)}",
                )
            )
            return
        run = self._run
        if run and (self._cause != cause_offset or self._key != key):
            self.rows.append(("decision", self._cause, self._key, self._seq, "\n".join(run)))
            run = self._run = []
        if not run:
            self._key, self._cause, self._seq = key, cause_offset, seq
        run.append(decision_json(record, cause_offset, cause_id, seq))

    def finish(self) -> list[OutputRow]:
        if self._run:
            self.rows.append(("decision", self._cause, self._key, self._seq, "\n".join(self._run)))
            self._run = []
        return self.rows


def _reply_rows(replies: EncodedReplies, dlq_max_value_bytes: int) -> list[OutputRow]:
    out = replies.finish()
    for cause, s in replies.still:
        out.append(("still", cause, f"broker-{s.broker_id}", 0, f"{s.topic}\t{s.partition}"))
    for outcome in replies.outcomes:
        out.append(("stat", 0, "", 0, outcome))
    for target, report in replies.reports:
        out.append(("report", 0, target, 0, codec.dumps(report)))
    # a few hundred summaries to a row (`SUMMARY_LINES_PER_ROW`): a creation reports every
    # partition it made, a million rows to unpack and sort on the driver if each were one
    summaries = replies.summaries
    for i in range(0, len(summaries), SUMMARY_LINES_PER_ROW):
        out.append(
            (
                "summary",
                summaries[i].cause_offset,
                "",
                0,
                "\n".join([_summary_line(s) for s in summaries[i : i + SUMMARY_LINES_PER_ROW]]),
            )
        )
    out.extend(shift_rows(summaries))
    out.extend(metadata_rows(replies.metadata))
    for letter in replies.dead_letters:
        out.append(
            ("dlq", letter.offset, "", 0, canonical_json(dead_letter(letter, dlq_max_value_bytes)))
        )
    return out


def partition_stage_rows(
    slot: PartitionSlot,
    work: Iterable[Work],
    config: ControllerConfig,
    dlq_max_value_bytes: int = DEFAULT_DLQ_MAX_VALUE_BYTES,
) -> tuple[PartitionSlot, list[OutputRow]]:
    """Per-partition keying: one partition's work."""
    replies = EncodedReplies()
    slot = fold_partition(slot, work, config, replies)
    return slot, _reply_rows(replies, dlq_max_value_bytes)


def bucket_stage(
    slots: dict[str, PartitionSlot],
    work: Iterable[Work],
    config: ControllerConfig,
    dlq_max_value_bytes: int = DEFAULT_DLQ_MAX_VALUE_BYTES,
) -> list[OutputRow]:
    """Scale mode: each partition of a bucket on its own slot (updated in place)."""
    replies = EncodedReplies()
    fold_partitions(slots, work, config, replies)
    return _reply_rows(replies, dlq_max_value_bytes)


def direct_stage(work: Iterable[Work]) -> list[OutputRow]:
    """The directory's own records, numbered; dead letters pass through."""
    records, out = [], []
    for w in work:
        if isinstance(w.item, LetterText):
            out.append(("dlq", w.cause_offset, "", 0, str(w.item)))
        elif isinstance(w.item, Wake):
            out.append(("wake", w.cause_offset, "", 0, WAKE_LINE))
        elif isinstance(w.item, MetricsText):
            out.append(("metrics", 0, "", 0, str(w.item)))
        else:
            records.append(w)
    replies = EncodedReplies()
    number_directory_records(records, replies)
    return _reply_rows(replies, DEFAULT_DLQ_MAX_VALUE_BYTES) + out


# UpdateMetadata crosses to the sink gathered per task: each (cause, round) of a group's
# pieces (`update_metadata.gather`) as a block of a head and share lines, each state already
# its contract JSON. The sink joins the tasks' rounds and writes the records from the JSON
# (`read_metadata`, `assemble.assemble_runs`): a send to a starting broker names every
# partition of the cluster, and decoding a million states on the driver took seconds.
#   head:  cause TAB round TAB [cause_id, live brokers,
#            [[site, recipients, unless sites], ...], shared sites]
#   share: site TAB scope (JSON) TAB topic (JSON) TAB partition TAB state JSON, or - (none)
# A row holds blocks separated by GS, at most METADATA_LINES_PER_ROW lines in all (a
# round with more is cut into blocks of several rows). A creation of 10,000 topics at a
# million partitions has about a million (cause, round)s of a share or two in a task:
# they cross a few dozen to a row, not a row each.
METADATA_LINES_PER_ROW = 64
SUMMARY_LINES_PER_ROW = 256


def metadata_rows(pieces: Iterable[Piece]) -> list[OutputRow]:
    out: list[OutputRow] = []
    blocks: list[str] = []
    used = 0  # lines in `blocks`
    # a head's JSON by its parts: a bucket at a million partitions holds rounds of thousands
    # of topics, whose heads are a few texts
    heads: dict[tuple[Any, ...], str] = {}
    for (cause, round_), r in gather(pieces, metadata_state_json).items():
        parts = (r.cause_id, r.live, tuple(r.explicit.values()), tuple(sorted(r.shared_sites)))
        text = heads.get(parts)
        if text is None:
            text = heads[parts] = compact_json(
                [
                    r.cause_id,
                    r.live,
                    [[s.site, s.recipients, s.unless_sites] for s in parts[2]],
                    parts[3],
                ]
            )
        head = f"{cause}\t{round_}\t{text}"
        lines = [
            f"{site}\t{json_str(scope)}\t{json_str(topic)}\t{partition}\t"
            f"{'-' if state is None else state}"
            for (scope, site), states in r.shares.items()
            for (topic, partition), state in states.items()
        ]
        if used + 1 + len(lines) <= METADATA_LINES_PER_ROW:  # the round fits in this row (most do)
            blocks.append("\n".join([head, *lines]))
            used += 1 + len(lines)
            continue
        i = 0
        while True:
            if (
                blocks and used + 1 + min(1, len(lines) - i) > METADATA_LINES_PER_ROW
            ):  # no room for a head and a line
                out.append(("meta", 0, "", 0, GS.join(blocks)))
                blocks, used = [], 0
            take = lines[i : i + max(METADATA_LINES_PER_ROW - used - 1, 1)]
            blocks.append("\n".join([head, *take]))
            used += 1 + len(take)
            i += len(take)
            if i >= len(lines):
                break
    if blocks:
        out.append(("meta", 0, "", 0, GS.join(blocks)))
    return out


def read_metadata(payloads: Iterable[str]) -> dict[tuple[int, int], Round[str]]:
    """The tasks' rounds of `meta` rows' payloads, joined (`Round.join_head`).

    A creation of 10,000 topics at a million partitions sends about a million blocks (each
    topic's round from each bucket that holds one of its partitions), whose heads are a few
    distinct texts: each is decoded once, and a block's shares go straight into its round."""
    rounds: dict[tuple[int, int], Round[str]] = {}
    names: dict[str, str] = {}  # a topic's or scope's JSON, decoded once
    heads: dict[
        str, tuple[str | None, tuple[int, ...], dict[int, UpdateMetadataSend], set[int]]
    ] = {}
    for payload in payloads:
        for block in payload.split(GS):
            first, *lines = block.split("\n")
            cause, round_, head = first.split("\t", 2)
            decoded = heads.get(head)
            if decoded is None:
                cause_id, live, explicit, shared = json.loads(head)
                decoded = heads[head] = (
                    cause_id,
                    tuple(live),
                    {
                        site: UpdateMetadataSend(site, tuple(recipients), tuple(unless))
                        for site, recipients, unless in explicit
                    },
                    set(shared),
                )
            place = (int(cause), int(round_))
            r = rounds.get(place)
            if r is None:
                r = rounds[place] = Round(decoded[0], decoded[1], dict(decoded[2]), set(decoded[3]))
            else:
                r.join_head(decoded[1], decoded[2], decoded[3])
            shares = r.shares
            for line in lines:
                site, scope, topic, partition, state = line.split("\t", 4)
                scope_name = names.get(scope)
                if scope_name is None:
                    scope_name = names[scope] = json.loads(scope)
                topic_name = names.get(topic)
                if topic_name is None:
                    topic_name = names[topic] = json.loads(topic)
                shares.setdefault((scope_name, int(site)), {})[(topic_name, int(partition))] = (
                    None if state == "-" else state
                )
    return rounds


# ---------------------------------------------------------------------------------------
# the feedback lines: a deletion report is its JSON document (as ever), a summary
# `S<TAB>topic<TAB>partition<TAB>cause<TAB>state|-<TAB>preferred<TAB>leader|-` then
# `<TAB>isr size<TAB>replication factor<TAB>replica count` when known (`R` after the cause:
# the partition is gone), then, in kraft mode, `<TAB>@ts` (the cause's event time, which
# schedules KRaft's periodic tasks); a wake `W`.

WAKE_LINE = "W"


def _summary_line(r: SummaryReport) -> str:
    s = r.summary
    ts = "" if r.ts is None else f"\t@{r.ts}"
    if s is None:
        return f"S\t{r.topic}\t{r.partition}\t{r.cause_offset}\tR{ts}"
    state = s.state.value if s.state else "-"
    leader = "-" if s.leader is None else s.leader
    line = f"S\t{r.topic}\t{r.partition}\t{r.cause_offset}\t{state}\t{s.preferred}\t{leader}"
    if s.isr_size is None:
        return line + ts
    return f"{line}\t{s.isr_size}\t{s.replication_factor}\t{s.replica_count}{ts}"


def read_feedback(lines: Iterable[str]) -> tuple[list[DeletionReport], list[SummaryReport]]:
    """The deletion reports and the summaries of feedback lines (a wake only wakes)."""
    reports: list[DeletionReport] = []
    summaries: list[SummaryReport] = []
    for line in lines:
        if line == WAKE_LINE:
            continue
        if line.startswith("S\t"):
            _, topic, partition, cause, rest = line.split("\t", 4)
            ts = None
            at = rest.find("@")
            if at >= 0:  # kraft mode's event time trails
                ts = int(rest[at + 1 :])
                rest = rest[: max(at - 1, 0)]
            summary = None if rest == "R" else summary_of_fields(rest)
            summaries.append(SummaryReport(topic, int(partition), summary, int(cause), ts))
        else:
            reports.append(codec.loads(line, DeletionReport))
    return reports, summaries
