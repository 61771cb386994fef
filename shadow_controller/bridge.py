"""`shadow-controller bridge`: a live cluster's metadata, turned into contract events.

Theory of operation. Every `--interval` seconds the bridge takes a `ClusterView` of the live
cluster (brokers, the controller id, every partition's replicas, leader, leader epoch and
ISR), compares it with the last view it emitted, and produces what changed to the events
topic as contract v1 events. `cluster_view.diff(previous, current)` is the pure part: the
view it emitted last and the view it sees now in, the events out (its docstring gives the
events and their order, and the stand-ins for what the admin API does not show). This
module is the loop around it, which only reads, produces and saves (`bridge_io`); the
command line is bridge_cli.py's.

Position. The state file holds the last emitted view. It is written atomically, and only
after every event of the poll was confirmed delivered, so a restart emits nothing for what
was already emitted, and a crash between produce and save re-emits at most that one poll.

Time. Every event carries the poll's time as `ts`. When a poll finds nothing to emit for
`--tick-interval` seconds, the bridge emits a `ControllerTick`, so the job's event time
(and its automatic rebalance checks) moves on in a quiet cluster.

Rules. Before each poll the bridge reads which controller the cluster runs
(`cluster_rules`: ZK, or KRaft at a metadata.version), says it once and again whenever it
changes, with the shadow settings that match. Given the shadow job's settings
(`--job-config`, `--job-set`), it refuses to feed a shadow whose rule set contradicts the
cluster's (exit 2): a ZK-rules shadow of a KRaft cluster reports false divergences.
`--detect` answers the question and exits.

Failures. An unreachable cluster (or events cluster) is one log line per failed attempt,
with the error and the next retry time, and a capped exponential backoff; it never raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from state_machines.model import ControllerConfig
from streaming.kafka.errors import DeliveryFailed

from .bridge_io import ClusterReader, EventsWriter, load_state, save_state
from .cluster_rules import ClusterRules, check
from .cluster_view import diff, settle
from .errors import ClusterUnreachable, RuleSetMismatch, StateMismatch

log = logging.getLogger(__name__)


@dataclass
class BridgeSettings:
    bootstrap_servers: str
    events_bootstrap_servers: str | None = None
    topic: str = "controller-events"
    state: str = "bridge-state.json"
    interval_s: float = 10.0
    once: bool = False
    request_timeout_s: float = 10.0
    max_retries: int | None = None  # consecutive failed attempts before giving up; None: never
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    # a ControllerTick after this long without events; 0: never
    tick_interval_s: float = 30.0
    # the shadow job's controller settings, and where they came from; None: not checked
    shadow: ControllerConfig | None = None
    shadow_source: str = ""
    # read which controller the cluster runs, print it, exit
    detect: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def poll_once(
    reader: ClusterReader,
    writer: EventsWriter,
    state_path: str,
    clock: Callable[[], float] = time.time,
) -> list[dict[str, Any]]:
    """One poll: read, settle, diff, produce (confirmed), then save the position."""
    previous = load_state(state_path)
    raw = reader.read()
    if (
        previous is not None
        and previous.cluster_id
        and raw.cluster_id
        and previous.cluster_id != raw.cluster_id
    ):
        raise StateMismatch(
            f"{state_path} holds the position for cluster {previous.cluster_id!r}, "
            f"but {reader.bootstrap_servers} is cluster {raw.cluster_id!r}"
        )
    current = settle(previous, raw)
    events = diff(previous, current)
    if events:
        writer.write(events, int(clock() * 1000))
    if previous is None or events or current != previous:
        save_state(state_path, current)
    return events


# time passing, for the job's event-time schedule (contract: ControllerTick)
TICK: dict[str, Any] = {"v": 1, "type": "ControllerTick"}


def backoff_delay(failures: int, initial_s: float, max_s: float) -> float:
    """Capped exponential backoff after `failures` consecutive failed attempts (>= 1)."""
    return min(max_s, initial_s * 2.0 ** min(failures - 1, 62))


def note_rules(rules: ClusterRules, settings: BridgeSettings, changed: bool = False) -> None:
    """Say which controller the cluster runs, or raise RuleSetMismatch when the shadow's
    settings contradict it."""
    where = f"cluster {settings.bootstrap_servers} {'now ' if changed else ''}{rules.describe()}"
    if settings.shadow is None:
        if rules.mode is not None:
            log.info("bridge: %s; run the shadow with [controller] %s", where, rules.settings())
        else:
            log.warning("bridge: %s", where)
        return
    clash = check(rules, settings.shadow)
    if clash is not None:
        raise RuleSetMismatch(
            f"{where}, but {clash} ({settings.shadow_source}); set [controller] {rules.settings()}"
        )
    if rules.mode is None:
        log.warning(
            "bridge: %s; cannot check the shadow's controller.mode (%s)",
            where,
            settings.shadow_source,
        )
    elif rules.mode == "kraft" and rules.metadata_version is None:
        log.warning(
            "bridge: %s; the shadow runs %s's rules, the newest built (%s)",
            where,
            settings.shadow.metadata_version,
            settings.shadow_source,
        )
    else:
        log.info("bridge: %s, as the shadow does (%s)", where, settings.shadow_source)


def run_bridge(
    settings: BridgeSettings,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    reader: ClusterReader | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """The polling loop. Returns 0 after `--once` or `--detect` succeeded (or on Ctrl-C), 1
    when `max_retries` consecutive attempts failed, 2 when the state file is for another
    cluster or the shadow's rule set contradicts the cluster's."""
    reader = reader or ClusterReader(settings.bootstrap_servers, settings.request_timeout_s)
    writer: EventsWriter | None = None
    failures = 0
    last_emitted = clock()
    rules: ClusterRules | None = None
    try:
        while True:
            try:
                seen = reader.read_rules()
                if settings.detect:
                    out(detected_line(settings.bootstrap_servers, seen))
                    return 0
                if seen != rules:
                    note_rules(seen, settings, changed=rules is not None)
                    rules = seen
                if writer is None:
                    writer = EventsWriter(
                        settings.events_bootstrap_servers or settings.bootstrap_servers,
                        settings.topic,
                        settings.request_timeout_s,
                    )
                events = poll_once(reader, writer, settings.state, clock)
                now = clock()
                if events:
                    last_emitted = now
                elif settings.tick_interval_s and now - last_emitted >= settings.tick_interval_s:
                    writer.write([TICK], int(now * 1000))
                    events, last_emitted = [TICK], now
            except StateMismatch as exc:
                log.error("bridge: %s; refusing to diff against it", exc)
                return 2
            except RuleSetMismatch as exc:
                log.error("bridge: %s; refusing to feed that shadow", exc)
                return 2
            except (ClusterUnreachable, DeliveryFailed) as exc:
                failures += 1
                if isinstance(exc, ClusterUnreachable):
                    reader.close()
                    what = f"cluster {settings.bootstrap_servers} unreachable"
                else:
                    what = "events not delivered, position not saved"
                if settings.max_retries is not None and failures > settings.max_retries:
                    log.error(
                        "bridge: %s (attempt %d): %s; giving up after %d retries",
                        what,
                        failures,
                        exc,
                        settings.max_retries,
                    )
                    return 1
                delay = backoff_delay(failures, settings.backoff_initial_s, settings.backoff_max_s)
                at = datetime.fromtimestamp(clock() + delay).strftime("%H:%M:%S")
                log.warning(
                    "bridge: %s (attempt %d): %s; next retry at %s (in %.1fs)",
                    what,
                    failures,
                    exc,
                    at,
                    delay,
                )
                sleep(delay)
                continue
            failures = 0
            log.info(
                "bridge: %d events to %s%s",
                len(events),
                settings.topic,
                "" if not events else ": " + ", ".join(_summary(events)),
            )
            if settings.once:
                return 0
            sleep(settings.interval_s)
    except KeyboardInterrupt:
        return 0
    finally:
        reader.close()


def detected_line(bootstrap_servers: str, rules: ClusterRules) -> str:
    """`--detect`'s answer: what the cluster runs, and the shadow's settings that match."""
    line = f"cluster {bootstrap_servers} {rules.describe()}"
    return f"{line}; run the shadow with [controller] {rules.settings()}" if rules.mode else line


def _summary(events: list[dict[str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    return [f"{n} {t}" for t, n in counts.items()]
