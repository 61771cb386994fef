"""A stop within a bound: what SIGTERM and SIGINT do to a running job (`runner.py`).

SIGTERM or SIGINT (Ctrl-C) asks the job to stop; it exits within `job.stop_timeout_s` (T)
whatever the broker does:

- at once the pause file appears: the sources admit nothing new, so no batch is planned
  from new events;
- the batch in flight (its offsets are in the checkpoint, its commit is not) may commit
  for up to 2/3 T;
- then the query is stopped. A batch still running is abandoned: the sink gives up its
  writes (`BatchSink.abandon`), Spark interrupts the rest, and a restart replays it;
- at T less a second, anything still running is killed (the JVM and its Python workers)
  and the driver exits: the checkpoint is as after a crash, which a restart replays.

A second signal abandons the running batch at once; a third exits at once. A stop exits
0 (`exits.OK`), its batch committed or abandoned; a stop the runner asks for because the
broker stayed away exits 5 (`exits.OUTAGE`).

`StopSignals` counts the signals and holds the watchdog that enforces the bound; `stop`
is the stop itself, `stop_spark` the end of Spark.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import exits
from .settings.schema import JobSettings
from .sink import BatchSink

log = logging.getLogger("shadow_controller")

# a stop gives the batch in flight this share of job.stop_timeout_s to commit
COMMIT_SHARE = 2 / 3
# and kills what still runs this long before job.stop_timeout_s
KILL_MARGIN_S = 1.0
# Spark's logger that warns, during a stop, when it finds no job to cancel
QUIET_SPARK_LOGGERS_WHILE_STOPPING = ("org.apache.spark.scheduler.DAGScheduler",)


def spark_log_level(spark: Any, loggers: tuple[str, ...], level: str) -> None:
    jvm = spark.sparkContext._jvm
    for name in loggers:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            name, jvm.org.apache.logging.log4j.Level.getLevel(level)
        )


def first_line(failure: Any) -> str:
    text = str(getattr(failure, "desc", None) or failure).strip()
    return (text.splitlines() or [type(failure).__name__])[0]


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
        self.code = (
            exits.JOB_FAILED
        )  # the exit code if Spark must be left behind: set by a stop, or the end

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
        return max(
            0.0, self.stop_began + self.settings.stop_timeout_s - KILL_MARGIN_S - time.monotonic()
        )

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
            log.info(
                "%s: stopping after the current batch (it may commit for up to %.0f s; "
                "past that it is "
                "abandoned, and a restart replays it)",
                name,
                self.settings.stop_timeout_s * COMMIT_SHARE,
            )
        elif self.count == 2:
            log.warning("%s again: already stopping; abandoning the running batch now", name)
        else:
            log.warning("%s a third time: exiting now", name)
            _exit_now(self, exits.OK)
        self.requested.set()

    @property
    def abandon_now(self) -> bool:
        return self.count >= 2


def stop(
    spark: Any,
    query: Any,
    sink: BatchSink,
    settings: JobSettings,
    signals: StopSignals,
    code: int,
    *,
    abandon: bool = False,
    quiet: bool = False,
) -> int:
    """Stop within `settings.stop_timeout_s` (module docstring); returns `code`."""
    began = signals.stopping(code, quiet)
    Path(settings.pause_file).touch()
    sink.stopping()
    try:
        in_flight = (
            _batch_in_flight(settings)
            if abandon
            else _settled_batch(query, settings, signals, began)
        )
        committed = in_flight is None
        if in_flight is not None and not abandon:
            committed = _await_commit(
                query, settings, in_flight, signals, began + settings.stop_timeout_s * COMMIT_SHARE
            )
            if committed:
                log.info("batch %d committed", in_flight)
        if not committed and abandon:
            log.info("batch %d abandoned (a restart replays it)", in_flight)
        elif not committed:
            log.warning(
                "batch %d did not commit within %.1f s of the stop: abandoning it (a "
                "restart replays it)",
                in_flight,
                time.monotonic() - began,
            )
        # whatever runs from here on is abandoned, a batch planned during the stop too
        sink.abandon()
        spark_log_level(spark, QUIET_SPARK_LOGGERS_WHILE_STOPPING, "ERROR")
        stopper = threading.Thread(
            target=_quietly, args=(query.stop,), name="query-stop", daemon=True
        )
        stopper.start()
        stopper.join(signals.time_left())
        if stopper.is_alive():
            _exit_now(signals, code, True)
        failure = query.exception()
        if failure is not None:
            log.warning(
                "the query ended with an error while stopping: %s (the checkpoint is "
                "intact; a restart "
                "replays what did not commit)",
                first_line(failure),
            )
        return code
    finally:
        _remove(settings.pause_file)


def stop_spark(spark: Any, signals: StopSignals) -> None:
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


def _settled_batch(
    query: Any, settings: JobSettings, signals: StopSignals, began: float
) -> int | None:
    """The batch in flight once the pause has taken effect. A trigger that asked the sources
    for offsets before the pause file appeared may still write its batch to the offsets log
    after a first look found none in flight (MicroBatchExecution.constructNextBatch: the
    sources' latestOffset, then offsetLog.add); so while the query reports a trigger active
    and no batch is in flight, look again. A trigger that begins after the pause admits
    nothing new, so this ends at the first trigger boundary."""
    until = began + settings.stop_timeout_s * COMMIT_SHARE
    while True:
        active = _trigger_active(query)  # before the logs: a trigger seen ended has written both
        in_flight = _batch_in_flight(settings)
        if in_flight is not None or not active or time.monotonic() >= until or signals.abandon_now:
            return in_flight
        query.awaitTermination(0.05)


def _trigger_active(query: Any) -> bool:
    try:
        return bool(query.status.get("isTriggerActive")) and bool(query.isActive)
    except Exception:  # the query has ended: no trigger runs
        return False


def _last_batch(directory: str) -> int | None:
    try:
        ids = [int(n) for n in os.listdir(directory) if n.isdigit()]
    except FileNotFoundError:
        return None
    return max(ids, default=None)


def _await_commit(
    query: Any, settings: JobSettings, batch: int, signals: StopSignals, until: float
) -> bool:
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
        log.warning(
            "Spark did not stop within job.stop_timeout_s = %g s; exiting without it (the "
            "checkpoint is "
            "intact; a restart replays the batch that did not commit)",
            signals.settings.stop_timeout_s,
        )
    if signals.jvm_pid is not None:
        with contextlib.suppress(OSError):
            os.killpg(signals.jvm_pid, signal.SIGKILL)
    _remove(signals.settings.pause_file)
    logging.shutdown()
    os._exit(code)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
