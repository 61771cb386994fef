"""The read-only tools' state without Spark (`shadow_controller/fast_state.py`, issue 47):
on real checkpoints of the job in file mode, the replay of the job's micro-batches gives
the state Spark's state readers give, at EVERY committed batch, and `health`, `inspect` and
`what-if` print the same both ways; a checkpoint whose written decisions were altered, or
whose input was cut short, is read with the state readers and still answered right.

Each story is one checkpoint (module-scoped), run two events a micro-batch so that some
batches end with a cause held (a deletion waiting for its reports, the events behind it)
and with feedback unread; one runs in scale mode."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadow_controller import controller_state, fast_state
from shadow_controller.cli import main as cli_main
from shadow_controller.inspect import committed_batches
from streaming.settings.checkpoint import save_settings
from streaming.settings.schema import JobSettings
from tests.streaming.spark_helpers import run_file_job

pytestmark = pytest.mark.spark


def _brokers(*ids: int) -> list[dict[str, Any]]:
    return [{"type": "BrokerStartup", "broker_id": b, "broker_epoch": 10 + b} for b in ids]


FAILOVER = {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1}

STORIES: dict[str, list[dict[str, Any]]] = {
    # KafkaController.onBrokerFailure: leaders move off broker 2, orders-3 ([2]) goes offline;
    # its return (onBrokerStartup) brings it back
    "broker-failure": [
        *_brokers(1, 2, 3),
        FAILOVER,
        {
            "type": "TopicCreation",
            "topic": "orders",
            "partitions": {"0": [1, 2], "1": [2, 3], "2": [3, 1], "3": [2]},
        },
        {"type": "BrokerFailure", "broker_id": 2},
        {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 22},
    ],
    # TopicDeletionManager: the deletion waits for the StopReplica responses, which reach
    # the sequencer through the feedback files; the failure behind it is held meanwhile
    "deletion": [
        *_brokers(1, 2, 3),
        FAILOVER,
        {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2], "1": [2, 3]}},
        {"type": "TopicDeletion", "topic": "t"},
        {"type": "BrokerFailure", "broker_id": 3},
        *(
            {
                "type": "StopReplicaResponse",
                "topic": "t",
                "partition": p,
                "broker_id": b,
                "error": None,
            }
            for p, b in ((0, 1), (0, 2), (1, 2))
        ),
        {"type": "TopicCreation", "topic": "u", "partitions": {"0": [1]}},
    ],
    # KafkaController.doControlledShutdown: broker 2's leaderships move, then it goes and
    # comes back
    "controlled-shutdown": [
        *_brokers(1, 2, 3),
        FAILOVER,
        {
            "type": "TopicCreation",
            "topic": "c",
            "partitions": {"0": [2, 1, 3], "1": [1, 2, 3], "2": [2]},
        },
        {"type": "ControlledShutdown", "broker_id": 2, "broker_epoch": 12},
        {"type": "BrokerFailure", "broker_id": 2},
        {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 32},
    ],
    # min.insync.replicas from the topic and the brokers' dynamic config, an ISR shrinking
    # under it, and a line that is no event (a dead letter)
    "min-isr": [
        *_brokers(1, 2, 3),
        FAILOVER,
        {"type": "TopicCreation", "topic": "m", "partitions": {"0": [1, 2, 3], "1": [3, 2]}},
        {"type": "TopicConfigChange", "topic": "m", "configs": {"min.insync.replicas": "3"}},
        {
            "type": "AlterPartition",
            "topic": "m",
            "partition": 0,
            "broker_id": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "isr": [1, 2],
        },
        {"type": "NoSuchEvent"},
        {"type": "BrokerConfigChange", "configs": {"min.insync.replicas": "2"}},
        {"type": "BrokerFailure", "broker_id": 3},
    ],
}


# scale mode (job.partition_buckets): partitions kept in buckets, decision runs written by
# the partition stage (storage.Buckets, decision_parts.py)
STORIES["controlled-shutdown-in-buckets"] = STORIES["controlled-shutdown"]
BUCKETS = {"controlled-shutdown-in-buckets": 2}


@pytest.fixture(scope="module", params=sorted(STORIES))
def story(
    request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    base = tmp_path_factory.mktemp(request.param)
    lines = [json.dumps({"v": 1, **e}).encode() for e in STORIES[request.param]]
    buckets = BUCKETS.get(request.param, 0)
    run_file_job(spark, base, lines, max_offsets=2, buckets=buckets)
    ckpt = str(base / "ckpt")
    # what `shadow-controller run` records; the replay reads the input and output from it
    save_settings(
        JobSettings(
            input=f"file:{base / 'in'}",
            output=f"file:{base / 'out'}",
            checkpoint=ckpt,
            max_offsets_per_trigger=2,
            partition_buckets=buckets,
        ),
        ckpt,
    )
    return {"name": request.param, "base": base, "checkpoint": ckpt}


def test_the_replay_is_the_state_readers_state_at_every_batch(
    spark: Any, story: dict[str, Any]
) -> None:
    ckpt = story["checkpoint"]
    batches = committed_batches(ckpt)
    assert len(batches) > 3
    held = 0
    for batch in batches:
        assert fast_state.replayed(ckpt, batch) is not None, batch
        fast = controller_state.load_state(ckpt, batch, "test")
        read = controller_state.load(spark, ckpt, batch)
        assert fast.directory == read.directory, batch
        assert fast.partitions == read.partitions, batch
        assert (fast.pending, fast.buffered) == (read.pending, read.buffered), batch
        assert (fast.reports, fast.summaries) == (read.reports, read.summaries), batch
        assert fast.next_offset == read.next_offset, batch
        assert fast == read, batch
        held += fast.pending is not None or bool(fast.buffered)
    if story["name"] == "deletion":
        assert held  # some batch ended with the deletion waiting for its reports


def _printed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli_main(argv)
    return code, capsys.readouterr().out


def _questions(ckpt: str) -> Iterator[list[str]]:
    """One of each tool at the latest batch, and `inspect` at an earlier one."""
    batches = committed_batches(ckpt)
    at = ["--checkpoint", ckpt, "--batch", str(batches[-1])]
    yield ["health", *at]
    yield ["inspect", *at, "--json"]
    yield ["what-if", *at, "--restart-broker", "1"]
    yield ["inspect", "--checkpoint", ckpt, "--batch", str(batches[len(batches) // 2])]


def test_the_tools_print_the_same_both_ways(
    story: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the tools print is a function of the state, which the test above holds equal at
    every batch of every story; one story whose state holds a waiting cause is enough to
    show the printing agrees (each Spark-path question costs a Spark read)."""
    if story["name"] != "deletion":
        pytest.skip("one story is enough")
    questions = list(_questions(story["checkpoint"]))
    replayed = [_printed(q, capsys) for q in questions]
    monkeypatch.setattr(fast_state, "REPLAY_MAX_EVENTS", -1)  # nothing is replayed
    assert [_printed(q, capsys) for q in questions] == replayed
    assert all(out for _, out in replayed)


