"""Spark's Python workers import pyspark from site-packages (bin/spark_worker_path.py, which
bin/setup installs): Spark puts the pyspark package's own zip copy first on their path."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.spark


def _where(_: object) -> list[str]:
    import sys

    import py4j
    import pyspark

    zips = [p for p in sys.path if p.endswith(("pyspark.zip", "-src.zip"))]
    return [pyspark.__file__ or "", py4j.__file__ or "", *zips]


def test_a_worker_imports_pyspark_and_py4j_from_site_packages_not_the_zips(spark) -> None:
    pyspark_file, py4j_file, *zips = spark.sparkContext.parallelize([0], 1).map(_where).first()
    assert zips == [], "the worker's path still holds the zips"
    for f in (pyspark_file, py4j_file):
        assert ".zip" not in f and os.path.isfile(f), f
