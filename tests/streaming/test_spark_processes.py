"""What bin/setup does for the processes Spark starts here: its Python workers import pyspark
from site-packages (bin/spark_worker_path.py; Spark puts the pyspark package's own zip copy
first on their path), and its driver JVM maps its classes from the class archive
(streaming/class_archive.py)."""

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


def test_the_driver_jvm_maps_its_classes_from_the_archive_bin_setup_wrote(spark) -> None:
    """`spark_session` hands the driver JVM the class archive (streaming/class_archive.py),
    and the archive is valid for this JVM and its class path: with `-Xshare:on` a java that
    cannot use it refuses to start."""
    import subprocess

    from streaming.class_archive import archive_path

    jvm = spark.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive_path()}" in args, args
    checked = subprocess.run(
        [
            f"{jvm.System.getProperty('java.home')}/bin/java",
            f"-XX:SharedArchiveFile={archive_path()}",
            "-Xshare:on",
            "-cp",
            jvm.System.getProperty("java.class.path"),
            "-version",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
