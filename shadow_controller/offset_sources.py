"""What a micro-batch read, from Spark's offset log (CHECKPOINT/query/offsets/<N>; the files
are read by checkpoint_files.py), for `shadow-controller inspect` (inspect.py).

The log holds a version line, a metadata line, then one JSON line per source in the plan's
source order, each the offset the batch read *up to*. The batch read from the previous
batch's offsets (the source's start for batch 0) to its own, so for the events source the
batch's events are the `cause_offset`s in [start, end). Sources are named by the shape of
their offsets, which is stable whatever order the plan lists them in.
"""

from __future__ import annotations

from typing import Any

from .checkpoint_files import read_offset_log
from .errors import InspectError


def ids_text(values: list[int]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def _is_kafka_offsets(offset: Any) -> bool:
    return (
        isinstance(offset, dict)
        and bool(offset)
        and all(
            isinstance(v, dict) and all(isinstance(o, int) for o in v.values())
            for v in offset.values()
        )
    )


def _offset_range(what: str, lo: int | None, hi: int) -> str:
    """[lo, hi) as the offsets a reader looks for in the log; lo None: from the source's start."""
    if lo is None:
        return f"{what} up to {hi - 1}"
    if hi <= lo:
        return "nothing"
    return f"{what} {lo}" if hi == lo + 1 else f"{what} {lo}..{hi - 1}"


def describe_source(index: int, start: Any, end: Any, first_batch: bool = False) -> dict[str, Any]:
    """Name one source's offsets and say which events (or feedback files) the batch read.
    `start` None: batch 0 (the file sources start at line 0 and feedback batch -1), or the
    previous batch's log entry is gone and the start is unknown."""
    shape = end if end is not None else start
    out: dict[str, Any] = {"index": index, "start": start, "end": end}
    if isinstance(shape, dict) and set(shape) == {"line"}:
        lo = start["line"] if start else (0 if first_batch else None)
        hi = end["line"]
        out.update(
            name="events",
            kind="file",
            cause_offsets=[lo, hi],
            reads=_offset_range("cause_offset", lo, hi),
        )
    elif isinstance(shape, dict) and set(shape) == {"batch"}:
        lo = start["batch"] if start else (-1 if first_batch else None)
        hi = end["batch"]
        out.update(
            name="deletion-feedback",
            kind="file",
            reads="no feedback"
            if lo is not None and hi <= lo
            else f"feedback of batches up to {hi}"
            if lo is None
            else f"feedback of batches {lo + 1}..{hi}",
        )
    elif _is_kafka_offsets(shape):
        ranges = {}
        for topic, parts in sorted(end.items()):
            for p, hi in sorted(parts.items(), key=lambda kv: int(kv[0])):
                lo = (start or {}).get(topic, {}).get(p)
                ranges[f"{topic}-{p}"] = [lo, hi]
        read = [
            _offset_range(f"{tp} offset", lo, hi)
            for tp, (lo, hi) in ranges.items()
            if lo is None or hi > lo
        ]
        out.update(
            name="events", kind="kafka", cause_offsets=ranges, reads=", ".join(read) or "no events"
        )
    else:
        out.update(name=f"source-{index}", kind="unknown", reads="")
    return out


def batch_sources(checkpoint: str, batch: int) -> list[dict[str, Any]]:
    ends = read_offset_log(checkpoint, batch)
    if ends is None:
        raise InspectError(f"no offset log entry for batch {batch} in {checkpoint}/query/offsets")
    starts = read_offset_log(checkpoint, batch - 1) if batch > 0 else None
    if starts is None:
        starts = [None] * len(ends)
    return [
        describe_source(i, s, e, first_batch=batch == 0)
        for i, (s, e) in enumerate(zip(starts, ends, strict=False))
    ]


def reflected_input(
    sources: list[dict[str, Any]], held_cause: int | None, held_events: list[int]
) -> dict[str, Any]:
    """Which input the state after the batch reflects: `next_offset` (the events source's
    end: the offset of the next event it reads; for a Kafka source, per partition),
    `applied_through` (the last offset applied: the one before, or before the held cause),
    and the cause and events the sequencer holds, read but not applied."""
    events = next((s for s in sources if s.get("name") == "events"), None)
    next_offset: int | dict[str, int] | None = None
    if events is not None and events["kind"] == "file":
        next_offset = events["cause_offsets"][1]
    elif events is not None and events["kind"] == "kafka":
        next_offset = {tp: hi for tp, (_, hi) in events["cause_offsets"].items()}
    first_held = min(
        [*([held_cause] if held_cause is not None else []), *held_events], default=None
    )
    applied: int | None = None
    if isinstance(next_offset, int):
        applied = (next_offset if first_held is None else first_held) - 1
    elif isinstance(next_offset, dict) and len(next_offset) == 1:
        [end] = next_offset.values()
        applied = (end if first_held is None else first_held) - 1
    return {
        "next_offset": next_offset,
        "applied_through": applied,
        "held_cause": held_cause,
        "held_events": held_events,
    }


def reflects_line(reflects: dict[str, Any]) -> str:
    """`state after this batch: every event up to offset 13 applied; the next is 14`."""
    nxt, applied = reflects["next_offset"], reflects["applied_through"]
    if nxt is None:
        return "state after this batch; its events source's offsets are not in the log"
    if isinstance(nxt, dict):
        where = ", ".join(f"{tp} next offset {o}" for tp, o in nxt.items())
        head = (
            f"state after this batch: every event up to offset {applied} applied ({where})"
            if applied is not None
            else f"state after this batch: the events before {where}"
        )
    elif applied is None or applied < 0:
        head = f"state after this batch: no event applied yet; the next is offset {nxt}"
    else:
        head = (
            f"state after this batch: every event up to offset {applied} applied; the next is {nxt}"
        )
    held = []
    if reflects["held_cause"] is not None:
        held.append(f"cause {reflects['held_cause']}")
    if reflects["held_events"]:
        held.append(f"events {ids_text(reflects['held_events'])}")
    if held:
        head += f" (the job still holds {' and '.join(held)}, read but not applied)"
    return head
