"""What the file sources read, without Spark: the event files' lines over a range of
offsets, and the feedback files' rows over a range of batches.

`file_source.py` (Spark's Python Data Source API) reads through these functions, and so
does `shadow_controller/fast_state.py`, which replays a checkpoint's micro-batches without
Spark: both see the same lines for the same offsets, by construction. Nothing here imports
pyspark, whose import alone costs a read-only command seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

FEEDBACK_ROW_CHARS = 16 * 1024


def complete_files(path: str) -> list[str]:
    """The event files of `path` the source reads, in name order: not hidden, not empty, and
    complete (ending with a newline); the first incomplete one ends the list, so that line
    numbers stay stable while it is written."""
    if not os.path.isdir(path):
        return []
    names = sorted(n for n in os.listdir(path) if not n.startswith((".", "_")))
    out = []
    for name in names:
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            continue
        size = os.path.getsize(full)
        if size == 0:
            continue
        with open(full, "rb") as fh:
            fh.seek(size - 1)
            if fh.read(1) != b"\n":
                break  # still being written: later files wait for it, keeping line numbers stable
        out.append(name)
    return out


def count_lines(full: str) -> int:
    with open(full, "rb") as fh:
        return sum(1 for _ in fh)


def event_lines(path: str, start: int, end: int) -> Iterator[tuple[bytes, int, str]]:
    """(line, offset, source) for the offsets in [start, end) of the complete files of
    `path`: the 0-based line index over all files is the offset, and `source` names the
    file and its 1-based line, as `simulate` does."""
    index = 0
    for name in complete_files(path):
        if index >= end:
            break
        full = os.path.join(path, name)
        with open(full, "rb") as fh:
            for line_no, raw in enumerate(fh, 1):
                if start <= index < end:
                    yield (raw.rstrip(b"\r\n"), index, f"{name}:{line_no}")
                index += 1
                if index >= end:
                    break


def feedback_file(path: str, batch_id: int) -> str:
    return os.path.join(path, f"{batch_id:012d}.jsonl")


def feedback_batches(path: str) -> list[int]:
    if not os.path.isdir(path):
        return []
    return sorted(
        int(n[:-6]) for n in os.listdir(path) if n.endswith(".jsonl") and n[:-6].isdigit()
    )


def feedback_rows(path: str, after: int, upto: int) -> Iterator[tuple[int, str]]:
    """(batch, payload) for the feedback files of the batches in (after, upto]: each
    file's lines, joined by newlines into rows of about FEEDBACK_ROW_CHARS characters (a
    creation of a million partitions sends a million summaries, which cost far less as a
    few thousand rows; the sequencer splits them)."""
    for batch in feedback_batches(path):
        if after < batch <= upto:
            with open(feedback_file(path, batch), encoding="utf-8") as fh:
                while True:
                    chunk = fh.readlines(FEEDBACK_ROW_CHARS)
                    if not chunk:
                        break
                    yield (batch, "".join(chunk).rstrip("\n"))
