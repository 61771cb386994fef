"""Fixtures shared by the Spark and broker tests: one SparkSession per test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# great_expectations (the audit) imports pyspark.sql.connect, whose check_dependencies exits
# the process (sys.exit(0), "Skipping doctests") when __main__ has neither a spec nor a file,
# which it takes for a doctest run. A pytest-xdist worker's __main__ is execnet's `python -c`
# bootstrap, so an audit test ended its worker. With the file name a `python -m pytest` run
# has, the worker imports great_expectations as any process does.
_main = sys.modules["__main__"]
if _main.__spec__ is None and not hasattr(_main, "__file__"):
    _main.__file__ = "<pytest-xdist worker>"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from streaming.job import spark_session
    from streaming.settings.schema import JobSettings

    session = spark_session(
        JobSettings(input="", output="", checkpoint=""), app_name="shadow-controller-tests"
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """bin/test's main pass hands tests to its xdist workers one at a time (`--dist
    loadgroup`), so a long file no longer runs alone on one worker at the end of the pass
    while the others wait. Two kinds of test are kept together (`xdist_group`):

    - the `slow` ones (each runs the job as a process, or a cluster, for minutes) run one
      after another on one worker, beside the other workers' tests, never two at once;
    - a test that uses a module-scoped fixture (a checkpoint all of its module's tests
      read, test_bad_usage's environment) stays with the rest of its module on one worker,
      so that fixture is still built once."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or not isinstance(item, pytest.Function):
            continue
        defs = [d for chain in info.name2fixturedefs.values() for d in chain]
        if item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.xdist_group("slow"))
        elif any(d.scope == "module" for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
