"""The sequencer's Python worker keeps the directory it last wrote, and uses it only under
the stamp the state store holds (operators.LastDirectory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from state_machines.directory import BrokerRecord
from state_machines.model import BrokerFact
from streaming import directory_store, state_reader
from streaming.job import start
from streaming.operators import LastDirectory
from streaming.settings.schema import JobSettings
from streaming.sink import BatchSink
from tests.streaming.spark_helpers import (
    assert_same_multiset,
    read_output,
    run_to_end,
    simulate_records,
    write_input,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_copy_is_used_only_under_its_own_stamp_and_never_shared() -> None:
    last = LastDirectory()
    assert last.take(None) is None and last.take("a") is None
    record = BrokerRecord(BrokerFact(True, False, 101))
    last.leave("a", {"broker-1": record})
    assert last.take("b") is None and last.take(None) is None
    taken = last.take("a")
    assert taken == {"broker-1": record}
    taken["broker-2"] = record  # the sequencer changes its directory in place; the batch may fail
    assert last.take("a") == {"broker-1": record}
    last.forget()
    assert last.take("a") is None and last.batch is None


class FailingAfterWrite(BatchSink):
    """Writes batch `fail_at`'s outputs, then fails the query once (the sequencer has run
    and its worker holds a directory the checkpoint never committed)."""

    def __init__(self, settings: JobSettings, fail_at: int):
        super().__init__(settings)
        self.fail_at = fail_at

    def __call__(self, df, batch_id: int) -> None:
        super().__call__(df, batch_id)
        if batch_id == self.fail_at:
            raise RuntimeError("injected failure after the sink wrote")


@pytest.mark.spark
@pytest.mark.parametrize("buckets", [0, 8])
def test_a_batch_run_again_after_a_failure_starts_from_the_committed_directory(
    spark, tmp_path: Path, buckets: int
) -> None:
    lines = (ROOT / "examples" / "three-brokers.jsonl").read_bytes().splitlines()
    write_input(tmp_path / "in", lines)
    settings = JobSettings(
        input=f"file:{tmp_path / 'in'}",
        output=f"file:{tmp_path / 'out'}",
        checkpoint=str(tmp_path / "ckpt"),
        max_offsets_per_trigger=4,
        partition_buckets=buckets,
    )
    query, _ = start(
        spark, settings, available_now=True, sink=FailingAfterWrite(settings, fail_at=2)
    )
    try:
        with pytest.raises(Exception, match="injected failure"):
            query.processAllAvailable()
    finally:
        query.stop()
    # Same session, same Python workers: batch 2 runs again from the directory of batch 1.
    # Had a worker reused the directory the failed attempt left, the replayed events would
    # meet their own effects (topics that already exist, brokers already registered).
    run_to_end(spark, settings)
    assert_same_multiset(read_output(tmp_path / "out"), simulate_records(lines))
    directory = state_reader.directory_records(spark, settings.checkpoint)
    assert directory_store.STAMP_KEY not in directory and "controller" in directory
