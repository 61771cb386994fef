"""Chart of the benchmark records: per scenario step, seconds against partitions (log x,
10,000 to 1,000,000), the in-process engine beside the job (file mode, Kafka mode; the
brokers and scale mode's bucket count in the label), one PNG.

    # bench/results/*.json -> bench/results/steps.png
    .venv/bin/python bench/chart.py
    .venv/bin/python bench/chart.py RUN.json DIR ... --out steps.png

It reads the records `job_bench.py --record` writes (`record.py`), and also the documents of
`job_bench.py --json` and `engine_bench.py --full --json`. The time drawn is the step's wall
time, from its events being available to its last decision written (the figure `x engine`
divides). Several runs at one size and shape give their median. A step or a mode with no
run at some size has no point there; a step that no run has is left out.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shadow_controller.cli import Parser

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
X_RANGE = (10_000, 1_000_000)

Series = dict[tuple[str, str], dict[int, list[float]]]


class ChartError(Exception):
    pass


def _step(name: str, partitions: int) -> str:
    """A step's name with its sizes taken out, so runs of several sizes line up."""
    name = re.sub(r"\(leads \d+\)", "(leads P/B)", name.replace(str(partitions), "P"))
    return re.sub(r"^broker \d+ controlled shutdown", "broker controlled shutdown", name)


def _rows(doc: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(mode, step, seconds) of a record, a `job_bench --json` or an `engine_bench --json`
    document."""
    if "steps" in doc:
        return [
            (mode, s["step"], fig["seconds"])
            for s in doc["steps"]
            for mode, fig in s.items()
            if isinstance(fig, dict) and "seconds" in fig
        ]
    if "results" in doc:
        return [
            (mode, r["step"], r["seconds"]) for mode, rows in doc["results"].items() for r in rows
        ]
    return [("engine", r["phase"], r["seconds"]) for r in doc["phases"]]


def load(paths: list[Path]) -> Series:
    series: Series = {}
    for path in paths:
        try:
            doc = json.loads(path.read_text())
            partitions = int(doc["args"]["partitions"])
            brokers = doc["args"].get("brokers")
            buckets = doc["args"].get("buckets") or 0
            rows = _rows(doc)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ChartError(
                f"{path}: not a benchmark record ({type(exc).__name__}: {exc})"
            ) from None
        for mode, step, seconds in rows:
            # runs of other cluster shapes are other lines: with more brokers a broker event
            # reaches fewer partitions, and one median of both would be neither
            label = mode if brokers is None else f"{mode}, {brokers} brokers"
            if buckets and mode != "engine":
                label += f", {buckets} buckets"
            series.setdefault((label, _step(step, partitions)), {}).setdefault(
                partitions, []
            ).append(seconds)
    return series


def result_files(args: list[str]) -> list[Path]:
    files: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files += sorted(path.glob("*.json"))
        elif path.is_file():
            files.append(path)
        elif path.suffix == ".json":
            raise ChartError(f"{arg}: no such file")
        else:
            raise ChartError(
                f"no results in {arg}: no such directory (bench/job_bench.py --record writes them)"
            )
    if not files:
        raise ChartError(
            f"no results in {', '.join(args)} (bench/job_bench.py --record writes them)"
        )
    return files


def draw(series: Series, out: Path) -> int:
    """The PNG; returns the number of points drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = sorted({step for _, step in series if "register" not in step and "(empty)" not in step})
    if not steps:
        raise ChartError("the results hold no scenario step to draw")
    labels = sorted(
        {label for label, _ in series}, key=lambda lb: (not lb.startswith("engine"), lb)
    )
    colours = {label: f"C{i}" for i, label in enumerate(labels)}
    cols = min(3, len(steps))
    rows = -(-len(steps) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    drawn = 0
    for ax, step in zip(axes.flat, steps, strict=False):  # the grid may have spare cells
        for label in labels:
            points = sorted(
                (p, statistics.median(ts))
                for p, ts in series.get((label, step), {}).items()
                if statistics.median(ts) > 0
            )
            if points:
                ax.plot(
                    [p for p, _ in points],
                    [t for _, t in points],
                    marker="o",
                    color=colours[label],
                    linestyle="--" if label.startswith("engine") else "-",
                    label=label,
                )
                drawn += len(points)
        xs = [p for (_, s), by_size in series.items() if s == step for p in by_size]
        ax.set_xscale("log")
        ax.set_xlim(min([X_RANGE[0], *xs]) / 1.3, max([X_RANGE[1], *xs]) * 1.3)
        ax.set_yscale("log")
        ax.set_title(step, fontsize=9)
        ax.set_xlabel("partitions")
        ax.set_ylabel("seconds")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(steps) :]:
        ax.set_visible(False)
    fig.legend(
        *axes.flat[0].get_legend_handles_labels(), loc="lower center", ncol=len(labels), fontsize=8
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    except OSError as exc:
        raise ChartError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
    return drawn


def main(argv: list[str] | None = None) -> int:
    ap = Parser(
        prog="chart.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "results", nargs="*", help="record files or directories of them (default bench/results)"
    )
    ap.add_argument("--out", default=str(RESULTS_DIR / "steps.png"))
    args = ap.parse_args(argv)
    try:
        files = result_files(args.results or [str(RESULTS_DIR)])
        drawn = draw(load(files), Path(args.out))
    except ChartError as exc:
        print(f"chart.py: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {drawn} points from {len(files)} result files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
