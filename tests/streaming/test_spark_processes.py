"""What bin/setup does for the processes Spark starts here: its Python workers import pyspark
from site-packages (bin/spark_worker_path.py; Spark puts the pyspark package's own zip copy
first on their path), and its driver JVM maps its classes from the class archive
(streaming/class_archive.py). And the processes it no longer starts: a `readlink` for each
checkpoint file renamed (streaming/job.py, CHECKPOINT_MANAGER)."""

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


@pytest.mark.archive
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


def test_the_query_writes_its_checkpoint_through_hadoops_file_system(spark, tmp_path) -> None:
    """The job's query renames its checkpoint files with the FileSystem manager; a user's own
    choice of manager (a `spark.` setting, `spark_session`'s `extra`) wins over it."""
    from streaming.job import CHECKPOINT_MANAGER, FILE_SYSTEM_MANAGER, spark_session, start
    from streaming.settings.schema import JobSettings
    from tests.streaming.spark_helpers import write_input

    write_input(tmp_path / "in", [b'{"type": "BrokerStartup", "broker_id": 0, "epoch": 1}'])
    settings = JobSettings(
        input=f"file:{tmp_path / 'in'}",
        output=f"file:{tmp_path / 'out'}",
        checkpoint=str(tmp_path / "ckpt"),
    )
    query, _ = start(spark, settings, available_now=True)
    try:
        query.processAllAvailable()
        # the session the query runs in: Spark's copy of ours, taken when it started
        assert query._jsq.sparkSession().conf().get(CHECKPOINT_MANAGER) == FILE_SYSTEM_MANAGER
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    assert (tmp_path / "ckpt" / "query" / "commits" / "0").is_file()

    theirs = FILE_SYSTEM_MANAGER.replace("FileSystemBased", "FileContextBased")
    same = spark_session(settings, extra={CHECKPOINT_MANAGER: theirs})
    try:
        assert same.conf.get(CHECKPOINT_MANAGER) == theirs
    finally:
        same.conf.set(CHECKPOINT_MANAGER, FILE_SYSTEM_MANAGER)
