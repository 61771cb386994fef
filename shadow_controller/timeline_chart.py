"""The chart of `shadow-controller timeline` (timeline.py): one partition's series drawn to
a PNG with matplotlib (Agg, no display), three panels sharing the cause-offset axis: the
leader (no-leader spans shaded), the ISR size, the leader and partition epochs; the marked
elections as points and as vertical lines on every panel. Values hold until the next cause
(post-step plots), up to the last cause in the dataset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported when a timeline is drawn, not for the CLI's parser
    import pandas as pd


# Elections an incident review looks for, with how they are drawn: (label, colour, marker).
MARKED = {
    "unclean": ("unclean election", "#d62728", "X"),
    "offline": ("offline election", "#ff7f0e", "v"),
    "controlled_shutdown": ("controlled-shutdown election", "#9467bd", "D"),
}
NO_LEADER = -1


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
