"""A class-data-sharing archive of the Spark driver's classes, for the JVMs this environment
starts itself (local runs, the tools, the tests).

A JVM that starts Spark loads and verifies some twenty thousand classes from Spark's jars
before its first micro-batch: starting a session and counting ten rows took 13.7 CPU-seconds
of the JVM's, about half of it that. Java 17's dynamic CDS archive (JEP 350) holds those
classes already parsed and verified: a JVM started with `-XX:SharedArchiveFile` maps them
instead, and the same start took 6.3 to 7.6 CPU-seconds.

`bin/setup` writes the archive (`bin/spark_class_archive.py`: a small job run by a JVM with
`-XX:ArchiveClassesAtExit`, which writes it as it exits) to `ARCHIVE` in the environment's
prefix. `spark_session` passes it to the driver JVM it starts, through
`spark.driver.extraJavaOptions`, ahead of the user's own options (a later `-Xshare:off`
there turns it off). The JVM checks the archive against itself and its class path: after a
change of JDK or of Spark's jars it warns in the JVM's log and runs without it, slower
and otherwise the same. Under spark-submit, or on a cluster's executors, nothing changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ARCHIVE = "spark-classes.jsa"
OPTION = "spark.driver.extraJavaOptions"


def archive_path() -> Path:
    """Where `bin/setup` writes the archive: this environment's prefix (`.venv`)."""
    return Path(sys.prefix) / ARCHIVE


def with_archive(java_options: str | None) -> str | None:
    """The driver's extra Java options with the archive first, if there is one."""
    path = archive_path()
    if not path.is_file():
        return java_options
    option = f"-XX:SharedArchiveFile={path}"
    return f"{option} {java_options}" if java_options else option
