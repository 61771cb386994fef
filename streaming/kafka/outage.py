"""Broker outages: a broker that does not answer is waited for, and reported.

A broker that does not answer (a timeout, a refused or dropped connection) is waited for,
however long, and never fails the query; only answers that cannot change by waiting
(authorisation, authentication, a bad setting, data loss) do.

- Planning (`latestOffset`, on the driver): a query that gets no answer admits nothing new,
  so Spark plans no batch, and is retried with backoff (1 s doubling to 30 s) on later
  triggers. `initialOffset` and `prepareForTriggerAvailableNow` must return offsets, so they
  wait in place, until the broker answers or the pause file appears.
- Reading (`read`, on an executor): a planned range must be read as planned (a task that
  fails is retried a few times at most, then the query fails), so a read waits as long as
  the broker is away. After `min(pollTimeoutMs, 10 s)` without a record it asks the broker
  for the partition's offsets: no answer is an outage, re-asked with backoff; an answer
  means the broker is there, and the read fails once it has gone `pollTimeoutMs` without a
  record (counted afresh from the end of an outage).

Whoever waits writes the outage file (JSON: `since`, `servers`, `where`, `error`; the
earliest `since` is kept) and removes it once the broker answers; the job's runner reads
it to log the outage once a minute and to apply `job.on_broker_outage`. Without an outage
file the connector logs a warning once a minute instead. A stop stays quick: the planning
waits check the pause file, and a waiting read is a task Spark cancels.

The outage file is `BROKER_OUTAGE` next to the job's pause file (`outage_file_for`);
`Outage` is one client's wait (since when, when to ask again) and its report.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

OUTAGE_FILE = "BROKER_OUTAGE"
# retries after an unanswered query: the first after this long, doubling up to the cap
BACKOFF_S = (1.0, 30.0)
# a read that gets no record for this long (or pollTimeoutMs if shorter) asks the broker,
# and gives it this long (or endOffsetProbeTimeoutMs if shorter) to answer
READ_PROBE_AFTER_S = 10.0
READ_PROBE_TIMEOUT_S = 5.0
# without an outage file, one warning this often while waiting
OUTAGE_LOG_EVERY_S = 60.0


def outage_file_for(pause_file: str) -> str:
    """Where the connector reports an outage for a job whose pause file is `pause_file`."""
    return os.path.join(os.path.dirname(pause_file) or ".", OUTAGE_FILE)


def read_outage(path: str) -> dict[str, Any] | None:
    """The outage reported in `path`, or None (no file, or one being replaced)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("since"), (int, float)) else None


def report_outage(path: str, since: float, servers: str, where: str, error: str) -> None:
    """Write (atomically) that `servers` has not answered since `since` (epoch seconds);
    an outage already reported keeps its earlier start."""
    known = read_outage(path)
    if known is not None:
        since = min(since, float(known["since"]))
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"since": since, "servers": servers, "where": where, "error": error}, fh)
        os.replace(tmp, path)
    except OSError as exc:  # a report is a courtesy; never fail a read over it
        log.warning("cannot write the outage report %s: %s", path, exc)


def clear_outage(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class Outage:
    """One client's wait for a broker that does not answer: since when, when to ask again
    (backoff), and the report (the outage file, or a warning a minute without one)."""

    def __init__(self, outage_file: str | None, servers: str, where: str) -> None:
        self.outage_file = outage_file
        self.servers = servers
        self.where = where
        self.since: float | None = None  # epoch seconds
        self.next_try = 0.0  # monotonic
        self._delay = BACKOFF_S[0]
        self._logged = 0.0

    @property
    def waiting(self) -> bool:
        return self.since is not None

    def due(self) -> bool:
        return self.since is None or time.monotonic() >= self.next_try

    def failed(self, error: object, since: float | None = None) -> None:
        """A query got no answer; `since` (epoch seconds, default now) is when it was
        asked, the start of the outage unless one is already under way."""
        now = time.monotonic()
        if self.since is None:
            self.since = time.time() if since is None else since
            self._delay = BACKOFF_S[0]
        else:
            self._delay = min(self._delay * 2, BACKOFF_S[1])
        self.next_try = now + self._delay
        if self.outage_file:
            report_outage(self.outage_file, self.since, self.servers, self.where, str(error))
        elif now - self._logged >= OUTAGE_LOG_EVERY_S or not self._logged:
            self._logged = now
            log.warning(
                "broker %s unreachable for %.0f s while %s (%s); waiting",
                self.servers,
                time.time() - self.since,
                self.where,
                error,
            )

    def recovered(self) -> None:
        if self.since is None:
            return
        if self.outage_file:
            clear_outage(self.outage_file)
        else:
            log.warning(
                "broker %s answers again after %.0f s", self.servers, time.time() - self.since
            )
        self.since, self._logged = None, 0.0
