"""The job's state at micro-batch N of a checkpoint without Spark (issue 47): the job's own
micro-batches 0..N replayed on the same code, then checked against what the job wrote.

`health`, `inspect` and `what-if` only read a checkpoint, yet Spark's state readers
(`streaming/state_reader.py`) cost them a JVM and a Spark job per state variable: 11-16 s
on a quiet machine for a 4-partition checkpoint, 40-55 s under load. The state after batch
N is a function of what batches 0..N read, and the checkpoint says exactly what that was:

- Spark's offset log (`query/offsets/<b>`) gives each batch's end offsets, so batch b read
  the event lines [end(b - 1), end(b)) of the input directory (`streaming/file_lines.py`,
  the same functions the job's file source reads through) and the feedback files of the
  batches in (end(b - 1), end(b)] (`CHECKPOINT/feedback`, written by the job itself);
- every stage then runs as the query runs it (`streaming/operators.py`): the core's
  `Sequencer` over the directory, the pending cause and the held events, its work packed
  and unpacked as it crosses Spark, each group folded by the checkpoint's storage strategy
  (`storage.fold_group`) into a state shaped like Spark's `GroupState`, and the batch's rows
  assembled as the sink assembles them (`assemble.assemble_batch`). A batch without input
  rows runs no stage, as in Spark (no timers, no timeouts).

The replay is then CHECKED, batch by batch, against the job's file output: the decisions
it computes must be the lines of `decisions-<b>.jsonl`, its dead letters those of
`dlq/dlq-<b>.jsonl`, and its feedback lines those of `feedback/<b>.jsonl` (as a multiset:
the sink writes them in the order Spark collects them). Only then is its state used; it
is handed over as the state readers would decode it (the directory through its map's
chunk texts, each partition through its group's stored text, the pending cause through its
codec), so a caller cannot tell the two apart.

Anything else falls back to the state readers (`None`; with --verbose, one line on stderr
saying why): input other than `file:` (Kafka's offsets or a metadata log are not read here),
file output missing or differing, an offset log entry purged (Spark keeps the last 100), an
input file shorter than the log says, more than `REPLAY_MAX_EVENTS` events or
`REPLAY_MAX_DECISION_BYTES` of decisions, or any error while replaying. The replay writes
nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from state_machines.errors import ShadowControllerError
from state_machines.loop import Pending, RawEvent, Sequencer
from state_machines.partition import PartitionRecord
from streaming import codec, directory_store
from streaming.assemble import assemble_batch
from streaming.batches import MemoryState
from streaming.file_lines import event_lines, feedback_file, feedback_rows
from streaming.json_text import compact_json
from streaming.packing import pack_groups, pack_outputs, unpack_outputs, unpack_work
from streaming.pipeline import read_feedback
from streaming.settings.checkpoint import CheckpointError, load_settings
from streaming.settings.schema import JobSettings
from streaming.spark_log import is_verbose
from streaming.storage import PartitionStorage, fold_group, partition_storage, stored_records

from .checkpoint_files import checked_batch, read_offset_log

# The most events batches 0..N may have read, and the most bytes of decisions they may
# have written, for the replay to be tried. Its cost is the decisions it makes again: about
# 3,000 a second (1 MB of them) on the 2-core build machine at load 12 (`run_batches` over
# 4,005 events of broker bounces on 40 partitions: 87,500 decisions, 32.8 MB, 27 to 36 s),
# so past 8 MB the state readers' fixed cost (11-16 s quiet, 40-55 s loaded) is the cheaper.
REPLAY_MAX_EVENTS = 200_000
REPLAY_MAX_DECISION_BYTES = 8_000_000


class NotReplayable(ShadowControllerError):
    """Why the replay is not used: the state readers answer instead."""


@dataclass(frozen=True)
class Replayed:
    """The state after batch `batch`, as the state readers decode it."""

    settings: JobSettings
    batch: int
    latest: int
    directory: dict[str, Any]
    partitions: dict[tuple[str, int], PartitionRecord]
    pending: Pending | None
    buffered: list[RawEvent]


def replayed(checkpoint: str, batch: int | None = None) -> Replayed | None:
    """The state after `batch` (default: the latest committed) by replay, or None when it
    cannot be replayed and checked (then the state readers answer). A batch that is not
    committed is refused as the state readers' path refuses it (`checked_batch`)."""
    batch, latest = checked_batch(checkpoint, batch)
    try:
        return _replay(checkpoint, batch, latest)
    except Exception as exc:  # any doubt: the state readers answer
        if is_verbose():
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            print(
                f"the state of batch {batch} is read with Spark's state readers (not replayed: "
                f"{reason})",
                file=sys.stderr,
            )
        return None


