"""Where Spark's own output goes: to a log file, not between a command's lines.

A command prints what the user asked for (issue 44, "the first impression"). Spark's JVM
writes its log4j lines (WARNs at start-up and during a query) to its stderr, and the
Python workers it forks inherit that stderr: the transform-with-state worker prints five
"Streaming TransformWithStateInPandas Python worker ..." lines whenever a query starts
(pyspark/sql/streaming/transform_with_state_driver_worker.py). So the one call that starts
the JVM (pyspark's `launch_gateway`, which takes Popen arguments the session builder does
not pass) is wrapped: the JVM's stdout and stderr, and with them its Python workers', go
to a log file whose path the command prints once. `--verbose` (`set_verbose`) brings them
back to the terminal, less the workers' chatter.

The JVM may also start in a session of its own (`own_session`, for `run`): a signal to the
driver's process group must then not reach the JVM and its Python workers, which would end
the running batch before the driver could commit or abandon it; the JVM still ends with the
driver (it exits when its stdin, a pipe from the driver, closes).

Under spark-submit the JVM was there first (PYSPARK_GATEWAY_PORT) and logs where
spark-submit's configuration says: nothing is wrapped then.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

# a path for Spark's log instead of one of LOG_DIR's (tests and services may choose it)
LOG_ENV = "SHADOW_CONTROLLER_SPARK_LOG"
LOG_DIR = Path(tempfile.gettempdir()) / "shadow-controller-logs"

# What pyspark's transform-with-state worker prints whenever a query starts: five lines,
# each followed by an empty one; not shown even with --verbose
WORKER_CHATTER = (
    b"Starting Streaming TransformWithStateInPandas Python worker",
    b"Streaming TransformWithStateInPandas Python worker ",
)

_verbose = False


def set_verbose(verbose: bool) -> None:
    """`--verbose`: Spark's output on this process's stderr instead of a log file."""
    global _verbose
    _verbose = verbose


def is_verbose() -> bool:
    return _verbose


def log_path(app_name: str) -> Path:
    """The file for this process's Spark output: $SHADOW_CONTROLLER_SPARK_LOG, or a new
    file in LOG_DIR named after the application, the time and the process."""
    chosen = os.environ.get(LOG_ENV)
    if chosen:
        return Path(chosen)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return LOG_DIR / f"{app_name}-{stamp}-{os.getpid()}.log"


def _say_where(path: Path) -> None:
    print(f"Spark's log: {path} (--verbose shows it here)", file=sys.stderr, flush=True)


@contextlib.contextmanager
def jvm_output(
    app_name: str,
    own_session: bool = False,
    announce: Callable[[Path], None] | None = None,
) -> Iterator[None]:
    """Within this block, a JVM that pyspark starts writes to a log file (or, verbose, to
    our stderr less WORKER_CHATTER), in a session of its own if `own_session`. `announce`
    is told the log file's path once, as the JVM starts (default: one line on stderr); no
    JVM started, no file."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        yield
        return
    # pyspark.core.context imports launch_gateway by name and calls it from there
    context: Any = importlib.import_module("pyspark.core.context")
    launch: Callable[..., Any] = context.launch_gateway

    def launch_quietly(conf: Any = None, popen_kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(popen_kwargs or {})
        if own_session:
            kwargs["start_new_session"] = True
        if _verbose:
            kwargs["stderr"] = subprocess.PIPE
            gateway = launch(conf, kwargs)
            threading.Thread(
                target=forward_without_chatter,
                args=(gateway.proc.stderr, sys.stderr),
                name="jvm-stderr",
                daemon=True,
            ).start()
            return gateway
        path = log_path(app_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        (announce or _say_where)(path)  # first: a JVM that fails to start says why there
        with open(path, "ab") as log:  # the JVM keeps its own descriptor
            kwargs["stdout"] = log
            kwargs["stderr"] = subprocess.STDOUT
            return launch(conf, kwargs)

    context.launch_gateway = launch_quietly
    try:
        yield
    finally:
        context.launch_gateway = launch


def forward_without_chatter(stream: IO[bytes], out: Any) -> None:
    """Copy the JVM's stderr to `out`, line by line, less WORKER_CHATTER. Keeps reading
    whatever happens: a full pipe would stop the JVM."""
    after_chatter = False
    for line in iter(stream.readline, b""):
        if line.startswith(WORKER_CHATTER) or (after_chatter and not line.strip()):
            after_chatter = True
            continue
        after_chatter = False
        with contextlib.suppress(Exception):
            if hasattr(out, "buffer"):
                out.flush()
                out.buffer.write(line)
            else:
                out.write(line.decode(errors="replace"))
            out.flush()