def _decisions(base: Path) -> list[Path]:
    return sorted(p for p in (base / "out").glob("decisions-*.jsonl") if p.read_text())


@pytest.mark.parametrize("damage", ["altered decisions", "truncated input"])
def test_a_checkpoint_the_replay_disagrees_with_is_read_with_spark(
    story: dict[str, Any], damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if story["name"] != "broker-failure":
        pytest.skip("one story is enough")
    ckpt, base = story["checkpoint"], story["base"]
    questions = list(_questions(ckpt))[:2]
    # replayed: the state readers' answers (test_the_tools_print_the_same_both_ways)
    expected = [_printed(q, capsys) for q in questions]
    if damage == "altered decisions":
        victim = _decisions(base)[0]
        first, *rest = victim.read_text().splitlines(keepends=True)
        damaged = json.dumps({**json.loads(first), "leader": 99}) + "\n" + "".join(rest)
    else:  # cut short by two lines, still complete: fewer than the job read
        [victim] = list((base / "in").glob("*.jsonl"))
        damaged = "".join(victim.read_text().splitlines(keepends=True)[:-2])
    original = victim.read_bytes()
    try:
        victim.write_text(damaged)
        assert fast_state.replayed(ckpt) is None
        answered = [_printed(q, capsys) for q in questions]
    finally:
        victim.write_bytes(original)
    assert answered == expected
    assert fast_state.replayed(ckpt) is not None  # as it was: replayed again


def test_the_fast_path_does_not_import_pyspark(story: dict[str, Any]) -> None:
    """Importing pyspark alone costs a command seconds: a replayed answer never does."""
    if story["name"] != "deletion":
        pytest.skip("one story is enough")
    questions = list(_questions(story["checkpoint"]))
    code = (
        "import sys\n"
        "from shadow_controller.cli import main\n"
        f"for argv in {questions!r}:\n"
        "    main(argv)\n"
        "print('pyspark' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr
