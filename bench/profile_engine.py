"""Where the in-process engine spends a scenario step (not a test): cProfile over one
step of the benchmark's log, the earlier steps run unprofiled, the collector off inside
the step (as `engine_steps.py --no-gc`), and the top items by own time printed.

    .venv/bin/python bench/profile_engine.py --step "controlled shutdown" --top 12
    .venv/bin/python bench/profile_engine.py --step failover --partitions 1000000 --brokers 30

`--step` matches a step's name in part ("create", "failover", "fails", "controlled
shutdown", "returns", "preferred"); the first step matching it is profiled ("failover"
means the failover over the loaded cluster, not the empty one's).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine_bench import cluster_log
from state_machines.engine import Engine
from state_machines.events import parse_event


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--step", required=True, help='part of the step\'s name, e.g. "controlled shutdown"'
    )
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--brokers", type=int, default=10)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--sort", default="tottime", choices=("tottime", "cumulative"))
    args = ap.parse_args()
    phases = cluster_log(args.brokers, args.partitions, 3, 100, full=True)
    names = [n for n in phases if args.step in n and not n.endswith("(empty)")]
    if not names:
        print(
            f"profile_engine: no step matches {args.step!r}; steps: {', '.join(phases)}",
            file=sys.stderr,
        )
        return 2
    engine, offset = Engine(), 0
    for name, events in phases.items():
        envs = []
        for e in events:
            envs.append(parse_event(e, offset))
            offset += 1
        if name != names[0]:
            for env in envs:
                engine.process(env)
            continue
        gc.collect()
        gc.disable()
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        decisions = sum(len(engine.process(env)) for env in envs)
        profile.disable()
        seconds = time.perf_counter() - start
        gc.enable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
        print(
            f"{name}: {decisions} decisions, {seconds:.2f} s under the profiler "
            f"({1e6 * seconds / max(decisions, 1):.1f} us a decision)"
        )
        print(
            "\n".join(line for line in out.getvalue().splitlines() if line.strip())[
                -(args.top + 2) * 200 :
            ]
        )
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
