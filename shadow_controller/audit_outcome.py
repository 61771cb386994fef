"""What an audit found, as values: per rule, the records that broke it by partition and
cause offset (`RuleOutcome`), and the run as a whole (`AuditResult`). `audit` computes
them and `audit_report` renders them into the Data Docs site, so the report depends on
these values alone, never on the audit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BrokenPartition:
    topic: str
    partition: int
    cause_offsets: tuple[int, ...]  # ascending, each once
    records: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    rule: str
    description: str
    broken_records: int
    broken: tuple[BrokenPartition, ...]  # the earliest break first

    @property
    def success(self) -> bool:
        return self.broken_records == 0

    @property
    def partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return tuple((b.name, b.cause_offsets) for b in self.broken)


@dataclass(frozen=True, slots=True)
class AuditResult:
    decisions: str
    decision_records: int
    records: int  # the partition state records audited (LeaderAndIsr, or KRaft's)
    rules: tuple[RuleOutcome, ...]
    success: bool
    docs_index: str | None  # file:// URL of the report's index.html
    run_page: str | None  # this run's validation result page, relative to the index
    rule_set: str = "zk"  # the rules checked: "zk" (LeaderAndIsr) or "kraft" (metadata records)
    unchecked: int = 0  # KRaft change records of partitions the input never created
    report_temporary: bool = False  # the report went to a temporary directory (no --report)

    @property
    def failed_rules(self) -> dict[str, int]:
        return {o.rule: o.broken_records for o in self.rules if not o.success}
