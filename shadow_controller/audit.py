"""`shadow-controller audit DECISIONS`: the controller's invariants as a Great Expectations
suite over a decisions dataset, with a Data Docs report that renders offline.

The records say which rule set they come from: LeaderAndIsr decisions are the ZK
controller's, checked by the rules below; PartitionRecord and PartitionChangeRecord are
KRaft's metadata records, replayed and checked by `audit_kraft`'s rules. Records of
neither kind leave nothing to check, and the audit says so (exit 2), never "ok".

The ZK rules (audit_zk.py) are computed per partition over its LeaderAndIsr records in
(cause_offset, seq) order, then each rule becomes a column that must hold `ok` on every
record; a record that breaks the rule holds where it broke instead (`orders-0 at
cause_offset 14`), so the report's unexpected values name the partitions and cause offsets.
Two Kafka facts shape the rules: one request batch keeps only the last state per broker, so
within one cause a broker can be sent an older state than another (rules compare a cause's
newest state with the previous cause's); and a deleted and re-created topic starts again at
epoch 0 (an `initial` election starts a new generation).

Outcomes, by `exits` code:

- 0: every rule held.
- 1 (`CHECK_FAILED`): a rule broke. `main` returns the code after printing one line per
  rule, a broken one with how many records broke it and its first partitions with their
  cause offsets (`--json`: the same as one JSON object).
- 2 (`UsageError`): there is nothing trustworthy to audit, so nothing was checked: the path
  does not exist, it holds no decision record (an empty file, a directory without
  `decisions-*.jsonl`) or no partition state record a rule reads, or a line is not a
  decision record (the message names the file and line). Not `CheckFailed`: no invariant
  was found broken, and a script that treats 1 as "the controller is wrong" must not page
  anyone over an empty or truncated file.
  Unlike `simulate`, a bad line is not skipped: a rule that holds over part of a log says
  nothing about the whole of it.

The records are read by audit_load.py. On a terminal (stderr a TTY), loading a big input
and checking its partitions show progress bars, each only once its step has taken a moment;
anything else gets no progress output, from us or from Great Expectations.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd

from streaming.exits import CHECK_FAILED, OK, UsageError

from . import audit_kraft
from .audit_load import load_records, progress_stream
from .audit_outcome import AuditResult, BrokenPartition, RuleOutcome
from .audit_zk import RULES, invariant_frame

HELD = "ok"  # the value of a rule's column on a record that keeps it
# the rules of each rule set, and the records they read
RULE_SETS = {"zk": RULES, "kraft": audit_kraft.RULES}
AUDITED = {"zk": "LeaderAndIsr", "kraft": "PartitionRecord and PartitionChangeRecord"}


def rule_set_of(records: list[dict[str, Any]], path: str) -> str:
    """ "zk" when the records hold LeaderAndIsr decisions, "kraft" when they hold
    PartitionRecord or PartitionChangeRecord; a `UsageError` when they hold neither
    (nothing the rules can check, so nothing is reported as held) or both."""
    types = {r["type"] for r in records}
    zk = "LeaderAndIsr" in types
    kraft = bool(types & audit_kraft.PARTITION_TYPES)
    if zk and kraft:
        raise UsageError(
            f"{path} mixes the ZK controller's LeaderAndIsr decisions with KRaft's partition "
            "records; audit one run at a time"
        )
    if not zk and not kraft:
        raise UsageError(
            f"nothing to audit in {path}: none of its {len(records)} decision records is a "
            "partition state (LeaderAndIsr, PartitionRecord or PartitionChangeRecord), so no "
            "rule was checked"
        )
    return "zk" if zk else "kraft"


def kraft_frame(records: list[dict[str, Any]], path: str) -> tuple[pd.DataFrame, int]:
    """One row per KRaft partition record that could be replayed (and per partition a
    broker change left with an inactive leader), one boolean column per KRaft rule
    (`audit_kraft`); and how many change records could not be replayed (their partition
    was created before the input starts). A `UsageError` when none could."""
    rows = audit_kraft.partition_states(records)
    checked = [r for r in rows if r["checked"]]
    if not checked:
        raise UsageError(
            f"nothing to audit in {path}: none of its {len(rows)} KRaft partition records can "
            "be replayed (no PartitionRecord creates their partitions), so no rule was checked"
        )
    return pd.DataFrame(checked), len(rows) - len(checked)


def evidence_frame(lair: pd.DataFrame, rules: dict[str, str] = RULES) -> pd.DataFrame:
    """The frame Great Expectations validates: one column per rule, `ok` where the record
    keeps it and `<topic>-<partition> at cause_offset <n>` where it breaks it."""
    if lair.empty:
        return pd.DataFrame({rule: pd.Series(dtype=object) for rule in rules})
    # int64 first: partition is a float column when other record types leave it empty
    where = (
        lair["topic"].astype(str)
        + "-"
        + lair["partition"].astype("int64").astype(str)
        + " at cause_offset "
        + lair["cause_offset"].astype("int64").astype(str)
    )
    return pd.DataFrame(
        {rule: np.where(lair[rule].to_numpy(dtype=bool), HELD, where) for rule in rules}
    )


def rule_outcomes(lair: pd.DataFrame, rules: dict[str, str] = RULES) -> tuple[RuleOutcome, ...]:
    outcomes = []
    for rule, description in rules.items():
        broken = lair[~lair[rule]]
        parts = []
        for (topic, partition), rows in (
            broken.groupby(["topic", "partition"], sort=False) if len(broken) else ()
        ):
            offsets = tuple(sorted({int(x) for x in rows["cause_offset"]}))
            parts.append(BrokenPartition(str(topic), int(partition), offsets, len(rows)))
        parts.sort(key=lambda b: (b.cause_offsets[0], b.topic, b.partition))
        outcomes.append(RuleOutcome(rule, description, len(broken), tuple(parts)))
    return tuple(outcomes)


def run_audit(
    decisions_path: str, report_dir: str | None, progress: TextIO | None | bool = True
) -> AuditResult:
    """Audit the decisions at `decisions_path` into a Data Docs site under `report_dir`, or,
    when it is None, under a new temporary directory (made only once there is something to
    audit; `AuditResult.report_temporary` says so)."""
    records = load_records(decisions_path, progress)
    if not records:
        raise UsageError(f"no decision records in {decisions_path}")
    rule_set = rule_set_of(records, decisions_path)
    rules = RULE_SETS[rule_set]
    import great_expectations as gx
    from great_expectations.checkpoint.actions import UpdateDataDocsAction
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.expectations.core.expect_column_values_to_be_in_set import (
        ExpectColumnValuesToBeInSet,
    )

    from .audit_report import add_summary, make_offline

    decisions_count = len(records)
    unchecked = 0
    if rule_set == "zk":
        lair = invariant_frame(pd.DataFrame(records), progress_stream(progress))
    else:
        lair, unchecked = kraft_frame(records, decisions_path)
    del records
    outcomes = rule_outcomes(lair, rules)
    temporary = report_dir is None
    if report_dir is None:
        import tempfile

        report_dir = tempfile.mkdtemp(prefix="shadow-controller-audit-")
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=report_dir)
    # GE draws its own bars on stderr even when it is not a terminal
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    source = context.data_sources.add_or_update_pandas("decisions")
    asset_name = "leader_and_isr" if rule_set == "zk" else "kraft_partition_records"
    asset = (
        source.add_dataframe_asset(asset_name)
        if asset_name not in [a.name for a in source.assets]
        else source.get_asset(asset_name)
    )
    batch_definition = asset.add_batch_definition_whole_dataframe(
        f"run-{len(asset.batch_definitions)}"
    )
    suite_name = "controller-invariants" if rule_set == "zk" else "kraft-controller-invariants"
    suite = gx.ExpectationSuite(name=suite_name)
    for rule, description in rules.items():
        suite.add_expectation(
            ExpectColumnValuesToBeInSet(
                column=rule,
                value_set=[HELD],
                description=description,
                meta={"rule": rule, "description": description},
            )
        )
    suite = context.suites.add_or_update(suite)
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=suite_name, data=batch_definition, suite=suite)
    )
    checkpoint = context.checkpoints.add_or_update(
        gx.Checkpoint(
            name="audit" if rule_set == "zk" else "audit-kraft",
            validation_definitions=[validation],
            actions=[UpdateDataDocsAction(name="data-docs")],
            result_format={"result_format": "SUMMARY", "partial_unexpected_count": 20},
        )
    )
    run = checkpoint.run(batch_parameters={"dataframe": evidence_frame(lair, rules)})
    failed_in_ge = {
        r.expectation_config.kwargs["column"]
        for v in run.run_results.values()
        for r in v.results
        if not r.success and r.expectation_config is not None
    }
    if failed_in_ge != {o.rule for o in outcomes if not o.success}:  # the same frame, so never
        raise AssertionError(
            f"Great Expectations failed {sorted(failed_in_ge)}, the frame broke "
            f"{[o.rule for o in outcomes if not o.success]}"
        )
    docs = context.get_docs_sites_urls()
    index: str | None = docs[0]["site_url"] if docs else None
    run_page = None
    if index:
        site = Path(_path_of(index)).parent
        for key in run.run_results:
            pages = context.get_docs_sites_urls(resource_identifier=key)
            url = pages[0].get("site_url") if pages else None
            if url:
                run_page = Path(os.path.relpath(_path_of(url), site)).as_posix()
        make_offline(site)
        add_summary(
            site / "index.html",
            outcomes,
            decisions=decisions_path,
            decision_records=decisions_count,
            records=len(lair),
            success=bool(run.success),
            run_page=run_page,
            audited=AUDITED[rule_set],
        )
    return AuditResult(
        decisions_path,
        decisions_count,
        len(lair),
        outcomes,
        bool(run.success),
        index,
        run_page,
        rule_set,
        unchecked,
        temporary,
    )


def _path_of(url: str) -> str:
    return unquote(urlparse(url).path) if url.startswith("file:") else url


def where_broken(outcome: RuleOutcome, partitions: int = 3, offsets: int = 3) -> str:
    """`orders-0 at cause_offset 14, 15; payments-2 at cause_offset 30; and 4 more partitions`"""
    parts = []
    for b in outcome.broken[:partitions]:
        shown = ", ".join(str(x) for x in b.cause_offsets[:offsets])
        more = (
            f" and {len(b.cause_offsets) - offsets} more" if len(b.cause_offsets) > offsets else ""
        )
        parts.append(f"{b.name} at cause_offset {shown}{more}")
    if len(outcome.broken) > partitions:
        parts.append(f"and {len(outcome.broken) - partitions} more partitions")
    return "; ".join(parts)


def result_json(result: AuditResult) -> dict[str, Any]:
    return {
        "decisions": result.decisions,
        "decision_records": result.decision_records,
        "rule_set": result.rule_set,
        "audited_records": result.records,
        "unchecked_records": result.unchecked,
        "leader_and_isr_records": result.records if result.rule_set == "zk" else 0,
        "success": result.success,
        "rules": [
            {
                "rule": o.rule,
                "description": o.description,
                "success": o.success,
                "broken_records": o.broken_records,
                "partitions": [
                    {
                        "topic": b.topic,
                        "partition": b.partition,
                        "records": b.records,
                        "cause_offsets": list(b.cause_offsets),
                    }
                    for b in o.broken
                ],
            }
            for o in result.rules
        ],
        "report": _path_of(result.docs_index) if result.docs_index else None,
        "report_temporary": result.report_temporary,
    }


def main(decisions: str, report_dir: str | None, *, json_output: bool = False) -> int:
    """Audit DECISIONS into a report under REPORT_DIR (None: a temporary directory, named
    in the output); print the outcome and return the exit code. Raises `UsageError` when
    there is nothing to audit (see the module docstring).
    With `json_output`, stdout is one JSON object and nothing else: `success`,
    `decision_records`, `rule_set` ("zk" or "kraft"), `audited_records` (the partition state
    records checked), `leader_and_isr_records`, `report` (index.html's path),
    `report_temporary` (true when no --report was given) and `rules`,
    each with `rule`, `description`, `success`, `broken_records` and `partitions` (all of
    them, earliest break first: `topic`, `partition`, `records`, `cause_offsets`)."""
    result = run_audit(decisions, report_dir)
    if json_output:
        print(json.dumps(result_json(result), indent=2))
        return OK if result.success else CHECK_FAILED
    print(
        f"audited {result.records} {AUDITED[result.rule_set]} records of "
        f"{result.decision_records} decision records against the {len(result.rules)} "
        f"{'ZK controller' if result.rule_set == 'zk' else 'KRaft'} rules"
    )
    if result.unchecked:
        print(
            f"  not checked: {result.unchecked} PartitionChangeRecords of partitions no "
            "PartitionRecord in the input created"
        )
    for o in result.rules:
        if o.success:
            print(f"  {o.rule:40} {'ok':20} {o.description}")
        else:
            status = f"FAILED ({o.broken_records} record{'s' if o.broken_records != 1 else ''})"
            print(f"  {o.rule:40} {status:20} {where_broken(o)}")
    if result.docs_index:
        where = (
            " (in a temporary directory; --report DIR writes it where you choose)"
            if result.report_temporary
            else ""
        )
        print(f"Data Docs: {result.docs_index}{where}")
    return OK if result.success else CHECK_FAILED
