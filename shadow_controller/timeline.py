"""`shadow-controller timeline --decisions PATH --partition TOPIC-P --out FILE.png`: one
partition's leadership over the log, as a chart for an incident review.

The series are the partition's states, one point per cause (event) that sent a LeaderAndIsr
for it or had an AlterPartition accepted: when one
cause sends several LeaderAndIsr requests (a request batch keeps only the last state per
broker, so brokers can be sent different states), the point is the newest state, the one
with the largest (partition epoch, leader epoch, seq). The cause's election is the most
telling election among its records (ELECTION_PRIORITY), so a cause with an unclean election
is marked unclean. Values hold until the next cause (step plots), up to
the last cause in the dataset.

A KRaft run's decisions are metadata records: the partition's registration is rebuilt
from its PartitionRecord and PartitionChangeRecords (`audit_kraft.partition_states`, as
`PartitionRegistration.merge` replays them), one point per cause with the state after its
last record; a leader elected from outside the ISR and the ELR is marked unclean.

A partition no state record names leaves nothing to draw: the command says so and exits
2, and writes no picture.
"""

from __future__ import annotations

import argparse
import difflib
import os
from typing import TYPE_CHECKING, Any

from streaming.exits import UsageError
from streaming.preflight import check_output_file

from .topic_partition import checked_partition, parse_topic_partition, partition_names

if TYPE_CHECKING:  # pandas is imported when a timeline is drawn, not for the CLI's parser
    import pandas as pd

SERIES_COLUMNS = [
    "cause_offset",
    "leader",
    "isr",
    "isr_size",
    "leader_epoch",
    "partition_epoch",
    "election",
    "cause_id",
    "record",
]
# Elections an incident review looks for, with how they are drawn: (label, colour, marker).
MARKED = {
    "unclean": ("unclean election", "#d62728", "X"),
    "offline": ("offline election", "#ff7f0e", "v"),
    "controlled_shutdown": ("controlled-shutdown election", "#9467bd", "D"),
}
NO_LEADER = -1
# A cause's records repeat its new state to further brokers without the election label, and
# one cause can hold more than one election (e.g. an offline election then a reassignment):
# the cause is labelled with the first of these it holds.
ELECTION_PRIORITY = (
    "unclean",
    "offline",
    "controlled_shutdown",
    "reassign",
    "preferred",
    "initial",
)


def partition_series(decisions: pd.DataFrame, topic: str, partition: int) -> pd.DataFrame:
    """What the chart draws: one row per cause that set the partition's state, in
    cause_offset order (columns SERIES_COLUMNS). The state comes from LeaderAndIsr records
    and from accepted AlterPartition requests (an `AlterPartitionResult` without error),
    which change the ISR and partition epoch without a LeaderAndIsr in ZK-era Kafka."""
    import pandas as pd

    if decisions.empty or "type" not in decisions:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    mine = decisions[(decisions["topic"] == topic) & (decisions["partition"] == partition)]
    accepted = mine["error"].isna() if "error" in mine else True
    states = mine[
        (mine["type"] == "LeaderAndIsr") | ((mine["type"] == "AlterPartitionResult") & accepted)
    ]
    rows = []
    for cause_offset, cause in states.groupby("cause_offset", sort=True):
        newest = cause.sort_values(["partition_epoch", "leader_epoch", "seq"]).iloc[-1]
        elections = set(cause["election"].dropna()) if "election" in cause else set()
        election = next(
            (e for e in ELECTION_PRIORITY if e in elections), min(elections, default=None)
        )
        cause_id = newest.get("cause_id")
        rows.append(
            {
                "cause_offset": int(cause_offset),
                "leader": int(newest["leader"]),
                "isr": list(newest["isr"]),
                "isr_size": len(newest["isr"]),
                "leader_epoch": int(newest["leader_epoch"]),
                "partition_epoch": int(newest["partition_epoch"]),
                "election": election,
                "cause_id": None if cause_id is None or cause_id != cause_id else str(cause_id),
                "record": str(newest["type"]),
            }
        )
    return pd.DataFrame(rows, columns=SERIES_COLUMNS)


def kraft_series(records: list[dict[str, Any]], topic: str, partition: int) -> pd.DataFrame:
    """`partition_series` of a KRaft run: the registration after each cause that wrote a
    PartitionRecord or PartitionChangeRecord for the partition (a change of a partition
    the input never created cannot be replayed and is left out)."""
    import pandas as pd

    from .audit_kraft import partition_states

    mine = [
        r
        for r in partition_states(records)
        if r["checked"]
        and r["type"] != "(no record)"
        and (r["topic"], r["partition"]) == (topic, partition)
    ]
    by_cause: dict[int, list[dict[str, Any]]] = {}
    for r in mine:
        by_cause.setdefault(r["cause_offset"], []).append(r)
    rows = []
    for cause_offset, rs in sorted(by_cause.items()):
        newest = rs[-1]
        rows.append(
            {
                "cause_offset": cause_offset,
                "leader": newest["leader"],
                "isr": list(newest["isr"]),
                "isr_size": len(newest["isr"]),
                "leader_epoch": newest["leader_epoch"],
                "partition_epoch": newest["partition_epoch"],
                "election": "unclean" if any(r["unclean"] for r in rs) else None,
                "cause_id": newest["cause_id"],
                "record": newest["type"],
            }
        )
    return pd.DataFrame(rows, columns=SERIES_COLUMNS)


