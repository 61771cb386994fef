"""The in-process engine's scenario steps, timed in one process, for comparing two trees
(not a test). `job_bench.py --modes engine` times the same steps under `simulate`'s
collector policy (`streaming/collector.process_settled`: no cyclic collection inside an
event, the state frozen after it); here each step starts from a collected heap, and
`--no-gc` turns the cyclic collector off inside the step, so the figure is the core's own
work. Without it more than half of an engine step at 100,000 partitions can be the
collector's, and where its full collections land moves from step to step between two
trees that allocate differently.

    .venv/bin/python bench/engine_steps.py --root /path/to/other/tree --no-gc --json out.json

`--root` picks the tree whose `state_machines` is timed (default: this one).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--root", default=str(Path(__file__).resolve().parents[1]), help="the tree to time"
    )
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=10)
    ap.add_argument("--no-gc", action="store_true", help="no cyclic collection inside a step")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    from bench.engine_bench import cluster_log
    from state_machines.engine import Engine
    from state_machines.events import parse_event

    phases = cluster_log(args.brokers, args.partitions, 3, 100, full=True, shutdown_broker=None)
    engine, rows, offset = Engine(), [], 0
    for name, events in phases.items():
        envs = []
        for e in events:
            envs.append(parse_event(e, offset))
            offset += 1
        gc.collect()
        if args.no_gc:
            gc.disable()
        start = time.perf_counter()
        decisions = sum(len(engine.process(env)) for env in envs)
        seconds = time.perf_counter() - start
        gc.enable()
        rows.append(
            {"step": name, "events": len(events), "decisions": decisions, "seconds": seconds}
        )
        print(f"{name:48s} {decisions:9d} decisions {seconds:8.2f} s", flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"root": args.root, "no_gc": args.no_gc, "results": {"engine": rows}})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
