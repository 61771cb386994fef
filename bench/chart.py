"""Chart of the job benchmark: seconds per scenario step against partition count, one line
per mode, from the JSON files `job_bench.py --json` and `engine_bench.py --full --json` write.

    .venv/bin/python bench/chart.py bench/results/*.json --out bench/results/steps.png
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def _step(name: str, partitions: int) -> str:
    """A step's name with its sizes taken out, so runs of several sizes line up."""
    name = re.sub(r"\(leads \d+\)", "(leads P/B)", name.replace(str(partitions), "P"))
    return re.sub(r"^broker \d+ controlled shutdown", "broker controlled shutdown", name)


def load(paths: list[str]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Series from `job_bench.py --json` files and `engine_bench.py --full --json` files."""
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        partitions = doc["args"]["partitions"]
        buckets = doc["args"].get("buckets") or 0
        results = doc["results"] if "results" in doc else {"engine": [{**r, "step": r["phase"]} for r in doc["phases"]]}
        for mode, rows in results.items():
            label = f"{mode}, {buckets} buckets" if buckets and mode != "engine" else mode
            for row in rows:
                series.setdefault((label, _step(row["step"], partitions)), []).append((partitions, row["seconds"]))
    return series


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", default="bench/results/steps.png")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = load(args.results)
    steps = sorted({step for _, step in series if "register" not in step and "(empty)" not in step})
    fig, axes = plt.subplots(1, len(steps), figsize=(3.2 * len(steps), 3.4), sharey=False)
    for ax, step in zip(axes if len(steps) > 1 else [axes], steps):
        for (label, s), points in sorted(series.items()):
            if s != step:
                continue
            points.sort()
            ax.plot([p for p, _ in points], [t for _, t in points], marker="o", label=label)
        ax.set_title(step, fontsize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions")
        ax.grid(True, which="both", alpha=0.3)
    (axes[0] if len(steps) > 1 else axes).set_ylabel("seconds")
    handles, labels = (axes[0] if len(steps) > 1 else axes).get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
