"""What the runner watches while the job runs, besides the query: outages and idleness.

Broker outages (`OutageWatch`). The Kafka source and writer report a broker that does not
answer in the outage file (`kafka.outage.outage_file_for`); the runner logs it once a
minute and, with `job.on_broker_outage = "exit"`, stops the job after
`outage_exit_after_s` with exit code 5 (`exits.OUTAGE`) and one line.

Idle (`Heartbeat`). A job without batches logs a heartbeat every `heartbeat_s` with its
source offsets and lag.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from .kafka.outage import outage_file_for, read_outage
from .settings.schema import JobSettings

log = logging.getLogger("shadow_controller")

# an outage is logged this often
OUTAGE_LOG_EVERY_S = 60.0


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
                log.info(
                    "broker %s answers again after %s; resuming",
                    self._servers,
                    _duration(time.time() - self.since),
                )
                self.since = None
            return False
        if self.since is None:
            self._logged = 0.0
        self.since = float(report["since"])
        self._servers = report.get("servers") or self.settings.bootstrap_servers
        away = time.time() - self.since
        mode = self.settings.on_broker_outage
        if mode == "exit" and away >= self.settings.outage_exit_after_s:
            log.error(
                "broker %s unreachable for %s (%s); exiting (job.on_broker_outage = exit, "
                "outage_exit_after_s = %g); a restart resumes from the checkpoint",
                self._servers,
                _duration(away),
                report.get("where", "?"),
                self.settings.outage_exit_after_s,
            )
            return True
        if not self._logged or now - self._logged >= OUTAGE_LOG_EVERY_S:
            self._logged = now
            until = (
                f"; exiting after {_duration(self.settings.outage_exit_after_s)}"
                if mode == "exit"
                else ""
            )
            log.warning(
                "broker %s unreachable for %s while %s; waiting (job.on_broker_outage = %s%s)",
                self._servers,
                _duration(away),
                report.get("where", "?"),
                mode,
                until,
            )
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

    def __init__(self, settings: JobSettings, listener: Any) -> None:
        self.every_s = settings.heartbeat_s
        self.listener = listener
        self._last = time.monotonic()

    def maybe_log(self, query: Any) -> None:
        now = time.monotonic()
        idle = now - self.listener.last_batch
        if (
            idle < self.every_s
            or now - self._last < self.every_s
            or query.status.get("isDataAvailable")
        ):
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
        if "segment" in end:  # metadata-log input: the end of the last batch read
            parts.append(
                f"metadata log at segment {end['segment']:020d}.log byte {end['position']}"
            )
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
