"""The ZooKeeper bridge's reading side, with kazoo: one session, read-only, with watches.

Theory of operation. `read_all` lists every parent of `zk_znodes.PARENTS` and reads every
child, every single znode of `zk_znodes.SINGLES`, and the state znode of every partition
the topic znodes list, pipelined (kazoo's async calls, a few thousand in flight), setting
a watch on each: a child watch on the parents, a data watch on the znodes that exist and
an exists watch on those that do not yet (a partition's state znode is created by the
controller's first election). A watch is one-shot: when it fires, its path goes on a
queue, and `read_touched` reads it again (setting the watch again) and, for a parent, the
children that came or went. What changed between two reads of a znode is seen from its
version; a version that moved by more than one is a gap the checker reports.

Sessions. kazoo reconnects by itself, to any server of the connect string, and drops its
watches when the connection is lost (`KazooClient._reset_watchers`). So any loss, whether
the session survives or expires, marks the reader for a resync: the next call reads
everything again (`needs_resync`), and the bridge diffs that against what it had.

Reading only: the reader calls `get`, `get_children` and `exists`, nothing else; with a
digest (`--zookeeper-auth user:password`) it authenticates as a user that the cluster's
ACLs let read (docs/zookeeper-bridge.md).
"""

from __future__ import annotations

import logging
import queue
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from streaming.exits import Unreachable, UsageError

from . import zk_znodes as z
from .zk_znodes import Node

log = logging.getLogger(__name__)

IN_FLIGHT = 2_000
RESYNC = ("resync", "")


