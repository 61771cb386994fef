"""`shadow-controller bridge --zookeeper HOST:PORT[/chroot]`: a ZooKeeper-mode cluster's
decisions, checked from ZooKeeper itself.

Theory of operation. The reader (`zk_reader`) reads every znode Kafka 3.9's controller
reads, with watches. The first read of a bridge without a state file is the bootstrap
(`zk_events.bootstrap`): what a newly elected controller loads, then `ControllerFailover`.
Every later read, after a watch fired or after a reconnection, is diffed against the view
the bridge holds (`zk_events.diff_nodes`), and the changes are taken in zxid order
(`zk_events.Translator`): the controller's inputs become contract events, its writes to
partition state znodes are checked (`zk_checks.Checker`, which runs the project's engine
over the same events). The events go out (the events topic, or `--events-file`); the
verdicts are printed, one line each, and appended to `--verdicts`.

Position. The state file holds the view (every znode taken in, with its zxids and
version), kept after a batch's events were delivered (whole, or the batch appended to its
journal: zk_state), so a restart emits nothing twice: it diffs the live ZooKeeper against
that view. A restart primes the
checker from the saved view (what a new controller would read), without emitting it.

Reading only: see `zk_reader`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kazoo.exceptions import KazooException, NoAuthError
from kazoo.handlers.threading import KazooTimeoutError

from state_machines.model import ControllerConfig
from streaming.exits import UsageError

from . import zk_znodes as z
from .errors import BridgeError
from .zk_checks import Checker
from .zk_events import Change, Translator, bootstrap, diff_nodes
from .zk_reader import ZkReader
from .zk_state import StateFile
from .zk_verdicts import Verdict
from .zk_znodes import Node

log = logging.getLogger(__name__)


class Writer(Protocol):
    def write(self, events: list[dict[str, Any]], ts_ms: int) -> None: ...


class FileEventsWriter:
    """Appends events as JSON lines (the input `simulate` and the file-input job read),
    flushed and fsynced before the position is saved."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, events: list[dict[str, Any]], ts_ms: int) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            for e in events:
                fh.write(json.dumps(e, separators=(",", ":")) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


@dataclass
class ZkBridgeSettings:
    zookeeper: str
    state: str = "bridge-state.json"
    events_file: str | None = None
    events_bootstrap_servers: str | None = None
    topic: str = "controller-events"
    verdicts: str | None = None
    once: bool = False
    timeout_s: float = 10.0
    auth: str | None = None
    config: ControllerConfig | None = None
    # report the writes the rules predict that did not come after this long quiet; 0: never
    missing_after_s: float = 60.0


def states_of(nodes: dict[str, Node]) -> dict[tuple[str, int], z.PartitionStateZnode]:
    out = {}
    for path, node in nodes.items():
        tp = z.parse_state_path(path)
        if tp is not None:
            try:
                out[tp] = z.decode_state(path, node)
            except z.ZnodeError:
                continue
    return out


class ZkBridge:
    """The bridge's state between reads: the view (the translator's), the checker."""

    def __init__(
        self,
        settings: ZkBridgeSettings,
        writer: Writer,
        out: Callable[[str], None] = print,
    ) -> None:
        self.settings = settings
        self.writer = writer
        self.out = out
        self.checker = Checker(settings.config or ControllerConfig())
        self.state = StateFile(settings.state, settings.zookeeper)
        saved = self.state.load()
        self.translator: Translator | None = None
        if saved is not None:
            self.translator = Translator(saved)
            self.checker.prime(bootstrap(saved), states_of(saved))
        self.verdicts: list[Verdict] = []
        self.last_batch = time.monotonic()

    def take(self, nodes: dict[str, Node], deleted_at: dict[str, int]) -> list[dict[str, Any]]:
        """Take in a full read: the bootstrap, or the changes since the view."""
        if self.translator is None:
            items = bootstrap(nodes)
            events = self.checker.prime(items, states_of(nodes))
            self.translator = Translator(nodes)
            self._deliver(events, [], None)
            return events
        return self._changes(diff_nodes(self.translator.nodes, nodes, deleted_at))

    def take_touched(
        self, result: dict[str, Node | None], deleted_at: dict[str, int]
    ) -> list[dict[str, Any]]:
        """Take in what the watches named (None: gone)."""
        assert self.translator is not None
        view = self.translator.nodes
        new = dict(view)
        for path, node in result.items():
            if node is None:
                new.pop(path, None)
                name = z.child_of(z.TOPICS, path)
                if name is not None:  # a deleted topic takes its state znodes with it
                    prefix = f"{path}/"
                    for p in [p for p in new if p.startswith(prefix)]:
                        deleted_at.setdefault(p, deleted_at.get(path, 0))
                        del new[p]
            else:
                new[path] = node
        return self._changes(diff_nodes(view, new, deleted_at))

    def report_missing(self) -> None:
        """After a quiet while: the writes the rules predict that never came."""
        events, verdicts = self.checker.missing()
        if events or verdicts:
            self._deliver(events, verdicts, [])

    def _changes(self, changes: list[Change]) -> list[dict[str, Any]]:
        assert self.translator is not None
        events: list[dict[str, Any]] = []
        verdicts: list[Verdict] = []
        for change in changes:
            for item in self.translator.apply(change):
                emitted, found = self.checker.handle(item, self.translator.nodes)
                events.extend(emitted)
                verdicts.extend(found)
        self._deliver(events, verdicts, changes)
        return events

    def _deliver(
        self, events: list[dict[str, Any]], verdicts: list[Verdict], changes: list[Change] | None
    ) -> None:
        """Deliver the events, then keep the position: the whole view (None: at the
        bootstrap) or the batch's changes (zk_state)."""
        assert self.translator is not None
        self.last_batch = time.monotonic()
        if events:
            self.writer.write(events, int(time.time() * 1000))
        if changes is None:
            self.state.save(self.translator.nodes)
        else:
            self.state.append(changes, self.translator.nodes)
        if self.settings.verdicts and verdicts:
            with open(self.settings.verdicts, "a", encoding="utf-8") as fh:
                for v in verdicts:
                    fh.write(json.dumps(v.to_json(), separators=(",", ":")) + "\n")
        for v in verdicts:
            if v.verdict != "match":
                self.out(v.line())
        self.verdicts.extend(verdicts)
        if events or verdicts:
            c = self.checker.counts
            log.info(
                "bridge: %d events; writes checked so far: %d match, %d benign, %d safety",
                len(events),
                c["match"],
                c["benign"],
                c["safety"],
            )


def run(
    settings: ZkBridgeSettings,
    *,
    stop: Callable[[], bool] = lambda: False,
    out: Callable[[str], None] = print,
    reader: ZkReader | None = None,
) -> int:
    """Read, check, emit until interrupted (or once, with --once)."""
    writer = _writer(settings)
    bridge = ZkBridge(settings, writer, out)
    reader = reader or ZkReader(settings.zookeeper, settings.timeout_s, settings.auth)
    reader.start()
    try:
        while not stop():
            if reader.needs_resync:
                if not reader.wait_connected(1.0):
                    continue
                try:
                    nodes = reader.read_all()
                except NoAuthError:
                    raise UsageError(
                        f"ZooKeeper {settings.zookeeper} refuses the bridge's reads (NoAuth): "
                        "give --zookeeper-auth a user with READ on the cluster's znodes "
                        "(docs/zookeeper-bridge.md)"
                    ) from None
                except _zk_errors() as exc:
                    log.warning("bridge: reading ZooKeeper failed (%s); retrying", exc)
                    reader.needs_resync = True
                    continue
                deleted_at = {
                    p: reader.pzxid.get(p.rsplit("/", 1)[0], reader.last_zxid)
                    for p in (bridge.translator.nodes if bridge.translator else {})
                }
                bridge.take(nodes, deleted_at)
                if settings.once:
                    return 0
                continue
            touched = reader.wait_touched(1.0)
            touched.discard(("resync", ""))
            quiet = time.monotonic() - bridge.last_batch
            if not touched and settings.missing_after_s and quiet >= settings.missing_after_s:
                bridge.report_missing()
            if not touched or reader.needs_resync:
                continue
            assert bridge.translator is not None
            try:
                result, deleted_at = reader.read_touched(touched, bridge.translator.nodes)
            except _zk_errors() as exc:
                log.warning("bridge: reading ZooKeeper failed (%s); reading everything again", exc)
                reader.needs_resync = True
                continue
            bridge.take_touched(result, deleted_at)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        reader.stop()


def _zk_errors() -> tuple[type[BaseException], ...]:

    return (KazooException, KazooTimeoutError)


def _writer(settings: ZkBridgeSettings) -> Writer:
    if settings.events_file:
        return FileEventsWriter(settings.events_file)
    if settings.events_bootstrap_servers:
        from .bridge_io import EventsWriter

        return EventsWriter(settings.events_bootstrap_servers, settings.topic, settings.timeout_s)
    raise UsageError(
        "bridge --zookeeper needs where to put the events: --events-bootstrap-servers "
        "(the events topic) or --events-file"
    )


def cmd_zk_bridge(args: argparse.Namespace, config: ControllerConfig | None) -> int:
    if args.bootstrap_servers:
        raise UsageError("give either --zookeeper or --bootstrap-servers, not both")
    if config is not None and config.mode != "zk":
        raise UsageError(
            f"a ZooKeeper-mode cluster runs the ZooKeeper controller, but the shadow runs "
            f'controller.mode = "{config.mode}"; set [controller] mode = "zk"'
        )
    settings = ZkBridgeSettings(
        zookeeper=args.zookeeper,
        state=args.state,
        events_file=args.events_file,
        events_bootstrap_servers=args.events_bootstrap_servers,
        topic=args.topic,
        verdicts=args.verdicts,
        once=args.once,
        timeout_s=args.timeout,
        auth=args.zookeeper_auth,
        config=config,
        missing_after_s=args.missing_after,
    )
    try:
        return run(settings)
    except BridgeError as exc:
        raise UsageError(str(exc)) from None
