"""The checkpoint's own files that say which micro-batches ran and what each read: Spark's
commit log (`query/commits/<N>`) and offset log (`query/offsets/<N>`), read without Spark.

`inspect`, `health` and `what-if` refuse a batch that is not committed from these before
anything else, and the replay without Spark (`fast_state.py`) takes each batch's input
ranges from the offset log. An offset log entry is a version line, a metadata line, then
one JSON line per source in the plan's source order (`inspect.py` names the sources).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .errors import InspectError


def _log_batches(directory: str) -> list[int]:
    if not os.path.isdir(directory):
        return []
    return sorted(int(n) for n in os.listdir(directory) if n.isdigit())


def committed_batches(checkpoint: str) -> list[int]:
    return _log_batches(os.path.join(checkpoint, "query", "commits"))


def read_offset_log(checkpoint: str, batch: int) -> list[Any] | None:
    """The per-source offsets batch `batch` read up to, in source order (None for a source
    without an offset, Spark's "-"); None when the entry is gone (purged or never written)."""
    path = os.path.join(checkpoint, "query", "offsets", str(batch))
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    if not lines or not lines[0].startswith("v"):
        raise InspectError(f"{path}: not a Spark offset log entry")
    return [None if line.strip() in ("-", "") else json.loads(line) for line in lines[2:]]


def checked_batch(checkpoint: str, batch: int | None) -> tuple[int, int]:
    """(the batch asked for, default the latest committed; the latest committed), or
    InspectError: read from the checkpoint's files, without Spark."""
    if not os.path.isdir(checkpoint):
        raise InspectError(f"{checkpoint}: no such checkpoint directory")
    committed = committed_batches(checkpoint)
    if not committed:
        raise InspectError(
            f"{checkpoint}: no committed micro-batch (is it a shadow-controller checkpoint?)"
        )
    latest = committed[-1]
    if batch is None:
        batch = latest
    if batch not in committed:
        raise InspectError(
            f"batch {batch} is not committed in {checkpoint} (committed: {committed[0]}..{latest})"
        )
    return batch, latest
