"""Running the job: progress and heartbeat lines, broker outages, and a stop within a bound.

Stop. SIGTERM or SIGINT (Ctrl-C) asks the job to stop; it exits within
`job.stop_timeout_s` (T) whatever the broker does:

- at once the pause file appears: the sources admit nothing new, so no batch is planned
  from new events;
- the batch in flight (its offsets are in the checkpoint, its commit is not) may commit
  for up to 2/3 T;
- then the query is stopped. A batch still running is abandoned: the sink gives up its
  writes (`BatchSink.abandon`), Spark interrupts the rest, and a restart replays it;
- at T less a second, anything still running is killed (the JVM and its Python workers)
  and the driver exits: the checkpoint is as after a crash, which a restart replays.

A second signal abandons the running batch at once; a third exits at once. A stop exits
0 (`exits.OK`), its batch committed or abandoned. The JVM runs in a session of its own,
so a signal to the driver's process group (`kill -- -PGID`, a terminal's Ctrl-C) reaches
only the driver, which then stops Spark itself; the JVM still ends with the driver (it
exits when its stdin, a pipe from the driver, closes).

Broker outages. The Kafka source and writer report a broker that does not answer in
the outage file (`kafka.outage.outage_file_for`); the runner logs it once a minute and,
with `job.on_broker_outage = "exit"`, stops the job after `outage_exit_after_s` with exit
code 5 (`exits.OUTAGE`) and one line.

Idle. A job without batches logs a heartbeat every `heartbeat_s` with its source offsets
and lag.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from . import exits
from .job import spark_session, start
from .kafka.outage import clear_outage, outage_file_for, read_outage
from .preflight import check_run
from .settings.checkpoint import save_settings
from .settings.schema import JobSettings
from .sink import BatchInterrupted, BatchSink

log = logging.getLogger("shadow_controller")

# a stop gives the batch in flight this share of job.stop_timeout_s to commit
COMMIT_SHARE = 2 / 3
# and kills what still runs this long before job.stop_timeout_s
KILL_MARGIN_S = 1.0
# an outage is logged this often
OUTAGE_LOG_EVERY_S = 60.0
# how often the runner looks at the query, the signals and the outage file
TICK_S = 0.5
# loggers whose INFO lines are not the job's story (py4j: every call and connection)
QUIET_LOGGERS = ("py4j", "pyspark")
# Spark's loggers that warn about the normal course of this job: the directory's state
# server at the end of every batch and on a first read, the scheduler when a stop finds no
# job to cancel
QUIET_SPARK_LOGGERS = ("org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer",)
QUIET_SPARK_LOGGERS_WHILE_STOPPING = ("org.apache.spark.scheduler.DAGScheduler",)


class ProgressListener(StreamingQueryListener):
    """One log line per micro-batch: batch id, events in, decisions out, DLQ, duration."""

    def __init__(self, sink: BatchSink):
        self.sink = sink
        self.last_batch = time.monotonic()  # the heartbeat counts idleness from here

    def onQueryStarted(self, event: Any) -> None:
        log.info("query started: id=%s run=%s", event.id, event.runId)

    def onQueryProgress(self, event: Any) -> None:
        p = event.progress
        self.last_batch = time.monotonic()
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
        pass  # the runner's heartbeat (its own interval, with the offsets)

    def onQueryTerminated(self, event: Any) -> None:
        pass  # the runner says how the query ended, in one line


def run(settings: JobSettings, spark_conf: dict[str, str], master: str, available_now: bool) -> int:
    check_run(settings)  # checkpoint, input, broker: refused here, before Spark starts
    if settings.input == "kafka" or settings.output == "kafka":
        from .kafka.decisions import warn_if_several_partitions

        warn_if_several_partitions(settings)
    save_settings(settings, settings.checkpoint)  # replay branches from this run's settings; records the input
    if os.path.exists(settings.pause_file):
        os.remove(settings.pause_file)  # left by a stop that did not finish
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("py4j.clientserver").addFilter(_not_an_interrupted_batch)
    clear_outage(outage_file_for(settings.pause_file))  # left by a run that ended in an outage
    signals = StopSignals(settings)
    with signals.installed():
        with _jvm_in_own_session():
            spark = spark_session(settings, master=master, extra=spark_conf)
        signals.jvm_pid = _jvm_pid()
        try:
            spark.sparkContext.setLogLevel("WARN")
            _spark_log_level(spark, QUIET_SPARK_LOGGERS, "ERROR")
            sink = BatchSink(settings)
            listener = ProgressListener(sink)
            spark.streams.addListener(listener)
            query, _ = start(spark, settings, available_now=available_now, sink=sink)
            signals.code = _supervise(spark, query, sink, listener, settings, signals, available_now)
            return signals.code
        finally:
            _stop_spark(spark, signals)
            signals.stopped()


@contextlib.contextmanager
def _jvm_in_own_session() -> Iterator[None]:
    """Start Spark's JVM (if this call starts it) in a session of its own: a signal to the
    driver's process group must not reach the JVM and its Python workers, which would end
    the running batch before the driver could commit or abandon it. pyspark's
    `launch_gateway` takes Popen arguments; the session builder does not pass any, so the
    one call that starts the JVM is wrapped for the duration. The JVM's stderr (its log,
    and what its Python workers print) comes through the driver, less `WORKER_CHATTER`."""
    import pyspark.core.context as context

    launch = context.launch_gateway

    def launch_in_own_session(conf: Any = None, popen_kwargs: dict[str, Any] | None = None) -> Any:
        gateway = launch(conf, {**(popen_kwargs or {}), "start_new_session": True, "stderr": subprocess.PIPE})
        threading.Thread(target=_forward_jvm_stderr, args=(gateway.proc.stderr,), name="jvm-stderr",
                         daemon=True).start()
        return gateway

    context.launch_gateway = launch_in_own_session
    try:
        yield
    finally:
        context.launch_gateway = launch


# What pyspark's transform-with-state worker prints (to the JVM's stderr) whenever a query
# starts: five lines, each followed by an empty one
# (pyspark/sql/streaming/transform_with_state_driver_worker.py).
WORKER_CHATTER = (b"Starting Streaming TransformWithStateInPandas Python worker",
                  b"Streaming TransformWithStateInPandas Python worker ")


def _forward_jvm_stderr(stream: Any) -> None:
    """Copy the JVM's stderr to ours, line by line, less WORKER_CHATTER. Keeps reading
    whatever happens: a full pipe would stop the JVM."""
    after_chatter = False
    for line in iter(stream.readline, b""):
        if line.startswith(WORKER_CHATTER) or (after_chatter and not line.strip()):
            after_chatter = True
            continue
        after_chatter = False
        with contextlib.suppress(Exception):
            if hasattr(sys.stderr, "buffer"):
                sys.stderr.flush()
                sys.stderr.buffer.write(line)
            else:
                sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()


def _spark_log_level(spark: Any, loggers: tuple[str, ...], level: str) -> None:
    jvm = spark.sparkContext._jvm
    for name in loggers:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            name, jvm.org.apache.logging.log4j.Level.getLevel(level))


def _not_an_interrupted_batch(record: logging.LogRecord) -> bool:
    """py4j logs the error a foreachBatch call returns; a batch the stop interrupted is
    not one (BatchSink says it was abandoned)."""
    return not (record.exc_info and isinstance(record.exc_info[1], BatchInterrupted))


def _jvm_pid() -> int | None:
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None or os.getpgid(proc.pid) != proc.pid:
        return None  # not a JVM this run started in a session of its own: never kill its group
    return proc.pid


class StopSignals:
    """SIGTERM and SIGINT: the first asks for a stop, the second abandons the running
    batch at once, the third exits at once."""

    def __init__(self, settings: JobSettings) -> None:
        self.settings = settings
        self.count = 0
        self.requested = threading.Event()
        self.jvm_pid: int | None = None
        self.stop_began: float | None = None  # monotonic, once a stop has begun
        self._watchdog: threading.Timer | None = None
        self._quiet = False
        self.code = exits.JOB_FAILED  # the exit code if Spark must be left behind: set by a stop, or the end

    def stopping(self, code: int, quiet: bool = False) -> float:
        """A stop begins: from now on the driver exits within the bound, with `code`."""
        self.stop_began, self._quiet, self.code = time.monotonic(), quiet, code
        self._watchdog = threading.Timer(self.time_left(), _exit_now, args=(self, code, True))
        self._watchdog.daemon = True
        self._watchdog.start()
        return self.stop_began

    def time_left(self) -> float:
        """Until what still runs is killed: the stop's bound less KILL_MARGIN_S."""
        if self.stop_began is None:
            return self.settings.stop_timeout_s
        return max(0.0, self.stop_began + self.settings.stop_timeout_s - KILL_MARGIN_S - time.monotonic())

    def stopped(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self.stop_began is not None and not self._quiet:
            log.info("stopped in %.1f s", time.monotonic() - self.stop_began)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.count += 1
        name = signal.Signals(signum).name
        if self.count == 1:
            log.info("%s: stopping after the current batch (it may commit for up to %.0f s; past that it is "
                     "abandoned, and a restart replays it)", name, self.settings.stop_timeout_s * COMMIT_SHARE)
        elif self.count == 2:
            log.warning("%s again: already stopping; abandoning the running batch now", name)
        else:
            log.warning("%s a third time: exiting now", name)
            _exit_now(self, exits.OK)
        self.requested.set()

    @property
    def abandon_now(self) -> bool:
        return self.count >= 2


def _supervise(spark: Any, query: Any, sink: BatchSink, listener: ProgressListener, settings: JobSettings,
               signals: StopSignals, available_now: bool) -> int:
    """Watch the query until it ends, a signal asks for a stop, or an outage ends the job."""
    outages = OutageWatch(settings)
    heartbeat = Heartbeat(settings, listener)
    done = threading.Event()
    if available_now:
        threading.Thread(target=_process_all_available, args=(query, done), name="available-now",
                         daemon=True).start()
    while True:
        if signals.requested.is_set():
            return _stop(spark, query, sink, settings, signals, exits.OK)
        if not query.isActive or (done.is_set() and query.exception() is not None):
            break
        if done.is_set():
            return _stop(spark, query, sink, settings, signals, exits.OK, quiet=True)
        if outages.check():
            return _stop(spark, query, sink, settings, signals, exits.OUTAGE, abandon=True)
        if not outages.since:
            heartbeat.maybe_log(query)
        query.awaitTermination(TICK_S)
    failure = query.exception()
    if failure is not None:
        log.error("the query failed: %s (the checkpoint is intact; a restart resumes)", _first_line(failure))
        return exits.JOB_FAILED
    return exits.OK


def _process_all_available(query: Any, done: threading.Event) -> None:
    try:
        query.processAllAvailable()
    except Exception:  # the query failed or was stopped: the runner sees it on the query
        pass
    finally:
        done.set()


def _first_line(failure: Any) -> str:
    text = str(getattr(failure, "desc", None) or failure).strip()
    return (text.splitlines() or [type(failure).__name__])[0]


# -- the stop ------------------------------------------------------------------------------

def _stop(spark: Any, query: Any, sink: BatchSink, settings: JobSettings, signals: StopSignals, code: int, *,
          abandon: bool = False, quiet: bool = False) -> int:
    """Stop within `settings.stop_timeout_s` (module docstring); returns `code`."""
    began = signals.stopping(code, quiet)
    Path(settings.pause_file).touch()
    sink.stopping()
    try:
        in_flight = _batch_in_flight(settings)
        committed = in_flight is None
        if in_flight is not None and not abandon:
            committed = _await_commit(query, settings, in_flight, signals,
                                      began + settings.stop_timeout_s * COMMIT_SHARE)
            if committed:
                log.info("batch %d committed", in_flight)
        if not committed and abandon:
            log.info("batch %d abandoned (a restart replays it)", in_flight)
        elif not committed:
            log.warning("batch %d did not commit within %.1f s of the stop: abandoning it (a restart replays it)",
                        in_flight, time.monotonic() - began)
        sink.abandon()  # whatever runs from here on is abandoned, a batch planned during the stop too
        _spark_log_level(spark, QUIET_SPARK_LOGGERS_WHILE_STOPPING, "ERROR")
        stopper = threading.Thread(target=_quietly, args=(query.stop,), name="query-stop", daemon=True)
        stopper.start()
        stopper.join(signals.time_left())
        if stopper.is_alive():
            _exit_now(signals, code, True)
        failure = query.exception()
        if failure is not None:
            log.warning("the query ended with an error while stopping: %s (the checkpoint is intact; a restart "
                        "replays what did not commit)", _first_line(failure))
        return code
    finally:
        _remove(settings.pause_file)


def _stop_spark(spark: Any, signals: StopSignals) -> None:
    """`spark.stop()`, or an exit without it if it takes longer than the stop's bound."""
    stopper = threading.Thread(target=_quietly, args=(spark.stop,), name="spark-stop", daemon=True)
    stopper.start()
    stopper.join(signals.time_left())
    if stopper.is_alive():
        _exit_now(signals, signals.code, True)


def _quietly(call: Any) -> None:
    try:
        call()
    except Exception as exc:  # stopping what already failed: said elsewhere
        log.debug("while stopping: %s", exc)


def _batch_in_flight(settings: JobSettings) -> int | None:
    """The planned batch not yet committed, from the checkpoint's offsets and commits logs."""
    planned = _last_batch(os.path.join(settings.checkpoint, "query", "offsets"))
    committed = _last_batch(os.path.join(settings.checkpoint, "query", "commits"))
    if planned is None or (committed is not None and committed >= planned):
        return None
    return planned


def _last_batch(directory: str) -> int | None:
    try:
        ids = [int(n) for n in os.listdir(directory) if n.isdigit()]
    except FileNotFoundError:
        return None
    return max(ids, default=None)


def _await_commit(query: Any, settings: JobSettings, batch: int, signals: StopSignals, until: float) -> bool:
    committed = os.path.join(settings.checkpoint, "query", "commits", str(batch))
    while time.monotonic() < until and not signals.abandon_now and query.isActive:
        if os.path.exists(committed):
            return True
        query.awaitTermination(0.1)
    return os.path.exists(committed)


def _exit_now(signals: StopSignals, code: int, overdue: bool = False) -> None:
    """Kill the JVM's session (the JVM and its Python workers) and exit: the checkpoint is
    as after a crash, and a restart replays the batch that did not commit."""
    if overdue:
        log.warning("Spark did not stop within job.stop_timeout_s = %g s; exiting without it (the checkpoint is "
                    "intact; a restart replays the batch that did not commit)", signals.settings.stop_timeout_s)
    if signals.jvm_pid is not None:
        with contextlib.suppress(OSError):
            os.killpg(signals.jvm_pid, signal.SIGKILL)
    _remove(signals.settings.pause_file)
    logging.shutdown()
    os._exit(code)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


# -- outages and heartbeats ----------------------------------------------------------------

class OutageWatch:
    """The outage the Kafka clients report: one line a minute while it lasts, one when it
    ends; with `on_broker_outage = "exit"`, True once it has lasted `outage_exit_after_s`."""

    def __init__(self, settings: JobSettings) -> None:
        self.settings = settings
        self.path = outage_file_for(settings.pause_file)
        self.kafka = "kafka" in (settings.input, settings.output)
        self.since: float | None = None
        self._logged = 0.0
        self._servers = settings.bootstrap_servers

    def check(self) -> bool:
        report = read_outage(self.path) if self.kafka else None
        now = time.monotonic()
        if report is None:
            if self.since is not None:
                log.info("broker %s answers again after %s; resuming", self._servers,
                         _duration(time.time() - self.since))
                self.since = None
            return False
        if self.since is None:
            self._logged = 0.0
        self.since = float(report["since"])
        self._servers = report.get("servers") or self.settings.bootstrap_servers
        away = time.time() - self.since
        mode = self.settings.on_broker_outage
        if mode == "exit" and away >= self.settings.outage_exit_after_s:
            log.error("broker %s unreachable for %s (%s); exiting (job.on_broker_outage = exit, "
                      "outage_exit_after_s = %g); a restart resumes from the checkpoint", self._servers,
                      _duration(away), report.get("where", "?"), self.settings.outage_exit_after_s)
            return True
        if not self._logged or now - self._logged >= OUTAGE_LOG_EVERY_S:
            self._logged = now
            until = f"; exiting after {_duration(self.settings.outage_exit_after_s)}" if mode == "exit" else ""
            log.warning("broker %s unreachable for %s while %s; waiting (job.on_broker_outage = %s%s)",
                        self._servers, _duration(away), report.get("where", "?"), mode, until)
        return False


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds // 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Heartbeat:
    """An idle job's line every `heartbeat_s`: how long since the last batch, and where
    each source stands (offsets, and lag where the source reports its latest offsets)."""

    def __init__(self, settings: JobSettings, listener: ProgressListener) -> None:
        self.every_s = settings.heartbeat_s
        self.listener = listener
        self._last = time.monotonic()

    def maybe_log(self, query: Any) -> None:
        now = time.monotonic()
        idle = now - self.listener.last_batch
        if idle < self.every_s or now - self._last < self.every_s or query.status.get("isDataAvailable"):
            return  # a batch ran lately, or one is running now
        self._last = now
        log.info("idle for %s: %s", _duration(idle), positions(query.lastProgress))


def positions(progress: Any) -> str:
    """The events source's position from a query progress: per topic-partition its next
    offset and lag (Kafka), or the line (files)."""
    if progress is None:
        return "no batch yet"
    sources = progress["sources"] if isinstance(progress, dict) else progress.sources
    parts = []
    for source in sources:
        end = _offsets(source, "endOffset")
        latest = _offsets(source, "latestOffset")
        if not isinstance(end, dict) or "batch" in end:
            continue  # the deletion feedback
        if "line" in end:
            parts.append(f"events at line {end['line']}")
            continue
        for topic, by_partition in sorted(end.items()):
            for partition, offset in sorted(by_partition.items(), key=lambda kv: int(kv[0])):
                ahead = (latest or {}).get(topic, {}).get(partition)
                lag = "" if ahead is None else f", lag {max(0, int(ahead) - int(offset))}"
                parts.append(f"{topic}-{partition} at offset {offset}{lag}")
    return "; ".join(parts) or "no source offsets"


def _offsets(source: Any, name: str) -> Any:
    value = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
