"""The sink's half of the pipeline: a micro-batch's output rows, collected on the driver,
become the decisions in the contract's order, the dead letters and the feedback lines.

The partitions' replies that need the whole batch are merged here, by the core's own
functions, exactly as the in-process engine merges them after each cause: the
controlled-shutdown shares into their `ControlledShutdownResult` (`merge_shutdown_shares`)
and the UpdateMetadata shares into their sends (the tasks' rounds joined, then
`update_metadata.chunks`, as `update_metadata.merge` does). Decisions then
sort as the contract orders them, (cause_offset, key, seq). A decision row is a *run*: one
partition's records for one cause, their documents joined by newlines.

`assemble_batch` does it all from one collect (Kafka output, and `batches.run_batches`);
with file output the runs stay on the executors and only the rest comes here
(`decision_parts.py`), through `assemble_runs`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from state_machines.fold import Decision, merge_shutdown_shares
from state_machines.outputs import Record, StillLeads
from state_machines.update_metadata import chunks

from . import codec
from .batch_gauges import settle
from .decision_json import decision_json, update_metadata_json
from .packing import OutputRow
from .pipeline import WAKE_LINE, read_metadata

# a LeaderAndIsr decision of an unclean election (contract: `election`), as decision_json writes it
UNCLEAN_ELECTION = '"election":"unclean"'


def may_be_safety(text: str) -> bool:
    """Whether a decision document (or a run of them) may be a safety divergence: a cheap
    test on the text, before any decoding."""
    return '"Divergence"' in text and '"safety"' in text


Run = tuple[int, str, int, str]  # cause_offset, key, first seq, the documents joined by newlines


# a run's place, (cause_offset, key, first seq), read without a Python call per run
run_order = itemgetter(0, 1, 2)


@dataclass(frozen=True, slots=True)
class Assembled:
    runs: list[Run]  # sorted by `run_order`
    dlq: list[dict[str, Any]]
    # the feedback lines for the next batch: deletion reports, summaries, a wake
    reports: list[str]
    observations: dict[str, int]
    # the controller's gauges at the end of the batch (`controller_metrics.GAUGES`), if
    # the sequencer ran: its count settled with the batch's summaries (`batch_gauges`)
    metrics: dict[str, int] | None
    # the events the sequencer applied: [how many, first offset, last offset], if it ran
    events: list[Any] | None = None
    # the deletion reports among `reports` (the rest are summaries and a wake)
    deletion_reports: int = 0


@dataclass(frozen=True, slots=True)
class BatchOutput:
    assembled: Assembled
    # (record key, the record's JSON) in (cause_offset, key, seq) order: the runs split
    decisions: list[tuple[str, str]]
    # KafkaController's UncleanLeaderElectionsPerSec meter marks each unclean election
    unclean_elections: int


def assemble_runs(rows: Iterable[OutputRow]) -> Assembled:
    """Merge controlled-shutdown shares into their results (the core's
    `merge_shutdown_shares`) and UpdateMetadata shares into their sends, and order the
    runs as the contract does: (cause_offset, key, seq)."""
    runs: list[Run] = []
    shutdowns: list[Decision] = []
    still: list[tuple[int, StillLeads]] = []
    metadata: list[str] = []
    dlq: list[dict[str, Any]] = []
    reports: list[str] = []
    observations: dict[str, int] = {}
    deletion_reports = 0
    metrics: dict[str, int] | None = None
    events: list[Any] | None = None
    sequenced: str | None = None  # the sequencer's line (`batch_gauges.sequencer_text`)
    shifts: list[str] = []
    for kind, cause, key, seq, payload in rows:
        if kind == "decision":
            runs.append((cause, key, seq, payload))
        elif kind == "shutdown":
            cid, text = payload.split("\t", 1)
            shutdowns.append(Decision(cause, key, seq, codec.loads(text, Record), json.loads(cid)))
        elif kind == "still":
            topic, partition = payload.split("\t")
            still.append((cause, StillLeads(int(key[len("broker-") :]), topic, int(partition))))
        elif kind == "meta":
            metadata.append(payload)
        elif kind == "dlq":
            dlq.append(json.loads(payload))
        elif kind == "summary":  # a few hundred lines (`pipeline._reply_rows`)
            reports.extend(payload.split("\n"))
        elif kind == "report":
            reports.append(payload)
            deletion_reports += 1
        elif kind == "wake" and WAKE_LINE not in reports:
            reports.append(WAKE_LINE)
        elif kind == "stat":
            observations[payload] = observations.get(payload, 0) + 1
        elif kind == "metrics":
            sequenced = payload
        elif kind == "shift":
            shifts.append(payload)
    if sequenced is not None:
        metrics, events = settle(sequenced, shifts)
    for d in merge_shutdown_shares(shutdowns, still):
        runs.append(
            (
                d.cause_offset,
                d.key,
                d.seq,
                decision_json(d.record, d.cause_offset, d.cause_id, d.seq),
            )
        )
    for (cause, round_), r in sorted(read_metadata(metadata).items(), key=lambda kv: kv[0]):
        for c in chunks(round_, r):
            runs.append(
                (
                    cause,
                    c.key,
                    c.seq,
                    update_metadata_json(
                        cause, r.cause_id, c.seq, c.key, c.recipients, c.live, c.states
                    ),
                )
            )
    runs.sort(key=run_order)
    dlq.sort(key=lambda d: d["offset"])
    return Assembled(runs, dlq, reports, observations, metrics, events, deletion_reports)


def assemble_batch(rows: Iterable[OutputRow]) -> BatchOutput:
    """The whole batch from one collect: `assemble_runs`, its runs split into records."""
    a = assemble_runs(rows)
    records = [(key, doc) for _, key, _, payload in a.runs for doc in payload.split("\n")]
    return BatchOutput(a, records, sum(1 for _, doc in records if UNCLEAN_ELECTION in doc))
