"""What a command checks before it starts Spark or writes anything: files, the checkpoint,
the broker. Each check raises the error (`exits.py`) that names the problem in one line,
so a mistake costs seconds, not a JVM start-up and a stack trace."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from .exits import Unreachable, UsageError
from .settings.checkpoint import check_frozen, check_source
from .settings.schema import JobSettings

BROKER_TIMEOUT_S = 10.0

# librdkafka logs every failed connection attempt (dozens of lines a second against a dead
# broker); the check reports its outcome as one line instead. The clients' own logs can be
# seen by setting this logger to DEBUG.
CLIENT_LOG = logging.getLogger("shadow_controller.librdkafka")
CLIENT_LOG.setLevel(logging.CRITICAL)
CLIENT_LOG.propagate = False


def quiet_client(config: Mapping[str, Any]) -> dict[str, Any]:
    """A confluent-kafka client config whose librdkafka log goes to CLIENT_LOG."""
    return {"log_level": 0, **config, "logger": CLIENT_LOG}


def check_broker(
    bootstrap_servers: str,
    setting: str,
    options: Mapping[str, Any] | None = None,
    timeout_s: float = BROKER_TIMEOUT_S,
) -> None:
    """Ask the cluster for its metadata; Unreachable unless it answers within `timeout_s`.
    `setting` is what the user sets the address with (named in the error)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    if not bootstrap_servers.strip():
        raise UsageError(f"{setting} is empty: give the Kafka bootstrap servers as HOST:PORT")
    try:
        admin = AdminClient(
            quiet_client({**(options or {}), "bootstrap.servers": bootstrap_servers})
        )
    except (KafkaException, TypeError, ValueError) as exc:
        raise UsageError(
            f"the Kafka client refuses its configuration: {exc}; check kafka.options"
        ) from None
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException:
        raise Unreachable(
            f"cannot reach Kafka at {bootstrap_servers} within {timeout_s:g}s; check {setting} "
            f"and that the broker is up"
        ) from None


def check_readable_file(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such {what}")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a {what}")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: cannot read the {what} (permission denied)")


def check_output_file(path: str, flag: str) -> None:
    """A file the command will write: its directory must exist."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: a directory, not a file")
    if not os.path.isdir(directory):
        raise UsageError(f"{flag} {path}: no such directory {directory}")


def check_metadata_log_dir(path: str) -> None:
    """`metadata-log:DIR`: DIR must be a directory the job can read (it never writes it);
    with no segments in it yet, the job waits for them, and says so once."""
    from .metadata_log_source import partition_dir, segments

    if not os.path.isdir(path):
        what = "not a directory" if os.path.exists(path) else "no such directory"
        raise UsageError(f"job.input metadata-log:{path}: {what}")
    directory = partition_dir(path)
    if not os.access(directory, os.R_OK | os.X_OK):
        raise UsageError(f"job.input metadata-log:{path}: cannot read it (permission denied)")
    if not segments(directory):
        logging.getLogger("shadow_controller.job").warning(
            "%s holds no metadata-log segment (<20-digit base offset>.log) yet: waiting for one",
            directory,
        )


def check_run(settings: JobSettings) -> None:
    """Everything `run` refuses before Spark starts: a checkpoint laid out or recorded under
    other settings, a missing input directory, a broker that does not answer."""
    if os.path.exists(settings.checkpoint) and not os.path.isdir(settings.checkpoint):
        raise UsageError(f"job.checkpoint {settings.checkpoint}: a file, not a directory")
    check_frozen(settings, settings.checkpoint)
    check_source(settings, settings.checkpoint)
    if settings.input.startswith("file:") and not os.path.isdir(settings.input[5:]):
        raise UsageError(f"job.input {settings.input}: no such directory")
    if settings.input.startswith("metadata-log:"):
        check_metadata_log_dir(settings.input[13:])
    if "kafka" in (settings.input, settings.output):
        check_broker(settings.bootstrap_servers, "kafka.bootstrap_servers", settings.kafka_options)
