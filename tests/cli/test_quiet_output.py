"""A command prints only what the user asked for (issue 44, "the first impression"; issue 47,
"quiet output"). Spark's JVM log (log4j's lines) and its Python workers' chatter go to a
log file whose path the command names once (streaming/spark_log.py); `--verbose` brings
them back to stderr, less the workers' chatter. The demo's test holds the demo to the same.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "three-brokers.jsonl"

# what Spark writes when it starts and runs a query: log4j's lines ("26/11/28 13:17:04 WARN
# Utils: ..."), its start-up notes, the JVM's, and the transform-with-state worker's
SPARK_LINE = re.compile(
    r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
    r"|log4j|setLogLevel|Setting default log level|NativeCodeLoader|incubator modules"
    r"|TransformWithStateInPandas Python worker|^\tat (org|java|scala)\."
)
# the job's own log lines (cli.cmd_run's logging format)
JOB_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ shadow_controller: ")


def spark_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if SPARK_LINE.search(line)]


def run_job(tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0000.jsonl").write_bytes(EXAMPLE.read_bytes())
    log = tmp_path / "spark.log"
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SHADOW_CONTROLLER_SPARK_LOG=str(log),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "run",
            "--input",
            f"file:{tmp_path}/in",
            "--output",
            f"file:{tmp_path}/out",
            "--checkpoint",
            str(tmp_path / "ckpt"),
            "--available-now",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    return proc, log


def test_run_prints_the_jobs_lines_and_spark_writes_to_its_log(tmp_path: Path) -> None:
    proc, log = run_job(tmp_path)
    shown = f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
    assert proc.returncode == 0, shown
    assert spark_lines(proc.stdout + proc.stderr) == [], shown
    assert proc.stdout == "", shown
    assert all(JOB_LINE.match(line) for line in proc.stderr.splitlines()), shown
    named = [line for line in proc.stderr.splitlines() if "Spark's log:" in line]
    assert len(named) == 1 and str(log) in named[0], shown
    assert any("batch 0: events in" in line for line in proc.stderr.splitlines()), shown
    # the lines went to the log instead: log4j's start-up and the worker's chatter
    written = log.read_text()
    assert "log4j" in written and "TransformWithStateInPandas Python worker" in written, written


def test_verbose_shows_sparks_output_less_the_workers_chatter(tmp_path: Path) -> None:
    proc, log = run_job(tmp_path, "--verbose")
    shown = f"exit {proc.returncode}\nstderr:\n{proc.stderr}\nstdout:\n{proc.stdout}"
    assert proc.returncode == 0, shown
    assert any("log4j" in line for line in spark_lines(proc.stderr)), shown
    assert "Python worker" not in proc.stderr, shown
    assert "Spark's log:" not in proc.stderr and not log.exists(), shown
