"""Fixtures shared by the Spark and broker tests: one SparkSession per test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# Every JVM the tests start (the session below, the jobs, clusters and ZooKeeper servers
# they run as processes) compiles with C1 only and collects with the parallel collector. A
# test's JVM lives a minute or two and Spark generates new classes for every query: C2's
# compile threads took about 40 % of a steady JVM's CPU and never paid back, and G1's
# concurrent threads cost more than they saved on these small heaps. Three Spark test files
# (controller metrics, the KRaft job, quiet output) on two workers: the machine's busy CPU
# 653 s as Java's defaults, 560 with C1 only, 471 with both; the wall time 333, 300, 254 s.
# The java launcher reads this variable; the note it prints goes to each JVM's log file.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC")

# OpenBLAS (numpy, which pandas imports) starts a thread per core in every process that
# imports it, and they spin before they sleep: in the full suite's 1,600 Python processes
# (Spark's workers and source runners, the commands the tests run) they took about 1 % of
# the machine's CPU (perf, every process sampled), for matrix routines nothing here calls.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# great_expectations (the audit) imports pyspark.sql.connect, whose check_dependencies exits
# the process (sys.exit(0), "Skipping doctests") when __main__ has neither a spec nor a file,
# which it takes for a doctest run. A pytest-xdist worker's __main__ is execnet's `python -c`
# bootstrap, so an audit test ended its worker. With the file name a `python -m pytest` run
# has, the worker imports great_expectations as any process does.
_main = sys.modules["__main__"]
if _main.__spec__ is None and not hasattr(_main, "__file__"):
    _main.__file__ = "<pytest-xdist worker>"


# The longest files (bin/test's slowest tests), taken first: the main run's two workers
# take files in collection order, and one of these left to the end kept a core idle for
# the last minute or two of the run. The other files keep their order.
FIRST = (
    "streaming/test_spark_file_mode.py",
    "integration/test_job_kafka_mode.py",
    "integration/test_job_golden.py",
    "streaming/test_kraft_job.py",
    "tools/test_fast_state.py",
)
TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = [name for name in FIRST if not (TESTS / name).is_file()]
    if missing:  # a renamed file would lose its place unnoticed
        raise pytest.UsageError(f"tests/conftest.py FIRST names no file: {missing}")
    rank = {name: i for i, name in enumerate(FIRST)}

    def place(item: pytest.Item) -> int:
        try:
            name = item.path.relative_to(TESTS).as_posix()
        except ValueError:
            return len(FIRST)
        return rank.get(name, len(FIRST))

    items.sort(key=place)  # stable


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from streaming.job import spark_session
    from streaming.settings.schema import JobSettings
    from streaming.spark_log import LOG_ENV

    # Spark's own output (streaming/spark_log.py) goes to this run's temporary directory,
    # not to a new file in the system's; only while the JVM starts, so that the commands
    # the tests run keep their own
    before = os.environ.get(LOG_ENV)
    os.environ[LOG_ENV] = str(tmp_path_factory.getbasetemp() / "spark.log")
    try:
        session = spark_session(
            JobSettings(input="", output="", checkpoint=""), app_name="shadow-controller-tests"
        )
    finally:
        if before is None:
            del os.environ[LOG_ENV]
        else:
            os.environ[LOG_ENV] = before
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