def _steps(series: pd.DataFrame, column: str, x_end: int) -> tuple[list[int], list[int]]:
    """x and y for a post-step plot that holds the last value up to `x_end`."""
    xs = [*series["cause_offset"], x_end]
    ys = [*series[column], series[column].iloc[-1]]
    return xs, ys


def render(series: pd.DataFrame, out: str, title: str, x_end: int | None = None) -> None:
    """Draw the series to a PNG: leader (with no-leader spans shaded), ISR size, epochs,
    with the marked elections as points and vertical lines on every panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, (ax_leader, ax_isr, ax_epoch) = plt.subplots(
        3, 1, sharex=True, figsize=(12, 8), dpi=110, gridspec_kw={"height_ratios": [3, 1.4, 2]}
    )
    if series.empty:
        for ax in (ax_leader, ax_isr, ax_epoch):
            ax.axis("off")
        ax_leader.text(
            0.5,
            0.5,
            "no LeaderAndIsr or accepted AlterPartition for this partition",
            ha="center",
            va="center",
            transform=ax_leader.transAxes,
            fontsize=13,
        )
        fig.suptitle(title, fontsize=14, fontweight="bold")
        fig.savefig(out, format="png")
        plt.close(fig)
        return
    last = int(series["cause_offset"].iloc[-1])
    x_end = max(x_end if x_end is not None else last, last) + 1
    xs = list(series["cause_offset"]) + [x_end]

    # leader: brokers on their own rows, "no leader" on a row of its own below them
    brokers = sorted(
        {b for b in series["leader"] if b != NO_LEADER} | {b for isr in series["isr"] for b in isr}
    )
    none_y = (min(brokers) if brokers else 0) - 1
    lx, ly = _steps(series, "leader", x_end)
    ly = [none_y if v == NO_LEADER else v for v in ly]
    ax_leader.step(lx, ly, where="post", color="#1f77b4", linewidth=2.5)
    via_alter = (series["record"] == "AlterPartitionResult").tolist()
    ax_leader.scatter(
        [x for x, a in zip(series["cause_offset"], via_alter, strict=False) if not a],
        [y for y, a in zip(ly[:-1], via_alter, strict=False) if not a],
        s=30,
        color="#1f77b4",
        zorder=4,
    )
    ax_leader.scatter(
        [x for x, a in zip(series["cause_offset"], via_alter, strict=False) if a],
        [y for y, a in zip(ly[:-1], via_alter, strict=False) if a],
        s=40,
        facecolors="white",
        edgecolors="#1f77b4",
        linewidths=1.5,
        zorder=4,
    )
    for start, end, leader in zip(xs[:-1], xs[1:], series["leader"], strict=False):
        if leader == NO_LEADER:
            ax_leader.axvspan(start, end, color="#d62728", alpha=0.15, linewidth=0)
    ax_leader.set_yticks([none_y, *brokers])
    ax_leader.set_yticklabels(["no leader (-1)", *(f"broker {b}" for b in brokers)])
    ax_leader.get_yticklabels()[0].set_color("#d62728")
    ax_leader.set_ylim(none_y - 0.6, (max(brokers) if brokers else 0) + 0.6)
    ax_leader.set_ylabel("leader")
    ax_leader.grid(axis="y", alpha=0.3)

    ix, iy = _steps(series, "isr_size", x_end)
    ax_isr.step(ix, iy, where="post", color="#2ca02c", linewidth=2)
    ax_isr.fill_between(ix, iy, step="post", color="#2ca02c", alpha=0.15)
    previous = None
    for x, isr in zip(series["cause_offset"], series["isr"], strict=False):
        if isr != previous:  # name the members where they change
            ax_isr.annotate(
                "[" + ",".join(map(str, isr)) + "]",
                (x, len(isr)),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
                color="#1a661a",
            )
        previous = isr
    ax_isr.set_ylabel("ISR size")
    ax_isr.set_ylim(0, max(iy) + 1.2)
    ax_isr.yaxis.get_major_locator().set_params(integer=True)
    ax_isr.grid(axis="y", alpha=0.3)

    ex, ey = _steps(series, "leader_epoch", x_end)
    ax_epoch.step(ex, ey, where="post", color="#17becf", linewidth=2, label="leader epoch")
    px, py = _steps(series, "partition_epoch", x_end)
    ax_epoch.step(
        px, py, where="post", color="#8c564b", linewidth=2, linestyle="--", label="partition epoch"
    )
    ax_epoch.set_ylabel("epoch")
    ax_epoch.yaxis.get_major_locator().set_params(integer=True)
    ax_epoch.grid(axis="y", alpha=0.3)
    ax_epoch.legend(loc="upper left", fontsize=9)
    ax_epoch.set_xlabel("cause_offset (event offset in the controller-events log)")
    ax_epoch.xaxis.get_major_locator().set_params(integer=True)
    ax_epoch.set_xlim(xs[0] - 0.5, x_end)

    handles = [
        Line2D(
            [],
            [],
            color="#1f77b4",
            linewidth=2.5,
            marker="o",
            label="leader (KRaft partition records)"
            if series["record"].str.startswith("Partition").any()
            else "leader (LeaderAndIsr)",
        ),
        Patch(color="#d62728", alpha=0.15, label="no leader (-1)"),
    ]
    if any(via_alter):
        handles.insert(
            1,
            Line2D(
                [],
                [],
                color="#1f77b4",
                linestyle="",
                marker="o",
                markerfacecolor="white",
                label="accepted AlterPartition",
            ),
        )
    for election, (label, colour, marker) in MARKED.items():
        hits = series[series["election"] == election]
        if hits.empty:
            continue
        ys = [none_y if v == NO_LEADER else v for v in hits["leader"]]
        ax_leader.scatter(
            hits["cause_offset"],
            ys,
            s=140,
            marker=marker,
            color=colour,
            zorder=5,
            edgecolors="black",
            linewidths=0.6,
        )
        for x in hits["cause_offset"]:
            for ax in (ax_leader, ax_isr, ax_epoch):
                ax.axvline(x, color=colour, alpha=0.5, linestyle=":", linewidth=1.2)
        handles.append(
            Line2D(
                [],
                [],
                color=colour,
                marker=marker,
                linestyle=":",
                markersize=9,
                markeredgecolor="black",
                label=f"{label} ({len(hits)})",
            )
        )
    for x, y, cause_id in zip(series["cause_offset"], ly[:-1], series["cause_id"], strict=False):
        if cause_id:
            ax_leader.annotate(
                cause_id,
                (x, y),
                textcoords="offset points",
                xytext=(4, 7),
                fontsize=7,
                color="#444",
            )
    ax_leader.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False
    )
    fig.suptitle(title, fontsize=14, fontweight="bold")
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


def timeline(decisions_path: str, topic_partition: str, out: str) -> pd.DataFrame:
    """Read the decisions, draw the partition's timeline to `out`; returns the series drawn.
    A topic the decisions never name is refused (UsageError) before anything is drawn."""
    import pandas as pd

    from .audit_kraft import PARTITION_TYPES

    topic, partition = parse_topic_partition(topic_partition)
    check_output_file(out, "--out")
    records = _read_records(decisions_path)
    kraft = any(r["type"] in PARTITION_TYPES for r in records)
    decisions = pd.DataFrame(records)
    topics = set(decisions["topic"].dropna()) if "topic" in decisions else set()
    if not topics:
        raise UsageError(
            f"{topic_partition}: not in the decisions {decisions_path}, which name no partition"
        )
    if topic not in topics:
        close = difflib.get_close_matches(topic, sorted(topics), n=1)
        hint = (
            f"; did you mean {close[0]}-{partition}?"
            if close
            else f" (its topics: {', '.join(sorted(topics))})"
        )
        raise UsageError(
            f"{topic_partition}: not in the decisions {decisions_path}: no record names topic "
            f"{topic}{hint}"
        )
    series = (
        kraft_series(records, topic, partition)
        if kraft
        else partition_series(decisions, topic, partition)
    )
    if series.empty:
        kinds = (
            "PartitionRecord or PartitionChangeRecord"
            if kraft
            else "LeaderAndIsr or accepted AlterPartition"
        )
        raise UsageError(
            f"{topic_partition}: no {kinds} in {decisions_path} sets its state; nothing to draw"
        )
    x_end = (
        int(decisions["cause_offset"].max())
        if "cause_offset" in decisions and not decisions.empty
        else None
    )
    unclean = int((series["election"] == "unclean").sum()) if not series.empty else 0
    render(
        series,
        out,
        f"{topic_partition}: leadership over the log"
        f"  ({len(series)} state updates, unclean elections: {unclean})",
        x_end,
    )
    return series


def _read_records(path: str) -> list[dict[str, Any]]:
    from .audit_load import load_records

    if not os.path.exists(path):
        raise UsageError(f"{path}: no such decisions file or directory")
    try:
        return load_records(path)
    except ValueError as exc:  # a line that is not JSON
        raise UsageError(f"{path}: not JSON lines of decision records ({exc})") from None


def cmd_timeline(args: argparse.Namespace) -> int:
    [partition] = partition_names(args)
    series = timeline(args.decisions, partition, args.out)
    print(f"wrote {args.out}: {len(series)} causes for {partition}")
    return 0


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "timeline", help="draw one partition's leader, ISR and epochs over the log (PNG)"
    )
    p.add_argument(
        "--decisions",
        required=True,
        help="a decisions JSONL file, a file-output directory, or a topic dump",
    )
    p.add_argument(
        "--topic", help="the partition's topic; with it, --partition is a partition number"
    )
    p.add_argument(
        "--partition",
        required=True,
        metavar="TOPIC-P",
        type=checked_partition,
        help="the partition, as TOPIC-P (or a number with --topic)",
    )
    p.add_argument("--out", required=True, metavar="FILE.png")
    p.set_defaults(func=cmd_timeline)
