"""How long the read-only questions take on a small checkpoint, as a user runs them:
`health`, `inspect` and `what-if --restart-broker` through the installed command line, each
a process of its own, timed from start to exit (issue 47: they start Spark, 11-16 s each on
a 4-partition checkpoint; the bar is 3 s).

The checkpoint is made once by `shadow-controller run --available-now` over a small story
(three brokers, a 4-partition topic, a broker failure), unless `--checkpoint` names one.

    .venv/bin/python -m bench.read_only_tools --repeat 3 --record

`--record` writes the figures as JSON under bench/results/read_only_tools/.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.record import RESULTS_DIR, commit, machine

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("shadow-controller"))

STORY = [
    {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 1},
    {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 2},
    {"type": "BrokerStartup", "broker_id": 3, "broker_epoch": 3},
    {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
    {
        "type": "TopicCreation",
        "topic": "orders",
        "partitions": {"0": [1, 2], "1": [2, 3], "2": [3, 1], "3": [3]},
        "configs": {"min.insync.replicas": "2"},
    },
    {"type": "BrokerFailure", "broker_id": 2},
]


def make_checkpoint(base: Path) -> Path:
    """The story run by the job in file mode: its checkpoint."""
    (base / "in").mkdir(parents=True)
    lines = "".join(json.dumps({"v": 1, **e}) + "\n" for e in STORY)
    (base / "in" / "0000.jsonl").write_text(lines)
    ckpt = base / "ckpt"
    done = subprocess.run(
        [
            CLI,
            "run",
            "--available-now",
            "--set",
            f"job.input=file:{base / 'in'}",
            "--set",
            f"job.output=file:{base / 'out'}",
            "--set",
            f"job.checkpoint={ckpt}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"the job did not make the checkpoint: {done.stderr.strip()[-400:]}")
    return ckpt


def questions(ckpt: Path) -> dict[str, list[str]]:
    return {
        "health": [CLI, "health", "--checkpoint", str(ckpt)],
        "inspect": [CLI, "inspect", "--checkpoint", str(ckpt)],
        "what-if": [CLI, "what-if", "--checkpoint", str(ckpt), "--restart-broker", "3"],
    }


def timed(argv: list[str]) -> tuple[float, int]:
    """Seconds from start to exit, and the exit code (what-if's verdict is one)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 6, 7):  # health's and what-if's verdicts
        sys.exit(f"{' '.join(argv[1:3])} failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, done.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", help="a checkpoint to ask (default: the story's, made here)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each question (default 3)")
    ap.add_argument("--label", default="", help="a word for the record (e.g. before, after)")
    ap.add_argument("--record", action="store_true", help="write the figures as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="read-only-tools-") as tmp:
        ckpt = Path(args.checkpoint) if args.checkpoint else make_checkpoint(Path(tmp))
        figures: dict[str, Any] = {}
        for name, cmd in questions(ckpt).items():
            runs = [timed(cmd) for _ in range(args.repeat)]
            seconds = [round(s, 2) for s, _ in runs]
            figures[name] = {
                "seconds": seconds,
                "best": min(seconds),
                "median": statistics.median(seconds),
                "exit": runs[-1][1],
            }
            print(
                f"{name:8} best {min(seconds):6.2f} s  median {statistics.median(seconds):6.2f} s"
                f"  runs {seconds}  exit {runs[-1][1]}"
            )
    if args.record:
        doc = {
            "format": 1,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "label": args.label,
            "commit": commit(),
            "machine": machine(),
            "args": {
                "repeat": args.repeat,
                "checkpoint": "story" if not args.checkpoint else "given",
            },
            "questions": figures,
        }
        out = RESULTS_DIR / "read_only_tools"
        out.mkdir(parents=True, exist_ok=True)
        stamp = doc["recorded_at"].replace("-", "").replace(":", "")
        path = out / f"{stamp}-{args.label or 'run'}.json"
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"recorded: {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
