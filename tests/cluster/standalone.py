"""A Spark standalone cluster on this machine, from the pip pyspark's `bin/spark-class`: one
master and N workers, each worker with its own work directory, local directories and cores
(so each runs its own executor JVM and its own Python workers), all on free ports of
127.0.0.1.

    with standalone_cluster(tmp_path, workers=2) as cluster:
        ... spark.master = cluster.master_url ...

Readiness is the master's JSON page (`http://127.0.0.1:<web UI port>/json/`) listing every
worker ALIVE, polled against a deadline; a daemon that exits first fails the start with its
log's last lines. Every daemon runs in a process group of its own, and the executors a
worker launches (with their Python workers) stay in its group, so leaving the block ends
them all, SIGTERM first, then SIGKILL, whether the block ended normally or not.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_CLASS = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
START_DEADLINE_S = 120.0
STOP_GRACE_S = 15.0


class ClusterStartFailed(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class StandaloneCluster:
    master_url: str
    web_url: str
    work_dirs: list[Path]
    daemons: list[Daemon] = field(default_factory=list)

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as resp:
            return json.load(resp)

    def alive_workers(self) -> list[dict]:
        return [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]

    def executor_dirs(self) -> dict[Path, list[Path]]:
        """Per worker work directory, the executor directories (`app-*/<executor id>`) its
        executors ran in: a worker that launched an executor for an application has one."""
        return {d: sorted(p for p in d.glob("app-*/*") if p.is_dir()) for d in self.work_dirs}


def executor_pid(executor_dir: Path) -> int | None:
    """The executor JVM running in `executor_dir` (its working directory), if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (
                Path(os.readlink(entry / "cwd")) == executor_dir
                and b"Executor" in (entry / "cmdline").read_bytes()
            ):
                return int(entry.name)
        except OSError:
            continue
    return None


def _spawn(name: str, args: list[str], log: Path, env: dict[str, str]) -> Daemon:
    with open(log, "wb") as fh:
        process = subprocess.Popen(
            [str(SPARK_CLASS), *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return Daemon(name, process, log)


def _stop(daemons: list[Daemon]) -> None:
    """SIGTERM to every daemon's process group, then SIGKILL to what is left at the grace."""
    for d in daemons:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(d.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for d in daemons:
        with contextlib.suppress(subprocess.TimeoutExpired):
            d.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        # the group outlives its leader when an executor or Python worker lingers
        with contextlib.suppress(ProcessLookupError):
            os.killpg(d.process.pid, signal.SIGKILL)
        d.process.wait()


def _wait_ready(cluster: StandaloneCluster, workers: int) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        for d in cluster.daemons:
            if d.process.poll() is not None:
                raise ClusterStartFailed(
                    f"{d.name} exited with {d.process.returncode} before the cluster was "
                    f"ready; its log ({d.log}) ends:\n{d.tail()}"
                )
        try:
            if len(cluster.alive_workers()) >= workers:
                return
            last_error = f"{len(cluster.alive_workers())} of {workers} workers alive"
        except OSError as exc:
            last_error = str(exc)
        time.sleep(0.25)  # a poll interval against a deadline, not a wait for a guessed time
    raise ClusterStartFailed(
        f"the cluster was not ready within {START_DEADLINE_S:.0f} s ({last_error}); "
        f"master log ends:\n{cluster.daemons[0].tail()}"
    )


@contextmanager
def standalone_cluster(
    base: Path,
    workers: int = 2,
    cores_per_worker: int = 1,
    memory_per_worker: str = "2g",
    env: dict[str, str] | None = None,
) -> Iterator[StandaloneCluster]:
    """A master and `workers` workers under `base` (logs, work and local directories); the
    daemons and the executors they launch get `env` (default: this process's environment,
    so the executors import the same code and run the same Python)."""
    base.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ if env is None else env)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # spark-class would otherwise read conf/ and logs/ under the pip package's directory
    env["SPARK_CONF_DIR"] = str(base / "conf")
    env["SPARK_LOG_DIR"] = str(base / "logs")
    (base / "conf").mkdir(exist_ok=True)
    port, web_port = free_port(), free_port()
    cluster = StandaloneCluster(
        master_url=f"spark://127.0.0.1:{port}",
        web_url=f"http://127.0.0.1:{web_port}",
        work_dirs=[base / f"worker-{i}" for i in range(workers)],
    )
    try:
        cluster.daemons.append(
            _spawn(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(web_port),
                ],
                base / "master.log",
                env,
            )
        )
        for i, work in enumerate(cluster.work_dirs):
            work.mkdir()
            worker_env = {**env, "SPARK_LOCAL_DIRS": str(base / f"worker-{i}-local")}
            cluster.daemons.append(
                _spawn(
                    f"worker {i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        str(cores_per_worker),
                        "--memory",
                        memory_per_worker,
                        "--work-dir",
                        str(work),
                        cluster.master_url,
                    ],
                    base / f"worker-{i}.log",
                    worker_env,
                )
            )
        _wait_ready(cluster, workers)
        yield cluster
    finally:
        _stop(cluster.daemons)
