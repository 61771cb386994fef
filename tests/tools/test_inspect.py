"""`shadow-controller inspect`: the job's state at a micro-batch, read back from a real
checkpoint. The job runs in file mode one event per micro-batch, so every batch that reads
events reads one, and the state can be checked before and after a broker failure. A batch
whose partitions changed their summaries is followed by one that reads only that feedback
(no event, no change of the partitions' state)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.inspect import add_parser, committed_batches, inspect
from shadow_controller.offset_sources import batch_sources
from tests.streaming.spark_helpers import run_file_job

pytestmark = pytest.mark.spark

EVENTS = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
    {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "v": 1,
        "type": "TopicCreation",
        "topic": "t",
        "partitions": {"0": [1, 2, 3], "1": [2, 3]},
        "id": "create-t",
    },
    {"v": 1, "type": "BrokerFailure", "broker_id": 1, "id": "b1-down"},
]
FAILURE_OFFSET = 5


@pytest.fixture(scope="module")
def job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("inspect")
    lines = [json.dumps(e).encode() for e in EVENTS]
    decisions, stats = run_file_job(spark, base, lines, max_offsets=1)
    return {
        "checkpoint": str(base / "ckpt"),
        "out": base / "out",
        "decisions": decisions,
        "stats": stats,
    }


def events_source(result: dict[str, Any]) -> dict[str, Any]:
    [source] = [s for s in result["sources"] if s["name"] == "events"]
    return source


def batch_of_offset(checkpoint: str, offset: int) -> int:
    for batch in committed_batches(checkpoint):
        lo, hi = events_source({"sources": batch_sources(checkpoint, batch)})["cause_offsets"]
        if lo <= offset < hi:
            return batch
    raise AssertionError(f"no committed batch read cause_offset {offset}")


def row(result: dict[str, Any], name: str) -> dict[str, Any]:
    [r] = [p for p in result["partitions"] if p["topic_partition"] == name]
    return r


def broker(result: dict[str, Any], broker_id: int) -> dict[str, Any]:
    [b] = [b for b in result["brokers"] if b["id"] == broker_id]
    return b


def test_leader_moves_from_failed_broker_between_batches(spark: Any, job: dict[str, Any]) -> None:
    failure_batch = batch_of_offset(job["checkpoint"], FAILURE_OFFSET)
    before = inspect(spark, job["checkpoint"], failure_batch - 1)
    latest = inspect(spark, job["checkpoint"])

    assert latest["batch"] == latest["latest_committed"] >= failure_batch
    assert before["batch"] == failure_batch - 1
    # what follows the failure's batch reads feedback only: the state is the failure's
    assert inspect(spark, job["checkpoint"], failure_batch)["partitions"] == latest["partitions"]
    t0_before, t0_after = row(before, "t-0"), row(latest, "t-0")
    assert (t0_before["leader"], t0_before["leader_epoch"], t0_before["isr"]) == (1, 0, [1, 2, 3])
    assert (t0_after["leader"], t0_after["leader_epoch"], t0_after["isr"]) == (2, 1, [2, 3])
    assert t0_after["state"] == "OnlinePartition"
    assert t0_after["replica_states"] == {
        "1": "OfflineReplica",
        "2": "OnlineReplica",
        "3": "OnlineReplica",
    }
    assert broker(before, 1)["live"] is True
    assert (broker(latest, 1)["live"], broker(latest, 2)["live"], broker(latest, 3)["live"]) == (
        False,
        True,
        True,
    )
    assert broker(latest, 2)["epoch"] == 102


def test_state_is_read_at_the_batch_asked_for(spark: Any, job: dict[str, Any]) -> None:
    creation_batch = batch_of_offset(job["checkpoint"], 4)
    assert inspect(spark, job["checkpoint"], creation_batch - 1)["partitions"] == []
    created = inspect(spark, job["checkpoint"], creation_batch)
    assert [p["topic_partition"] for p in created["partitions"]] == ["t-0", "t-1"]
    assert [b["id"] for b in created["brokers"]] == [1, 2, 3]


def test_partition_filter(spark: Any, job: dict[str, Any]) -> None:
    only = inspect(spark, job["checkpoint"], partitions=("t-1",))
    assert [p["topic_partition"] for p in only["partitions"]] == ["t-1"]
    assert row(only, "t-1")["replicas"] == [2, 3]
    some = inspect(spark, job["checkpoint"], partitions=("t-0", "t-9"))
    assert [p["topic_partition"] for p in some["partitions"]] == ["t-0"]
    assert some["missing_partitions"] == ["t-9"]


@pytest.mark.parametrize("broker_id, partitions", [(1, ["t-0"]), (3, ["t-0", "t-1"]), (7, [])])
def test_broker_filter(
    spark: Any, job: dict[str, Any], broker_id: int, partitions: list[str]
) -> None:
    result = inspect(spark, job["checkpoint"], broker=broker_id)
    assert [p["topic_partition"] for p in result["partitions"]] == partitions
    if broker_id == 7:
        assert result["brokers"] == [] and result["missing_brokers"] == [7]
    else:
        assert [b["id"] for b in result["brokers"]] == [broker_id] and result[
            "missing_brokers"
        ] == []


def test_source_offsets_name_the_events_each_batch_read(spark: Any, job: dict[str, Any]) -> None:
    batches = committed_batches(job["checkpoint"])
    previous_end = 0
    by_batch = {}
    for batch in batches:
        result = inspect(spark, job["checkpoint"], batch, partitions=("none-0",))
        assert [s["name"] for s in result["sources"]] == ["events", "deletion-feedback"]
        lo, hi = events_source(result)["cause_offsets"]
        if lo == hi == previous_end:  # a batch of feedback only (the partitions' summaries)
            assert events_source(result)["reads"] == "nothing"
            continue
        assert (lo, hi) == (previous_end, previous_end + 1), (
            f"batch {batch} read [{lo}, {hi}) with max_offsets=1"
        )
        assert events_source(result)["reads"] == f"cause_offset {lo}"
        previous_end = hi
        by_batch[batch] = (lo, hi)
        written = job["out"] / f"decisions-{batch:012d}.jsonl"
        causes = (
            {json.loads(line)["cause_offset"] for line in written.read_text().splitlines()}
            if written.exists()
            else set()
        )
        assert causes <= set(range(lo, hi)), (
            f"batch {batch}: decisions of {causes} outside its offsets [{lo}, {hi})"
        )
    assert previous_end == len(EVENTS)
    failure_batch = batch_of_offset(job["checkpoint"], FAILURE_OFFSET)
    assert {
        r["cause_id"] for r in job["decisions"] if r["cause_offset"] == by_batch[failure_batch][0]
    } == {"b1-down"}


def run_cli(argv: list[str]) -> tuple[int, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="shadow-controller")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args), args


def test_cli_table(spark: Any, job: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli(["inspect", "--checkpoint", job["checkpoint"], "--broker", "1"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"batch {inspect(spark, job['checkpoint'])['batch']} ")
    assert any(line.split()[:3] == ["t-0", "OnlinePartition", "2"] for line in lines), out
    assert not any(line.startswith("t-1 ") for line in lines), out
    assert any(line.split() == ["1", "no", "no", "-"] for line in lines), out


def test_cli_json_is_the_inspect_result(
    spark: Any, job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    batch = committed_batches(job["checkpoint"])[-1]
    code, _ = run_cli(
        [
            "inspect",
            "--checkpoint",
            job["checkpoint"],
            "--batch",
            str(batch),
            "--partition",
            "t-0",
            "--json",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(
        json.dumps(inspect(spark, job["checkpoint"], batch, partitions=("t-0",)))
    )
    assert [(p["topic_partition"], p["leader"]) for p in printed["partitions"]] == [("t-0", 2)]


def test_cli_refuses_an_uncommitted_batch(
    job: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run_cli(["inspect", "--checkpoint", job["checkpoint"], "--batch", "99"])
    assert code == 2
    assert "batch 99 is not committed" in capsys.readouterr().err


def test_cli_refuses_a_malformed_partition(job: dict[str, Any]) -> None:
    with pytest.raises(SystemExit):
        run_cli(["inspect", "--checkpoint", job["checkpoint"], "--partition", "t"])


def test_scale_mode_buckets(spark: Any, tmp_path: Path) -> None:
    """Partitions packed into buckets (partition_buckets) read back one row per partition."""
    lines = [json.dumps(e).encode() for e in EVENTS]
    run_file_job(spark, tmp_path, lines, buckets=2)
    checkpoint = str(tmp_path / "ckpt")
    result = inspect(spark, checkpoint)
    assert [(p["topic_partition"], p["leader"]) for p in result["partitions"]] == [
        ("t-0", 2),
        ("t-1", 2),
    ]
    assert broker(result, 1)["live"] is False
    # one batch read every event; a later one may read only the partitions' feedback
    read = [
        events_source({"sources": batch_sources(checkpoint, b)})["cause_offsets"]
        for b in committed_batches(checkpoint)
    ]
    assert read[0] == [0, len(EVENTS)] and all(lo == hi == len(EVENTS) for lo, hi in read[1:])


@pytest.mark.parametrize(
    "start, end, first_batch, name, kind, reads",
    [
        (None, {"line": 1}, True, "events", "file", "cause_offset 0"),
        ({"line": 4}, {"line": 7}, False, "events", "file", "cause_offset 4..6"),
        ({"line": 7}, {"line": 7}, False, "events", "file", "nothing"),
        (
            None,
            {"line": 9},
            False,
            "events",
            "file",
            "cause_offset up to 8",
        ),  # previous entry purged
        (
            {"batch": -1},
            {"batch": 2},
            False,
            "deletion-feedback",
            "file",
            "feedback of batches 0..2",
        ),
        ({"batch": 2}, {"batch": 2}, False, "deletion-feedback", "file", "no feedback"),
        (
            {"controller-events": {"0": 5}},
            {"controller-events": {"0": 7}},
            False,
            "events",
            "kafka",
            "controller-events-0 offset 5..6",
        ),
        ({"x": 1}, {"x": 2}, False, "source-0", "unknown", ""),
    ],
)
def test_describe_source(start, end, first_batch, name, kind, reads) -> None:
    from shadow_controller.offset_sources import describe_source

    described = describe_source(0, start, end, first_batch)
    assert (described["name"], described["kind"], described["reads"]) == (name, kind, reads)
