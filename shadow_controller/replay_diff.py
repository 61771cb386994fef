"""`replay --diff`: what the branch decided differently from the original run, for the
causes decided after the branch point. Per partition the final leader, whether it ended
offline (leader -1), its unclean elections and its leader epoch (`PartitionDiff`), plus
counts of decisions by kind and the decision records only one side has (as multisets).
`format_diff` and `diff_json` are its two views.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from streaming.settings.checkpoint import load_settings
from streaming.settings.schema import JobSettings

from .branch import first_offset_after
from .errors import ReplayError

_DECISIONS_FILE = re.compile(r"decisions-(\d+)\.jsonl$")


@dataclass(frozen=True, slots=True)
class Outcome:
    """A partition's last LeaderAndIsr, and the unclean elections after the branch point."""

    leader: int | None
    leader_epoch: int | None
    unclean_elections: int

    @property
    def offline(self) -> bool:
        return self.leader == -1


@dataclass(frozen=True, slots=True)
class PartitionDiff:
    topic: str
    partition: int
    original: Outcome
    branch: Outcome

    @property
    def changed(self) -> bool:
        return self.original != self.branch


@dataclass(frozen=True, slots=True)
class ReplayDiff:
    from_batch: int
    causes: tuple[int, ...]  # cause offsets compared
    partitions: tuple[PartitionDiff, ...]  # every partition with a LeaderAndIsr in either side
    counts: dict[str, tuple[int, int]]  # name -> (original, branch)
    only_in_original: int  # decision records (as multisets)
    only_in_branch: int

    @property
    def changed(self) -> tuple[PartitionDiff, ...]:
        return tuple(p for p in self.partitions if p.changed)


def read_decisions(path: str, after_batch: int | None = None) -> list[dict[str, Any]]:
    """Decision records from a file-output directory (only batches > `after_batch` if
    given) or from one JSON-lines file."""
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(path, "decisions-*.jsonl")))
        if after_batch is not None:
            files = [f for f in files if int(_DECISIONS_FILE.search(f).group(1)) > after_batch]  # type: ignore[union-attr]
    else:
        files = [path]
    return [json.loads(line) for f in files for line in open(f, encoding="utf-8") if line.strip()]


def diff_replay(
    checkpoint: str,
    to: str,
    from_batch: int,
    original_decisions: str | None = None,
    branch_decisions: str | None = None,
    rebuilt: bool = False,
) -> ReplayDiff:
    """Compare the branch TO with the run that wrote CHECKPOINT, for the causes decided after
    batch `from_batch`: those at or after the first event offset after it, and any other
    cause that either side decided after it (an event buffered across batches). A `rebuilt`
    branch (another rule set, run from the input's start) has its own decisions before the
    branch point: they are its prefix."""
    original_decisions, branch_decisions = decisions_paths(
        load_settings(checkpoint), load_settings(to), original_decisions, branch_decisions
    )
    orig_all = read_decisions(original_decisions)
    branch = read_decisions(branch_decisions)
    first = first_offset_after(checkpoint, from_batch)
    causes = set() if rebuilt else {r["cause_offset"] for r in branch}
    if os.path.isdir(original_decisions):
        causes |= {
            r["cause_offset"] for r in read_decisions(original_decisions, after_batch=from_batch)
        }
    if first is not None:
        causes |= {r["cause_offset"] for r in orig_all if r["cause_offset"] >= first}
    if rebuilt and first is not None:
        causes |= {r["cause_offset"] for r in branch if r["cause_offset"] >= first}
    prefix = [r for r in orig_all if r["cause_offset"] not in causes]
    orig_after = [r for r in orig_all if r["cause_offset"] in causes]
    if rebuilt:
        branch_prefix = [r for r in branch if r["cause_offset"] not in causes]
        branch = [r for r in branch if r["cause_offset"] in causes]
        return compare(from_batch, sorted(causes), prefix, orig_after, branch, branch_prefix)
    return compare(from_batch, sorted(causes), prefix, orig_after, branch)


