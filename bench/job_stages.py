"""Where the Spark job's own Python work goes in one scenario step, without Spark (not a
test): the benchmark's log runs through the job's stages in one process, as
`streaming/batches.py` chains them, and the step's micro-batches (its events, then the
summaries' batches they lead to) are timed piece by piece: the sequencer, packing its work
into groups, unpacking it, the partition stage over each group (a bucket's state decoded,
the core, the records encoded and the decisions written as JSON), packing the outputs and
assembling the batch. Against `job_bench.py`'s batch time, the rest is Spark's; against
the engine's time, the difference is what the job adds to the core.

    .venv/bin/python bench/job_stages.py --step "controlled shutdown"
    .venv/bin/python bench/job_stages.py --step preferred --profile --top 15

`--step` matches a step's name in part, as `profile_engine.py --step` does. The stages run
under the job's collector policy (`streaming/collector.py`: fewer young passes, none while
a stage runs). With `--profile`, cProfile covers the step's batches and prints the top
items by own time; the pieces' seconds then include its overhead.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_bench import cluster_log
from shadow_controller.cli import Parser
from state_machines.loop import RawEvent, Sequencer
from state_machines.model import ControllerConfig
from streaming.assemble import assemble_batch
from streaming.batches import MemoryState
from streaming.collector import collect_less, paused
from streaming.packing import pack_groups, pack_outputs, unpack_outputs, unpack_work
from streaming.pipeline import read_feedback
from streaming.storage import fold_group, partition_storage

PIECES = ("sequencer", "pack work", "unpack work", "partition stage", "pack outputs", "assemble")


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = Parser(prog="job_stages.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--step", required=True, help='part of the step\'s name, e.g. "controlled shutdown"'
    )
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=10)
    ap.add_argument(
        "--buckets", type=int, default=64, help="scale mode's buckets (0: one group per partition)"
    )
    ap.add_argument("--profile", action="store_true", help="cProfile the step's batches")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    if args.partitions < 1:
        ap.error(f"--partitions {args.partitions}: at least 1")
    if args.brokers < 3:
        ap.error(f"--brokers {args.brokers}: at least 3 (replication factor 3)")
    if args.buckets < 0:
        ap.error(f"--buckets {args.buckets}: 0 or more")
    if args.top < 1:
        ap.error(f"--top {args.top}: at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    phases = cluster_log(args.brokers, args.partitions, 3, 100, full=True)
    names = [n for n in phases if args.step in n and not n.endswith("(empty)")]
    if not names:
        print(
            f"job_stages.py: no step matches {args.step!r}; steps: {', '.join(phases)}",
            file=sys.stderr,
        )
        return 2
    config = ControllerConfig()
    storage = partition_storage(args.buckets, shuffle_partitions=2)
    directory: dict = {}
    states: dict[str, MemoryState] = {}
    pending, buffer, feedback = None, [], []
    offset = 0
    collect_less()
    profile = cProfile.Profile()
    seconds = dict.fromkeys(PIECES, 0.0)
    for name, events in phases.items():
        step = name == names[0]
        lines = [json.dumps(e).encode() for e in events]
        batches, decisions = 0, 0
        chunk = [RawEvent(offset + i, line, f"line:{offset + i}") for i, line in enumerate(lines)]
        offset += len(lines)
        if step:
            gc.collect()
            if args.profile:
                profile.enable()
        # the step's events in one micro-batch, then the batches their feedback leads to
        while chunk or feedback:
            clock = time.perf_counter()
            with paused():
                seq = Sequencer(directory, config)
                pending, buffer = seq.run(pending, buffer, chunk, *read_feedback(feedback))
                clock = _lap(seconds, "sequencer", clock)
                groups = pack_groups(seq.work, storage.group)
            clock = _lap(seconds, "pack work", clock)
            packed: list[str] = []
            for group, texts in groups.items():
                work = unpack_work(texts)
                clock = _lap(seconds, "unpack work", clock)
                with paused():
                    outputs = fold_group(
                        storage, group, states.setdefault(group, MemoryState()), work, config
                    )
                clock = _lap(seconds, "partition stage", clock)
                packed.extend(pack_outputs(outputs))
                clock = _lap(seconds, "pack outputs", clock)
            batch = assemble_batch(unpack_outputs(packed))
            _lap(seconds, "assemble", clock)
            feedback = batch.assembled.reports
            decisions += len(batch.decisions)
            batches += 1
            chunk = []
        if not step:
            for piece in PIECES:
                seconds[piece] = 0.0
            continue
        profile.disable()
        total = sum(seconds.values())
        print(
            f"{name}: {len(events)} events, {batches} micro-batches, {decisions} decisions, "
            f"{total:.2f} s of the job's Python work ({args.partitions} partitions, "
            f"{args.brokers} brokers, "
            f"{args.buckets or 'per-partition'} buckets)"
        )
        for piece in PIECES:
            print(f"  {piece:16s} {seconds[piece]:7.2f} s")
        if args.profile:
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(args.top)
            print(out.getvalue().rstrip())
        return 0
    return 0  # pragma: no cover - a matching step always ends the loop


def _lap(seconds: dict[str, float], piece: str, since: float) -> float:
    now = time.perf_counter()
    seconds[piece] += now - since
    return now


if __name__ == "__main__":
    sys.exit(main())
