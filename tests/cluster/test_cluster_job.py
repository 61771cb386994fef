"""The job on a Spark standalone cluster (a master and two 1-core workers on this machine,
`standalone.py`) writes the decisions local mode writes, on `examples/`.

The job runs as a user runs it, `shadow-controller run --set spark.master=spark://...`, in a
process of its own (one SparkContext per process: the test run's local session stays as it
is). The checkpoint is a local temporary directory, which the driver and both executors
share because they run on one machine; on real machines it must be HDFS, S3 or NFS.

What moves between batches, and why the decisions cannot depend on it:

- `spark.python.worker.reuse = false`: every task of every micro-batch runs in a Python
  worker of its own, so no batch finds what an earlier one left in its process. The
  sequencer's directory stamp cache (`operators.LastDirectory`) is empty in every batch and
  the directory is read from the state store's map each time (its `take` returns a copy
  only under the stamp the store holds, and a fresh worker holds none); the collector
  thresholds (`collector.collect_less`) are set again by every stage call, since each call
  checks them first. The thresholds only change when the collector runs, never what the
  job computes.
- two executors, and one killed: Spark keeps a state store partition on the executor that
  loaded it (measured: the sequencer's partition ran on one executor in all 7 batches), so
  the test moves it. Once the job has logged micro-batch 2, it SIGKILLs the executor whose
  log shows it loaded the sequencer's store; the master starts another on that worker, the
  batch in flight is run again, and the next ones run the sequencer on an executor that
  never held it, loading its state from the shared checkpoint. The event log shows where
  each stateful task ran; the test requires the sequencer on the killed executor and on
  another.
- `job.max_offsets_per_trigger = 4`: the 14 events take several micro-batches, with topic
  deletion's feedback (files under the checkpoint, written on the driver and read by the
  executors' source tasks) crossing batches.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming.operators import SEQUENCER_KEY
from streaming.settings.schema import JobSettings
from streaming.spark_hash import shuffle_partition
from tests.cluster.standalone import StandaloneCluster, executor_pid, standalone_cluster
from tests.streaming.spark_helpers import (
    canonical,
    read_output,
    run_to_end,
    simulate_records,
    write_input,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "three-brokers.jsonl"
SHUFFLE_PARTITIONS = 2
MAX_OFFSETS = 4
JOB_TIMEOUT_S = 600
KILL_AFTER_BATCH = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(
        tmp_path_factory.mktemp("standalone"), workers=2, cores_per_worker=1
    ) as c:
        yield c


def state_store_tasks(event_log_dir: Path) -> dict[str, list[tuple[int, int, str]]]:
    """Per stateful operator of the event log (Spark's plan node name), its tasks as
    (stage id, shuffle partition, executor id)."""
    operator_of: dict[int, str] = {}
    tasks: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for log in sorted(event_log_dir.glob("*/events_*")):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerStageSubmitted":
                info = event["Stage Info"]
                for rdd in info["RDD Info"]:
                    if rdd["Name"] == "StateStoreRDD":
                        operator_of[info["Stage ID"]] = json.loads(rdd["Scope"])["name"]
            elif (
                event["Event"] == "SparkListenerTaskEnd"
                and event["Task End Reason"]["Reason"] == "Success"
            ):
                info = event["Task Info"]
                tasks[event["Stage ID"]].append(
                    (int(info["Partition ID"]), str(info["Executor ID"]))
                )
    out: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for stage, name in sorted(operator_of.items()):
        out[name] += [(stage, part, executor) for part, executor in sorted(tasks[stage])]
    return out


def sequencer_operator_id(checkpoint: Path) -> int | None:
    """The sequencer's stateful operator id, from the operator metadata Spark writes into
    the checkpoint (`state/<id>/_metadata/...`: the transformWithState operator)."""
    for meta in sorted(checkpoint.glob("query/state/*/_metadata/**/*")):
        if meta.is_file() and not meta.name.startswith("."):
            for line in meta.read_text(errors="replace").splitlines():
                if (
                    line.startswith("{")
                    and "transformWithState" in json.loads(line)["operatorInfo"]["operatorName"]
                ):
                    return int(json.loads(line)["operatorInfo"]["operatorId"])
    return None


def sequencer_executor(cluster: StandaloneCluster, checkpoint: Path, partition: int) -> Path | None:
    """The executor directory whose log shows it loaded the sequencer's state store."""
    operator = sequencer_operator_id(checkpoint)
    # the executor's INFO line as it loads a store (Spark 4.3's wording)
    marker = (
        f"loaded instance StateStoreProviderId[ storeId=StateStoreId[ "
        f"operatorId={operator}, partitionId={partition}, "
    )
    holders = [
        d
        for dirs in cluster.executor_dirs().values()
        for d in dirs
        if marker in (d / "stderr").read_text(errors="replace")
    ]
    return holders[-1] if operator is not None and holders else None


def run_on_cluster(
    cluster: StandaloneCluster, base: Path, kill_after_batch: int
) -> tuple[int, str, str | None]:
    """Run the job to the end of its input; once it has logged micro-batch
    `kill_after_batch`, SIGKILL the executor holding the sequencer's state store, so the
    next batches run it on another executor. (exit code, stderr, the killed executor's id)."""
    (base / "events").mkdir(parents=True)
    settings = {
        "spark.master": cluster.master_url,
        "spark.sql.shuffle.partitions": SHUFFLE_PARTITIONS,
        "job.max_offsets_per_trigger": MAX_OFFSETS,
        "spark.python.worker.reuse": "false",
        "spark.locality.wait": "0s",
        # one executor per worker, of the worker's one core
        "spark.executor.cores": 1,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.dir": f"file:{base / 'events'}",
    }
    argv = [
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
        "--available-now",
    ]
    for name, value in settings.items():
        argv += ["--set", f"{name}={value}"]
    killed: str | None = None
    lines: list[str] = []
    with subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as job:
        watchdog = threading.Timer(JOB_TIMEOUT_S, job.kill)
        watchdog.start()
        try:
            assert job.stderr is not None
            for line in job.stderr:
                lines.append(line)
                if killed is None and f"INFO shadow_controller: batch {kill_after_batch}:" in line:
                    partition = shuffle_partition(SEQUENCER_KEY, SHUFFLE_PARTITIONS)
                    holder = sequencer_executor(cluster, base / "ckpt", partition)
                    pid = executor_pid(holder) if holder else None
                    assert pid, (
                        "no running executor holds the sequencer's store: "
                        f"{cluster.executor_dirs()}"
                    )
                    os.kill(pid, signal.SIGKILL)
                    killed = holder.name
            code = job.wait()
        finally:
            watchdog.cancel()
            if job.poll() is None:
                job.kill()
    return code, "".join(lines), killed


def test_the_job_on_a_standalone_cluster_writes_local_modes_decisions(
    spark, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    lines = EXAMPLE.read_bytes().splitlines()
    write_input(tmp_path / "cluster" / "in", lines)
    code, stderr, killed = run_on_cluster(cluster, tmp_path / "cluster", KILL_AFTER_BATCH)
    assert code == 0, stderr[-4000:]
    assert killed is not None, (
        f"the job ended before micro-batch {KILL_AFTER_BATCH}:\n{stderr[-2000:]}"
    )

    # local mode, the same settings that shape the decisions, in this process's local session
    write_input(tmp_path / "local" / "in", lines)
    local_base = tmp_path / "local"
    run_to_end(
        spark,
        JobSettings(
            input=f"file:{local_base / 'in'}",
            output=f"file:{local_base / 'out'}",
            checkpoint=str(local_base / "ckpt"),
            max_offsets_per_trigger=MAX_OFFSETS,
        ),
    )

    on_cluster = sorted(canonical(r) for r in read_output(tmp_path / "cluster" / "out"))
    local = sorted(canonical(r) for r in read_output(tmp_path / "local" / "out"))
    assert on_cluster, "the cluster run wrote no decisions"
    assert on_cluster == local
    assert on_cluster == sorted(simulate_records(lines))

    # both workers ran an executor, both first executors ran state store tasks, and the
    # master replaced the one killed (ids count up: 0 and 1, then 2)
    assert all(cluster.executor_dirs().values()), cluster.executor_dirs()
    stateful = state_store_tasks(tmp_path / "cluster" / "events")
    assert set(stateful) == {"TransformWithStateInPySpark", "FlatMapGroupsInPandasWithState"}, (
        stateful
    )
    assert {"0", "1"} <= {ex for tasks in stateful.values() for _, _, ex in tasks}, stateful
    sequencer_partition = shuffle_partition(SEQUENCER_KEY, SHUFFLE_PARTITIONS)
    sequencer_executors = [
        ex for _, part, ex in stateful["TransformWithStateInPySpark"] if part == sequencer_partition
    ]
    # the sequencer ran on the executor killed and, after it, on another one
    assert killed in sequencer_executors and set(sequencer_executors) - {killed}, (
        killed,
        sequencer_executors,
    )
    batches = sum("INFO shadow_controller: batch " in line for line in stderr.splitlines())
    assert batches >= len(lines) // MAX_OFFSETS, stderr[-2000:]
    print(
        f"\n{batches} micro-batches on {cluster.master_url}; {len(on_cluster)} decisions "
        "equal local mode's and "
        f"the engine's; executor {killed} killed after batch {KILL_AFTER_BATCH}; the "
        "sequencer's partition "
        f"({sequencer_partition}) ran on executors {sequencer_executors} (one task per "
        "stage attempt), "
        f"each in a fresh Python worker"
    )


def package_zip(path: Path) -> Path:
    """The README's
    `zip -qr dist/shadow-controller.zip state_machines streaming shadow_controller`."""
    with zipfile.ZipFile(path, "w") as archive:
        for package in ("state_machines", "streaming", "shadow_controller"):
            for source in sorted((ROOT / package).rglob("*.py")):
                archive.write(source, source.relative_to(ROOT))
    return path


def test_spark_submit_with_the_package_as_py_files_runs_the_job_on_the_cluster(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """The README's spark-submit command: the code from `--py-files` (the driver's
    PYTHONPATH left out), spark-submit's `--master` deciding over the settings' local[2],
    in scale mode as the README sets it (the partition stage's tasks write the decision
    parts on the executors, `decision_parts.write_group`)."""
    lines = EXAMPLE.read_bytes().splitlines()
    write_input(tmp_path / "in", lines)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = sys.executable
    argv = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        cluster.master_url,
        "--py-files",
        str(package_zip(tmp_path / "shadow-controller.zip")),
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        str(ROOT / "bin" / "spark-submit-main.py"),
        "run",
        "--config",
        str(ROOT / "conf" / "shadow-controller.toml"),
        "--input",
        f"file:{tmp_path / 'in'}",
        "--output",
        f"file:{tmp_path / 'out'}",
        "--checkpoint",
        str(tmp_path / "ckpt"),
        "--available-now",
        "--set",
        "job.partition_buckets=4",
    ]
    apps_before = {app["id"] for app in cluster.state().get("completedapps", [])}
    done = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    # it ran on the cluster, not in a local[2] driver: the master lists it as completed
    # (the master hears of the driver's end on its own; polled against a deadline)
    deadline = time.monotonic() + 30
    while True:
        apps = [
            app for app in cluster.state().get("completedapps", []) if app["id"] not in apps_before
        ]
        if apps or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert [app["name"] for app in apps] == ["kafka-shadow-controller"], cluster.state().get(
        "completedapps"
    )
    got = sorted(canonical(r) for r in read_output(tmp_path / "out"))
    assert got and got == sorted(simulate_records(lines))
