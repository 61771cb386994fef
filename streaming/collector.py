"""The cyclic collector's policy for a process that holds a controller's state.

Python's cyclic collector walks every tracked container it has not been told to ignore. A
controller's state is hundreds of thousands of long-lived records (a partition's record,
its registration, the directory's), and a fan-out allocates millions of short-lived
containers that reference counting frees at once. With the default thresholds the young
passes find nothing, promote what is still in use, and every few of them a full
collection walks the whole state again: at 100,000 partitions that is about half of the
in-process engine's time on a broker event (`bench/profile_engine.py` shows the core
without it; `bench/engine_steps.py --no-gc` times it).

Three measures, all the process's, never the core's (`state_machines/` stays free of them):

* `collect_less`: a young pass every 20,000 net allocations instead of 700. The Spark job's
  workers run with it (each stage calls it: Spark's Python workers run no code of ours before).
  The first call in a process also settles what the process has imported by then (below):
  a reused worker ends every task with a full `gc.collect()` (pyspark's `daemon.py`), which
  walked pyspark's, pandas', pyarrow's and our modules' objects each time, about 0.14 s of
  CPU a task, two thirds of the Python workers' CPU in a small job's micro-batches
  (py-spy over `tests/streaming/test_spark_file_mode.py`'s generated-log run).
* `paused`: no cyclic collection while a stage runs a batch (the sequencer's whole batch:
  reading the feedback and the directory, the core, the writes, the packing and the
  gauges). What the core allocates is freed by reference counting (no cycles, as below),
  yet the passes walk it, and a full one walks the state the worker keeps too: at
  1,000,000 partitions they took 0.7 to 1.6 s of each sequencer batch (timed with
  `gc.callbacks` inside the worker) while only the core ran paused, and pausing the rest
  of the batch as well took 0.2 to 0.9 s more off each step's sequencer batches in one
  process (failover 3.26 -> 2.78 s, controlled shutdown 1.67 -> 1.28, preferred election
  3.39 -> 2.83).
  Whatever cycles the batch leaves (Spark's and pandas' objects) are collected once it
  ends, as before.
* `settle`: after an event, everything still alive is the controller's state (or the
  caller's); `gc.freeze` moves it out of the collector's generations, so later passes walk
  only what later events allocate. Frozen objects are still freed by reference counting;
  only a reference cycle among them would never be collected, and the core makes none (its
  values are frozen dataclasses and tuples).

The in-process engine's runners (`simulate`, the benchmarks) run each event as the job's
stages run a batch (`process_settled`): fewer young passes, none while the core runs, and
the state settled after it. At 1,000,000 partitions the passes were a third to half of
the engine's time on a broker event (failover 48.0 -> 34.6 s, controlled shutdown 7.8 ->
4.7 s, return 34.1 -> 19.0 s; the two policies side by side in one run), and pausing them
is also what makes the engine and the job's stages comparable in the benchmarks.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator
from typing import Any

from state_machines.engine import Engine
from state_machines.events import Envelope

GC_THRESHOLDS = (20_000, 10, 10)

_imports_settled = False  # per process: a worker the daemon forks starts with False


def collect_less() -> None:
    """Set this process's collector thresholds to `GC_THRESHOLDS`; the first call in a
    process also collects once and settles what is alive (its imports, at a stage's first
    task: nothing of a batch's is alive before the stage's code runs)."""
    global _imports_settled
    if not _imports_settled:
        _imports_settled = True
        gc.collect()
        settle()
    if gc.get_threshold() != GC_THRESHOLDS:
        gc.set_threshold(*GC_THRESHOLDS)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; the collector as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def settle() -> None:
    """What is alive now is state: take it out of the collector's generations."""
    gc.freeze()


def process_settled(engine: Engine, envelope: Envelope) -> list[dict[str, Any]]:
    """`Engine.process` under this module's policy: no cyclic collection while the core
    runs the event, and the state settled after it (the caller sets `collect_less` once)."""
    with paused():
        records = engine.process(envelope)
    settle()
    return records


def run_settled(engine: Engine, envelopes: Iterable[Envelope]) -> Iterator[dict[str, Any]]:
    """`Engine.run` under this module's policy: fewer young passes, none while the core
    runs an event, and the state settled after every event."""
    collect_less()
    for envelope in envelopes:
        yield from process_settled(engine, envelope)
