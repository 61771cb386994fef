"""How the sequencer keeps the directory in its MapState (`operators.SequencerProcessor`).

The records are kept in at most `CHUNKS` map entries: the entry `~chunk-<n>` holds, one line
each, `key \\t text` for the records whose key hashes to n (`chunk_of`), in key order, and
`~stamp` names the version written last (`operators.LastDirectory`). A batch rewrites the
chunks that hold a record it changed.

One entry per record was the layout before: every entry is a round trip to the JVM's state
server, and at 1,000,000 partitions (10,000 topics) a batch that changed every topic's
summaries spent 1.3 to 1.9 s on 10,000 writes, and a worker that had not written the
directory last spent about 1 s more reading it back, entry by entry (timed inside the
worker). A checkpoint written in that layout is read as it is, and its first batch moves
its records into chunks.

Keys are the core's (`controller`, `broker-<id>`, `topic-<name>`, whose names Kafka's rule
limits to `[a-zA-Z0-9._-]`), and a record's text is compact JSON, which holds no tab or
newline: `chunk_text` checks both.

A chunk's lines are stored compressed, as a bucket's are (`codec.compressed`), under a first
line `~zstd`, which no record's key can be: a batch that changes every topic's summaries
rewrites every chunk, about 50 MB of text at a million partitions, each a round trip to the
state server and into its changelog. A chunk of lines as text (the layout before) is read
as it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from state_machines.directory import TopicRecord
from state_machines.errors import InvariantViolation

from . import codec
from .directory_codec import topic_from_text, topic_text

CHUNKS = 64
# keys no record has: a topic name cannot hold "~"
CHUNK_PREFIX = "~chunk-"
STAMP_KEY = "~stamp"
COMPRESSED = "~zstd\n"

# Records this Python worker has decoded or encoded, by key, with their text. A record
# whose stored text is unchanged is not decoded again, and one the batch did not change is
# not encoded again. Records are immutable and a text is always its record's, so an entry
# is never wrong, only perhaps not the current record (checked by identity).
_TEXTS: dict[str, tuple[str, Any]] = {}


def chunk_of(key: str) -> str:
    return f"{CHUNK_PREFIX}{zlib.crc32(key.encode()) % CHUNKS}"


def chunk_text(texts: Iterable[tuple[str, str]]) -> str:
    lines = []
    for key, text in sorted(texts):
        if "\t" in key or "\n" in key or "\n" in text:
            raise InvariantViolation(
                f"directory key {key!r} or its record cannot be kept as a line"
            )
        lines.append(f"{key}\t{text}")
    return COMPRESSED + codec.compressed("\n".join(lines))


def chunk_lines(value: str) -> list[str]:
    """The `key \\t text` lines of a chunk's stored value, in either layout."""
    if value.startswith(COMPRESSED):
        value = codec.decompressed(value[len(COMPRESSED) :])
    return value.split("\n")


def stored_texts(entries: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The records' texts by key, from the map's (key, value) entries in either layout, and
    the keys kept in the former layout (one entry per record)."""
    texts: dict[str, str] = {}
    former: list[str] = []
    for key, value in entries:
        if key.startswith(CHUNK_PREFIX):
            for line in chunk_lines(value):
                k, text = line.split("\t", 1)
                texts[k] = text
        elif key != STAMP_KEY:
            texts[key] = value
            former.append(key)
    return texts, former


def load(entries: Iterator[tuple[tuple[str], tuple[str]]]) -> tuple[dict[str, Any], list[str]]:
    """The directory from the MapState's iterator, decoding only texts this worker has not
    seen, and the keys kept in the former layout."""
    texts, former = stored_texts((key, text) for (key,), (text,) in entries)
    directory = {}
    for key, text in texts.items():
        cached = _TEXTS.get(key)
        if cached is None or cached[0] != text:
            rec = topic_from_text(text, cached)
            cached = _TEXTS[key] = (
                text,
                codec.loads(text, codec.DirectoryRecord) if rec is None else rec,
            )
        directory[key] = cached[1]
    for key in _TEXTS.keys() - texts.keys():
        del _TEXTS[key]
    return directory, former


def writes(
    directory: dict[str, Any], changed: Iterable[str], former: Iterable[str] = ()
) -> tuple[list[tuple[str, str]], list[str]]:
    """What to write for a batch that changed the records `changed` (a removed record is
    absent from `directory`): the chunks to update, with their text, and the map keys to
    remove (emptied chunks, and every former-layout key, whose records all move to chunks)."""
    former = list(former)
    touched = {chunk_of(k) for k in changed}
    if former:
        touched |= {chunk_of(k) for k in directory}
    if not touched:
        return [], []
    members: dict[str, list[tuple[str, str]]] = {}
    for key, rec in directory.items():
        chunk = chunk_of(key)
        if chunk in touched:
            members.setdefault(chunk, []).append((key, _text_of(key, rec)))
    updates = [(chunk, chunk_text(members[chunk])) for chunk in sorted(touched) if chunk in members]
    removals = [chunk for chunk in sorted(touched) if chunk not in members] + former
    return updates, removals


def _text_of(key: str, rec: Any) -> str:
    cached = _TEXTS.get(key)
    if cached is not None and cached[1] is rec:
        return cached[0]
    # a topic's record lends its text's unchanged summaries to the next (`topic_text`)
    text = topic_text(rec, cached) if type(rec) is TopicRecord else codec.dumps(rec)
    _TEXTS[key] = (text, rec)
    return text
