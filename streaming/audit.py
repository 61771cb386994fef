"""`shadow-controller audit DECISIONS`: the controller's invariants as a Great Expectations
suite over a decisions dataset, with a Data Docs report.

The rules are computed per partition over its LeaderAndIsr records in (cause_offset, seq)
order, then each rule becomes a boolean column that must be all true. Two Kafka facts shape
them: one request batch keeps only the last state per broker, so within one cause a broker
can be sent an older state than another (rules compare a cause's newest state with the
previous cause's); and a deleted and re-created topic starts again at epoch 0 (an
`initial` election starts a new generation).
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

RULES = {
    "leader_in_isr_unless_unclean": "the leader (when not -1) is in the ISR unless the election is unclean",
    "isr_within_replicas": "after each cause, the ISR is within the replicas (except Kafka's last member kept with leader -1)",
    "leader_epoch_never_decreases": "a partition's leader epoch never decreases from one cause to the next",
    "one_leader_per_epoch": "one leader per (partition, leader epoch)",
    "partition_epoch_increases_on_change": "a changed partition state has a strictly larger partition epoch",
}


def load_decisions(path: str) -> pd.DataFrame:
    """A decisions file, a directory of `decisions-*.jsonl` files (file output), or a dump
    of the decisions topic (one JSON record a line)."""
    files = sorted(glob.glob(os.path.join(path, "decisions-*.jsonl"))) if os.path.isdir(path) else [path]
    rows = [json.loads(line) for f in files for line in open(f, encoding="utf-8") if line.strip()]
    return pd.DataFrame(rows)


def invariant_frame(decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per LeaderAndIsr record with one boolean column per rule."""
    lair = decisions[decisions["type"] == "LeaderAndIsr"].copy() if "type" in decisions else pd.DataFrame()
    if lair.empty:
        return pd.DataFrame({rule: pd.Series(dtype=bool) for rule in RULES})
    lair = lair.sort_values(["topic", "partition", "cause_offset", "seq"]).reset_index(drop=True)
    lair["isr_set"] = lair["isr"].map(frozenset)
    lair["leader_in_isr_unless_unclean"] = [
        leader == -1 or leader in isr or election == "unclean"
        for leader, isr, election in zip(lair["leader"], lair["isr_set"], lair["election"])
    ]
    lair["generation"] = (lair["election"] == "initial").groupby([lair["topic"], lair["partition"]]).cumsum()
    keys = ["topic", "partition", "generation"]
    ok_isr, ok_le, ok_pe = [], [], []
    for _, part in lair.groupby(keys, sort=False):
        prev_state = None
        prev_le = prev_pe = -1
        for _, cause in part.groupby("cause_offset", sort=True):
            newest = cause.loc[cause["partition_epoch"].idxmax()]
            state = (newest["leader"], newest["leader_epoch"], newest["isr_set"], newest["leader_recovery_state"])
            isr_ok = newest["isr_set"] <= set(newest["replicas"]) or (len(newest["isr_set"]) == 1 and newest["leader"] == -1)
            le_ok = cause["leader_epoch"].max() >= prev_le
            pe_ok = prev_state is None or state == prev_state or newest["partition_epoch"] > prev_pe
            for _ in range(len(cause)):
                ok_isr.append(bool(isr_ok))
                ok_le.append(bool(le_ok))
                ok_pe.append(bool(pe_ok))
            prev_state, prev_le, prev_pe = state, cause["leader_epoch"].max(), newest["partition_epoch"]
    # the per-group loops visit rows in (keys, cause_offset) order; align them to that order
    ordered = lair.sort_values(keys + ["cause_offset", "seq"], kind="stable")
    for rule in ("isr_within_replicas", "leader_epoch_never_decreases", "partition_epoch_increases_on_change"):
        lair[rule] = True
    lair.loc[ordered.index, "isr_within_replicas"] = ok_isr
    lair.loc[ordered.index, "leader_epoch_never_decreases"] = ok_le
    lair.loc[ordered.index, "partition_epoch_increases_on_change"] = ok_pe
    leaders = lair[lair["leader"] >= 0].groupby(keys + ["leader_epoch"])["leader"].nunique()
    lair["one_leader_per_epoch"] = [
        leaders.get((t, p, g, le), 1) <= 1 for t, p, g, le in zip(lair["topic"], lair["partition"], lair["generation"], lair["leader_epoch"])
    ]
    for rule in RULES:
        lair[rule] = lair[rule].astype(bool)
    return lair


@dataclass
class AuditResult:
    success: bool
    failed_rules: dict[str, int]
    records: int
    docs_index: str | None


def run_audit(decisions_path: str, report_dir: str) -> AuditResult:
    import great_expectations as gx

    frame = invariant_frame(load_decisions(decisions_path))
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=report_dir)
    source = context.data_sources.add_or_update_pandas("decisions")
    asset = source.add_dataframe_asset("leader_and_isr") if "leader_and_isr" not in [a.name for a in source.assets] \
        else source.get_asset("leader_and_isr")
    batch_definition = asset.add_batch_definition_whole_dataframe(f"run-{len(asset.batch_definitions)}")
    suite = gx.ExpectationSuite(name="controller-invariants")
    for rule, description in RULES.items():
        suite.add_expectation(gx.expectations.ExpectColumnValuesToBeInSet(
            column=rule, value_set=[True], meta={"rule": rule, "description": description}))
    suite = context.suites.add_or_update(suite)
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name="controller-invariants", data=batch_definition, suite=suite))
    checkpoint = context.checkpoints.add_or_update(gx.Checkpoint(
        name="audit", validation_definitions=[validation],
        actions=[gx.checkpoint.UpdateDataDocsAction(name="data-docs")], result_format={"result_format": "SUMMARY"}))
    run = checkpoint.run(batch_parameters={"dataframe": frame[list(RULES)]})
    failed: dict[str, int] = {}
    for validation_result in run.run_results.values():
        for r in validation_result.results:
            if not r.success:
                failed[r.expectation_config.kwargs["column"]] = int(r.result.get("unexpected_count", 0))
    docs = context.get_docs_sites_urls()
    index = docs[0]["site_url"] if docs else None
    return AuditResult(run.success, failed, len(frame), index)


def main(decisions: str, report_dir: str) -> int:
    result = run_audit(decisions, report_dir)
    print(f"audited {result.records} LeaderAndIsr records against {len(RULES)} rules")
    for rule, description in RULES.items():
        status = f"FAILED ({result.failed_rules[rule]} records)" if rule in result.failed_rules else "ok"
        print(f"  {rule:40} {status:20} {description}")
    if result.docs_index:
        print(f"Data Docs: {result.docs_index}")
    return 0 if result.success else 1
