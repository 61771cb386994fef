"""A real standalone ZooKeeper per test (zk_server.py), a test cluster writing into it
(kafka_zk.py), and the bridge running against it in a thread (`RunningBridge`)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.zk_bridge import ZkBridgeSettings, run
from state_machines.model import ControllerConfig
from tests.zookeeper.kafka_zk import KafkaZkCluster
from tests.zookeeper.zk_server import ZOOKEEPER_JAR, ZooKeeperServer

# the test cluster's controller runs no automatic preferred election in these histories
CONFIG = ControllerConfig(auto_leader_rebalance_enable=False)


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    if not Path(ZOOKEEPER_JAR).exists() or shutil.which("java") is None:
        pytest.fail("Debian's zookeeper package is missing: run bin/setup (as root)")
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer) -> Iterator[KafkaZkCluster]:
    c = KafkaZkCluster(zookeeper.connect)
    yield c
    c.close()


class RunningBridge:
    """`shadow-controller bridge --zookeeper` in a thread, events and verdicts to files."""

    def __init__(
        self,
        connect: str,
        root: Path,
        config: ControllerConfig = CONFIG,
        missing_after_s: float = 60.0,
    ) -> None:
        self.root = root
        self.settings = ZkBridgeSettings(
            zookeeper=connect,
            state=str(root / "bridge-state.json"),
            events_file=str(root / "events.jsonl"),
            verdicts=str(root / "verdicts.jsonl"),
            timeout_s=10.0,
            config=config,
            missing_after_s=missing_after_s,
        )
        self.lines: list[str] = []
        self._stop = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            run(self.settings, stop=lambda: self._stop, out=self.lines.append)
        except BaseException as exc:  # surfaced by wait()
            self.error = exc

    def start(self) -> RunningBridge:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop = True
        self.thread.join(30)

    def verdicts(self) -> list[dict[str, Any]]:
        path = Path(self.settings.verdicts or "")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def events(self) -> list[dict[str, Any]]:
        path = Path(self.settings.events_file or "")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def checked(self) -> list[dict[str, Any]]:
        return [v for v in self.verdicts() if v["verdict"] in ("match", "benign", "safety")]

    def wait_checked(self, n: int, deadline_s: float = 60.0) -> list[dict[str, Any]]:
        """Until `n` state writes were checked (a condition with a deadline)."""
        deadline = time.monotonic() + deadline_s
        while True:
            if self.error is not None:
                raise self.error
            got = self.checked()
            if len(got) >= n:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(got)} writes checked, not {n}: {self.lines}")
            time.sleep(0.02)

    def wait_events(self, n: int, deadline_s: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + deadline_s
        while True:
            if self.error is not None:
                raise self.error
            got = self.events()
            if len(got) >= n:
                return got
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(got)} events, not {n}: {self.lines}")
            time.sleep(0.02)


@pytest.fixture
def bridge_at(tmp_path: Path) -> Iterator[Any]:
    started: list[RunningBridge] = []

    def start(connect: str, config: ControllerConfig = CONFIG, **kw: Any) -> RunningBridge:
        b = RunningBridge(connect, tmp_path, config, **kw).start()
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()
