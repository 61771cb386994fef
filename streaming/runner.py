"""`shadow-controller run`: the streaming job as a service.

`run` checks everything it can before Spark starts (`preflight.py`), records the run's
settings in its checkpoint (`settings/checkpoint.py`), starts Spark's JVM in a session of
its own, starts the query (`job.py`) and then supervises it: one log line per micro-batch
(`ProgressListener`), broker outages and idle heartbeats (`watchers.py`), and SIGTERM or
SIGINT, which stop the job within `job.stop_timeout_s` (`stopping.py`). It returns the
exit code (`exits.py`): 0 after a stop or the end of the input, 4 when the query failed,
5 when the broker was away longer than `job.on_broker_outage = "exit"` allows.

The JVM runs in a session of its own, so a signal to the driver's process group (`kill --
-PGID`, a terminal's Ctrl-C) reaches only the driver, which then stops Spark itself; the
JVM still ends with the driver (it exits when its stdin, a pipe from the driver, closes).
Its output goes to a log file (`spark_log.py`), named once in the job's log.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from . import exits
from .exits import UsageError
from .job import spark_session, start
from .kafka.outage import clear_outage, outage_file_for
from .preflight import check_run
from .settings.checkpoint import save_settings
from .settings.schema import JobSettings
from .shadow_health import ShadowHealth
from .sink import BatchInterrupted, BatchSink
from .stopping import StopSignals, first_line, spark_log_level, stop, stop_spark
from .watchers import Heartbeat, OutageWatch

log = logging.getLogger("shadow_controller")

# how often the runner looks at the query, the signals and the outage file
TICK_S = 0.5
# loggers whose INFO lines are not the job's story (py4j: every call and connection)
QUIET_LOGGERS = ("py4j", "pyspark")
# Spark's loggers that warn about the normal course of this job: the directory's state
# server at the end of every batch and on a first read (and stopping.py's, during a stop)
QUIET_SPARK_LOGGERS = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer",
)


class ProgressListener(StreamingQueryListener):
    """One log line per micro-batch: batch id, events in, decisions out, DLQ, duration."""

    def __init__(self, sink: BatchSink, health: ShadowHealth | None = None):
        self.sink = sink
        self.health = health
        self.last_batch = time.monotonic()  # the heartbeat counts idleness from here
        self.last_id = -1  # the latest batch whose line is logged

    def onQueryStarted(self, event: Any) -> None:
        log.info("query started: id=%s run=%s", event.id, event.runId)

    def onQueryProgress(self, event: Any) -> None:
        p = event.progress
        self.last_batch = time.monotonic()
        if self.health is not None:
            self.health.on_progress(p)
        stats = self.sink.stats.get(p.batchId, {})
        shadow = ""
        if self.sink.observations:
            o = self.sink.observations
            shadow = (
                f", shadow: {o.get('match', 0)} match, {o.get('benign', 0)} benign, "
                f"{o.get('safety', 0)} safety divergences so far"
            )
        log.info(
            "batch %d: events in %s, decisions out %d, dlq %d%s, %d ms%s%s",
            p.batchId,
            events_text(stats),
            stats.get("decisions", 0),
            stats.get("dlq", 0),
            f", deletion reports {stats['reports']}" if stats.get("reports") else "",
            p.batchDuration,
            shadow,
            metrics_text(self.sink, p.batchId),
        )
        self.last_id = max(self.last_id, p.batchId)

    def onQueryIdle(self, event: Any) -> None:
        pass  # the runner's heartbeat (its own interval, with the offsets)

    def onQueryTerminated(self, event: Any) -> None:
        pass  # the runner says how the query ended, in one line


def events_text(stats: dict[str, int]) -> str:
    """The events a batch applied (its sequencer's, `batch_gauges.applied_events`): how
    many, and their offset range. Held events count in the batch that applies them; the
    feedback rows a batch reads are not events."""
    n = stats.get("events", 0)
    first, last = stats.get("first_offset"), stats.get("last_offset")
    if not n or first is None:
        return str(n)
    return f"{n} (offset {first})" if first == last else f"{n} (offsets {first}-{last})"


def run_summary(sink: BatchSink, settings: JobSettings) -> str:
    """The line an `--available-now` run ends with: what it did, and where it went."""
    stats = list(sink.stats.values())
    events = sum(s.get("events", 0) for s in stats)
    decisions = sum(s.get("decisions", 0) for s in stats)
    letters = sum(s.get("dlq", 0) for s in stats)
    if settings.output.startswith("file:"):
        base = settings.output[5:]
        to = os.path.join(base, "decisions-*.jsonl")
        dlq_to = os.path.join(base, "dlq")
    else:
        to, dlq_to = f"topic {settings.decisions_topic}", f"topic {settings.dlq_topic}"
    return (
        f"done: {len(stats)} batches, {events} events, {decisions} decisions to {to}, "
        f"{letters} dead letters" + (f" to {dlq_to}" if letters else "")
    )


def metrics_text(sink: BatchSink, batch_id: int | None = None) -> str:
    """Kafka's controller metrics for the progress line (`controller_metrics.py`): the gauges
    batch `batch_id` left (`batch_gauges.py`; by default the latest batch that ran the
    controller), and the unclean elections so far."""
    metrics = sink.metrics if batch_id is None else sink.gauges.get(batch_id)
    if not metrics:
        return ""
    gauges = " ".join(f"{k}={v}" for k, v in metrics.items())
    return f", controller: {gauges} UncleanLeaderElections={sink.unclean_elections}"


def run(settings: JobSettings, spark_conf: dict[str, str], master: str, available_now: bool) -> int:
    check_run(settings)  # checkpoint, input, broker: refused here, before Spark starts
    sink = BatchSink(settings)
    health = ShadowHealth(settings)
    endpoint = _serve_metrics(sink, settings, health)  # a port in use: refused here too
    if settings.input == "kafka" or settings.output == "kafka":
        from .kafka.decisions import warn_if_several_partitions

        warn_if_several_partitions(settings)
    save_settings(
        settings, settings.checkpoint
    )  # replay branches from this run's settings; records the input
    if os.path.exists(settings.pause_file):
        os.remove(settings.pause_file)  # left by a stop that did not finish
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("py4j.clientserver").addFilter(_not_an_interrupted_batch)
    clear_outage(outage_file_for(settings.pause_file))  # left by a run that ended in an outage
    signals = StopSignals(settings)
    with signals.installed():
        spark = spark_session(
            settings, master=master, extra=spark_conf, own_session=True, announce=_say_where
        )
        signals.jvm_pid = _jvm_pid()
        try:
            spark.sparkContext.setLogLevel("WARN")
            spark_log_level(spark, QUIET_SPARK_LOGGERS, "ERROR")
            listener = ProgressListener(sink, health)
            spark.streams.addListener(listener)
            if endpoint is not None:
                restore_gauges(spark, settings, sink)
            query, _ = start(spark, settings, available_now=available_now, sink=sink)
            signals.code = _supervise(
                spark, query, sink, listener, settings, signals, available_now
            )
            if available_now and signals.code == exits.OK:
                _await_batch_lines(listener, sink)
                log.info("%s", run_summary(sink, settings))
            return signals.code
        finally:
            stop_spark(spark, signals)
            signals.stopped()
            if endpoint is not None:
                endpoint[0].shutdown()


def restore_gauges(spark: Any, settings: JobSettings, sink: BatchSink) -> None:
    """On a restart, the endpoint serves the gauges the last committed batch left from the
    start, not none until this run's first batch (`state_reader.checkpointed_metrics`). A
    read that fails is one warning: the first batch brings them."""
    from .state_reader import checkpointed_metrics

    try:
        metrics = checkpointed_metrics(spark, settings.checkpoint, settings.controller)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        log.warning(
            "the controller's gauges could not be read from the checkpoint (%s); "
            "they appear with the first micro-batch",
            first,
        )
        return
    if metrics is not None:
        sink.metrics = metrics


def _serve_metrics(sink: BatchSink, settings: JobSettings, health: ShadowHealth) -> Any:
    """The Prometheus endpoint (`prometheus.py`) on `job.metrics_host`:`job.metrics_port`,
    or None when the port is not set."""
    port, host = settings.metrics_port, settings.metrics_host
    if port is None:
        return None
    from .prometheus import serve

    try:
        endpoint = serve(sink, port, addr=host, health=health)
    except OSError as exc:
        raise UsageError(
            f"job.metrics_host {host}, job.metrics_port {port}: cannot listen "
            f"({exc.strerror or exc})"
        ) from None
    shown = f"[{host}]" if ":" in host else host
    log.info("Kafka's controller metrics for Prometheus on http://%s:%d/metrics", shown, port)
    return endpoint


def _await_batch_lines(listener: ProgressListener, sink: BatchSink, timeout_s: float = 5.0) -> None:
    """Until the listener has logged the last batch's line (Spark's listener bus delivers
    it after the batch), so that the run's summary comes last; at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while sink.stats and listener.last_id < max(sink.stats) and time.monotonic() < deadline:
        time.sleep(0.05)


