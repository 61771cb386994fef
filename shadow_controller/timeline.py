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

The chart is timeline_chart.py's. A partition no state record names leaves nothing to
draw: the command says so and exits 2, and writes no picture.
"""

from __future__ import annotations

import argparse
import difflib
import os
from typing import TYPE_CHECKING, Any

from streaming.exits import UsageError
from streaming.preflight import check_output_file

from .timeline_chart import render
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
