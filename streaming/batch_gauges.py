"""A micro-batch's gauges as the batch leaves the cluster: the sequencer's count settled at
the sink with the summaries the batch's partitions reported.

The sequencer counts Kafka's gauges (`controller_metrics.py`) from the directory when its
batch is done. The partition-level gauges (`GlobalPartitionCount`, `OfflinePartitionsCount`,
`PreferredReplicaImbalanceCount` and the brokers' replica gauges) are counted from the
topics' partition summaries, which the partition stage reports after the sequencer ran and
which reach the directory through the feedback files in the *next* batch
(`pipeline.read_feedback`). Counted there alone, the gauges trailed the decisions by one
micro-batch: the batch that took a partition offline logged `OfflinePartitionsCount=0`.

So each side sends what it knows, and the sink adds them up:

- the sequencer: its gauges, and how a partition of each topic is counted (the topic's
  effective min ISR, whether its deletion started, whether the controller counts its
  imbalance; a default and the topics that differ, with `None` for a topic the batch
  removed: `sequencer_text`);
- the partition stage: each reported summary with the one the directory holds for it
  until the report is applied (`SummaryReport.before`), tallied per task by (topic, before,
  after) (`shift_rows`);
- the sink: the gauges plus, for each tally, the counts of `after` less those of `before`
  (`settle`).

The result is what the sequencer of the next batch counts once it has applied the
summaries (a test holds the two equal, and both to a count from the decisions).

The sequencer's line also carries the events the batch applied: how many, and their first
and last offsets (the runner's batch line).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from state_machines.commands import PartitionSummary, SummaryReport
from state_machines.directory import CONTROLLER_KEY, ControllerRecord, TopicRecord, topic_key
from state_machines.loop import Pending, RawEvent
from state_machines.model import ControllerConfig

from . import controller_metrics, gauge_shares
from .controller_metrics import REPLICA_GAUGES
from .summary_text import summary_of_fields

# the gauges a partition's summary counts towards, in `_zk_counts_of`'s order
PARTITION_GAUGES = (
    "GlobalPartitionCount",
    "OfflinePartitionsCount",
    "PreferredReplicaImbalanceCount",
    *REPLICA_GAUGES,
)
# lines of tallies to an output row
SHIFT_LINES_PER_ROW = 256


def sequencer_text(
    directory: Mapping[str, Any],
    pending: Pending | None,
    config: ControllerConfig,
    changed: Iterable[str],
    applied: Sequence[RawEvent],
) -> str:
    """The sequencer's line: its gauges (`controller_metrics`), how each topic's partitions
    count, and the events it applied."""
    gauges = controller_metrics.controller_metrics(directory, pending, config)
    c = directory.get(CONTROLLER_KEY)
    active = isinstance(c, ControllerRecord) and c.active
    dynamic = c.dynamic_configs if isinstance(c, ControllerRecord) else ()
    default = [config.min_isr_for((), dynamic)[0], False, active]
    topics: dict[str, list[Any] | None] = {}
    if isinstance(c, ControllerRecord):
        for topic in c.topics:
            rec = directory.get(topic_key(topic))
            if not isinstance(rec, TopicRecord):
                continue
            how = [
                config.min_isr_for(rec.configs, dynamic)[0],
                rec.queued and rec.started,
                active and not rec.queued,
            ]
            if how != default:
                topics[topic] = how
    for key in changed:  # the topics this batch removed: their summaries no longer count
        if key.startswith("topic-") and key not in directory:
            topics[key[len("topic-") :]] = None
    offsets = [e.offset for e in applied]
    events = [len(offsets), min(offsets), max(offsets)] if offsets else [0, None, None]
    return json.dumps(
        {
            "gauges": json.loads(controller_metrics.encode(gauges)),
            "mode": config.mode,
            "active": active,
            "default": default,
            "topics": topics,
            "events": events,
        },
        separators=(",", ":"),
    )


def applied_events(
    buffered: Sequence[RawEvent], events: Sequence[RawEvent], held: Sequence[RawEvent]
) -> list[RawEvent]:
    """The events a sequencer's batch took: those held before and those that came, less
    those it holds now."""
    kept = {e.offset for e in held}
    return [e for e in (*buffered, *events) if e.offset not in kept]


def _fields(s: PartitionSummary | None, none: str) -> str:
    """A summary's fields as `pipeline._summary_line` writes them, comma-separated."""
    if s is None:
        return none
    state = s.state.value if s.state else "-"
    leader = "-" if s.leader is None else s.leader
    text = f"{state},{s.preferred},{leader}"
    if s.isr_size is None:
        return text
    return f"{text},{s.isr_size},{s.replication_factor},{s.replica_count}"


def shift_rows(summaries: Sequence[SummaryReport]) -> list[tuple[str, int, str, int, str]]:
    """The partition stage's tallies of its reported summaries: `n TAB before TAB after TAB
    topic` lines (before `-`: none; after `R`: the partition is gone). Summaries are few
    distinct objects (`partition_summaries.interned_summary`): each is written once."""
    if not summaries:
        return []
    texts: dict[int, str] = {}
    tally: dict[tuple[str, str, str], int] = {}
    for r in summaries:
        b, a = r.before, r.summary
        before = texts.get(id(b))
        if before is None:
            before = texts[id(b)] = _fields(b, "-")
        after = texts.get(id(a))
        if after is None:
            after = texts[id(a)] = _fields(a, "R")
        key = (before, after, r.topic)
        tally[key] = tally.get(key, 0) + 1
    # `texts` is keyed by id: the summaries stay referenced by `summaries` until here
    lines = [f"{n}\t{b}\t{a}\t{t}" for (b, a, t), n in tally.items()]
    return [
        ("shift", 0, "", 0, "\n".join(lines[i : i + SHIFT_LINES_PER_ROW]))
        for i in range(0, len(lines), SHIFT_LINES_PER_ROW)
    ]


def settle(text: str, shifts: Iterable[str]) -> tuple[dict[str, int], list[Any]]:
    """(the batch's gauges, [events applied, first offset, last offset]) from the
    sequencer's line and the partition stage's tallies (`shift` rows' payloads)."""
    doc = json.loads(text)
    gauges = controller_metrics.decode(json.dumps(doc["gauges"]))
    kraft = doc["mode"] == "kraft"
    default, topics = doc["default"], doc["topics"]
    delta = [0] * len(PARTITION_GAUGES)
    for payload in shifts:
        for line in payload.split("\n"):
            n, before, after, topic = line.split("\t", 3)
            how = topics.get(topic, default)
            if how is None:
                continue  # removed by this batch: the sequencer no longer counted it
            minus = _counts(before, "-", how, kraft)
            plus = _counts(after, "R", how, kraft)
            times = int(n)
            for i in range(len(delta)):
                delta[i] += times * (plus[i] - minus[i])
    if any(delta):
        # the ZK controller's own gauges are 0 while it is not active; the brokers' count
        counted = PARTITION_GAUGES if kraft or doc["active"] else REPLICA_GAUGES
        for name, d in zip(PARTITION_GAUGES, delta, strict=True):
            if name in counted and name in gauges:
                gauges[name] += d
    return gauges, doc["events"]


def _counts(fields: str, none: str, how: list[Any], kraft: bool) -> tuple[int, ...]:
    if fields == none:
        return (0,) * len(PARTITION_GAUGES)
    min_isr, started, count_imbalance = how
    summary = summary_of_fields(fields.replace(",", "\t"))
    return gauge_shares.summary_counts(summary, min_isr, started, count_imbalance, kraft)
