"""Kill the job with SIGKILL mid-run, restart it on the same checkpoint, and get every
decision of an uninterrupted run, and the same final state.

The job runs as a real `shadow-controller run` process (driver and its JVM in one process
group). File outputs are named by micro-batch id, so a batch replayed after the kill
rewrites its own file; records can repeat only as exact copies.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from state_machines.engine import Engine, partition_json
from state_machines.errors import InvalidEvent
from state_machines.events import parse_line
from streaming import state_reader
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import canonical, read_output, write_input

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


# The first run takes 6 events a micro-batch, so that the kill or the stop lands mid-run;
# the restart reads the rest 30 at a time: Spark replays the uncommitted batch with the
# offsets it logged whatever this says, and the rest needs fewer micro-batches (each costs
# about a second of Spark's fixed work, several under CI's load).
RESTART_MAX_OFFSETS = 30

# The logs end a few events after their first topic deletions. Once a deletion is pending,
# the sequencer admits the next events one micro-batch at a time until its reports come
# back through the feedback files (and a replica on a dead broker keeps it pending), so
# every event after it costs a micro-batch: the 77 events of generate_log(7, 70) took 50
# micro-batches, 300 s of the test at load 10-15. Each log is a prefix of the longer one
# (the generator draws event by event), with the same deletions where they were.
SIGKILL_LOG = (7, 24)  # 31 events: deletions at offsets 21, 26 and 29
SIGTERM_LOG = (13, 30)  # 37 events: deletions at 28 and 34, stop-replica responses at 31, 35


def run_cli(base: Path, *extra: str, max_offsets: int = 6) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "shadow_controller.cli",
        "run",
        "--input",
        f"file:{base / 'in'}",
        "--output",
        f"file:{base / 'out'}",
        "--checkpoint",
        str(base / "ckpt"),
        "--set",
        f"job.max_offsets_per_trigger={max_offsets}",
        "--set",
        'job.trigger_interval="0 seconds"',
        *extra,
    ]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def wait_for(condition, deadline_s: float, what: str, proc: subprocess.Popen) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return
        if proc.poll() is not None:
            raise AssertionError(
                f"job exited ({proc.returncode}) before "
                f"{what}:\n{proc.stdout.read().decode()[-3000:]}"
            )
        time.sleep(
            0.2
        )  # polling interval of a condition with a deadline, not synchronisation by sleep
    raise AssertionError(f"timed out waiting for {what}")


def final_partitions_from_checkpoint(spark, checkpoint: Path) -> dict[str, dict]:
    """The partition stage's state at the last committed batch, via Spark's state reader."""
    records = state_reader.partition_records(spark, str(checkpoint))
    return {f"{t}-{p}": partition_json(r) for (t, p), r in sorted(records.items())}


def test_sigkill_mid_run_then_restart_loses_nothing(spark, tmp_path: Path) -> None:
    seed, n_events = SIGKILL_LOG
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=n_events)]
    write_input(tmp_path / "in", lines, files=2)

    first = run_cli(tmp_path)
    try:
        wait_for(
            lambda: len(list((tmp_path / "out").glob("decisions-*.jsonl"))) >= 2,
            240,
            "two committed micro-batches",
            first,
        )
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    written_before_restart = len(list((tmp_path / "out").glob("decisions-*.jsonl")))
    assert written_before_restart < len(lines) // 6, "the kill must land mid-run"

    second = run_cli(tmp_path, "--available-now", max_offsets=RESTART_MAX_OFFSETS)
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0, out.decode()[-3000:]
    assert b"deletion reports" in out, "the restart reads deletion reports from the feedback"

    engine = Engine()
    expected: list[str] = []
    for i, line in enumerate(lines):
        with contextlib.suppress(InvalidEvent):
            expected.extend(canonical(r) for r in engine.process(parse_line(line, i)))
    got = Counter(canonical(r) for r in read_output(tmp_path / "out"))
    assert set(got) == set(expected), "every decision appears, and nothing else"
    # file outputs are per micro-batch and a replayed batch rewrites its own file, so here
    # not even exact repeats remain
    assert got == Counter(expected)

    assert (
        final_partitions_from_checkpoint(spark, tmp_path / "ckpt")
        == engine.state_json()["partitions"]
    )


def test_sigterm_stops_after_a_committed_batch_and_a_restart_completes(tmp_path: Path) -> None:
    seed, n_events = SIGTERM_LOG
    lines = [json.dumps(e).encode() for e in generate_log(seed, n_events=n_events)]
    write_input(tmp_path / "in", lines)
    job = run_cli(tmp_path)
    try:
        wait_for(
            lambda: len(list((tmp_path / "out").glob("decisions-*.jsonl"))) >= 1,
            240,
            "a committed batch",
            job,
        )
        job.send_signal(signal.SIGTERM)
        out, _ = job.communicate(timeout=180)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == 0, out.decode()[-3000:]
    assert b"stopping after the current batch" in out
    query = tmp_path / "ckpt" / "query"
    offsets = sorted(int(p.name) for p in (query / "offsets").iterdir() if p.name.isdigit())
    commits = sorted(int(p.name) for p in (query / "commits").iterdir() if p.name.isdigit())
    assert offsets and offsets == commits, "the stop left a planned batch uncommitted"

    rest = run_cli(tmp_path, "--available-now", max_offsets=RESTART_MAX_OFFSETS)
    out, _ = rest.communicate(timeout=600)
    assert rest.returncode == 0, out.decode()[-3000:]
    assert b"deletion reports" in out, "the restart reads deletion reports from the feedback"
    engine = Engine()
    expected = [
        canonical(r) for i, line in enumerate(lines) for r in engine.process(parse_line(line, i))
    ]
    assert Counter(canonical(r) for r in read_output(tmp_path / "out")) == Counter(expected)
