"""The partitions' fold of each scenario step, replayed on recorded inputs (not a test).

The engine runs the benchmark's log once and keeps every `fold_partition` call of each
step (the slot and the work it was given). Each step's calls are then replayed `--repeat`
times on their recorded inputs, the cyclic collector off, and the fastest pass is printed
as microseconds a fold, with a digest of everything the fold replied (decisions,
UpdateMetadata pieces, shutdown shares, summaries, reports, dead letters, outcomes).

A step of `engine_steps.py` moves 10-20 % from run to run on this machine; the replayed
fold moves less, as it leaves out the sequencer, the merge and the heap's history. Two
trees whose digests agree made the same replies, so a change of the core can be timed
and checked in one go:

    .venv/bin/python bench/fold_steps.py --root /path/to/other/tree
    .venv/bin/python bench/fold_steps.py --partitions 100000 --brokers 30 --repeat 3

`--root` picks the tree whose `state_machines` is replayed (default: this one).
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shadow_controller.cli import Parser


def main() -> int:
    ap = Parser(prog="fold_steps.py", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--root", default=str(Path(__file__).resolve().parents[1]), help="the tree to replay"
    )
    ap.add_argument("--partitions", type=int, default=30_000)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=5, help="passes per step; the fastest is printed")
    args = ap.parse_args()
    if not (Path(args.root) / "state_machines" / "fold.py").is_file():
        ap.error(f"--root {args.root}: no state_machines/fold.py there")
    if args.partitions < 1 or args.repeat < 1:
        ap.error("--partitions and --repeat must be at least 1")
    if args.brokers < 3:
        ap.error(f"--brokers {args.brokers}: the log's topics have 3 replicas")
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    # The parser (shadow_controller.cli) has imported this tree's core already, and a package once
    # imported is not looked up on the path again: forget it, or `--root` would replay
    # this tree whatever it names.
    for name in [m for m in sys.modules if m.partition(".")[0] in ("state_machines", "bench")]:
        del sys.modules[name]
    from bench.engine_bench import cluster_log
    from state_machines import engine
    from state_machines.events import parse_event
    from state_machines.fold import Replies, fold_partition

    print(f"replaying {Path(engine.__file__).resolve().parent}", flush=True)

    recorded: list = []

    def recording(slot, work, config, replies):  # type: ignore[no-untyped-def]
        recorded.append((slot, work, config))
        return fold_partition(slot, work, config, replies)

    engine.fold_partition = recording  # type: ignore[assignment]
    phases = cluster_log(args.brokers, args.partitions, 3, 100, full=True, shutdown_broker=None)
    eng, offset = engine.Engine(), 0
    for name, events in phases.items():
        recorded.clear()
        for e in events:
            eng.process(parse_event(e, offset))
            offset += 1
        if not recorded:
            continue
        calls = list(recorded)
        best = float("inf")
        for _ in range(args.repeat):
            gc.collect()
            gc.disable()
            replies = Replies()
            start = time.perf_counter()
            for slot, work, config in calls:
                fold_partition(slot, work, config, replies)
            best = min(best, time.perf_counter() - start)
            gc.enable()
        digest = hashlib.sha1()
        for part in (
            replies.decisions,
            replies.metadata,
            replies.still,
            replies.summaries,
            replies.reports,
            replies.dead_letters,
            replies.outcomes,
        ):
            digest.update(repr(part).encode())
        print(
            f"{name:44s} {len(calls):8d} folds {len(replies.decisions):9d} decisions "
            f"{best * 1e6 / len(calls):8.2f} us a fold  replies {digest.hexdigest()[:12]}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader (`| head`) left: what it read was complete lines
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
