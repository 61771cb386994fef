"""`shadow-controller replay`: branch a checkpoint at micro-batch N, run the rest of the log
again with unclean leader election enabled, and diff the decisions with the original run's.

The incident: brokers 1 and 2; t-0 [1,2] and t-1 [2,1]; broker 2 fails (ISR shrinks to
[1]), broker 1 fails (both partitions offline, leader -1), broker 2 comes back: only the
out-of-sync replica is alive, so with unclean leader election disabled the partitions stay
offline, and with it enabled broker 2 is elected uncleanly.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from shadow_controller.branch import (
    ReplayError,
    _keep,
    branch_checkpoint,
    committed_batches,
    first_offset_after,
)
from shadow_controller.replay import add_parser, cmd_replay, run_replay
from shadow_controller.replay_diff import Outcome, diff_replay
from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.model import ControllerConfig
from streaming import state_reader
from streaming.settings.checkpoint import load_settings, save_settings
from streaming.settings.schema import JobSettings
from tests.streaming.spark_helpers import (
    assert_same_multiset,
    canonical,
    read_output,
    run_file_job,
    simulate_records,
)

INCIDENT = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 10},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 20},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2], "1": [2, 1]}},
    {"v": 1, "type": "BrokerFailure", "broker_id": 2},
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 21},
]
LINES = [json.dumps(e).encode() for e in INCIDENT]
# one event per micro-batch, so batch b decided event b: the batch before the first failure
FROM_BATCH = next(i for i, e in enumerate(INCIDENT) if e["type"] == "BrokerFailure") - 1
UNCLEAN = ControllerConfig(unclean_leader_election_enable=True)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def engine_switched_at(
    lines: list[bytes], switch_at: int, before: ControllerConfig, after: ControllerConfig
) -> list[str]:
    """`simulate` over the whole log, the config switched before event `switch_at`; the
    decisions of the events from there on."""
    engine = Engine(before)
    out: list[str] = []
    for i, line in enumerate(lines):
        if i == switch_at:
            engine.config = after
        records = engine.process(parse_line(line, i))
        if i >= switch_at:
            out.extend(canonical(r) for r in records)
    return out


def replay_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="shadow-controller")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["replay", *argv])


@pytest.fixture(scope="module")
def incident(spark, tmp_path_factory) -> Path:
    """The original run, as `shadow-controller run` leaves it: checkpoint, settings.json, output."""
    base = tmp_path_factory.mktemp("incident")
    out, _ = run_file_job(spark, base, LINES, max_offsets=1)
    assert_same_multiset(out, simulate_records(LINES))
    save_settings(
        JobSettings(
            input=f"file:{base / 'in'}",
            output=f"file:{base / 'out'}",
            checkpoint=str(base / "ckpt"),
            max_offsets_per_trigger=1,
        ),
        str(base / "ckpt"),
    )
    assert committed_batches(str(base / "ckpt")) == list(range(len(LINES)))
    return base


@pytest.mark.spark
def test_replay_with_unclean_election_enabled_elects_the_offline_partitions(
    spark, incident: Path, tmp_path: Path
) -> None:
    ckpt = incident / "ckpt"
    before = tree_digest(ckpt)
    to = tmp_path / "branch"
    args = replay_args(
        "--checkpoint",
        str(ckpt),
        "--from-batch",
        str(FROM_BATCH),
        "--to",
        str(to),
        "--set",
        "controller.unclean.leader.election.enable=true",
        "--diff",
    )
    assert args.func is cmd_replay
    printed = io.StringIO()

    assert run_replay(args, spark, out=printed) == 0

    # the branch ran the events after batch N under the new setting, on the state after batch N
    switch_at = first_offset_after(str(ckpt), FROM_BATCH)
    assert switch_at == FROM_BATCH + 1
    branch_out = read_output(to / "out")
    assert {r["cause_offset"] for r in branch_out} == set(range(switch_at, len(LINES)))
    assert_same_multiset(
        branch_out, engine_switched_at(LINES, switch_at, ControllerConfig(), UNCLEAN)
    )
    assert load_settings(str(to)).controller == UNCLEAN
    assert load_settings(str(to)).input == f"file:{incident / 'in'}"

    # the diff: both partitions, offline in the original, get an unclean leader in the branch
    report = printed.getvalue()
    diff = diff_replay(str(ckpt), str(to), FROM_BATCH)
    assert [(d.topic, d.partition) for d in diff.changed] == [("t", 0), ("t", 1)]
    for d in diff.changed:
        assert (
            d.original == Outcome(leader=-1, leader_epoch=2, unclean_elections=0)
            and d.original.offline
        )
        assert (
            d.branch == Outcome(leader=2, leader_epoch=3, unclean_elections=1)
            and not d.branch.offline
        )
    assert diff.counts["offline partitions"] == (2, 0)
    assert diff.counts["unclean elections"] == (0, 2)
    assert diff.causes == tuple(range(switch_at, len(LINES)))
    for line in ("t-0", "t-1"):
        row = next(r for r in report.splitlines() if r.startswith(line))
        assert row.split()[1:6] == ["-1", "->", "2", "yes", "->"], row
    print(report)

    # the original checkpoint is byte for byte what it was
    assert tree_digest(ckpt) == before


@pytest.mark.spark
def test_replay_under_kraft_rebuilds_from_the_start_and_diffs_after_batch_n(
    spark, incident: Path, tmp_path: Path
) -> None:
    """The migration what-if: what would KRaft have decided in this ZK-era incident? The
    branch cannot continue a ZK state, so it runs the whole input under the KRaft rules; the
    diff compares the causes after batch N, each side from its own state."""
    ckpt = incident / "ckpt"
    before = tree_digest(ckpt)
    to = tmp_path / "kraft"
    printed = io.StringIO()
    args = replay_args(
        "--checkpoint",
        str(ckpt),
        "--from-batch",
        str(FROM_BATCH),
        "--to",
        str(to),
        "--set",
        "controller.mode=kraft",
        "--diff",
    )
    assert run_replay(args, spark, out=printed) == 0

    kraft = ControllerConfig(mode="kraft")
    branch_out = read_output(to / "out")
    assert_same_multiset(
        branch_out, simulate_records(LINES, kraft)
    )  # every cause, from the input's start
    assert load_settings(str(to)).controller == kraft
    switch_at = first_offset_after(str(ckpt), FROM_BATCH)
    diff = diff_replay(str(ckpt), str(to), FROM_BATCH, rebuilt=True)
    assert diff.causes == tuple(range(switch_at, len(LINES)))
    outcomes = {(d.topic, d.partition): (d.original, d.branch) for d in diff.partitions}
    # both end offline under both rule sets (broker 2 was out of the ISR, no unclean
    # election); KRaft's shrink of t-0's ISR did not bump its leader epoch, so it ends one lower
    assert outcomes[("t", 0)] == (Outcome(-1, 2, 0), Outcome(-1, 1, 0))
    assert outcomes[("t", 1)] == (Outcome(-1, 2, 0), Outcome(-1, 2, 0))
    assert [(d.topic, d.partition) for d in diff.changed] == [("t", 0)]
    report = printed.getvalue()
    assert report.startswith(f"rebuilt {to} from the input's start under controller.mode kraft")
    assert "PartitionChangeRecord" in report
    print(report)
    assert tree_digest(ckpt) == before


@pytest.mark.spark
def test_branch_ends_with_batch_n_committed(spark, incident: Path, tmp_path: Path) -> None:
    ckpt = incident / "ckpt"
    before = tree_digest(ckpt)
    to = tmp_path / "branch"

    branch = branch_checkpoint(str(ckpt), FROM_BATCH, str(to))

    assert committed_batches(str(to)) == list(range(FROM_BATCH + 1))
    assert sorted(
        int(p.name) for p in (to / "query" / "offsets").iterdir() if p.name.isdigit()
    ) == list(range(FROM_BATCH + 1))
    versions = [
        int(p.name.split(".")[0].split("_")[0])
        for p in (to / "query" / "state").rglob("*")
        if p.suffix in (".changelog", ".zip")
    ]
    assert versions and max(versions) == FROM_BATCH + 1
    assert "query/metadata" in branch.rewritten
    # nothing in the branch points at the original checkpoint
    assert all(str(ckpt).encode() not in p.read_bytes() for p in to.rglob("*") if p.is_file())
    # Spark's state readers see the state after batch N, as in the original
    assert state_reader.partition_records(spark, str(to)) == state_reader.partition_records(
        spark, str(ckpt), FROM_BATCH
    )
    assert state_reader.directory_records(spark, str(to)) == state_reader.directory_records(
        spark, str(ckpt), FROM_BATCH
    )
    assert tree_digest(ckpt) == before


@pytest.mark.spark
def test_branch_refuses_a_batch_not_committed_and_a_target_not_empty(
    incident: Path, tmp_path: Path
) -> None:
    ckpt = str(incident / "ckpt")
    with pytest.raises(ReplayError, match="not committed"):
        branch_checkpoint(ckpt, len(LINES) + 5, str(tmp_path / "a"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    with pytest.raises(ReplayError, match="not empty"):
        branch_checkpoint(ckpt, FROM_BATCH, str(tmp_path / "b"))
    with pytest.raises(ReplayError, match="outside"):
        branch_checkpoint(ckpt, FROM_BATCH, str(incident / "ckpt" / "inside"))
    assert (
        run_replay(
            replay_args(
                "--checkpoint",
                ckpt,
                "--from-batch",
                "1",
                "--to",
                str(tmp_path / "c"),
                "--set",
                "job.partition_buckets=8",
            ),
            spark=None,
        )
        == 2
    )


# (path under the checkpoint, branch batch N, kept?)
KEEP_CASES = [
    ("query/metadata", 3, True),
    ("query/offsets/3", 3, True),
    ("query/offsets/4", 3, False),
    ("query/commits/3", 3, True),
    ("query/commits/4", 3, False),
    ("query/sources/0/4", 3, False),
    ("query/state/0/0/4.changelog", 3, True),  # version 4 is the state after batch 3
    ("query/state/0/0/5.changelog", 3, False),
    ("query/state/0/0/4.zip", 3, True),
    ("query/state/0/0/20.zip", 3, False),
    ("query/state/0/0/5_0f3c2a1e-9c1d-4a0e-8f53-2b7d1c0e4a11.changelog", 3, False),
    ("query/state/0/0/4_0f3c2a1e-9c1d-4a0e-8f53-2b7d1c0e4a11.zip", 3, True),
    ("query/state/0/0/_metadata/schema", 3, True),
    ("query/state/0/_metadata/metadata", 3, True),
    ("query/state/1/_metadata/v2/0", 3, True),
    ("query/state/1/_metadata/v2/5", 3, False),
    ("query/state/1/_stateSchema/default/0_c0d3cde3-d25f-4c2c-851e-b9ee9e93016c", 3, True),
    ("query/state/1/_stateSchema/default/5_c0d3cde3-d25f-4c2c-851e-b9ee9e93016c", 3, False),
    ("feedback/000000000003.jsonl", 3, True),
    ("feedback/000000000004.jsonl", 3, False),
    ("settings.json", 3, False),  # replay writes the branch's own
]


@pytest.mark.parametrize(("path", "batch", "kept"), KEEP_CASES)
def test_branch_keeps_the_files_of_batches_up_to_n(path: str, batch: int, kept: bool) -> None:
    assert _keep(path.split("/"), batch) is kept


def _snapshot(path: Path, ssts: list[str]) -> None:
    meta = {
        "sstFiles": [
            {"localFileName": s.split("-")[0] + ".sst", "dfsSstFileName": s, "sizeBytes": 1}
            for s in ssts
        ],
        "numKeys": 1,
    }
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata", "v1\n" + json.dumps(meta))


def test_branch_drops_later_snapshots_and_the_sst_files_only_they_use(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    store = ckpt / "query" / "state" / "0" / "0"
    (store / "SSTs").mkdir(parents=True)
    (ckpt / "query" / "commits").mkdir()
    for b in range(6):
        (ckpt / "query" / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    for v in range(1, 7):
        (store / f"{v}.changelog").write_bytes(b"c")
    _snapshot(store / "2.zip", ["000008-a.sst"])
    _snapshot(store / "5.zip", ["000008-a.sst", "000012-b.sst"])
    for name in ("000008-a.sst", "000012-b.sst"):
        (store / "SSTs" / name).write_bytes(b"s")
    before = tree_digest(ckpt)

    branch = branch_checkpoint(str(ckpt), 2, str(tmp_path / "to"))

    kept = sorted(
        p.relative_to(tmp_path / "to" / "query" / "state" / "0" / "0").as_posix()
        for p in (tmp_path / "to" / "query" / "state" / "0" / "0").rglob("*")
        if p.is_file()
    )
    assert kept == ["1.changelog", "2.changelog", "2.zip", "3.changelog", "SSTs/000008-a.sst"]
    assert "query/state/0/0/SSTs/000012-b.sst" in branch.dropped
    assert tree_digest(ckpt) == before