def _ends(checkpoint: str, batch: int) -> tuple[int, int]:
    """(the events' end line, the last feedback batch read) in batch `batch`'s log entry."""
    if batch < 0:
        return 0, -1  # the sources' initial offsets (file_source.py)
    ends = read_offset_log(checkpoint, batch)
    if ends is None:
        raise NotReplayable(f"the offset log entry of batch {batch} is gone")
    line = feedback = None
    for end in ends:
        if isinstance(end, dict) and set(end) == {"line"}:
            line = int(end["line"])
        elif isinstance(end, dict) and set(end) == {"batch"}:
            feedback = int(end["batch"])
        else:
            raise NotReplayable(f"batch {batch} read a source other than the input files")
    if line is None or feedback is None:
        raise NotReplayable(f"batch {batch}'s log entry lacks the input files' offsets")
    return line, feedback


def _file_lines(path: str) -> list[str] | None:
    """A file's lines (without their newline), or None if there is no such file."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except FileNotFoundError:
        return None


def _replay(checkpoint: str, batch: int, latest: int) -> Replayed:
    try:
        settings = load_settings(checkpoint)
    except CheckpointError as exc:
        raise NotReplayable(str(exc)) from None
    if not settings.input.startswith("file:"):
        raise NotReplayable(f"its input is {settings.input.split(':')[0]}, not files")
    if not settings.output.startswith("file:"):
        raise NotReplayable("its decisions are not in files to check the replay against")
    if settings.controller.mode != "zk":
        raise NotReplayable(f"controller.mode {settings.controller.mode}")
    ends = [_ends(checkpoint, b) for b in range(-1, batch + 1)]
    total = ends[-1][0]
    if total > REPLAY_MAX_EVENTS:
        raise NotReplayable(f"{total} events to replay, more than {REPLAY_MAX_EVENTS}")
    written = sum(
        os.path.getsize(path)
        for path in (_decisions_file(settings.output[5:], b) for b in range(batch + 1))
        if os.path.isfile(path)
    )
    if written > REPLAY_MAX_DECISION_BYTES:
        raise NotReplayable(
            f"{written} bytes of decisions to replay, more than {REPLAY_MAX_DECISION_BYTES}"
        )
    lines = list(event_lines(settings.input[5:], 0, total))
    if len(lines) != total:
        raise NotReplayable(f"the input holds {len(lines)} complete lines, the job read {total}")
    return _run(settings, checkpoint, batch, latest, ends, lines)


def _run(
    settings: JobSettings,
    checkpoint: str,
    batch: int,
    latest: int,
    ends: list[tuple[int, int]],
    lines: list[tuple[bytes, int, str]],
) -> Replayed:
    """Batches 0..`batch` as `operators.py` runs them, each checked against the job's
    output; `ends[b + 1]` is batch b's end offsets (`ends[0]` the sources' start)."""
    config, storage = settings.controller, _storage(settings)
    # the feedback files of the checkpoint asked (it may have moved since settings.json
    # recorded its path), as `controller_state.unread_feedback` reads them
    out_base, feedback_dir = settings.output[5:], os.path.join(checkpoint, "feedback")
    directory: dict[str, Any] = {}
    pending: Pending | None = None
    buffered: list[RawEvent] = []
    states: dict[str, MemoryState] = {}
    for b in range(batch + 1):
        (line_lo, fb_lo), (line_hi, fb_hi) = ends[b], ends[b + 1]
        events = [RawEvent(offset, raw, source) for raw, offset, source in lines[line_lo:line_hi]]
        rows = [payload for _, payload in feedback_rows(feedback_dir, fb_lo, fb_hi)]
        if not events and not rows:
            _check(b, out_base, feedback_dir, None)  # no input rows: no stage ran
            continue
        # the sequencer (operators.SequencerProcessor._batch and _inputs)
        reports, summaries = read_feedback(line for row in rows for line in row.split("\n"))
        seq = Sequencer(directory, config, settings.limits)
        pending, buffered = seq.run(pending, buffered, events, reports, summaries)
        groups = pack_groups(seq.work, storage.group, settings.dlq_max_value_bytes)
        # the partition stage (operators.partition_stage), each group's rows as they cross
        # Spark to the sink; with file output in scale mode the stage writes its decision
        # runs to parts, which the sink merges in the same order (decision_parts.py)
        packed: list[str] = []
        for grp, texts in groups.items():
            state = states.setdefault(grp, MemoryState())
            packed.extend(pack_outputs(fold_group(storage, grp, state, unpack_work(texts), config)))
        _check(b, out_base, feedback_dir, unpack_outputs(packed))
    return Replayed(
        settings=settings,
        batch=batch,
        latest=latest,
        directory=_stored_directory(directory),
        partitions=_stored_partitions(storage, states),
        pending=None if pending is None else codec.loads(codec.dumps(pending), Pending),
        buffered=sorted(buffered, key=lambda e: e.offset),
    )


def _decisions_file(out_base: str, b: int) -> str:
    """`decision_parts.decisions_file`, whose module needs numpy (the executors' parts)."""
    return os.path.join(out_base, f"decisions-{b:012d}.jsonl")


def _storage(settings: JobSettings) -> PartitionStorage:
    return partition_storage(settings.partition_buckets, settings.shuffle_partitions)


def _check(b: int, out_base: str, feedback_dir: str, rows: list[Any] | None) -> None:
    """The replayed batch `b` wrote what the job wrote: its decisions, dead letters and
    feedback (`sink.BatchSink._write_batch`)."""
    decisions: list[str] = []
    dlq: list[str] = []
    feedback: list[str] = []
    if rows is not None:
        whole = assemble_batch(rows)
        decisions = [doc for _, doc in whole.decisions]
        dlq = [compact_json(d) for d in whole.assembled.dlq]
        feedback = whole.assembled.reports
    written = _file_lines(_decisions_file(out_base, b))
    if written is None:
        raise NotReplayable(f"no decisions file of batch {b} in {out_base}")
    if written != decisions:
        raise NotReplayable(f"batch {b}'s decisions differ from the job's")
    if (_file_lines(os.path.join(out_base, "dlq", f"dlq-{b:012d}.jsonl")) or []) != dlq:
        raise NotReplayable(f"batch {b}'s dead letters differ from the job's")
    if sorted(_file_lines(feedback_file(feedback_dir, b)) or []) != sorted(feedback):
        raise NotReplayable(f"batch {b}'s feedback differs from the job's")


def _stored_directory(directory: dict[str, Any]) -> dict[str, Any]:
    """The directory as the state readers decode it: through its map's chunk texts
    (`directory_store.writes`, `state_reader.directory_records`)."""
    updates, _ = directory_store.writes(directory, set(directory))
    texts, _ = directory_store.stored_texts(updates)
    return {key: codec.loads(text, codec.DirectoryRecord) for key, text in texts.items()}


def _stored_partitions(
    storage: PartitionStorage, states: dict[str, MemoryState]
) -> dict[tuple[str, int], PartitionRecord]:
    """Every partition as the state readers decode it: each group's state by the names of
    its schema's fields (`storage.stored_records`, `state_reader.partition_records`)."""
    names = [field.split()[0] for field in storage.state_schema.split(",")]
    out = {}
    for state in states.values():
        if state.value is None:
            continue
        for record in stored_records(dict(zip(names, state.value, strict=True))):
            out[(record.topic, record.partition)] = record
    return out
