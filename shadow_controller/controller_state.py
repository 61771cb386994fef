"""The controller's state at one micro-batch of a checkpoint, decoded once into the core's
values, for the commands that reason about it in process (`health`, `what-if`).

What the job holds after batch N is more than the directory and the partitions: the
sequencer may hold a cause (a topic deletion waiting for reports, a cause waiting for a
fold) and the events behind it, and the feedback batch N wrote (deletion reports, the
partitions' summaries) is read only by batch N + 1. All of it is read here, so a fold
from this state (`shadow_controller/what_if.py`) continues exactly where the job would.

`load_state` first replays the checkpoint's micro-batches without Spark and checks them
against the job's output (`fast_state.py`, issue 47: under 3 s where Spark takes 11-55 s);
when that cannot be done, Spark's state data source readers are used once per variable,
through `streaming/state_reader.py` (`load`). The checkpoint is only read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from state_machines.commands import DeletionReport, SummaryReport
from state_machines.directory import CONTROLLER_KEY, ControllerRecord
from state_machines.errors import ShadowControllerError
from state_machines.events import DEFAULT_LIMITS, InputLimits
from state_machines.loop import Pending, RawEvent
from state_machines.model import ControllerConfig
from state_machines.partition import PartitionRecord
from streaming import state_reader
from streaming.file_lines import feedback_file
from streaming.pipeline import read_feedback
from streaming.settings.checkpoint import load_settings

from . import fast_state
from .checkpoint_files import checked_batch, read_offset_log
from .errors import InspectError
from .inspect import refuse_kraft

TopicPartition = tuple[str, int]


@dataclass
class ControllerState:
    """The controller's state, as the job would continue from it. `next_offset` is the
    offset the next event of the input would have (what-if numbers its events from it)."""

    config: ControllerConfig
    directory: dict[str, Any]
    partitions: dict[TopicPartition, PartitionRecord]
    next_offset: int
    limits: InputLimits = DEFAULT_LIMITS
    pending: Pending | None = None
    buffered: list[RawEvent] = field(default_factory=list)
    # the feedback batch N wrote, which batch N + 1 reads
    reports: list[DeletionReport] = field(default_factory=list)
    summaries: list[SummaryReport] = field(default_factory=list)
    # where it came from: the checkpoint, the batch, the latest committed batch
    checkpoint: str | None = None
    batch: int | None = None
    latest: int | None = None

    @property
    def controller(self) -> ControllerRecord:
        rec = self.directory.get(CONTROLLER_KEY)
        return rec if isinstance(rec, ControllerRecord) else ControllerRecord()

    @property
    def settled(self) -> bool:
        """Nothing read is still to be applied: no waiting cause, no held event, no unread
        feedback."""
        return (
            self.pending is None and not self.buffered and not self.reports and not self.summaries
        )


# -- the checkpoint's files (no Spark) ------------------------------------------------------


def _source_ends(checkpoint: str, batch: int) -> tuple[int | None, int | None]:
    """(the events' next offset, the last feedback batch read) after batch `batch`, from
    its offset log entry."""
    ends = read_offset_log(checkpoint, batch)
    if ends is None:
        raise InspectError(f"no offset log entry for batch {batch} in {checkpoint}/query/offsets")
    next_offset = feedback = None
    for end in ends:
        if isinstance(end, dict) and set(end) == {"line"}:
            next_offset = int(end["line"])
        elif isinstance(end, dict) and set(end) == {"batch"}:
            feedback = int(end["batch"])
        elif isinstance(end, dict) and end and all(isinstance(v, dict) for v in end.values()):
            offsets = [int(o) for parts in end.values() for o in parts.values()]
            if offsets:
                next_offset = max(offsets)
    return next_offset, feedback


def unread_feedback(checkpoint: str, batch: int, read_up_to: int | None) -> list[str]:
    """The feedback lines written by batches after `read_up_to` up to `batch`: what the
    job's next batch reads."""
    directory = os.path.join(checkpoint, "feedback")
    lines: list[str] = []
    first = -1 if read_up_to is None else read_up_to
    for b in range(first + 1, batch + 1):
        path = feedback_file(directory, b)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                lines.extend(line.rstrip("\n") for line in fh if line.strip())
    return lines


def check_checkpoint(checkpoint: str, batch: int | None) -> tuple[int, int]:
    """Everything that can be refused before Spark starts: the checkpoint exists, records
    its settings, and has batch `batch` committed (default: the latest). Returns (batch,
    latest committed)."""
    settings = load_settings(checkpoint)  # CheckpointError (exit 2) when missing or unreadable
    refuse_kraft(checkpoint, settings.controller.mode)
    return checked_batch(checkpoint, batch)


# -- the state (Spark's state readers) ------------------------------------------------------


def load(spark: Any, checkpoint: str, batch: int | None = None) -> ControllerState:
    """The controller's state after micro-batch `batch` (default: the latest committed)."""
    settings = load_settings(checkpoint)
    batch, latest = checked_batch(checkpoint, batch)
    meta = state_reader.operators(spark, checkpoint)
    if set(meta) != {state_reader.PARTITION_OPERATOR, state_reader.SEQUENCER_OPERATOR}:
        raise InspectError(
            f"{checkpoint}: no state of the job's two operators (found: "
            f"{', '.join(sorted(meta)) or 'none'}; "
            "is it a shadow-controller checkpoint?)"
        )
    oldest = max(r["minBatchId"] for r in meta.values())
    if batch < oldest:
        raise InspectError(
            f"the state of batch {batch} is no longer kept in {checkpoint} (oldest: {oldest})"
        )
    return _state(
        checkpoint,
        batch,
        latest,
        fast_state.Replayed(
            settings=settings,
            batch=batch,
            latest=latest,
            directory=state_reader.directory_records(spark, checkpoint, batch, meta),
            partitions=state_reader.partition_records(spark, checkpoint, batch, meta),
            pending=state_reader.sequencer_pending(spark, checkpoint, batch, meta),
            buffered=state_reader.sequencer_buffer(spark, checkpoint, batch, meta),
        ),
    )


def _state(checkpoint: str, batch: int, latest: int, read: fast_state.Replayed) -> ControllerState:
    """The state read (by replay or by Spark), with the input's next offset and the feedback
    the next batch reads, both from the checkpoint's files."""
    next_offset, feedback_read = _source_ends(checkpoint, batch)
    reports, summaries = read_feedback(unread_feedback(checkpoint, batch, feedback_read))
    return ControllerState(
        config=read.settings.controller,
        limits=read.settings.limits,
        directory=read.directory,
        partitions=read.partitions,
        next_offset=next_offset or 0,
        pending=read.pending,
        buffered=read.buffered,
        reports=reports,
        summaries=summaries,
        checkpoint=checkpoint,
        batch=batch,
        latest=latest,
    )


def load_state(checkpoint: str, batch: int | None, app_name: str) -> ControllerState:
    """The state after `batch` (default: the latest committed): replayed without Spark when
    the checkpoint allows it and the replay wrote what the job wrote (`fast_state.py`),
    else read with Spark's state readers (`load_with_spark`)."""
    fast = fast_state.replayed(checkpoint, batch)
    if fast is not None:
        return _state(checkpoint, fast.batch, fast.latest, fast)
    return load_with_spark(checkpoint, batch, app_name)


def load_with_spark(checkpoint: str, batch: int | None, app_name: str) -> ControllerState:
    """`load` in a Spark session of its own (or the one already running, left running)."""
    from pyspark.sql import SparkSession

    from streaming.job import spark_session
    from streaming.settings.schema import JobSettings

    batch, _ = checked_batch(checkpoint, batch)
    shared = SparkSession.getActiveSession()
    spark = spark_session(
        JobSettings(input="", output="", checkpoint=checkpoint), app_name=app_name
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return load(spark, checkpoint, batch)
    except ShadowControllerError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InspectError(
            f"cannot read the state of batch {batch} in {checkpoint}: {first}"
        ) from None
    finally:
        if shared is None:
            spark.stop()
