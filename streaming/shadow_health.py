"""The shadow's own health, for the Prometheus endpoint (`prometheus.py`): how far it is
behind its input, and when its last micro-batch committed and how long it took.

A shadow that stops deciding looks, from Kafka's gauges alone, like a quiet cluster: the
gauges hold their last values. These say whether it keeps up:

- **lag**: events between the end of the input and the end of the last committed batch.
  File input counts the input's complete lines at each scrape (a file's count is kept once
  it is complete: `file_source`'s rule, files are immutable then), so the lag grows while
  a batch hangs. Kafka input takes the end offsets the source last saw (each trigger's
  `latestOffset`, summed over the partitions): the lag then grows with each trigger the
  query still runs, and a query stuck in a batch shows its age instead (below).
- **last batch**: the wall-clock time its progress was reported (after the commit) and its
  duration (`StreamingQueryProgress.batchDuration`).

The Prometheus alert `ShadowControllerStalled` (docker/prometheus/alerts.yml) joins them: a
lag above zero and no batch committed for five minutes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from .file_source import _complete_files, _count_lines
from .settings.schema import JobSettings


class ShadowHealth:
    """What the runner's progress listener learns of each batch, read at each scrape."""

    def __init__(self, settings: JobSettings) -> None:
        self.settings = settings
        self.last_batch: int | None = None
        self.last_commit_s: float | None = None  # Unix time
        self.last_duration_s: float | None = None
        self._end: Any = None  # the events source's end offset after the last batch
        self._latest: Any = None  # its latest offset, as the source last reported it
        self._lines: dict[str, int] = {}  # complete input files' line counts
        self._lock = threading.Lock()

    def on_progress(self, progress: Any) -> None:
        """A batch's progress (`StreamingQueryListener.onQueryProgress`)."""
        end, latest = _events_offsets(progress)
        with self._lock:
            self.last_batch = int(progress.batchId)
            self.last_commit_s = time.time()
            self.last_duration_s = int(progress.batchDuration) / 1000.0
            if end is not None:
                self._end, self._latest = end, latest

    def lag(self) -> int | None:
        """Events behind the input's end, or None before the first batch of this run (or
        with a source that reports no latest offset)."""
        with self._lock:
            end, latest = self._end, self._latest
        if not isinstance(end, dict):
            return None
        if "line" in end:
            if not self.settings.input.startswith("file:"):
                return None
            return max(0, self._input_lines(self.settings.input[5:]) - int(end["line"]))
        if not isinstance(latest, dict):
            return None
        behind = 0
        for topic, partitions in end.items():
            for partition, offset in partitions.items():
                ahead = latest.get(topic, {}).get(partition)
                if ahead is not None:
                    behind += max(0, int(ahead) - int(offset))
        return behind

    def _input_lines(self, path: str) -> int:
        total = 0
        for name in _complete_files(path):
            if name not in self._lines:
                self._lines[name] = _count_lines(os.path.join(path, name))
            total += self._lines[name]
        return total


def _events_offsets(progress: Any) -> tuple[Any, Any]:
    """(end offset, latest offset) of the events source in a progress (the feedback
    source's offsets name batches, not events)."""
    for source in progress.sources:
        end = _json(getattr(source, "endOffset", None))
        if isinstance(end, dict) and "batch" not in end:
            return end, _json(getattr(source, "latestOffset", None))
    return None, None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