class ZkReader:
    def __init__(self, connect: str, timeout_s: float = 10.0, auth: str | None = None) -> None:
        self.connect = connect
        self.timeout_s = timeout_s
        self.auth = auth
        self._client: Any = None
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._connected = threading.Event()
        self.needs_resync = True
        self._started = False
        # parent -> its last pzxid (the zxid of its last child change): a deletion's zxid
        self.pzxid: dict[str, int] = {}
        self.last_zxid = 0

    # -- connection ----------------------------------------------------------------------

    def start(self) -> None:

        auth_data = [("digest", self.auth)] if self.auth else None
        self._client = KazooClient(
            hosts=self.connect,
            timeout=self.timeout_s,
            connection_retry=KazooRetry(max_tries=-1, max_delay=5.0),
            auth_data=auth_data,
            read_only=True,
            logger=logging.getLogger("kazoo.client.bridge"),
        )
        self._client.add_listener(self._on_state)
        try:
            with warnings.catch_warnings():
                # kazoo warns of a missing chroot; the check below says it in one line
                warnings.simplefilter("ignore", UserWarning)
                self._client.start(timeout=self.timeout_s)
        except KazooTimeoutError:
            self.stop()
            raise Unreachable(
                f"ZooKeeper {self.connect} did not answer within {self.timeout_s:g} s"
            ) from None
        except Exception as exc:  # an auth failure or a malformed connect string
            self.stop()
            raise UsageError(f"cannot connect to ZooKeeper {self.connect}: {exc}") from None
        self._connected.set()
        if self._client.exists(z.BROKER_IDS) is None:
            self.stop()
            raise UsageError(
                f"ZooKeeper {self.connect} holds no Kafka cluster (no {z.BROKER_IDS}); "
                "is the chroot the one in the brokers' zookeeper.connect?"
            )
        self._started = True

    def _on_state(self, state: str) -> None:
        if not self._started:  # start() reports its own outcome, in one line
            return
        if state == KazooState.CONNECTED:
            self._connected.set()
            log.info("bridge: ZooKeeper %s connected; reading everything again", self.connect)
        else:
            self._connected.clear()
            self.needs_resync = True
            log.warning(
                "bridge: ZooKeeper %s %s; waiting to reconnect",
                self.connect,
                "session lost" if state == KazooState.LOST else "connection lost",
            )
        self._queue.put(RESYNC)

    def wait_connected(self, timeout_s: float) -> bool:
        return self._connected.wait(timeout_s)

    def stop(self) -> None:
        self._started = False
        if self._client is not None:
            try:
                self._client.stop()
                self._client.close()
            except Exception:
                pass
            self._client = None

    # -- watches -------------------------------------------------------------------------

    def _data_watch(self, event: Any) -> None:
        self._queue.put(("data", event.path))

    def _child_watch(self, event: Any) -> None:
        self._queue.put(("children", event.path))

    def wait_touched(self, timeout_s: float) -> set[tuple[str, str]]:
        """The paths whose watches fired, waiting up to `timeout_s` for the first."""
        touched: set[tuple[str, str]] = set()
        try:
            touched.add(self._queue.get(timeout=timeout_s))
        except queue.Empty:
            return touched
        while True:
            try:
                touched.add(self._queue.get_nowait())
            except queue.Empty:
                return touched

    # -- reading -------------------------------------------------------------------------

    def _children(self, parent: str) -> list[str] | None:

        try:
            children, stat = self._client.get_children(
                parent, watch=self._child_watch, include_data=True
            )
        except NoNodeError:
            # not there yet (/admin/delete_topics before the first deletion): watch for it
            if self._client.exists(parent, watch=self._child_watch) is not None:
                return self._children(parent)
            return None
        self.pzxid[parent] = stat.pzxid
        self.last_zxid = max(self.last_zxid, stat.pzxid)
        return sorted(children)

    def _read_many(self, paths: Iterable[str]) -> dict[str, Node | None]:
        """Each path's node (None: absent), with a data watch, or an exists watch if absent."""

        out: dict[str, Node | None] = {}
        pending: list[tuple[str, Any]] = []
        missing: list[str] = []

        def drain() -> None:
            for path, result in pending:
                try:
                    data, stat = result.get()
                except NoNodeError:
                    missing.append(path)
                    continue
                out[path] = _node(data, stat)
                self.last_zxid = max(self.last_zxid, stat.mzxid)
            pending.clear()

        for path in paths:
            pending.append((path, self._client.get_async(path, watch=self._data_watch)))
            if len(pending) >= IN_FLIGHT:
                drain()
        drain()
        for path in missing:
            if self._client.exists(path, watch=self._data_watch) is None:
                out[path] = None
            else:  # created in between
                out.update(self._read_many([path]))
        return out

    def read_all(self) -> dict[str, Node]:
        """Every znode the bridge reads, as it is now, with watches set on all of them."""
        self.needs_resync = False
        while True:  # drop what fired before this read: it reads everything anyway
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        paths = list(z.SINGLES)
        for parent in z.PARENTS:
            for child in self._children(parent) or []:
                paths.append(f"{parent}/{child}")
        nodes = {p: n for p, n in self._read_many(paths).items() if n is not None}
        nodes.update(self._read_states(nodes))
        return nodes

    def _read_states(self, nodes: dict[str, Node]) -> dict[str, Node]:
        paths: list[str] = []
        for path, node in nodes.items():
            name = z.child_of(z.TOPICS, path)
            if name is None:
                continue
            try:
                topic = z.decode_topic(path, node)
            except z.ZnodeError:
                continue
            paths.extend(z.state_path(name, p) for p, _ in topic.partitions)
        return {p: n for p, n in self._read_many(paths).items() if n is not None}

    def read_touched(
        self, touched: set[tuple[str, str]], nodes: dict[str, Node]
    ) -> tuple[dict[str, Node | None], dict[str, int]]:
        """Read again what the watches named: {path: node or None (gone)} for every path
        that may have changed, and each gone path's zxid (its parent's pzxid)."""
        result: dict[str, Node | None] = {}
        to_read: set[str] = set()
        for kind, path in touched:
            if kind == "children" or path in z.PARENTS:
                children = self._children(path)
                now = {f"{path}/{c}" for c in children or []}
                before = {p for p in nodes if z.child_of(path, p) is not None}
                for gone in before - now:
                    result[gone] = None
                # every child again: a broker that re-registered has a new czxid
                to_read |= now if path == z.BROKER_IDS else now - before
            elif kind == "data":
                to_read.add(path)
        result.update(self._read_many(sorted(to_read)))
        # a topic znode that came or changed: watch (and read) its partitions' states
        topics = {p: n for p, n in result.items() if n is not None and z.child_of(z.TOPICS, p)}
        states = {
            p: n for p, n in self._read_states(topics).items() if p not in nodes or p in result
        }
        for p, n in states.items():
            if nodes.get(p) != n:
                result[p] = n
        deleted_at = {}
        listed = {path for kind, path in touched if kind == "children" or path in z.PARENTS}
        for path, node in result.items():
            if node is None:
                parent = path.rsplit("/", 1)[0]
                if parent in z.PARENTS and parent not in listed:
                    # a data watch told of the deletion before the parent's child watch:
                    # list the parent, for its pzxid (the deletion's zxid, or later)
                    self._children(parent)
                    listed.add(parent)
                deleted_at[path] = self.pzxid.get(parent, self.last_zxid)
                if parent in z.PARENTS:
                    continue
                # a state znode (or any znode read by a data watch): the parent's stat
                stat = self._client.exists(parent)
                deleted_at[path] = stat.pzxid if stat is not None else self.last_zxid
        return result, deleted_at


def _node(data: bytes | None, stat: Any) -> Node:
    return Node(
        (data or b"").decode("utf-8", errors="replace"),
        stat.czxid,
        stat.mzxid,
        stat.version,
        stat.mtime,
    )
