"""Encoding of the core's values for Spark state, for rows between operators and for the
decisions the job writes.

Checkpoints outlive code, so everything persisted goes through here, and every encoding
carries its version; the versions are listed once, in `versions.py`, and a reader refuses
a version it does not know (`check_compact`) rather than guess. There are four encodings:

- `state`: the generic document `{"v": version, "d": value}`, derived from the values'
  type hints (`tagged.py`), so adding a field with a default is a compatible change and
  anything else bumps the version and adds a migration to `MIGRATIONS`;
- `compact`: JSON arrays, version first, for the values every partition touches on every
  command (its `PartitionRecord`: `record_codec.py`; its `Command`: `command_codec.py`;
  the directory's records: `directory_codec.py`), written from templates because they
  are written by the ten thousand;
- `bucket`: scale mode's state of one bucket, one line per partition, compressed, under a
  header;
- `contract`: a decision record as the contract's JSON (docs/contract.md), written by
  `decision_json.py`; only its version is kept here.

`dumps` and `loads` pick the encoding by type. JSON strings are used rather than Spark
map/array state fields because those crash the Python worker in 4.3.0
(docs/troubleshooting.md, "Spark facts behind the design").
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pyarrow

from state_machines import commands, directory, partition

from .command_codec import command_from_text, command_text
from .directory_codec import (
    DIRECTORY_TYPES as _DIRECTORY_TYPES,
)
from .directory_codec import (
    directory_in as _directory_in,
)
from .directory_codec import directory_out as _directory_out
from .directory_codec import (
    topic_text as _topic_text,
)
from .json_text import canonical_json, compact_json
from .record_codec import record_from_text, record_text
from .tagged import from_jsonable, to_jsonable
from .versions import (
    BUCKET_HEADER,
    BUCKET_HEADER_V1,
    COMPACT_VERSION,
    CONTRACT_VERSION,
    MIGRATIONS,
    SCHEMA_VERSION,
    VERSIONS,
    UnknownEncoding,
    check_compact,
)

__all__ = [
    "BUCKET_HEADER",
    "COMPACT_VERSION",
    "CONTRACT_VERSION",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "VERSIONS",
    "UnknownEncoding",
    "check_compact",
    "dumps",
    "loads",
    "bucket_entries",
    "bucket_entry_in",
    "bucket_entry_out",
    "bucket_entry_seq",
    "bucket_text",
    "compressed",
    "decompressed",
    "DirectoryRecord",
]

DirectoryRecord = directory.ControllerRecord | directory.BrokerRecord | directory.TopicRecord
PartitionRecordType = partition.PartitionRecord

_Rec = partition.PartitionRecord
_Cmd = commands.Command


# -- dumps and loads: the encoding by type --------------------------------------------------


def dumps(value: Any) -> str:
    """`value` in its encoding: compact for a command, a partition record and a directory
    record, the versioned generic document for anything else."""
    if isinstance(value, _Cmd):
        return command_text(value)
    if isinstance(value, _Rec):
        return record_text(value)
    if type(value) is directory.TopicRecord:
        return _topic_text(value)
    if isinstance(value, _DIRECTORY_TYPES):
        return compact_json(_directory_out(value))
    return canonical_json({"v": SCHEMA_VERSION, "d": to_jsonable(value)})


def loads(text: str, hint: Any) -> Any:
    """The value of type `hint` that `dumps` wrote as `text` (a generic document of an
    older schema version is migrated first)."""
    if hint is _Cmd:
        return command_from_text(text)
    if hint is _Rec and text.startswith("["):
        return record_from_text(text)
    if text.startswith("["):
        doc = json.loads(text)
        if hint is DirectoryRecord or hint in _DIRECTORY_TYPES:
            return _directory_in(doc)
        raise TypeError(f"no compact decoding for {hint!r}")
    doc = json.loads(text)
    version = doc.get("v")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise UnknownEncoding(
            f"state written by schema version {version!r}; this build reads up to {SCHEMA_VERSION}"
        )
    while version < SCHEMA_VERSION:
        doc = MIGRATIONS[version](doc)
        version += 1
    return from_jsonable(doc["d"], hint)


# ---------------------------------------------------------------------------------------
# Scale mode's state of one bucket: one line per partition, `gkey \t seq_cause \t seq_next
# \t record`, in key order. A batch decodes only the lines of the partitions it touches;
# the others are carried as text. (Topic names cannot hold a tab or newline, and the
# compact JSON of a record holds neither unescaped.)
#
# Spark moves a bucket's whole state on every batch that touches it: out of RocksDB,
# pickled to the Python worker, and back into RocksDB and its changelog. The lines are
# therefore stored compressed (layout 2): `bucket-v2 \n <length of the lines in bytes> \n
# <base64 of their zstd frame>`. The lines are much alike (each topic's name, the state
# names and the broker lists again and again): the benchmark's buckets at 100,000
# partitions take a twenty-ninth of their text, and zstd at level 1 costs about half a
# millisecond per megabyte each way. The state schema stays one string, so
# a checkpoint of layout 1 (the lines under a `bucket-v1` header) is read as it was.

_ZSTD = pyarrow.Codec("zstd", compression_level=1)


def compressed(text: str) -> str:
    """`text` as `<its length in UTF-8 bytes> \\n <base64 of its zstd frame>` (`decompressed`
    reads it); the directory's chunks are kept the same way (`directory_store`)."""
    raw = text.encode()
    return f"{len(raw)}\n{base64.b64encode(_ZSTD.compress(raw, asbytes=True)).decode('ascii')}"


def decompressed(packed: str) -> str:
    head, _, data = packed.partition("\n")
    size = int(head)
    return (
        _ZSTD.decompress(base64.b64decode(data), decompressed_size=size, asbytes=True).decode()
        if size
        else ""
    )


def bucket_entries(text: str | None) -> dict[str, str]:
    """{gkey: encoded line tail} of a bucket's state."""
    if not text:
        return {}
    header, _, body = text.partition("\n")
    if header == BUCKET_HEADER:
        body = decompressed(body)
    elif header != BUCKET_HEADER_V1:
        raise UnknownEncoding(
            f"bucket state in layout {header[:20]!r}; this build reads {BUCKET_HEADER!r} "
            f"and {BUCKET_HEADER_V1!r}"
        )
    if not body:  # a bucket whose partitions were all deleted
        return {}
    out = {}
    for line in body.split("\n"):
        gkey, _, rest = line.partition("\t")
        out[gkey] = rest
    return out


def bucket_entry_in(entry: str) -> tuple[Any, int, int]:
    seq_cause, seq_next, record = entry.split("\t", 2)
    return loads(record, _Rec), int(seq_cause), int(seq_next)


def bucket_entry_out(record: Any, seq_cause: int, seq_next: int) -> str:
    return f"{seq_cause}\t{seq_next}\t{dumps(record)}"


def bucket_entry_seq(entry: str, seq_cause: int, seq_next: int) -> str:
    """`entry` with other sequence numbers, its record's text as it was."""
    record = entry.split("\t", 2)[2]
    return f"{seq_cause}\t{seq_next}\t{record}"


def bucket_text(entries: dict[str, str]) -> str:
    """A bucket's state: its lines in key order, compressed (the same state is the same
    bytes, for one build of zstd)."""
    lines = "\n".join([f"{k}\t{entries[k]}" for k in sorted(entries)])
    return f"{BUCKET_HEADER}\n{compressed(lines)}"
