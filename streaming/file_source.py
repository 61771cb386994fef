"""File sources on Spark's Python Data Source API.

`shadow-files` streams contract events from the files of a directory, taken in file-name
order; the 0-based line index over all files is the event's offset (its `cause_offset`),
exactly as `shadow-controller simulate` numbers lines. A file is read once it is complete
(it ends with a newline): write a file elsewhere and rename it into the directory.

`shadow-feedback` streams the deletion reports the job writes for itself (see
`streaming/sink.py`): one file per micro-batch, named by batch id.

Both readers are deterministic for a given offset range, which is what makes a restart
from the checkpoint exact.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from .file_lines import (
    complete_files,
    count_lines,
    event_lines,
    feedback_batches,
    feedback_file,
    feedback_rows,
)

# the readers' file handling is `file_lines.py` (no pyspark), also read by the sink and the
# job's health check under these names
__all__ = ["EventFilesSource", "FeedbackSource", "feedback_file"]
_complete_files, _count_lines = complete_files, count_lines

EVENT_SCHEMA = "value binary, offset long, source string"
FEEDBACK_SCHEMA = "batch long, payload string"  # payload: feedback lines joined by newlines


@dataclass
class _LineRange(InputPartition):
    path: str
    start: int
    end: int


class EventFilesReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = options["path"]
        self.pause_file = options.get("shadow.pauseFile")
        max_rows = options.get("maxOffsetsPerTrigger")
        self.max_rows = int(max_rows) if max_rows else None
        self._line_counts: dict[str, int] = {}

    def _total_lines(self) -> int:
        total = 0
        for name in complete_files(self.path):
            if name not in self._line_counts:  # files are immutable once complete
                self._line_counts[name] = count_lines(os.path.join(self.path, name))
            total += self._line_counts[name]
        return total

    def initialOffset(self) -> dict[str, Any]:
        return {"line": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if self.pause_file and os.path.exists(self.pause_file):
            return start  # the job is stopping: admit nothing new
        available = self._total_lines()
        end = available
        if isinstance(limit, ReadMaxRows):
            end = min(available, start["line"] + limit.max_rows)
        return {"line": max(end, start["line"])}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if end["line"] <= start["line"]:
            return []
        return [_LineRange(self.path, start["line"], end["line"])]

    def read(self, partition: _LineRange) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
        yield from event_lines(partition.path, partition.start, partition.end)

    def commit(self, end: dict[str, Any]) -> None:
        pass


class EventFilesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "shadow-files"

    def schema(self) -> str:
        return EVENT_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return EventFilesReader(self.options)


@dataclass
class _BatchFiles(InputPartition):
    path: str
    after: int
    upto: int


class FeedbackReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.path = options["path"]
        self.pause_file = options.get("shadow.pauseFile")

    def initialOffset(self) -> dict[str, Any]:
        return {"batch": -1}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if self.pause_file and os.path.exists(self.pause_file):
            # the job is stopping: a feedback file (deletion reports, summaries, a wake)
            # must not plan a batch the stop would abandon; a restart reads it
            return start
        batches = feedback_batches(self.path)
        return {"batch": max([start["batch"], *batches])}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if end["batch"] <= start["batch"]:
            return []
        return [_BatchFiles(self.path, start["batch"], end["batch"])]

    def read(self, partition: _BatchFiles) -> Iterator[tuple[Any, ...]]:  # type: ignore[override]
        """Each feedback file's lines, joined by newlines into rows (`file_lines.feedback_rows`)."""
        yield from feedback_rows(partition.path, partition.after, partition.upto)

    def commit(self, end: dict[str, Any]) -> None:
        pass


class FeedbackSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "shadow-feedback"

    def schema(self) -> str:
        return FEEDBACK_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return FeedbackReader(self.options)
