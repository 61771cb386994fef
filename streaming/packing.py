"""What crosses Spark between the job's operators, packed.

The sequencer's work of one group and the partition stage's outputs of one group travel
as a few strings rather than one Spark row each (`pack_groups` and `unpack_work`,
`pack_outputs` and `unpack_outputs`); a dead letter travels as its document
(`dead_letter`). `pipeline.py` drives the core on each side of these strings.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from state_machines.commands import Command
from state_machines.loop import DIRECT, DeadLetter, Wake, Work
from state_machines.outputs import Record
from state_machines.update_metadata_records import UpdateMetadataSend

from . import codec, command_codec
from .json_text import canonical_json

__all__ = [
    "OutputRow",
    "dead_letter",
    "pack_groups",
    "pack_metrics",
    "pack_outputs",
    "truncated",
    "unpack_outputs",
    "unpack_work",
]


# A dead-letter reason is one line; what it quotes of the input is already bounded.
MAX_REASON_CHARS = 1000
DEFAULT_DLQ_MAX_VALUE_BYTES = 900_000


def dead_letter(
    letter: DeadLetter, max_value_bytes: int = DEFAULT_DLQ_MAX_VALUE_BYTES
) -> dict[str, Any]:
    """The dead-letter document of one letter. A value over `max_value_bytes` keeps its
    prefix, and says so with its original size and SHA-256 (the Kafka output turns these
    into headers). A partition's letter carries the command it could not apply."""
    value = codec.dumps(letter.command).encode() if letter.command is not None else letter.value
    doc: dict[str, Any] = {
        "reason": letter.reason[:MAX_REASON_CHARS],
        "source": letter.source,
        "offset": letter.offset,
    }
    if value is None:
        doc["value_base64"] = None
        return doc
    kept, original = truncated(value, max_value_bytes)
    doc["value_base64"] = base64.b64encode(kept).decode("ascii")
    if original is not None:
        doc.update(truncated=True, original_size=original[0], original_sha256=original[1])
    return doc


def truncated(value: bytes, limit: int) -> tuple[bytes, tuple[int, str] | None]:
    """`value`, or its first `limit` bytes with the whole value's size and SHA-256."""
    if len(value) <= limit:
        return value, None
    return value[:limit], (len(value), hashlib.sha256(value).hexdigest())


class LetterText(str):
    """A dead letter already encoded as its document (it passes the partition stage as is)."""


class MetricsText(str):
    """The controller's metrics at the end of the sequencer's batch (`controller_metrics`),
    on their way to the sink through the direct group."""


# ---------------------------------------------------------------------------------------
# Work and outputs cross Spark packed: the sequencer's work of one group, and the partition
# stage's outputs of one group, travel as a few strings rather than one Spark row each. A
# fan-out to 30,000 partitions then moves 64 rows (scale mode) through Arrow, the shuffle
# and the collect, instead of 30,000. Entries are separated by RS and their fields by US:
# neither byte appears raw in JSON, in a topic name or in an encoded command. `cause_id`
# (free text from the event) travels as JSON. A packed string holds at most PACK_ENTRIES
# entries and, past one entry, PACK_CHARS characters: Spark's Python stages cut their Arrow
# batches by rows (`spark.sql.execution.arrow.maxRecordsPerBatch`, which the job sets to
# 1,000: `job.spark_session`), so the size of a row bounds the size of a batch. With
# strings of megabytes, a task creating 500,000 partitions sent its whole output, 1.1 GB,
# as one batch, more than the JVM's direct memory.

RS, US = "\x1e", "\x1f"
# GS separates the blocks an entry's payload may hold (`pipeline.metadata_rows`): raw in
# no JSON, no topic name and no encoded command either
GS = "\x1d"
PACK_ENTRIES = 4096
PACK_CHARS = 16 * 1024
OutputRow = tuple[str, int, str, int, str]  # kind, cause_offset, key, seq, payload


def _pack(entries: Iterable[str]) -> list[str]:
    """Entries joined by RS into strings of at most PACK_ENTRIES entries and PACK_CHARS
    characters (an entry longer than that travels alone)."""
    out: list[str] = []
    chunk: list[str] = []
    size = 0
    for entry in entries:
        if chunk and (len(chunk) >= PACK_ENTRIES or size + len(entry) > PACK_CHARS):
            out.append(RS.join(chunk))
            chunk, size = [], 0
        chunk.append(entry)
        size += len(entry) + 1
    if chunk:
        out.append(RS.join(chunk))
    return out


def _encode_item(item: Any, dlq_max_value_bytes: int) -> tuple[str, str]:
    """Anything but a command (`pack_groups` writes those itself)."""
    if isinstance(item, Wake):
        return "wake", ""
    if isinstance(item, DeadLetter):
        return "dlq", canonical_json(dead_letter(item, dlq_max_value_bytes))
    if isinstance(item, UpdateMetadataSend):
        return "ums", json.dumps(
            [item.site, item.recipients, item.unless_sites], separators=(",", ":")
        )
    return "out", codec.dumps(item)


