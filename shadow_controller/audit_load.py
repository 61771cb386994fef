"""Reading a decisions dataset for `shadow-controller audit` (audit.py) and `timeline`: a
decisions file, a file-output directory's `decisions-*.jsonl`, or a dump of the decisions
topic, one JSON record a line.

A line that is not a decision record the rules can read is a `UsageError` naming its file
and 1-based line number (docs/contract.md, the decisions): the audit never checks part of
a log. On a terminal, loading a big input shows a progress bar once it has taken a moment.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import pandas as pd

from streaming.exits import UsageError

from . import audit_kraft

# the fields the rules read, and their JSON types (docs/contract.md, the decisions)
_INT_FIELDS = ("partition", "seq", "leader", "leader_epoch", "partition_epoch")
_INT_LIST_FIELDS = ("isr", "replicas")


def decision_files(path: str) -> list[str]:
    """A decisions file, or the `decisions-*.jsonl` files of a file-output directory."""
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(path, "decisions-*.jsonl")))
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such decisions file or directory")
    return [path]


def load_decisions(
    path: str, progress: TextIO | None | bool = True, progress_delay: float = 0.5
) -> pd.DataFrame:
    """A decisions file, a directory of `decisions-*.jsonl` files (file output), or a dump
    of the decisions topic (one JSON record a line), as one row per record. A line that is
    not a decision record raises `UsageError` naming its file and 1-based line number.
    `progress`: a stream for a progress bar, True for stderr when it is a terminal, or
    False/None for none; it is drawn only once loading has taken `progress_delay` seconds."""
    return pd.DataFrame(load_records(path, progress, progress_delay))


def load_records(
    path: str, progress: TextIO | None | bool = True, progress_delay: float = 0.5
) -> list[dict[str, Any]]:
    """`load_decisions`'s records as they are (a KRaft change record's absent fields stay
    absent, where a frame would fill them with NaN)."""
    files = decision_files(path)
    return list(_records(files, progress_stream(progress), progress_delay))


def progress_stream(progress: TextIO | None | bool) -> TextIO | None:
    return (sys.stderr if sys.stderr.isatty() else None) if progress is True else (progress or None)


def progress_bar(stream: TextIO | None, total: int, desc: str, delay: float, **kwargs: Any) -> Any:
    """A tqdm bar on `stream` that a step over in under `delay` seconds never draws; None
    without a stream."""
    if stream is None:
        return None
    from tqdm import tqdm

    return tqdm(
        total=total, desc=desc, file=stream, delay=delay, leave=False, dynamic_ncols=True, **kwargs
    )


def _records(files: list[str], stream: TextIO | None, delay: float) -> Iterator[dict[str, Any]]:
    total = sum(os.path.getsize(f) for f in files) if stream is not None else 0
    bar = progress_bar(stream, total, "loading decisions", delay, unit="B", unit_scale=True)
    try:
        for f in files:
            pending = 0
            with open(f, "rb") as fh:
                for number, raw in enumerate(fh, 1):
                    pending += len(raw)
                    if bar is not None and pending >= 1 << 20:
                        bar.update(pending)
                        pending = 0
                    if raw.strip():
                        yield _decision(raw, f, number)
            if bar is not None:
                bar.update(pending)
    finally:
        if bar is not None:
            bar.close()


def _decision(raw: bytes, file: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        reason = (
            f"not JSON ({exc.msg} at column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else f"not UTF-8 JSON ({exc})"
        )
        raise UsageError(f"{file}:{number}: {reason}") from None
    problem = _problem(record)
    if problem:
        raise UsageError(f"{file}:{number}: {problem}")
    decision: dict[str, Any] = record
    return decision


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(record: Any) -> str | None:
    """Why `record` is not a decision record the rules can read, or None."""
    if not isinstance(record, dict):
        return f"not a decision record (a JSON {type(record).__name__}, not an object)"
    if not isinstance(record.get("type"), str):
        return "not a decision record (no string 'type')"
    if not _is_int(record.get("cause_offset")):
        return f"{record['type']} record without an integer 'cause_offset'"
    if record["type"] != "LeaderAndIsr":
        return audit_kraft.problem(record)
    if not isinstance(record.get("topic"), str):
        return "LeaderAndIsr record without a string 'topic'"
    for field in _INT_FIELDS:
        if not _is_int(record.get(field)):
            return f"LeaderAndIsr record without an integer '{field}'"
    for field in _INT_LIST_FIELDS:
        value = record.get(field)
        if not isinstance(value, list) or not all(_is_int(x) for x in value):
            return f"LeaderAndIsr record without a list of integers '{field}'"
    if not isinstance(record.get("leader_recovery_state"), str):
        return "LeaderAndIsr record without a string 'leader_recovery_state'"
    if "election" not in record or not isinstance(record["election"], (str, type(None))):
        return "LeaderAndIsr record without 'election' (a string or null)"
    return None
