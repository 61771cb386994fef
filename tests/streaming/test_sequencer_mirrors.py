"""The sequencer's stamps and mirrors (operators.next_stamp, SequencerProcessor._mirror),
without Spark: `batches.WorkerPool` runs `SequencerProcessor` under its key and its mirrors'
with state in memory, and hands each batch's keys to Python workers drawn at random, each
with its own copy of the directory, as Spark's pool of idle workers does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from state_machines.model import ControllerConfig
from streaming.batches import Batches, run_batches
from streaming.operators import mirror_keys, next_stamp
from streaming.spark_hash import shuffle_partition
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import canonical, simulate_records

LOGS = sorted((Path(__file__).parents[1] / "scenarios" / "logs").glob("*.jsonl"))
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.jsonl"))


def same_as_engine(
    lines: list[bytes],
    batch_size: int,
    workers: tuple[int, int, int],
    config: ControllerConfig = ControllerConfig(),
) -> int:
    """Asserts the decisions equal the engine's; returns the sequencer's reads of its state."""
    batches = Batches(config, workers=workers)
    got, _dlq = batches.run(lines, batch_size)
    assert [canonical(r) for r in got] == simulate_records(lines, config)
    assert batches.pool is not None
    return batches.pool.reads


def test_a_stamp_names_the_version_it_started_from_and_every_chunk_written() -> None:
    updates = [("~chunk-1", "a"), ("~chunk-7", "b")]
    stamp = next_stamp("s", updates, ["~chunk-3"])
    assert stamp == next_stamp("s", list(updates), ["~chunk-3"])
    others = {
        next_stamp("t", updates, ["~chunk-3"]),
        next_stamp(None, updates, ["~chunk-3"]),
        next_stamp("s", [("~chunk-1", "a"), ("~chunk-7", "c")], ["~chunk-3"]),
        next_stamp("s", [("~chunk-1", "a")], ["~chunk-3"]),
        next_stamp("s", updates, []),
        next_stamp("s", updates, ["~chunk-4"]),
        # a chunk's key and text cannot trade characters
        next_stamp("s", [("~chunk-1a", ""), ("~chunk-7", "b")], ["~chunk-3"]),
    }
    assert stamp not in others and len(others) == 7


def test_mirror_keys_fall_in_the_other_shuffle_partitions() -> None:
    for partitions in (2, 3, 8, 200):
        home = shuffle_partition("controller", partitions)
        keys = mirror_keys(partitions, partitions - 1)
        assert sorted(shuffle_partition(k, partitions) for k in keys) == sorted(
            set(range(partitions)) - {home}
        )
    assert mirror_keys(1, 3) == [] and mirror_keys(8, 0) == []
    assert len(mirror_keys(8, 2)) == 2


@pytest.mark.parametrize("log", LOGS + EXAMPLES, ids=lambda p: p.stem)
def test_with_a_mirror_the_sequencer_reads_its_state_at_most_once_per_worker(log: Path) -> None:
    """Two workers, the sequencer's key and one mirror: each batch's tasks take them in
    random order, and from the second batch on the sequencer never reads its state."""
    lines = log.read_bytes().splitlines()
    assert same_as_engine(lines, 1, workers=(1, 2, 7)) <= 2


@pytest.mark.parametrize("seed", range(12))
def test_workers_and_mirrors_in_any_arrangement_never_change_a_decision(seed: int) -> None:
    """Without mirrors, with more workers than tasks (a worker sits a batch out and its copy
    falls behind), with fewer (the tasks share workers, a mirror perhaps before the
    sequencer): the copies are used only under their stamps."""
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=60)]
    mirrors, workers = [(0, 2), (1, 2), (1, 3), (1, 1), (3, 4), (3, 2)][seed % 6]
    same_as_engine(lines, 1 + seed % 3, workers=(mirrors, workers, seed))


@pytest.mark.parametrize("seed", range(4))
def test_kraft_mode_with_workers_and_mirrors(seed: int) -> None:
    config = ControllerConfig(mode="kraft")
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=60, config=config)]
    assert same_as_engine(lines, 1 + seed % 3, workers=(1, 2, seed), config=config) <= 2


def test_without_a_mirror_the_sequencer_reads_its_state_whenever_it_meets_the_other_worker() -> (
    None
):
    """What the mirror is for (the bound above fails without it)."""
    lines = [json.dumps(e).encode() for e in generate_log(3, n_events=60)]
    without = same_as_engine(lines, 1, workers=(0, 2, 11))
    with_one = same_as_engine(lines, 1, workers=(1, 2, 11))
    assert with_one <= 2 < without


def test_a_copy_from_another_history_is_never_taken() -> None:
    """Every worker's copy replaced, between two batches, by one of another query's history
    that the batch before left: a mirror advances it, the sequencer never finds its own stamp
    on it, reads its state instead, and decides as the engine."""
    lines = EXAMPLES[0].read_bytes().splitlines()
    other = Batches(workers=(1, 2, 3))
    other.run([json.dumps(e).encode() for e in generate_log(5, n_events=40)], 1)
    batches = Batches(workers=(1, 2, 5))
    assert batches.pool is not None and other.pool is not None
    cut = len(lines) // 2
    first, _ = batches.run(lines[:cut], 1)
    reads = batches.pool.reads
    for copy, foreign in zip(batches.pool.copies, other.pool.copies, strict=False):
        assert foreign.stamp is not None
        copy.leave(
            foreign.stamp, foreign.directory, batches.batches - 1, foreign.pending, foreign.buffered
        )
    rest, _ = batches.run(lines[cut:], 1)
    assert [canonical(r) for r in first + rest] == simulate_records(lines)
    # the sequencer's first batch after reads; the next may meet the other worker, whose
    # foreign copy the mirror advanced
    assert reads < batches.pool.reads <= reads + 2


def test_run_batches_with_workers_equals_the_engine() -> None:
    lines = (EXAMPLES[0]).read_bytes().splitlines()
    got, _dlq, _n = run_batches(lines, 3, workers=(1, 2, 0))
    assert [canonical(r) for r in got] == simulate_records(lines)


@pytest.mark.spark
def test_auto_mirrors_only_where_every_shuffle_partition_has_a_core_of_one_executor(spark) -> None:
    from streaming.job import sequencer_mirrors
    from streaming.settings.schema import JobSettings

    cores = spark.sparkContext.defaultParallelism
    assert spark.sparkContext.master.startswith("local")

    def mirrors(partitions: int, setting: int | None = None) -> int:
        settings = JobSettings(
            input="",
            output="",
            checkpoint="",
            shuffle_partitions=partitions,
            sequencer_mirrors=setting,
        )
        return sequencer_mirrors(spark, settings)

    assert mirrors(cores) == cores - 1 and mirrors(1) == 0
    assert mirrors(cores + 1) == 0  # fewer cores than the stage's tasks
    assert mirrors(cores + 1, setting=2) == 2 and mirrors(cores, setting=0) == 0
