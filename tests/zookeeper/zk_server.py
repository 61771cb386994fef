"""A standalone ZooKeeper 3.8 for the tests: Debian's `zookeeper` package's jars (bin/setup
installs it), its Java server started directly with a generated zoo.cfg, on a free
loopback port with its own data directory. `stop` and `start` again keep the port and the
data (an outage and a restart). Readiness is ZooKeeper's `srvr` four-letter word answering.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # its manifest's Class-Path names the rest
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"srvr")
            return b"Zookeeper version" in s.recv(4096)
    except OSError:
        return False


class ZooKeeperServer:
    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.cfg = root / "zoo.cfg"
        self.cfg.write_text(
            "\n".join(
                [
                    "tickTime=1000",
                    f"dataDir={self.data}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "maxClientCnxns=0",
                    # sessions may outlive a 30 s outage (the tests' clients ask for 60 s)
                    "maxSessionTimeout=120000",
                    "4lw.commands.whitelist=srvr,stat,ruok",
                    "admin.enableServer=false",
                    "",
                ]
            )
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, deadline_s: float = 60.0) -> None:
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", ZOOKEEPER_JAR, MAIN, str(self.cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "JAVA_TOOL_OPTIONS": ""},
        )
        log.close()
        deadline = time.monotonic() + deadline_s
        while not answers(self.port):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited ({self.proc.returncode}): "
                    + (self.root / "server.log").read_text()[-2000:]
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"ZooKeeper on {self.port} did not answer in {deadline_s} s")
            time.sleep(0.05)  # polling the condition, not waiting for it

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
