"""`inspect` and `replay` on a real checkpoint: a partition the checkpoint does not hold is
one line and exit 2 (it takes Spark's state readers to know), Kafka's `--topic T
--partition P` names a partition, and `replay --diff --json` is the diff as data."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.cli import main as cli_main
from shadow_controller.replay import add_parser as add_replay_parser
from shadow_controller.replay import run_replay
from streaming import exits
from streaming.settings.checkpoint import save_settings
from streaming.settings.schema import JobSettings
from tests.streaming.spark_helpers import run_file_job

pytestmark = pytest.mark.spark

# t-0 [1,2] loses both brokers; broker 2 returns out of sync: offline unless unclean
INCIDENT = [
    {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 10},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 20},
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}},
    {"v": 1, "type": "BrokerFailure", "broker_id": 2},
    {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 21},
]
FROM_BATCH = 3  # one event per batch: the batch of the TopicCreation


@pytest.fixture(scope="module")
def checkpoint(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    base = tmp_path_factory.mktemp("tools")
    run_file_job(spark, base, [json.dumps(e).encode() for e in INCIDENT], max_offsets=1)
    ckpt = str(base / "ckpt")
    save_settings(
        JobSettings(
            input=f"file:{base / 'in'}",
            output=f"file:{base / 'out'}",
            checkpoint=ckpt,
            max_offsets_per_trigger=1,
        ),
        ckpt,
    )
    return ckpt


@pytest.mark.parametrize(
    "argv, missing",
    [
        (["--partition", "nosuch-7"], "nosuch-7"),
        (["--partition", "t-0", "--partition", "t-9"], "t-9"),
        (["--topic", "nosuch", "--partition", "7"], "nosuch-7"),
        (["--topic", "nosuch"], "topic nosuch"),
    ],
)
def test_a_partition_not_in_the_checkpoint_is_one_line_and_exit_2(
    checkpoint: str, argv: list[str], missing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["inspect", "--checkpoint", checkpoint, *argv]) == exits.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(
        f"shadow-controller inspect: {missing}: not in the checkpoint {checkpoint}"
    ), line


def test_topic_and_partition_name_a_partition(
    checkpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        cli_main(
            ["inspect", "--checkpoint", checkpoint, "--topic", "t", "--partition", "0", "--json"]
        )
        == 0
    )
    by_flags = json.loads(capsys.readouterr().out)
    assert cli_main(["inspect", "--checkpoint", checkpoint, "--partition", "t-0", "--json"]) == 0
    assert by_flags == json.loads(capsys.readouterr().out)
    assert [p["topic_partition"] for p in by_flags["partitions"]] == ["t-0"]


def test_replay_diff_as_json(spark: Any, checkpoint: str, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="shadow-controller")
    add_replay_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "replay",
            "--checkpoint",
            checkpoint,
            "--from-batch",
            str(FROM_BATCH),
            "--to",
            str(tmp_path / "branch"),
            "--set",
            "controller.unclean.leader.election.enable=true",
            "--diff",
            "--json",
        ]
    )
    printed = io.StringIO()

    assert run_replay(args, spark, out=printed) == 0

    doc = json.loads(printed.getvalue())
    assert doc["branch"] == str(tmp_path / "branch") and doc["from_batch"] == FROM_BATCH
    assert doc["batches"] and doc["decisions"] > 0
    [changed] = doc["diff"]["changed"]
    assert changed["topic_partition"] == "t-0"
    assert changed["original"]["offline"] and not changed["branch"]["offline"]
    assert changed["branch"]["unclean_elections"] == 1
    assert doc["diff"]["counts"]["unclean elections"] == {"original": 0, "branch": 1}
