"""The batch sink (`foreachBatch`): a micro-batch's decisions and dead letters out, then the
deletion reports the next batch reads.

File output writes one file per batch id, atomically, so a batch run again overwrites its
own. Its decisions never come to the driver: the executors write them in sorted parts and
the driver merges the parts into the batch's file (`decision_parts.py`); only the rest of
the batch (summaries, reports, shares, dead letters) is collected, assembled and merged
with the parts (`decision_parts.write_batch`). Kafka output collects the whole batch through Arrow
(`assemble.assemble_batch`) and goes through `kafka.decisions.DecisionWriter`, which raises
unless the broker confirmed every record. A failed write fails the batch, which Spark then
runs again from the checkpoint.

A stop (`runner.py`) may end a batch before it commits; the sink then makes it end as a
batch `query.stop()` interrupted (`BatchInterrupted`), which a restart replays.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from state_machines.errors import ShadowControllerError

from . import decision_parts as parts
from .assemble import Assembled, assemble_batch, may_be_safety
from .collector import collect_less
from .file_source import feedback_file
from .json_text import compact_json
from .packing import unpack_outputs
from .settings.schema import JobSettings

log = logging.getLogger("shadow_controller.job")


class BatchSink:
    """foreachBatch: write the batch's decisions and dead letters, then the deletion reports
    the next batch will read. A failed write fails the batch, which Spark then retries from
    the checkpoint; file outputs are named by batch id, so a retried batch overwrites them.

    A stop (streaming.runner) may end a batch before it commits: `stopping()`, then, past
    the stop's bound, `abandon()`, which makes a write waiting for the broker give up
    within half a second. The batch then ends as a batch that `query.stop()` interrupted
    (see `_await_interrupt`), which a restart replays, rather than as a failed one."""

    def __init__(self, settings: JobSettings):
        self.settings = settings
        self.stats: dict[int, dict[str, int]] = {}
        # shadow mode: observed states that matched ours or diverged, by severity, this run
        self.observations: dict[str, int] = {}
        # Kafka's controller gauges as the latest batch that ran the sequencer left them
        # (controller_metrics.py), and the unclean leader elections decided this run
        self.metrics: dict[str, int] = {}
        # each batch's gauges as that batch left the cluster (`batch_gauges.settle`), for its
        # log line: the latest batch may be another by the time the listener hears of one
        self.gauges: dict[int, dict[str, int]] = {}
        self.unclean_elections = 0
        # metadata-log input: the verifier's verdicts written so far, by outcome
        self.verdicts: dict[str, int] = {}
        self._kafka: Any = None  # kafka.decisions.DecisionWriter, made on the first Kafka write
        self._stopping = threading.Event()
        self._cancel = threading.Event()  # the Kafka writer's: give up waiting for the broker

    def stopping(self) -> None:
        self._stopping.set()

    def abandon(self) -> None:
        self._stopping.set()
        self._cancel.set()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._write_batch(df, batch_id)
        except Exception as exc:
            if not self._stopping.is_set():
                raise
            log.debug(
                "batch %d abandoned by the stop: %s",
                batch_id,
                (str(exc).strip().splitlines() or [type(exc).__name__])[0],
            )
            _await_interrupt(df, self.settings.stop_timeout_s)
            raise

    def _write_batch(self, df: DataFrame, batch_id: int) -> None:
        collect_less()
        verdicts, log_letters = self._log_verdicts(batch_id)
        if self.settings.output.startswith("file:"):
            base = self.settings.output[5:]
            try:
                if (
                    parts.stage_parts_base(self.settings.output, self.settings.partition_buckets)
                    is None
                ):
                    df = _written_parts(df, parts.parts_dir(base, batch_id))
                batch = parts.write_batch(base, batch_id, _collect(df))
            except parts.PartNotShared as exc:
                log.error("batch %d: %s", batch_id, exc)
                raise
            out, decisions, unclean = batch.out, batch.records, batch.unclean_elections
            out.dlq.extend(log_letters)
            self._letters(batch_id, out)
            if out.observations.get("safety"):
                log_safety_divergences(batch_id, batch.safety)
            if out.dlq:
                _write_lines(os.path.join(base, "dlq", f"dlq-{batch_id:012d}.jsonl"), out.dlq)
        else:
            whole = assemble_batch(_collect(df))
            out = whole.assembled
            out.dlq.extend(log_letters)
            self._letters(batch_id, out)
            if out.observations.get("safety"):
                log_safety_divergences(batch_id, whole.decisions)
            if self._kafka is None:
                from .kafka.decisions import DecisionWriter

                self._kafka = DecisionWriter(self.settings, cancel=self._cancel)
            self._kafka.write(whole.decisions, out.dlq)
            decisions, unclean = len(whole.decisions), whole.unclean_elections
        if verdicts:  # written by the source as it read them (metadata_log_source.py)
            self._count_verdicts(batch_id, verdicts)
        if out.reports:
            os.makedirs(self.settings.feedback_dir, exist_ok=True)
            _atomic_write(
                feedback_file(self.settings.feedback_dir, batch_id),
                "".join(r + "\n" for r in out.reports),
            )
        self.stats[batch_id] = {
            "decisions": decisions,
            "dlq": len(out.dlq),
            "reports": out.deletion_reports,
            **_applied(out.events),
            "verdicts": len(verdicts),
            **{f"shadow_{k}": v for k, v in out.observations.items()},
        }
        for k, v in out.observations.items():
            self.observations[k] = self.observations.get(k, 0) + v
        # after the writes: what the endpoint shows is what the outputs say
        self.unclean_elections += unclean
        if out.metrics is not None:
            self.metrics = out.metrics
            self.gauges[batch_id] = out.metrics

    def _log_verdicts(self, batch_id: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """With `metadata-log:DIR` input: the verdicts of the events the batch's range of the
        log closed, and its corrupt batches' dead letters (`metadata_log_source.py`)."""
        if not self.settings.input.startswith("metadata-log:"):
            return [], []
        from .metadata_log_source import LogBatches, range_of, state_dir

        span = range_of(self.settings.checkpoint, batch_id)
        doc = LogBatches(state_dir(self.settings.checkpoint)).written_out(*span) if span else None
        if doc is None:
            return [], []
        return doc["verdicts"], doc["dead_letters"]

    def _count_verdicts(self, batch_id: int, verdicts: list[dict[str, Any]]) -> None:
        for v in verdicts:
            self.verdicts[v["outcome"]] = self.verdicts.get(v["outcome"], 0) + 1
            if v["outcome"] == "safety":
                first, last = v["offsets"]
                reasons = "; ".join(
                    r for d in v["divergences"] if d["severity"] == "safety" for r in d["reasons"]
                )
                log.warning(
                    "safety divergence in the log at offsets %d-%d (batch %d): %s (%s): %s",
                    first,
                    last,
                    batch_id,
                    v["kind"],
                    v["kafka_method"],
                    reasons,
                )

    @staticmethod
    def _letters(batch_id: int, out: Assembled) -> None:
        for d in out.dlq:
            if d["reason"].startswith("controller error"):
                log.error(
                    "batch %d: event at %s dead-lettered: %s",
                    batch_id,
                    d["source"] or d["offset"],
                    d["reason"],
                )


def _applied(events: list[int | None] | None) -> dict[str, int]:
    """The batch's stats of the events its sequencer applied: how many, first and last offset."""
    if not events:
        return {}
    n, first, last = events
    out = {"events": n or 0}
    if first is not None and last is not None:
        out.update(first_offset=first, last_offset=last)
    return out


def log_safety_divergences(batch_id: int, decisions: list[tuple[str, str]]) -> None:
    """One WARN line per safety divergence, naming the partition, the cause offset and
    the reason (only records that can be one are decoded)."""
    for key, text in decisions:
        if may_be_safety(text):
            d = json.loads(text)
            if d.get("type") == "Divergence" and d.get("severity") == "safety":
                log.warning(
                    "safety divergence on %s at cause offset %s (batch %d): %s",
                    key,
                    d["cause_offset"],
                    batch_id,
                    d["reason"],
                )


class BatchInterrupted(ShadowControllerError):
    """A batch abandoned by a stop, whose thread `query.stop()` has interrupted (see
    `_await_interrupt`). Raised out of `foreachBatch` so that Spark counts the batch as
    interrupted, not failed; no command reports it (the runner's log filter drops it)."""


# Spark recognises a Python foreachBatch function interrupted by a stop by this text in
# the error the function returns (StreamExecution.PROXY_ERROR, SPARK-39218). Its regex
# recurses once per character after the match's start, so the JVM's own error (the whole
# stack of the query's thread follows it) overflows the stack; this short text does not.
INTERRUPTED = (
    "py4j.protocol.Py4JJavaError: An error occurred while calling Thread.sleep: "
    "java.lang.InterruptedException (the query was stopped)"
)


def _await_interrupt(df: DataFrame, timeout_s: float) -> None:
    """Wait, in the JVM, for `query.stop()` to interrupt the query's thread, then raise
    BatchInterrupted. The batch's Python code runs on that thread (py4j's pinned threads),
    so the JVM's sleep is what the stop interrupts; Spark then counts the batch as
    interrupted by the stop: the query ends stopped, not failed, and logs no error.
    Returns if no stop comes within `timeout_s`."""
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    try:
        df.sparkSession._jvm.java.lang.Thread.sleep(int(timeout_s * 1000))  # type: ignore[union-attr]
    except Py4JJavaError as exc:
        if "java.lang.InterruptedException" not in str(exc.java_exception):
            raise
        raise BatchInterrupted(INTERRUPTED) from None


def _collect(df: DataFrame) -> list[tuple[str, int, str, int, str]]:
    """The batch's outputs on the driver, collected through Arrow and unpacked."""
    return unpack_outputs(df.toArrow().column("rows").to_pylist())


# what the executors return after writing their parts, in Arrow batches of at most
# this many packed rows (`packing.PACK_CHARS` each): small enough for the JVM's direct memory
ROWS_PER_ARROW_BATCH = 1024


def _written_parts(df: DataFrame, directory: str) -> DataFrame:
    """`df` with its decision runs written by the executors to parts in `directory`
    (`decision_parts.write_part`): what is left of each task's rows, and the parts' names."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None  # mapInArrow runs in a task
        task = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}"
        rows = parts.write_part((b.column(0).to_pylist() for b in batches), directory, task)
        for i in range(0, len(rows), ROWS_PER_ARROW_BATCH):
            yield pa.RecordBatch.from_arrays(
                [pa.array(rows[i : i + ROWS_PER_ARROW_BATCH], pa.string())], names=["rows"]
            )

    return df.mapInArrow(write, "rows string")


def _write_lines(path: str, docs: list[dict[str, Any]] | list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = (d if isinstance(d, str) else compact_json(d) for d in docs)
    _atomic_write(path, "".join(line + "\n" for line in lines))


def _atomic_write(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
