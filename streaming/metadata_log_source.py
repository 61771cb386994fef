"""`--input metadata-log:DIR`: the job over the segment files of a KRaft metadata-log
directory (`__cluster_metadata-0`, or the `metadata.log.dir` above it), as they grow.

A Spark Python Data Source, `shadow-metadata-log`. Its offset is a position in the log's
files, `{"segment": <base offset of the segment>, "position": <byte position in it>}` (JSON
in Spark's offset log), always at the end of a complete batch: `latestOffset` scans the
newest segment's batch headers from where the last scan ended, and a batch still being
written (a torn tail) waits for its last byte. A range runs from one such position to the
next across any segments rolled between them, so after a roll or a restart the job goes on
from its position with nothing missed and nothing read twice.

The directory is only read: files are opened read-only, nothing is locked or created in it.

The records of a range are grouped into the quorum controller's events by the verifier
(`state_machines.log_verify.live.LiveLog`) on the driver, in `partitions`: the range's
contract events go to the job as its input rows; the verdicts of the events closed are
written out at once (`verdicts-<segment>-<position>.jsonl`), and kept with the dead letters
of corrupt batches for the sink (`LogBatches`), which dead-letters these beside the batch's
decisions and logs each safety verdict. The LiveLog is kept, pickled, in the checkpoint
beside each range's end position: a range planned again (a retried batch, a restart) starts
from the state the verifier had at its start, exactly as if it had read the log from its
first record.
"""

from __future__ import annotations

import bisect
import copyreg
import json
import os
import pickle
import struct
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit

from state_machines.log_verify.entries import LogEntry
from state_machines.log_verify.live import LiveLog
from state_machines.log_verify.log_state import ReplayError, StaticConfig

from .metadata_log.batches import (
    HEADER_SIZE,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    SEGMENT,
    SNAPSHOT,
    read_batches,
)
from .metadata_log.errors import CorruptBatch, MetadataLogError, RecordDecodeError
from .metadata_log.records import decode_control, decode_metadata

EVENT_SCHEMA = "value binary, offset long, source string"
PREFIX = "metadata-log:"
BEFORE_ALL = {"segment": -1, "position": 0}
# a batch's header as `read_batches` walks it (DefaultRecordBatch, Records): the length at
# byte 8 counts from the partition leader epoch on (LOG_OVERHEAD bytes before it), the magic
# is at byte 16; a length below the v2 header's is no batch
_LENGTH_AT, _MAGIC_AT = 8, 16
_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD

Key = tuple[int, int]


# the decoded records' fields are read-only mappings (records.py): pickled as their dicts
def _read_only(fields: dict[str, Any]) -> types.MappingProxyType[str, Any]:
    return types.MappingProxyType(fields)


copyreg.pickle(types.MappingProxyType, lambda m: (_read_only, (dict(m),)))


def state_dir(checkpoint: str) -> str:
    """Where the source keeps the verifier's state and each range's verdicts."""
    return os.path.join(checkpoint, "metadata-log")


def verdicts_dir(settings: Any) -> str:
    """Where the verdicts go: beside the decisions (file output), else in the checkpoint."""
    if settings.output.startswith("file:"):
        return os.path.join(settings.output[5:], "verdicts")
    return os.path.join(settings.checkpoint, "verdicts")


def range_of(checkpoint: str, batch_id: int) -> tuple[Key, Key] | None:
    """The log range micro-batch `batch_id` reads, from Spark's offset log (the query's
    `offsets/<id>` files, one JSON line per source after the version and metadata lines)."""
    offsets = os.path.join(checkpoint, "query", "offsets")

    def end_of(batch: int) -> Key | None:
        try:
            with open(os.path.join(offsets, str(batch)), encoding="utf-8") as fh:
                lines = fh.read().splitlines()[2:]
        except FileNotFoundError:
            return None
        for line in lines:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and set(doc) == {"segment", "position"}:
                return _key(doc)
        return None

    end = end_of(batch_id)
    if end is None:
        return None
    start = end_of(batch_id - 1) if batch_id > 0 else None
    return start or _key(BEFORE_ALL), end


def partition_dir(path: str) -> Path:
    """The directory holding the segments: DIR, or its `__cluster_metadata-0` when DIR is
    `metadata.log.dir` itself (as `metadata-log dump` reads it)."""
    p = Path(path)
    inner = p / "__cluster_metadata-0"
    if inner.is_dir() and not any(SEGMENT.match(n) for n in os.listdir(p)):
        return inner
    return p


