"""Running the job: progress reporting and clean shutdown."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from .job import BatchSink, JobSettings, spark_session, start

log = logging.getLogger("shadow_controller")


class ProgressListener(StreamingQueryListener):
    """One log line per micro-batch: batch id, events in, decisions out, DLQ, duration."""

    def __init__(self, sink: BatchSink):
        self.sink = sink

    def onQueryStarted(self, event: Any) -> None:
        log.info("query started: id=%s run=%s", event.id, event.runId)

    def onQueryProgress(self, event: Any) -> None:
        p = event.progress
        stats = self.sink.stats.get(p.batchId, {})
        shadow = ""
        if self.sink.observations:
            o = self.sink.observations
            shadow = (f", shadow: {o.get('match', 0)} match, {o.get('benign', 0)} benign, "
                      f"{o.get('safety', 0)} safety divergences so far")
        log.info(
            "batch %d: events in %d, decisions out %d, dlq %d, deletion reports %d, %d ms%s",
            p.batchId, p.numInputRows, stats.get("decisions", 0), stats.get("dlq", 0),
            stats.get("reports", 0), p.batchDuration, shadow,
        )

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        if event.exception:
            log.error("query failed: %s", event.exception)
        else:
            log.info("query stopped")


def run(settings: JobSettings, spark_conf: dict[str, str], master: str, available_now: bool) -> int:
    from .preflight import check_run
    from .replay import save_settings

    check_run(settings)  # checkpoint, input, broker: refused here, before Spark starts
    if settings.input == "kafka" or settings.output == "kafka":
        from .kafka_io import warn_if_several_partitions

        warn_if_several_partitions(settings)
    save_settings(settings, settings.checkpoint)  # replay branches from this run's settings; records the input
    if os.path.exists(settings.pause_file):
        os.remove(settings.pause_file)  # left by a stop that did not finish
    spark = spark_session(settings, master=master, extra=spark_conf)
    spark.sparkContext.setLogLevel("WARN")
    sink = BatchSink(settings)
    spark.streams.addListener(ProgressListener(sink))
    query, _ = start(spark, settings, available_now=available_now, sink=sink)
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping after the current batch", signum)
        stop_requested.set()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        if available_now:
            query.processAllAvailable()
            stop_requested.set()
        while query.isActive and not stop_requested.is_set():
            query.awaitTermination(0.5)
        if query.isActive:
            _stop_between_batches(query, settings)
        if query.exception() is not None:
            log.error("the query failed: %s", query.exception())
            return 1
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        spark.stop()


def _stop_between_batches(query: Any, settings: JobSettings, deadline_s: float = 120.0) -> None:
    """Stop admitting events, let the running micro-batch (and any deletion-report round it
    started) commit, then stop: the checkpoint ends on a committed batch. Past the deadline
    the query is stopped anyway, which is also safe: an uncommitted batch is replayed."""
    Path(settings.pause_file).touch()
    try:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end and query.isActive:
            status = query.status
            if not status.get("isTriggerActive") and not status.get("isDataAvailable"):
                break
            query.awaitTermination(0.2)
        query.stop()
    finally:
        os.remove(settings.pause_file)
