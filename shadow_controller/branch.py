"""Branching a checkpoint of the job at micro-batch N: a copy that ends with batch N
committed, so the job run on it continues from the state after batch N.

Theory of operation. The job's checkpoint is CHECKPOINT/query (Spark's) plus
CHECKPOINT/feedback (the deletion reports, one file per batch). Every file in it either
belongs to no batch (copied as is) or is named by a batch or a state version:

| files | kept in the branch |
|---|---|
| query/offsets/<b>, query/commits/<b>, query/sources/<i>/<b> | b <= N |
| feedback/<b>.jsonl | b <= N |
| query/state/<op>/<part>/<v>[_<id>].changelog, <v>[_<id>].zip | v <= N + 1 |
| query/state/<op>/<part>/SSTs/*, logs/* (RocksDB immutable files) | named by a kept <v>.zip |
| query/state/<op>/_metadata/v2/<b>, _stateSchema/<store>/<b>_<id> | b <= N |
| settings.json (the run's settings) | no: `replay` writes the branch's own |

State version v is the state after batch v - 1: batch b loads version b and commits b + 1
(`StateStore.get(..., version = batchId)`), and the state data source reads version
batchId + 1. With RocksDB changelog checkpointing, loading version v takes the newest
snapshot <= v (`RocksDBFileManager.getLatestSnapshotVersion`: the <v>.zip files) and
replays <v'>.changelog for the versions after it. Files of later versions are not read
for that load, but they would be wrong afterwards: Spark keeps the newest snapshots by
version number when it deletes old versions (so a stale 20.zip would outlive the branch's
own), and a later restart of the branch would load a stale snapshot above its own
changelogs. So they are dropped, with the SST and log files only they referenced.

Two files name the original checkpoint and are rewritten: `query/metadata` gets a new
query id (the branch is a new query that can run next to the original), and the
transformWithState operator metadata (`_metadata/v2/<b>`) has absolute paths of its
schema files, which are pointed into the branch. A rewritten or dropped file loses its
Hadoop `.crc` side file; Hadoop's local file system reads a file without one unchecked.

The original is only read: files are copied, never moved or linked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import ReplayError

_BATCH_FILE = re.compile(r"^(\d+)$")
_STATE_FILE = re.compile(r"^(\d+)(?:_[0-9A-Za-z-]+)?\.(changelog|zip)$")
_SCHEMA_FILE = re.compile(r"^(\d+)_[0-9A-Za-z-]+$")
_FEEDBACK_FILE = re.compile(r"^(\d+)\.jsonl$")
_IMMUTABLE_DIRS = ("SSTs", "logs")


@dataclass(frozen=True, slots=True)
class Branch:
    checkpoint: str
    batch_id: int
    copied: int
    dropped: tuple[str, ...]
    rewritten: tuple[str, ...]


def committed_batches(checkpoint: str) -> list[int]:
    return _numbered(Path(checkpoint, "query", "commits"))


def _numbered(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if _BATCH_FILE.match(p.name))


def check_branch(checkpoint: str, batch_id: int, to: str) -> list[int]:
    """Refuse a branch that cannot be made; the checkpoint's committed batches."""
    src, dst = Path(checkpoint).resolve(), Path(to).resolve()
    if not (src / "query").is_dir():
        raise ReplayError(f"{checkpoint} has no Spark checkpoint (no query/ directory)")
    committed = committed_batches(str(src))
    if batch_id not in committed:
        last = f"last committed batch is {committed[-1]}" if committed else "no batch is committed"
        raise ReplayError(f"batch {batch_id} is not committed in {checkpoint} ({last})")
    if dst == src or src in dst.parents or dst in src.parents:
        raise ReplayError(
            f"the branch {to} must be outside the checkpoint {checkpoint}, and not contain it"
        )
    if dst.exists() and not dst.is_dir():
        raise ReplayError(f"{to} is a file; the branch needs a new directory")
    if dst.exists() and any(dst.iterdir()):
        raise ReplayError(f"{to} exists and is not empty")
    return committed


def branch_checkpoint(checkpoint: str, batch_id: int, to: str) -> Branch:
    """Copy CHECKPOINT to TO so that TO ends with `batch_id` committed."""
    check_branch(checkpoint, batch_id, to)
    src, dst = Path(checkpoint).resolve(), Path(to).resolve()
    plan = dict(_plan(src, batch_id))
    kept_immutable = _referenced_immutable_files(src, plan)
    copied, dropped, rewritten = 0, [], []
    for rel, keep in sorted(plan.items()):
        if keep and _is_immutable(rel) and kept_immutable is not None:
            keep = rel in kept_immutable
        if not keep:
            dropped.append(rel)
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _rewrite(src, dst, rel)
        if text is None:
            shutil.copy2(src / rel, target)
            crc = _crc_of(rel)
            if (src / crc).is_file():
                shutil.copy2(src / crc, dst / crc)
        else:
            target.write_text(text, encoding="utf-8")
            rewritten.append(rel)
        copied += 1
    # empty directories Spark expects (commits/, state/<op>/<part>/ of a stateless batch)
    for directory in sorted(p for p in src.rglob("*") if p.is_dir()):
        (dst / directory.relative_to(src)).mkdir(parents=True, exist_ok=True)
    return Branch(str(dst), batch_id, copied, tuple(dropped), tuple(rewritten))