def segments(directory: Path) -> list[tuple[int, Path]]:
    """The segments (`<20-digit base offset>.log`) by base offset; none when the directory is
    missing."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = [(int(m.group(1)), directory / n) for n in names if (m := SEGMENT.match(n))]
    return sorted(found)


def complete_end(path: Path, position: int) -> int:
    """The byte position after the last complete batch from `position` on, reading only the
    batch headers, as `read_batches` walks them: a torn tail and a preallocated segment's
    zeros end it; a header that cannot be a batch's (the reader's corrupt batch, after which
    it reads nothing more of the file) ends it at the file's end."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the `with` below)
    except OSError:
        return position
    with fh:
        size = fh.seek(0, 2)
        p = position
        while size - p > HEADER_SIZE_UP_TO_MAGIC:
            fh.seek(p)
            head = fh.read(HEADER_SIZE_UP_TO_MAGIC)
            (length,) = struct.unpack_from(">i", head, _LENGTH_AT)
            if length == 0 and _zeros_to_end(fh, p, size):
                break
            if length < _MIN_LENGTH or head[_MAGIC_AT] != 2:
                return size
            if p + LOG_OVERHEAD + length > size:
                break
            p += LOG_OVERHEAD + length
        return p


def _zeros_to_end(fh: Any, p: int, size: int) -> bool:
    fh.seek(p)
    while chunk := fh.read(1 << 20):
        if chunk.strip(b"\0"):
            return False
    return True


def _key(offset: Mapping[str, Any]) -> Key:
    return int(offset["segment"]), int(offset["position"])


def _name(key: Key) -> str:
    return f"{key[0]:020d}-{key[1]:012d}"


@dataclass
class _Rows(InputPartition):
    rows: list[tuple[bytes, int, str]]


class LogBatches:
    """The files a range leaves in the checkpoint (`<checkpoint>/metadata-log/`): the
    verifier's state at its end (`state-<end>.pickle`) and what the sink writes out for it
    (`batch-<end>.json`: the start, the verdicts, the dead letters)."""

    def __init__(self, state_dir: str) -> None:
        self.dir = Path(state_dir)

    def state(self, key: Key) -> Path:
        return self.dir / f"state-{_name(key)}.pickle"

    def batch(self, key: Key) -> Path:
        return self.dir / f"batch-{_name(key)}.json"

    def write(self, path: Path, data: bytes) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def prune(self, end: Key) -> None:
        """After the batch ending at `end` committed: what no batch can plan or write again."""
        for f in self.dir.glob("*-*-*.*"):
            stem = f.name.split(".", 1)[0]
            kind, seg, pos = stem.split("-")
            key = (int(seg), int(pos))
            if key < end or (kind == "batch" and key == end):
                f.unlink(missing_ok=True)

    def written_out(self, start: Key, end: Key) -> dict[str, Any] | None:
        """The verdicts and dead letters of the range start..end, if it held any record."""
        if start == end:
            return None
        try:
            doc: dict[str, Any] = json.loads(self.batch(end).read_text())
        except FileNotFoundError:
            return None
        return doc if tuple(doc["start"]) == start else None


class MetadataLogReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = partition_dir(options["path"])
        self.pause_file = options.get("shadow.pauseFile")
        self.files = LogBatches(options["shadow.stateDir"])
        verdicts = options.get("shadow.verdictsDir")
        self.verdicts_dir = Path(verdicts) if verdicts else None
        self.static = StaticConfig(
            int(options.get("shadow.minInsyncReplicas", "1")),
            options.get("shadow.uncleanLeaderElection", "false") == "true",
        )
        self._scanned: dict[int, int] = {}  # segment -> end of its complete batches so far
        self._live: LiveLog | None = None
        self._live_at: Key | None = None

    def initialOffset(self) -> dict[str, Any]:
        return dict(BEFORE_ALL)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if self.pause_file and os.path.exists(self.pause_file):
            return start  # the job is stopping: admit nothing new
        segs = segments(self.path)
        if not segs:
            return start
        base, path = segs[-1]
        begin = self._scanned.get(base, start["position"] if base == start["segment"] else 0)
        end = complete_end(path, begin)
        self._scanned = {base: end}
        key = max(_key(start), (base, end))
        return {"segment": key[0], "position": key[1]}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, stop = _key(start), _key(end)
        if stop <= begin:
            return []
        live = self._live_from(begin)
        letters: list[dict[str, Any]] = []
        where: list[
            tuple[int, int, str]
        ] = []  # (last offset, base offset, file:byte) of each batch
        for base, path in segments(self.path):
            if base < begin[0] or base > stop[0]:
                continue
            position = begin[1] if base == begin[0] else 0
            limit = stop[1] if base == stop[0] else None
            seen = len(letters)
            for entry, epoch in self._entries(path, position, limit, letters, where):
                if entry.offset < live.next_offset:
                    continue  # in the snapshot the state was loaded from
                if entry.offset > live.next_offset > 0 and len(letters) == seen:
                    # Kafka deleted a segment before the job read it (metadata.max.retention.ms
                    # past a snapshot): said once, with the offsets missed
                    letters.append(
                        _letter(
                            where[-1][2],
                            f"offsets {live.next_offset}-{entry.offset - 1} are not in the "
                            "directory (deleted before they were read)",
                            live.next_offset,
                        )
                    )
                seen = len(letters)  # a corrupt batch's offsets are its own letter's
                live.feed(entry, epoch)
        drained = live.drain()
        rows = [
            (json.dumps(event, separators=(",", ":")).encode(), offset, _source(where, offset))
            for offset, event in drained.events
        ]
        self.files.write(self.files.state(stop), pickle.dumps(live, pickle.HIGHEST_PROTOCOL))
        verdicts = [v.to_json() for v in drained.verdicts]
        doc = {"start": list(begin), "verdicts": verdicts, "dead_letters": letters}
        self.files.write(self.files.batch(stop), json.dumps(doc).encode())
        if self.verdicts_dir is not None and drained.verdicts:
            # out as soon as the range is read, not after the Spark batch that folds its
            # events: named by the range's end, the same range planned again (a retried
            # batch, a restart) writes the same file
            self.verdicts_dir.mkdir(parents=True, exist_ok=True)
            path = self.verdicts_dir / f"verdicts-{_name(stop)}.jsonl"
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text("".join(json.dumps(v, separators=(",", ":")) + "\n" for v in verdicts))
            os.replace(tmp, path)
        self._live, self._live_at = live, stop
        return [_Rows(rows)] if rows else []

    def _live_from(self, begin: Key) -> LiveLog:
        if self._live is not None and self._live_at == begin:
            return self._live
        if begin == _key(BEFORE_ALL):
            return self._first()
        with open(self.files.state(begin), "rb") as fh:
            live: LiveLog = pickle.load(fh)
        return live

    def _first(self) -> LiveLog:
        """A new LiveLog; loaded from the snapshot reaching the first segment when the log's
        start was cleaned (as `metadata-log verify` starts)."""
        live = LiveLog(self.static)
        segs = segments(self.path)
        if not segs or segs[0][0] == 0:
            return live
        snaps = sorted(
            (int(m.group(1)), self.path / n)
            for n in os.listdir(self.path)
            if (m := SNAPSHOT.match(n))
        )
        reaching = [(e, p) for e, p in snaps if e >= segs[0][0]]
        if not reaching:
            raise MetadataLogError(
                str(self.path), None, "the log's start was cleaned and no snapshot reaches it"
            )
        end, snap = reaching[0]
        entries = [e for e, _ in self._entries(snap, None, None, [], [], snapshot=True)]
        try:
            live.load_snapshot(entries, end)
        except ReplayError as exc:
            raise MetadataLogError(
                str(snap), None, f"the snapshot cannot be loaded: {exc}"
            ) from None
        return live

    def _entries(
        self,
        path: Path,
        position: int | None,
        limit: int | None,
        letters: list[dict[str, Any]],
        where: list[tuple[int, int, str]],
        snapshot: bool = False,
    ) -> Iterator[tuple[LogEntry, int]]:
        for batch in read_batches(path, position or 0, skip_corrupt=True):
            if limit is not None and batch.position >= limit:
                return
            if isinstance(batch, CorruptBatch):
                letters.append(_letter(f"{path.name}:{batch.position}", batch.reason, None))
                continue
            where.append((batch.last_offset, batch.base_offset, f"{path.name}:{batch.position}"))
            base = batch.base_offset
            for record in batch.records:
                try:
                    if batch.is_control:
                        c = decode_control(record.key, record.value)
                        e = LogEntry(
                            record.offset, base, c.type, c.version, c.fields, True, snapshot
                        )
                    else:
                        if record.value is None:
                            raise RecordDecodeError("a metadata record without a value")
                        m = decode_metadata(record.value)
                        e = LogEntry(
                            record.offset, base, m.name, m.version, m.fields, False, snapshot
                        )
                except RecordDecodeError as exc:
                    letters.append(
                        _letter(f"{path.name}:{batch.position}", exc.reason, record.offset)
                    )
                    continue
                yield e, batch.partition_leader_epoch

    def read(self, partition: _Rows) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
        yield from partition.rows

    def commit(self, end: dict[str, Any]) -> None:
        self.files.prune(_key(end))


def _source(where: list[tuple[int, int, str]], offset: int) -> str:
    """`file:byte` of the batch holding `offset` (an event begun in an earlier range: its
    log offset)."""
    i = bisect.bisect_left(where, (offset,))
    if i < len(where) and where[i][1] <= offset:
        return where[i][2]
    return f"offset {offset}"


def _letter(source: str, reason: str, offset: int | None) -> dict[str, Any]:
    """A dead letter of the log: the file and byte position of the batch (`source`), and why."""
    return {
        "reason": f"metadata log: {reason}",
        "source": source,
        "offset": offset if offset is not None else -1,
        "value_base64": None,
    }


class MetadataLogSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "shadow-metadata-log"

    def schema(self) -> str:
        return EVENT_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return MetadataLogReader(self.options)