def pack_groups(
    work: Sequence[Work],
    group: Callable[[str], str],
    dlq_max_value_bytes: int = DEFAULT_DLQ_MAX_VALUE_BYTES,
) -> dict[str, list[str]]:
    """The work packed by `group(target)`, the groups in the order they first appear.

    Each item is written in the sequencer's order, before it is sorted into its group: a
    fan-out's commands come topic by topic, and the codec writes a run of commands that
    share their context and op once (`command_codec.command_shared`); sorted into 256
    buckets first, the commands of 10,000 topics interleave and each was written on its
    own (at a million partitions, packing a creation's work took 9.5 s instead of 4.5).

    Commands that follow each other in a group with the same cause, round and shared part
    travel as one `cmds` entry: the shared part once, then each command's topic, partition
    and index (`_run_text`); a command's target is its partition's key (`loop.Work`, which
    the loop makes from the command), which `unpack_work` writes again. A preferred
    election of every partition, or a broker's return, sends every partition of a bucket
    the same context and op."""
    ids: dict[str | None, str] = {}
    entries: dict[str, list[Any]] = {}
    # each group's last command written on its own, (shared, its work, its place + 1): the
    # head of a run if the next one matches
    heads: dict[str, tuple[str, Work, int]] = {}
    command_shared = command_codec.command_shared
    for w in work:
        target, cause_offset, round_, idx, item, cause_id = w
        cid = ids.get(cause_id)
        if cid is None:
            cid = ids[cause_id] = json.dumps(cause_id)
        grp = group(target)
        into = entries.get(grp)
        if into is None:
            into = entries[grp] = []
        if type(item) is Command:  # a fan-out's million: no dispatch
            # the same text object for a run of equal commands (`command_shared`)
            shared = command_shared(item)
            topic, partition = item.topic, item.partition
            if into:
                last = into[-1]
                if type(last) is list:
                    if (
                        last[0] is shared
                        and last[1] == cause_offset
                        and last[2] == round_
                        and last[3] is cid
                        and len(last) < _RUN_MAX
                    ):
                        last.append(f"{topic}\t{partition}\t{idx}")
                        continue
                else:
                    head = heads.get(grp)
                    if head is not None and head[0] is shared and head[2] == len(into):
                        h = head[1]
                        if (
                            h.cause_offset == cause_offset
                            and h.round == round_
                            and h.cause_id == cause_id
                        ):
                            first = h.item
                            assert type(first) is Command  # a head is kept for commands only
                            into[-1] = [
                                shared,
                                cause_offset,
                                round_,
                                cid,
                                f"{first.topic}\t{first.partition}\t{h.idx}",
                                f"{topic}\t{partition}\t{idx}",
                            ]
                            continue
            into.append(
                f"{target}{US}{cause_offset}{US}{round_}{US}{idx}{US}cmd{US}{cid}{US}"
                f"{topic}\t{partition}\t{shared}"
            )
            heads[grp] = (shared, w, len(into))
            continue
        kind, payload = _encode_item(item, dlq_max_value_bytes)
        into.append(
            f"{target}{US}{cause_offset}{US}{round_}{US}{idx}{US}{kind}{US}{cid}{US}{payload}"
        )
    return {
        grp: _pack([e if type(e) is str else _run_text(e) for e in texts])
        for grp, texts in entries.items()
    }


# a run's list: shared, cause_offset, round, cid, then each command's `topic \t partition
# \t idx`; at most this long (a few kilobytes)
_RUN_MAX = 4 + 256


def _run_text(run: list[Any]) -> str:
    """A run as a `cmds` entry: `US cause US round US US cmds US cid US shared`, then
    `\n topic \t partition \t idx` for each command (a topic name holds neither character,
    and the shared part's JSON no newline)."""
    shared, cause, round_, cid = run[:4]
    return f"{US}{cause}{US}{round_}{US}{US}cmds{US}{cid}{US}{shared}\n" + "\n".join(run[4:])


def pack_metrics(text: str) -> str:
    """The sequencer's metrics line as a packed work entry of the direct group."""
    return f"{DIRECT}{US}-1{US}0{US}0{US}metrics{US}null{US}{text}"


def unpack_work(packed: Iterable[str]) -> list[Work]:
    ids: dict[str, str | None] = {}
    shared_parts = command_codec.shared_parts
    work = []
    for text in packed:
        for entry in text.split(RS):
            target, cause, round_, idx, kind, cid, payload = entry.split(US, 6)
            if cid in ids:
                cause_id = ids[cid]
            else:
                cause_id = ids[cid] = json.loads(cid)
            item: Any
            if kind == "cmd":
                item = codec.loads(payload, Command)
            elif kind == "cmds":  # a run of commands (pack_groups)
                shared, *members = payload.split("\n")
                parts = shared_parts(shared)
                c, r = int(cause), int(round_)
                for member in members:
                    topic, partition, i = member.split("\t")
                    work.append(
                        Work(
                            f"{topic}-{partition}",
                            c,
                            r,
                            int(i),
                            Command(topic, int(partition), *parts),
                            cause_id,
                        )
                    )
                continue
            elif kind == "dlq":
                item = LetterText(payload)
            elif kind == "wake":
                item = Wake()
            elif kind == "metrics":
                item = MetricsText(payload)
            elif kind == "ums":
                site, recipients, unless = json.loads(payload)
                item = UpdateMetadataSend(site, tuple(recipients), tuple(unless))
            else:
                item = codec.loads(payload, Record)
            work.append(Work(target, int(cause), int(round_), int(idx), item, cause_id))
    return work


def pack_outputs(out: Sequence[OutputRow]) -> list[str]:
    return _pack(
        f"{kind}{US}{cause}{US}{key}{US}{seq}{US}{payload}"
        for kind, cause, key, seq, payload in out
    )


def unpack_outputs(packed: Iterable[str]) -> list[OutputRow]:
    rows: list[OutputRow] = []
    for text in packed:
        for entry in text.split(RS):
            kind, cause, key, seq, payload = entry.split(US, 4)
            rows.append((kind, int(cause), key, int(seq), payload))
    return rows