def _plan(src: Path, batch_id: int) -> Iterator[tuple[str, bool]]:
    """(relative path, keep?) for every file but Hadoop's `.crc` side files, which follow
    their file, and hidden temporary files, which no committed batch needs."""
    for path in src.rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        rel = path.relative_to(src).as_posix()
        yield rel, _keep(rel.split("/"), batch_id)


def _keep(parts: list[str], n: int) -> bool:
    name = parts[-1]
    if parts == ["settings.json"]:  # the job's settings: the caller writes the branch's own
        return False
    if parts[0] == "feedback":
        m = _FEEDBACK_FILE.match(name)
        return not m or int(m.group(1)) <= n
    if parts[0] != "query" or len(parts) < 3:
        return True
    if parts[1] in ("offsets", "commits", "sources"):
        m = _BATCH_FILE.match(name)
        return not m or int(m.group(1)) <= n
    if parts[1] == "state":
        if "_metadata" in parts and "v2" in parts:
            m = _BATCH_FILE.match(name)
            return not m or int(m.group(1)) <= n
        if "_stateSchema" in parts:
            m = _SCHEMA_FILE.match(name)
            return not m or int(m.group(1)) <= n
        m = _STATE_FILE.match(name)
        return not m or int(m.group(1)) <= n + 1
    return True


def _is_immutable(rel: str) -> bool:
    parts = rel.split("/")
    return parts[:2] == ["query", "state"] and parts[-2] in _IMMUTABLE_DIRS


def _referenced_immutable_files(src: Path, plan: dict[str, bool]) -> set[str] | None:
    """The SST and log files named by the snapshots the branch keeps; None (keep them
    all) when a snapshot's metadata cannot be read."""
    referenced: set[str] = set()
    for rel, keep in plan.items():
        if not (keep and rel.startswith("query/state/") and rel.endswith(".zip")):
            continue
        try:
            with zipfile.ZipFile(src / rel) as archive:
                text = archive.read("metadata").decode("utf-8")
            meta = json.loads(text.split("\n", 1)[1])
        except (KeyError, IndexError, ValueError, zipfile.BadZipFile):
            return None
        store = rel.rsplit("/", 1)[0]
        referenced.update(f"{store}/SSTs/{f['dfsSstFileName']}" for f in meta.get("sstFiles", []))
        referenced.update(f"{store}/logs/{f['dfsLogFileName']}" for f in meta.get("logFiles", []))
    return referenced


def _rewrite(src: Path, dst: Path, rel: str) -> str | None:
    """The new text of a file that names the original checkpoint, or None to copy it."""
    if rel == "query/metadata":
        doc = json.loads((src / rel).read_text(encoding="utf-8"))
        doc["id"] = str(uuid.uuid4())
        return json.dumps(doc, separators=(",", ":")) + "\n"
    parts = rel.split("/")
    if parts[:2] == ["query", "state"] and parts[-3:-1] == ["_metadata", "v2"]:
        version, body = (src / rel).read_text(encoding="utf-8").split("\n", 1)
        doc = json.loads(body)
        old, new = (src / "query").as_uri(), (dst / "query").as_uri()
        old_plain, new_plain = f"file:{src / 'query'}", f"file:{dst / 'query'}"
        for info in doc.get("stateStoreInfo", []):
            info["stateSchemaFilePaths"] = [
                p.replace(old, new, 1) if p.startswith(old) else p.replace(old_plain, new_plain, 1)
                for p in info.get("stateSchemaFilePaths", [])
            ]
        return f"{version}\n{json.dumps(doc, separators=(',', ':'))}"
    return None


def _crc_of(rel: str) -> str:
    head, _, name = rel.rpartition("/")
    return f"{head}/.{name}.crc" if head else f".{name}.crc"


def first_offset_after(checkpoint: str, batch_id: int) -> int | None:
    """The first event offset after micro-batch `batch_id`: the end offset of the events
    source in `query/offsets/<batch_id>` (file input `{"line": n}`, Kafka input
    `{topic: {partition: offset}}`), or None if it cannot be read."""
    path = os.path.join(checkpoint, "query", "offsets", str(batch_id))
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines[2:]:  # "v1", the batch metadata, then one line per source
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "line" in doc:
            return int(doc["line"])
        if isinstance(doc, dict) and doc and all(isinstance(v, dict) for v in doc.values()):
            offsets = [int(o) for parts in doc.values() for o in parts.values()]
            if offsets:
                return min(offsets)
    return None