def _say_where(path: Path) -> None:
    log.info("Spark's log: %s (--verbose shows it here)", path)


def _not_an_interrupted_batch(record: logging.LogRecord) -> bool:
    """py4j logs the error a foreachBatch call returns; a batch the stop interrupted is
    not one (BatchSink says it was abandoned)."""
    return not (record.exc_info and isinstance(record.exc_info[1], BatchInterrupted))


def _jvm_pid() -> int | None:
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None or os.getpgid(proc.pid) != proc.pid:
        return None  # not a JVM this run started in a session of its own: never kill its group
    return int(proc.pid)


def _supervise(
    spark: Any,
    query: Any,
    sink: BatchSink,
    listener: ProgressListener,
    settings: JobSettings,
    signals: StopSignals,
    available_now: bool,
) -> int:
    """Watch the query until it ends, a signal asks for a stop, or an outage ends the job."""
    outages = OutageWatch(settings)
    heartbeat = Heartbeat(settings, listener)
    done = threading.Event()
    if available_now:
        threading.Thread(
            target=_process_all_available, args=(query, done), name="available-now", daemon=True
        ).start()
    while True:
        if signals.requested.is_set():
            return stop(spark, query, sink, settings, signals, exits.OK)
        if not query.isActive or (done.is_set() and query.exception() is not None):
            break
        if done.is_set():
            return stop(spark, query, sink, settings, signals, exits.OK, quiet=True)
        if outages.check():
            return stop(spark, query, sink, settings, signals, exits.OUTAGE, abandon=True)
        if not outages.since:
            heartbeat.maybe_log(query)
        query.awaitTermination(TICK_S)
    failure = query.exception()
    if failure is not None:
        log.error(
            "the query failed: %s (the checkpoint is intact; a restart resumes)",
            first_line(failure),
        )
        return exits.JOB_FAILED
    return exits.OK


def _process_all_available(query: Any, done: threading.Event) -> None:
    try:
        query.processAllAvailable()
    except Exception:  # the query failed or was stopped: the runner sees it on the query
        pass
    finally:
        done.set()
