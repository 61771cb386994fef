"""Fixtures shared by the Spark and broker tests: one SparkSession per test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


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
