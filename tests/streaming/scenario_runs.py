"""Which scenario logs run through real Spark, and how.

Every scenario log is checked against the engine, without Spark, in every way the job can
cut and key it: `test_pipeline_batches` runs the job's own batch code (sequencer, partition
fold, sink and the feedback rounds) in micro-batches of 1, 3 and 7 events, per partition and
in buckets, and `test_sequencer_mirrors` runs it with Spark's pool of reused Python workers
played out. What real Spark adds is the shell around that code: the connectors, the state
stores, Arrow, the shuffle, the planner. That shell does not depend on which controller
rule a log exercises, so each log runs through Spark once, in one of the four shells:

    file input and output, or Kafka input and output on the embedded broker
  x one Spark group per partition, or scale mode's four buckets

dealt round the sorted logs in turn, so each shell gets a quarter of them and every log
meets one. Before, each log ran in three of the four (both file shells and Kafka per
partition): 102 Spark queries, 2,460 of the 4,689 test-seconds of the suite's first pass in
the CI run of 2026-11-28, for no case the tests above do not hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

LOGS = sorted((Path(__file__).parents[1] / "scenarios" / "logs").glob("*.jsonl"))


class Shell(NamedTuple):
    connector: str  # "file" or "kafka"
    buckets: int  # 0: one group per partition


SHELLS = (Shell("file", 0), Shell("kafka", 4), Shell("file", 4), Shell("kafka", 0))


def shell_of(index: int) -> Shell:
    return SHELLS[index % len(SHELLS)]


def scenario_params(connector: str) -> list[Any]:
    """pytest params (log, buckets) of the logs this connector runs."""
    return [
        pytest.param(log, shell_of(i).buckets, id=f"{log.stem}-{_keying(shell_of(i).buckets)}")
        for i, log in enumerate(LOGS)
        if shell_of(i).connector == connector
    ]


def _keying(buckets: int) -> str:
    return f"buckets-{buckets}" if buckets else "per-partition"
