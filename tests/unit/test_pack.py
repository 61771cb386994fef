"""The sequencer's work as it crosses Spark: packed per group (`packing.pack_groups`)."""

from __future__ import annotations

import json

import pytest

import state_machines.engine as engine_module
from bench.engine_bench import cluster_log
from state_machines.commands import Command, DeletionReport, SummaryReport
from state_machines.events import parse_event
from state_machines.loop import RawEvent, Sequencer
from state_machines.model import ControllerConfig
from state_machines.states import ReplicaState
from state_machines.update_metadata import UpdateMetadataSend, gather
from streaming import pipeline
from streaming.assemble import assemble_batch
from streaming.batches import MemoryState
from streaming.decision_json import metadata_state_json
from streaming.directory_codec import summary_of
from streaming.packing import RS, pack_groups, pack_outputs, unpack_outputs, unpack_work
from streaming.pipeline import read_feedback
from streaming.storage import Buckets, fold_group, partition_storage
from tests.property.generator import generate_log


@pytest.mark.parametrize("seed", range(6))
def test_work_packed_in_the_sequencers_order_is_each_groups_own_packing(
    seed: int, monkeypatch
) -> None:
    """Writing every item in the sequencer's order and sorting the texts into groups gives
    each group the bytes that packing the group's own items gives, and the groups in the
    order they first appear; unpacked, a group's texts are its items."""
    batches: list[list] = []
    original = engine_module.Engine._fold

    def fold(self, work, *args):
        work = list(work)
        batches.append(work)
        return original(self, work, *args)

    monkeypatch.setattr(engine_module.Engine, "_fold", fold)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    storage = Buckets(5, 2)
    checked = 0
    for work in batches:
        by_group: dict[str, list] = {}
        for w in work:
            by_group.setdefault(storage.group(w.target), []).append(w)
        packed = pack_groups(work, storage.group)
        assert list(packed) == list(by_group)
        for grp, items in by_group.items():
            # the codec's caches of shared parts change no byte when the topics interleave
            assert packed[grp] == pack_groups(items, lambda target: grp)[grp]  # noqa: B023  called in this iteration
            assert unpack_work(packed[grp]) == items
            checked += len(items)
    assert checked > 100


def test_a_fan_out_travels_in_runs_and_unpacks_to_the_same_work() -> None:
    """The benchmark's scale story at a small size: every step's work, packed into 8
    buckets, unpacks to the sequencer's items group by group; the fan-outs that send a
    bucket's partitions the same context and op (a broker's failure and return, the
    preferred election of every partition) travel as runs, a few entries per group."""
    config, storage = ControllerConfig(), partition_storage(8, 2)
    directory: dict = {}
    states: dict = {}
    pending, buffer, feedback, offset = None, [], [], 0
    entries_per_command: dict[str, float] = {}
    for name, events in cluster_log(4, 400, 3, 50, full=True).items():
        chunk = [
            RawEvent(offset + i, json.dumps(e).encode(), f"line:{offset + i}")
            for i, e in enumerate(events)
        ]
        offset += len(events)
        while chunk or feedback:
            seq = Sequencer(directory, config)
            pending, buffer = seq.run(pending, buffer, chunk, *read_feedback(feedback))
            packed = pack_groups(seq.work, storage.group)
            commands = sum(1 for w in seq.work if isinstance(w.item, Command))
            if commands:
                entries_per_command[name] = (
                    sum(t.count(RS) + 1 for g in packed.values() for t in g) / commands
                )
            outputs = []
            for grp, texts in packed.items():
                work = unpack_work(texts)
                assert work == [w for w in seq.work if storage.group(w.target) == grp]
                outputs.extend(
                    pack_outputs(
                        fold_group(
                            storage, grp, states.setdefault(grp, MemoryState()), work, config
                        )
                    )
                )
            feedback = assemble_batch(unpack_outputs(outputs)).assembled.reports
            chunk = []
    assert entries_per_command["broker 1 returns"] < 0.05
    assert entries_per_command["preferred election (all)"] < 0.05
    # a creation sends each partition its own replicas: no runs
    assert entries_per_command["create 400 partitions"] > 0.9


@pytest.mark.parametrize("seed", range(6))
def test_the_sink_joins_the_tasks_update_metadata_rows_as_the_engine_gathers_its_pieces(
    seed: int, monkeypatch
) -> None:
    """Each cause's UpdateMetadata pieces, gathered per task (partitions spread over three
    tasks by their key, the directory's sends in a fourth, a task's rows cut every few
    lines) and joined by the sink (`read_metadata`), are the rounds the engine gathers
    from all of them at once."""
    monkeypatch.setattr(pipeline, "METADATA_LINES_PER_ROW", 3)
    batches: list[list] = []
    original = engine_module.merge_update_metadata

    def merge(pieces):
        pieces = list(pieces)
        batches.append(pieces)
        return original(pieces)

    monkeypatch.setattr(engine_module, "merge_update_metadata", merge)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    joined = blocks = 0
    for pieces in batches:
        tasks: dict[int, list] = {}
        for p in pieces:
            task = (
                3
                if isinstance(p.item, UpdateMetadataSend)
                else hash((p.item.topic, p.item.partition)) % 3
            )
            tasks.setdefault(task, []).append(p)
        rows = [
            payload
            for task in tasks.values()
            for _, _, _, _, payload in pipeline.metadata_rows(task)
        ]
        # a row holds blocks of rounds, three lines at most in all
        assert all(row.count("\n") + row.count(pipeline.GS) + 1 <= 3 for row in rows)
        assert pipeline.read_metadata(rows) == gather(pieces, metadata_state_json)
        joined += len(rows)
        blocks += sum(row.count(pipeline.GS) for row in rows)
    assert joined > 20 and blocks > 0


def test_a_groups_summaries_cross_a_few_to_a_row_and_come_back_as_its_feedback_lines_in_order(
    monkeypatch,
) -> None:
    """The partitions' summaries leave a group a few to a row (`pipeline.SUMMARY_LINES_PER_ROW`),
    behind its deletion reports as before; the sink splits them into one feedback line
    each, in the fold's order, and the next batch reads back the same reports."""
    monkeypatch.setattr(pipeline, "SUMMARY_LINES_PER_ROW", 3)
    replies = pipeline.EncodedReplies()
    replies.reports.append(
        ("t", DeletionReport("t", 1, (1, 2), ((1, ReplicaState.OfflineReplica),), False))
    )
    replies.summaries.extend(
        SummaryReport(
            "t",
            p,
            None if p % 4 == 3 else summary_of("OnlinePartition", 1, p % 3, 2, 3, 3),
            100 + p,
            None if p % 2 else 1_700_000_000_000 + p,
        )
        for p in range(10)
    )
    rows = pipeline._reply_rows(replies, 1000)
    # and their tallies for the sink's gauges (`batch_gauges.shift_rows`)
    assert [r[0] for r in rows] == ["report"] + ["summary"] * 4 + ["shift"]
    reports = assemble_batch(unpack_outputs(pack_outputs(rows))).assembled.reports
    assert len(reports) == 11
    assert read_feedback(reports) == (
        [DeletionReport("t", 1, (1, 2), ((1, ReplicaState.OfflineReplica),), False)],
        replies.summaries,
    )