def decisions_paths(
    original: JobSettings,
    branch: JobSettings,
    original_decisions: str | None = None,
    branch_decisions: str | None = None,
) -> tuple[str, str]:
    """Where the diff reads each side's decisions: as given, or the run's file output."""
    if original_decisions is None:
        if not original.output.startswith("file:"):
            raise ReplayError(
                "the original run wrote to Kafka: give its decisions with --original-decisions"
            )
        original_decisions = original.output[5:]
    elif not os.path.exists(original_decisions):
        raise ReplayError(f"--original-decisions {original_decisions}: no such file or directory")
    if branch_decisions is None:
        if not branch.output.startswith("file:"):
            raise ReplayError(
                "the branch writes to Kafka: the diff needs its decisions as files "
                "(--output file:DIR)"
            )
        branch_decisions = branch.output[5:]
    return original_decisions, branch_decisions


def compare(
    from_batch: int,
    causes: list[int],
    prefix: list[dict[str, Any]],
    original: list[dict[str, Any]],
    branch: list[dict[str, Any]],
    branch_prefix: list[dict[str, Any]] | None = None,
) -> ReplayDiff:
    """The diff of two continuations (`original`, `branch`) of the decisions `prefix` (the
    branch's own `branch_prefix` when it was rebuilt under the other rule set)."""
    bprefix = prefix if branch_prefix is None else branch_prefix
    before_o, before_b = _outcomes(prefix, []), _outcomes(bprefix, [])
    after_o, after_b = _outcomes(prefix, original), _outcomes(bprefix, branch)
    touched = {k for recs in (original, branch) for k in _lair_keys(recs)}
    none = Outcome(None, None, 0)
    parts = tuple(
        PartitionDiff(
            t,
            p,
            after_o.get((t, p), before_o.get((t, p), none)),
            after_b.get((t, p), before_b.get((t, p), none)),
        )
        for t, p in sorted(touched)
    )
    counts = {
        "decisions": (len(original), len(branch)),
        "LeaderAndIsr": (_count(original, "LeaderAndIsr"), _count(branch, "LeaderAndIsr")),
        **(
            {
                "PartitionChangeRecord": (
                    _count(original, "PartitionChangeRecord"),
                    _count(branch, "PartitionChangeRecord"),
                )
            }
            if any(r.get("type") == "PartitionChangeRecord" for r in original + branch)
            else {}
        ),
        "StateChangeFailed": (
            _count(original, "StateChangeFailed"),
            _count(branch, "StateChangeFailed"),
        ),
        "unclean elections": (
            sum(d.original.unclean_elections for d in parts),
            sum(d.branch.unclean_elections for d in parts),
        ),
        "offline partitions": (
            sum(d.original.offline for d in parts),
            sum(d.branch.offline for d in parts),
        ),
    }
    co, cb = Counter(map(_canonical, original)), Counter(map(_canonical, branch))
    return ReplayDiff(
        from_batch, tuple(causes), parts, counts, sum((co - cb).values()), sum((cb - co).values())
    )


# the records that state a partition's leadership: the ZK controller's requests, and KRaft's
# metadata records (kraft mode)
_KRAFT_PARTITION = ("PartitionRecord", "PartitionChangeRecord")


def _lair_keys(records: list[dict[str, Any]]) -> set[tuple[str, int]]:
    return {
        (r["topic"], r["partition"])
        for r in records
        if r.get("type") in ("LeaderAndIsr", *_KRAFT_PARTITION)
    }


def _outcomes(
    prefix: list[dict[str, Any]], after: list[dict[str, Any]]
) -> dict[tuple[str, int], Outcome]:
    """Each partition's outcome, from either rule set's records."""
    out = _kraft_outcomes(prefix, after)
    out.update(_zk_outcomes(prefix, after))
    return out


def _kraft_outcomes(
    prefix: list[dict[str, Any]], after: list[dict[str, Any]]
) -> dict[tuple[str, int], Outcome]:
    """KRaft's records replayed: a PartitionRecord states the leader and its epoch; a
    PartitionChangeRecord that sets the leader bumps the epoch by one
    (PartitionRegistration.merge). An unclean election is a change marked
    `"election": "unclean"` (a leader from outside the previous ISR, as KRaft's
    UncleanLeaderElectionsPerSec counts it)."""
    state: dict[
        tuple[str, int], list[int]
    ] = {}  # leader, leader epoch, unclean elections after the branch point
    ordered = sorted(((0, r) for r in prefix), key=lambda x: (x[1]["cause_offset"], x[1]["seq"]))
    ordered += sorted(((1, r) for r in after), key=lambda x: (x[1]["cause_offset"], x[1]["seq"]))
    for side, r in ordered:
        kind = r.get("type")
        if kind not in _KRAFT_PARTITION:
            continue
        key = (r["topic"], r["partition"])
        if kind == "PartitionRecord":
            state[key] = [r["leader"], r["leader_epoch"], 0]
        elif key in state and "leader" in r:
            s = state[key]
            s[0], s[1] = r["leader"], s[1] + 1
            if side and r.get("election") == "unclean":
                s[2] += 1
    return {k: Outcome(v[0], v[1], v[2]) for k, v in state.items()}


