"""The audit's rules over the ZK controller's decisions: its LeaderAndIsr records, per
partition, in (cause_offset, seq) order (audit.py runs them; audit_kraft.py holds KRaft's).

Two Kafka facts shape the rules: one request batch keeps only the last state per broker
(`ControllerChannelManager`'s `AbstractControllerBrokerRequestBatch`, apache/kafka 3.9.0),
so within one cause a broker can be sent an older state than another (the rules compare a
cause's newest state with the previous cause's); and a deleted and re-created topic starts
again at epoch 0 (an `initial` election starts a new generation).
"""

from __future__ import annotations

from typing import TextIO

import pandas as pd

from .audit_load import progress_bar

RULES = {
    "leader_in_isr_unless_unclean": "the leader (when not -1) is in the ISR unless the "
    "election is unclean",
    "isr_within_replicas": "after each cause, the ISR is within the replicas (except Kafka's "
    "last member kept with leader -1)",
    "leader_epoch_never_decreases": "a partition's leader epoch never decreases from one cause "
    "to the next",
    "one_leader_per_epoch": "one leader per (partition, leader epoch)",
    "partition_epoch_increases_on_change": "a changed partition state has a strictly larger "
    "partition epoch",
}


def invariant_frame(
    decisions: pd.DataFrame, progress: TextIO | None = None, progress_delay: float = 0.5
) -> pd.DataFrame:
    """One row per LeaderAndIsr record with one boolean column per rule; with a `progress`
    stream, a bar over the partitions (the per-cause rules are the slow part)."""
    lair = (
        decisions[decisions["type"] == "LeaderAndIsr"].copy()
        if "type" in decisions
        else pd.DataFrame()
    )
    if lair.empty:
        return pd.DataFrame({rule: pd.Series(dtype=bool) for rule in RULES})
    lair = lair.sort_values(["topic", "partition", "cause_offset", "seq"]).reset_index(drop=True)
    lair["isr_set"] = lair["isr"].map(frozenset)
    lair["leader_in_isr_unless_unclean"] = [
        leader == -1 or leader in isr or election == "unclean"
        for leader, isr, election in zip(
            lair["leader"], lair["isr_set"], lair["election"], strict=False
        )
    ]
    lair["generation"] = (
        (lair["election"] == "initial").groupby([lair["topic"], lair["partition"]]).cumsum()
    )
    keys = ["topic", "partition", "generation"]
    ok_isr, ok_le, ok_pe = [], [], []
    groups = lair.groupby(keys, sort=False)
    bar = progress_bar(
        progress, groups.ngroups, "checking partitions", progress_delay, unit=" partitions"
    )
    for _, part in groups:
        if bar is not None:
            bar.update()
        prev_state = None
        prev_le = prev_pe = -1
        for _, cause in part.groupby("cause_offset", sort=True):
            newest = cause.loc[cause["partition_epoch"].idxmax()]
            state = (
                newest["leader"],
                newest["leader_epoch"],
                newest["isr_set"],
                newest["leader_recovery_state"],
            )
            isr_ok = newest["isr_set"] <= set(newest["replicas"]) or (
                len(newest["isr_set"]) == 1 and newest["leader"] == -1
            )
            le_ok = cause["leader_epoch"].max() >= prev_le
            pe_ok = prev_state is None or state == prev_state or newest["partition_epoch"] > prev_pe
            for _ in range(len(cause)):
                ok_isr.append(bool(isr_ok))
                ok_le.append(bool(le_ok))
                ok_pe.append(bool(pe_ok))
            prev_state, prev_le, prev_pe = (
                state,
                cause["leader_epoch"].max(),
                newest["partition_epoch"],
            )
    if bar is not None:
        bar.close()
    # the per-group loops visit rows in (keys, cause_offset) order; align them to that order
    ordered = lair.sort_values(keys + ["cause_offset", "seq"], kind="stable")
    for rule in (
        "isr_within_replicas",
        "leader_epoch_never_decreases",
        "partition_epoch_increases_on_change",
    ):
        lair[rule] = True
    lair.loc[ordered.index, "isr_within_replicas"] = ok_isr
    lair.loc[ordered.index, "leader_epoch_never_decreases"] = ok_le
    lair.loc[ordered.index, "partition_epoch_increases_on_change"] = ok_pe
    leaders = lair[lair["leader"] >= 0].groupby(keys + ["leader_epoch"])["leader"].nunique()
    lair["one_leader_per_epoch"] = [
        leaders.get((t, p, g, le), 1) <= 1
        for t, p, g, le in zip(
            lair["topic"], lair["partition"], lair["generation"], lair["leader_epoch"], strict=False
        )
    ]
    for rule in RULES:
        lair[rule] = lair[rule].astype(bool)
    return lair
