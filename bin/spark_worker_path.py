"""bin/setup copies this module into .venv's site-packages, beside a one-line .pth that
imports it when any of the venv's interpreters starts.

Spark starts every Python process it needs (the workers, the streaming sources' runners,
transformWithState's driver worker, the data-source planners) with PYTHONPATH set to
SPARK_HOME's python/lib/pyspark.zip and py4j's zip ahead of everything else
(`PythonUtils.sparkPythonPath`, `PythonWorkerFactory`). Installed from PyPI, SPARK_HOME is
the pyspark package itself, so the zips hold the very modules site-packages holds, but
without compiled files: each new process compiled pyspark from source (importing the
streaming source's runner took 1.36 CPU-seconds from the zip, 0.38 from site-packages), and
every task's `importlib.invalidate_caches()` re-read the zip's index.

This drops those two zips from sys.path, and only when they are this site-packages' own
pyspark's (the same files, so the same version): a cluster whose SPARK_HOME is another Spark
keeps its zips.
"""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_lib = os.path.realpath(os.path.join(_here, "pyspark", "python", "lib"))


def _own_zip(entry: str) -> bool:
    return entry.endswith(".zip") and os.path.dirname(os.path.realpath(entry)) == _lib


if os.path.isdir(_lib) and any(_own_zip(p) for p in sys.path):
    sys.path[:] = [p for p in sys.path if not _own_zip(p)]
    for _entry in [p for p in sys.path_importer_cache if _own_zip(p)]:
        del sys.path_importer_cache[_entry]