def _zk_outcomes(
    prefix: list[dict[str, Any]], after: list[dict[str, Any]]
) -> dict[tuple[str, int], Outcome]:
    # One request batch may send brokers different states of a partition within one cause
    # (Kafka keeps the last per broker), so the newest is the one with the highest
    # partition epoch of the latest cause.
    def order(r: dict[str, Any]) -> tuple[int, int, int]:
        return (r["cause_offset"], r.get("partition_epoch", 0), r.get("seq", 0))

    last: dict[tuple[str, int], dict[str, Any]] = {}
    unclean: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for r in sorted((r for r in prefix + after if r.get("type") == "LeaderAndIsr"), key=order):
        last[(r["topic"], r["partition"])] = r
    for r in after:
        if r.get("type") == "LeaderAndIsr" and r.get("election") == "unclean":
            unclean.setdefault((r["topic"], r["partition"]), set()).add(
                (r["cause_offset"], r["leader_epoch"])
            )
    return {
        k: Outcome(r["leader"], r["leader_epoch"], len(unclean.get(k, ()))) for k, r in last.items()
    }


def _count(records: list[dict[str, Any]], kind: str) -> int:
    return sum(1 for r in records if r.get("type") == kind)


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def format_diff(diff: ReplayDiff) -> str:
    def show(v: Any) -> str:
        return "-" if v is None else ("yes" if v is True else "no" if v is False else str(v))

    def pair(a: Any, b: Any) -> str:
        return show(a) if a == b else f"{show(a)} -> {show(b)}"

    causes = f"causes {diff.causes[0]}..{diff.causes[-1]}" if diff.causes else "no causes"
    lines = [
        f"replay from batch {diff.from_batch}: {causes} ({len(diff.causes)}); original -> branch",
        f"{'partition':<24} {'leader':<10} {'offline':<11} {'unclean':<8} leader epoch",
    ]
    for d in diff.changed:
        o, b = d.original, d.branch
        lines.append(
            f"{d.topic + '-' + str(d.partition):<24} {pair(o.leader, b.leader):<10} "
            f"{pair(o.offline, b.offline):<11} "
            f"{pair(o.unclean_elections, b.unclean_elections):<8} "
            f"{pair(o.leader_epoch, b.leader_epoch)}"
        )
    if not diff.changed:
        lines.append("(no partition changed)")
    lines.append("; ".join(f"{name}: {pair(a, b)}" for name, (a, b) in diff.counts.items()))
    lines.append(
        f"partitions changed: {len(diff.changed)} of {len(diff.partitions)}; decision "
        "records only in the "
        f"original: {diff.only_in_original}, only in the branch: {diff.only_in_branch}"
    )
    return "\n".join(lines)


def diff_json(diff: ReplayDiff) -> dict[str, Any]:
    """The diff as plain data (`replay --diff --json`)."""

    def outcome(o: Outcome) -> dict[str, Any]:
        return {**dataclasses.asdict(o), "offline": o.offline}

    return {
        "from_batch": diff.from_batch,
        "causes": {
            "count": len(diff.causes),
            "first": diff.causes[0] if diff.causes else None,
            "last": diff.causes[-1] if diff.causes else None,
        },
        "partitions_compared": len(diff.partitions),
        "changed": [
            {
                "topic_partition": f"{d.topic}-{d.partition}",
                "topic": d.topic,
                "partition": d.partition,
                "original": outcome(d.original),
                "branch": outcome(d.branch),
            }
            for d in diff.changed
        ],
        "counts": {name: {"original": a, "branch": b} for name, (a, b) in diff.counts.items()},
        "only_in_original": diff.only_in_original,
        "only_in_branch": diff.only_in_branch,
    }
