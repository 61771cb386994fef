"""The README's first command, as a user runs it: `shadow-controller demo` starts the
embedded broker and the job, feeds a cluster story and prints each decision as it arrives
on the decisions topic, and nothing of Spark's. A short story keeps it under a minute; the
default one is the same code path with more events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_quiet_output import spark_lines

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

STORY = [
    '{"v":1,"type":"BrokerStartup","broker_id":1,"broker_epoch":101,"id":"b1-up"}',
    '{"v":1,"type":"BrokerStartup","broker_id":2,"broker_epoch":102,"id":"b2-up"}',
    '{"v":1,"type":"ControllerFailover","controller_id":1,"controller_epoch":1,"id":"elected"}',
    '{"v":1,"type":"TopicCreation","topic":"orders","partitions":{"0":[1,2]},"id":"create"}',
    '{"v":1,"type":"BrokerFailure","broker_id":1,"id":"b1-crash"}',
]


def test_the_demo_prints_each_decision_under_its_event(tmp_path: Path) -> None:
    story = tmp_path / "story.jsonl"
    story.write_text("\n".join(STORY) + "\n")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-m", "shadow_controller.cli", "demo", "--scenario", str(story)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    # only the story: Spark's lines went to its log file, named once (test_quiet_output.py)
    assert spark_lines(out + proc.stderr) == [], out + proc.stderr
    assert proc.stderr.count("Spark's log: ") == 1, proc.stderr
    created = out.split("#3 create:")[1].split("#4")[0]
    assert (
        "orders-0     LeaderAndIsr leader=1 epoch=0 isr=[1, 2] pe=0 (initial election) -> "
        "brokers [1, 2]"
    ) in created
    crashed = out.split("#4 b1-crash:")[1]
    # broker 1 led orders-0: broker 2 takes over (the offline election), told alone
    assert (
        "orders-0     LeaderAndIsr leader=2 epoch=1 isr=[2] pe=1 (offline election) -> brokers [2]"
        in crashed
    )
    assert "(from #" not in out  # every decision printed under the event that caused it
    assert "end-to-end latency" in out


def test_the_demo_under_kraft_rules_prints_the_metadata_records(tmp_path: Path) -> None:
    """`demo --mode kraft`: the same story, decided by KRaft's rules: the records the quorum
    controller would append, under the event that caused them."""
    story = tmp_path / "story.jsonl"
    story.write_text("\n".join(STORY) + "\n")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "demo",
            "--mode",
            "kraft",
            "--scenario",
            str(story),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    assert spark_lines(out + proc.stderr) == [], out + proc.stderr
    created = out.split("#3 create:")[1].split("#4")[0]
    assert "orders-0     PartitionRecord leader=1 epoch=0 isr=[1, 2] pe=0" in created
    crashed = out.split("#4 b1-crash:")[1]
    assert "orders-0     PartitionChangeRecord leader=2 isr=[2]" in crashed
    assert "broker-1     BrokerRegistrationChangeRecord epoch=101 (fenced)" in crashed
