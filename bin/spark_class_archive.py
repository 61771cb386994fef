"""Write the Spark driver's class-data-sharing archive (`streaming/class_archive.py` says
what it is for): start a session whose JVM runs with `-XX:ArchiveClassesAtExit`, run the
job in file mode over the demo's events, so that the classes a job loads are in it (the
rule sets differ in Python only), then end the JVM with System.exit (the JVM writes the
archive as it exits, and only then) and move the archive into place. bin/setup runs it; it
prints one line.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streaming.class_archive import OPTION, archive_path  # noqa: E402
from streaming.job import spark_session, start  # noqa: E402
from streaming.settings.schema import JobSettings  # noqa: E402

EVENTS = ROOT / "examples" / "three-brokers.jsonl"


def main() -> int:
    final = archive_path()
    final.unlink(missing_ok=True)  # a dynamic archive cannot be written on top of another
    with tempfile.TemporaryDirectory(prefix="spark-class-archive-") as tmp:
        partial = Path(tmp) / "classes.jsa"
        spark = spark_session(
            JobSettings(input="", output="", checkpoint=""),
            app_name="shadow-controller-class-archive",
            extra={OPTION: f"-XX:ArchiveClassesAtExit={partial}"},
            announce=lambda _path: None,
        )
        (Path(tmp) / "in").mkdir()
        (Path(tmp) / "in" / "events.jsonl").write_bytes(EVENTS.read_bytes())
        settings = JobSettings(
            input=f"file:{Path(tmp) / 'in'}",
            output=f"file:{Path(tmp) / 'out'}",
            checkpoint=str(Path(tmp) / "ckpt"),
        )
        query, _sink = start(spark, settings, available_now=True)
        query.processAllAvailable()
        query.stop()
        sc = spark.sparkContext
        jvm, gateway = sc._jvm, sc._gateway
        assert jvm is not None and gateway is not None
        # the accumulator server's reader meets the JVM's end: nothing to report
        sc._accumulatorServer.handle_error = lambda *_args: None  # type: ignore[union-attr]
        with contextlib.suppress(Exception):  # the JVM ends under py4j's call: expected
            jvm.java.lang.System.exit(0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            gateway.proc.wait(300)  # type: ignore[attr-defined]
        if not partial.is_file():
            print("setup: the Spark class archive was not written; runs start slower")
            os._exit(0)
        os.replace(partial, final)
    print(f"setup: Spark class archive written ({final.stat().st_size // 2**20} MiB)")
    sys.stdout.flush()
    os._exit(0)  # the session's JVM is gone: no stop() at exit


if __name__ == "__main__":
    sys.exit(main())
