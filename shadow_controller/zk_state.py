"""The ZooKeeper bridge's position: the view (every znode taken in, with its zxids and
version) as a whole file, and the batches since as a journal beside it.

Why a journal. A 100,000-partition view is an 18 MiB file; writing it whole after every
batch (a few changed znodes, often) costs seconds. So a batch appends one line to
`<state>.journal` (the znodes it set and the ones it removed), fsynced, after its events
were delivered; and the whole view is written again (write, fsync, rename) when the
journal has grown past half the whole file, or at the bootstrap. Each line carries the
generation of the whole file it follows, so lines left from before a rewrite (a crash
between the rename and the journal's truncation) are never applied to a newer view. A
torn last line (a crash while appending) is ignored: its batch's events were delivered
and are emitted again at the restart, as with the whole file alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from streaming.exits import UsageError

from .zk_events import Change
from .zk_znodes import Node

STATE_KIND = "zookeeper"
STATE_VERSION = 1


class StateFile:
    def __init__(self, path: str, connect: str) -> None:
        self.path = path
        self.journal = f"{path}.journal"
        self.connect = connect
        self.generation = 0
        self._whole_bytes = 0
        self._journal_bytes = 0

    def load(self) -> dict[str, Node] | None:
        try:
            with open(self.path, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UsageError(f"cannot read the bridge state {self.path}: {exc}") from None
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"cannot read the bridge state {self.path}: {exc}") from None
        if not isinstance(doc, dict) or doc.get("kind") != STATE_KIND:
            raise UsageError(
                f"{self.path} is not a ZooKeeper bridge's state file (an admin-API bridge's?); "
                "give --state another file"
            )
        if doc.get("version") != STATE_VERSION:
            raise UsageError(
                f"{self.path}: unsupported bridge state version {doc.get('version')!r}"
            )
        self.generation = int(doc.get("generation", 0))
        self._whole_bytes = len(text)
        nodes = {p: Node.from_json(v) for p, v in doc["nodes"].items()}
        for entry in self._journal_entries():
            for p, v in entry.get("set", {}).items():
                nodes[p] = Node.from_json(v)
            for p in entry.get("del", []):
                nodes.pop(p, None)
        return nodes

    def _journal_entries(self) -> Iterable[dict[str, Any]]:
        try:
            with open(self.journal, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            self._journal_bytes += len(line) + 1
            try:
                entry = json.loads(line)
            except ValueError:
                return  # torn by a crash while appending: the last line, not applied
            if isinstance(entry, dict) and entry.get("generation") == self.generation:
                yield entry

    def save(self, nodes: dict[str, Node]) -> None:
        """The whole view (write, fsync, rename), then an empty journal."""
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        self.generation += 1
        doc = {
            "kind": STATE_KIND,
            "version": STATE_VERSION,
            "generation": self.generation,
            "zookeeper": self.connect,
            "nodes": {p: n.to_json() for p, n in sorted(nodes.items())},
        }
        text = json.dumps(doc, separators=(",", ":"))
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(directory)
        if os.path.exists(self.journal):
            os.remove(self.journal)
        self._whole_bytes, self._journal_bytes = len(text), 0

    def append(self, changes: list[Change], nodes: dict[str, Node]) -> None:
        """One batch's changes as one journal line; the whole view instead when the journal
        outgrew half of it."""
        if not changes:
            return
        entry = {
            "generation": self.generation,
            "set": {c.path: c.new.to_json() for c in changes if c.new is not None},
            "del": [c.path for c in changes if c.new is None],
        }
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        if self._journal_bytes + len(line) > self._whole_bytes // 2:
            self.save(nodes)
            return
        with open(self.journal, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self._journal_bytes += len(line)


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
