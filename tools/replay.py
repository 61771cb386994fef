"""`shadow-controller replay`: run an incident again from micro-batch N under other settings.

    replay --checkpoint CKPT --from-batch N --to DIR --set controller.unclean.leader.election.enable=true --diff

1. branch CKPT at batch N into DIR (`tools/branch.py`: the branch ends with batch N
   committed; CKPT is only read);
2. run the job on the branch to the end of the available input with the original run's
   settings (CKPT/settings.json, written by `shadow-controller run` through
   `save_settings`) plus the overrides, decisions into DIR/out unless told otherwise;
3. with --diff, compare the branch's decisions with the original run's for the causes
   decided after batch N: per partition, the final leader, whether it ended offline
   (leader -1), unclean elections and the leader epoch.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streaming.exits import CommandError
from streaming.settings import schema as settings_mod
from streaming.settings.checkpoint import FROZEN, load_settings, save_settings
from streaming.settings.schema import JobSettings

from .branch import Branch, ReplayError, branch_checkpoint, check_branch, first_offset_after

_DECISIONS_FILE = re.compile(r"decisions-(\d+)\.jsonl$")


# -- the branch's settings -----------------------------------------------------------------

def branch_settings(original: JobSettings, to: str, overrides: list[str], input: str | None = None,
                    output: str | None = None) -> tuple[JobSettings, dict[str, str], str]:
    """The branch's settings: the original's, the overrides, --input/--output, the branch as
    checkpoint, decisions into TO/out unless an output is given."""
    pairs = [settings_mod.parse_override(item) for item in overrides]
    pairs += [(name, flag) for name, flag in (("job.input", input), ("job.output", output)) if flag]
    values = settings_mod.check_all(pairs)
    if "job.checkpoint" in values:
        raise ReplayError("the branch's checkpoint is --to; job.checkpoint cannot be set")
    values.setdefault("job.output", "file:" + os.path.join(os.path.abspath(to), "out"))
    values["job.checkpoint"] = os.path.abspath(to)
    settings = settings_mod.apply(original, values)
    for name in FROZEN:
        if getattr(settings, name) != getattr(original, name):
            raise ReplayError(f"{name} is frozen into the checkpoint ({getattr(original, name)}); it cannot be changed")
    return settings, settings_mod.spark_conf(values), settings_mod.master(values)


# -- the replay ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Replay:
    branch: Branch
    settings: JobSettings
    stats: dict[int, dict[str, int]]


def replay(spark: Any, checkpoint: str, from_batch: int, to: str, overrides: tuple[str, ...] | list[str] = (), *,
           input: str | None = None, output: str | None = None) -> Replay:
    """Branch CHECKPOINT at `from_batch` into TO and run the job there to the end of the
    available input. `spark` must have the job's configuration (`job.spark_session`)."""
    from streaming.job import start

    original = load_settings(checkpoint)
    settings, _, _ = branch_settings(original, to, list(overrides), input, output)
    branch = branch_checkpoint(checkpoint, from_batch, to)
    save_settings(settings, to)
    query, sink = start(spark, settings, available_now=True)
    try:
        with _progress(spark, settings, first_offset_after(checkpoint, from_batch) or 0):
            query.processAllAvailable()
    finally:
        query.stop()
    if query.exception() is not None:
        raise CommandError(f"the replay failed: {query.exception()}")
    return Replay(branch, settings, dict(sink.stats))


@contextlib.contextmanager
def _progress(spark: Any, settings: JobSettings, start: int) -> Iterator[None]:
    """A progress bar of the events replayed, on a terminal only (out of `total` for file
    input, where the remaining events can be counted)."""
    if not sys.stderr.isatty():
        yield
        return
    from pyspark.sql.streaming import StreamingQueryListener
    from tqdm import tqdm

    from .cli import PROGRESS_DELAY_S

    total = _lines_in(settings.input[5:]) - start if settings.input.startswith("file:") else None
    bar = tqdm(total=total, unit=" events", desc="replay", file=sys.stderr, delay=PROGRESS_DELAY_S)

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            # every source but the deletion feedback ({"batch": n} offsets) reads events
            bar.update(sum(s.numInputRows for s in event.progress.sources if '"batch"' not in str(s.endOffset)))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    listener = Progress()
    spark.streams.addListener(listener)
    try:
        yield
    finally:
        spark.streams.removeListener(listener)
        bar.close()


def _lines_in(directory: str) -> int:
    files = [os.path.join(directory, n) for n in os.listdir(directory) if not n.startswith((".", "_"))]
    return sum(sum(1 for _ in open(f, "rb")) for f in files if os.path.isfile(f))


# -- the diff ------------------------------------------------------------------------------

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


def diff_replay(checkpoint: str, to: str, from_batch: int, original_decisions: str | None = None,
                branch_decisions: str | None = None) -> ReplayDiff:
    """Compare the branch TO with the run that wrote CHECKPOINT, for the causes decided after
    batch `from_batch`: those at or after the first event offset after it, and any other
    cause that either side decided after it (an event buffered across batches)."""
    original_decisions, branch_decisions = decisions_paths(load_settings(checkpoint), load_settings(to),
                                                           original_decisions, branch_decisions)
    orig_all = read_decisions(original_decisions)
    branch = read_decisions(branch_decisions)
    first = first_offset_after(checkpoint, from_batch)
    causes = {r["cause_offset"] for r in branch}
    if os.path.isdir(original_decisions):
        causes |= {r["cause_offset"] for r in read_decisions(original_decisions, after_batch=from_batch)}
    if first is not None:
        causes |= {r["cause_offset"] for r in orig_all if r["cause_offset"] >= first}
    prefix = [r for r in orig_all if r["cause_offset"] not in causes]
    orig_after = [r for r in orig_all if r["cause_offset"] in causes]
    return compare(from_batch, sorted(causes), prefix, orig_after, branch)


def decisions_paths(original: JobSettings, branch: JobSettings, original_decisions: str | None = None,
                    branch_decisions: str | None = None) -> tuple[str, str]:
    """Where the diff reads each side's decisions: as given, or the run's file output."""
    if original_decisions is None:
        if not original.output.startswith("file:"):
            raise ReplayError("the original run wrote to Kafka: give its decisions with --original-decisions")
        original_decisions = original.output[5:]
    elif not os.path.exists(original_decisions):
        raise ReplayError(f"--original-decisions {original_decisions}: no such file or directory")
    if branch_decisions is None:
        if not branch.output.startswith("file:"):
            raise ReplayError("the branch writes to Kafka: the diff needs its decisions as files (--output file:DIR)")
        branch_decisions = branch.output[5:]
    return original_decisions, branch_decisions


def compare(from_batch: int, causes: list[int], prefix: list[dict[str, Any]], original: list[dict[str, Any]],
            branch: list[dict[str, Any]]) -> ReplayDiff:
    """The diff of two continuations (`original`, `branch`) of the same decisions `prefix`."""
    before, after_o, after_b = _outcomes(prefix, []), _outcomes(prefix, original), _outcomes(prefix, branch)
    touched = {k for recs in (original, branch) for k in _lair_keys(recs)}
    none = Outcome(None, None, 0)
    parts = tuple(
        PartitionDiff(t, p, after_o.get((t, p), before.get((t, p), none)), after_b.get((t, p), before.get((t, p), none)))
        for t, p in sorted(touched)
    )
    counts = {
        "decisions": (len(original), len(branch)),
        "LeaderAndIsr": (_count(original, "LeaderAndIsr"), _count(branch, "LeaderAndIsr")),
        "StateChangeFailed": (_count(original, "StateChangeFailed"), _count(branch, "StateChangeFailed")),
        "unclean elections": (sum(d.original.unclean_elections for d in parts), sum(d.branch.unclean_elections for d in parts)),
        "offline partitions": (sum(d.original.offline for d in parts), sum(d.branch.offline for d in parts)),
    }
    co, cb = Counter(map(_canonical, original)), Counter(map(_canonical, branch))
    return ReplayDiff(from_batch, tuple(causes), parts, counts, sum((co - cb).values()), sum((cb - co).values()))


def _lair_keys(records: list[dict[str, Any]]) -> set[tuple[str, int]]:
    return {(r["topic"], r["partition"]) for r in records if r.get("type") == "LeaderAndIsr"}


def _outcomes(prefix: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[tuple[str, int], Outcome]:
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
            unclean.setdefault((r["topic"], r["partition"]), set()).add((r["cause_offset"], r["leader_epoch"]))
    return {k: Outcome(r["leader"], r["leader_epoch"], len(unclean.get(k, ()))) for k, r in last.items()}


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
    lines = [f"replay from batch {diff.from_batch}: {causes} ({len(diff.causes)}); original -> branch",
             f"{'partition':<24} {'leader':<10} {'offline':<11} {'unclean':<8} leader epoch"]
    for d in diff.changed:
        o, b = d.original, d.branch
        lines.append(f"{d.topic + '-' + str(d.partition):<24} {pair(o.leader, b.leader):<10} {pair(o.offline, b.offline):<11} "
                     f"{pair(o.unclean_elections, b.unclean_elections):<8} {pair(o.leader_epoch, b.leader_epoch)}")
    if not diff.changed:
        lines.append("(no partition changed)")
    lines.append("; ".join(f"{name}: {pair(a, b)}" for name, (a, b) in diff.counts.items() ))
    lines.append(f"partitions changed: {len(diff.changed)} of {len(diff.partitions)}; decision records only in the "
                 f"original: {diff.only_in_original}, only in the branch: {diff.only_in_branch}")
    return "\n".join(lines)


def diff_json(diff: ReplayDiff) -> dict[str, Any]:
    """The diff as plain data (`replay --diff --json`)."""
    def outcome(o: Outcome) -> dict[str, Any]:
        return {**dataclasses.asdict(o), "offline": o.offline}

    return {
        "from_batch": diff.from_batch,
        "causes": {"count": len(diff.causes), "first": diff.causes[0] if diff.causes else None,
                   "last": diff.causes[-1] if diff.causes else None},
        "partitions_compared": len(diff.partitions),
        "changed": [{"topic_partition": f"{d.topic}-{d.partition}", "topic": d.topic, "partition": d.partition,
                     "original": outcome(d.original), "branch": outcome(d.branch)} for d in diff.changed],
        "counts": {name: {"original": a, "branch": b} for name, (a, b) in diff.counts.items()},
        "only_in_original": diff.only_in_original,
        "only_in_branch": diff.only_in_branch,
    }


# -- the command ---------------------------------------------------------------------------

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("replay", help="branch a checkpoint at a micro-batch and run the rest again under other settings")
    p.add_argument("--checkpoint", required=True, help="the job's checkpoint (only read)")
    p.add_argument("--from-batch", type=int, required=True, metavar="N", help="the branch ends with this batch committed")
    p.add_argument("--to", required=True, metavar="DIR", help="new directory for the branch (its checkpoint)")
    p.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE", help="override one setting of the original run")
    p.add_argument("--input", help="kafka, or file:DIR (default: the original run's input)")
    p.add_argument("--output", help="kafka, or file:DIR (default: file:DIR/out of the branch)")
    p.add_argument("--diff", action="store_true", help="compare the branch's decisions with the original run's")
    p.add_argument("--original-decisions", metavar="PATH",
                   help="the original run's decisions (file-output directory or JSON lines; default: its file output)")
    p.add_argument("--json", action="store_true", help="print the result (and the diff) as one JSON object")
    p.set_defaults(func=cmd_replay)
    return p


def check_args(args: argparse.Namespace) -> tuple[JobSettings, dict[str, str], str]:
    """Everything `replay` can refuse before Spark starts; the branch's (settings, Spark
    conf, master)."""
    original = load_settings(args.checkpoint)
    branch = branch_settings(original, args.to, list(args.set or []), args.input, args.output)
    committed = check_branch(args.checkpoint, args.from_batch, args.to)
    if args.from_batch == committed[-1]:
        earlier = f"; branch from an earlier one ({committed[0]}..{committed[-2]})" if len(committed) > 1 else ""
        raise ReplayError(f"batch {args.from_batch} is the last committed batch of {args.checkpoint}: "
                          f"there is nothing after it to replay{earlier}")
    if args.diff:
        decisions_paths(original, branch[0], args.original_decisions)
    return branch


def cmd_replay(args: argparse.Namespace) -> int:
    from streaming.job import spark_session

    settings, spark_conf, master = check_args(args)
    spark = spark_session(settings, app_name="shadow-controller-replay", master=master, extra=spark_conf)
    spark.sparkContext.setLogLevel("WARN")
    try:
        return run_replay(args, spark)
    finally:
        spark.stop()


def run_replay(args: argparse.Namespace, spark: Any, out: Any = None) -> int:
    """The command with a given Spark session. Its errors are reported here as well as by
    the CLI's main, since tests and notebooks call it directly."""
    from .cli import report

    out = out or sys.stdout
    try:
        result = replay(spark, args.checkpoint, args.from_batch, args.to, list(args.set or []),
                        input=args.input, output=args.output)
        diff = diff_replay(args.checkpoint, args.to, args.from_batch, args.original_decisions) if args.diff else None
    except CommandError as exc:
        return report("replay", exc)
    ran = sorted(result.stats)
    decisions = sum(s["decisions"] for s in result.stats.values())
    if args.json:
        doc = {"branch": result.branch.checkpoint, "from_batch": args.from_batch, "files_copied": result.branch.copied,
               "files_dropped": len(result.branch.dropped), "batches": ran, "decisions": decisions,
               "output": result.settings.output, **({"diff": diff_json(diff)} if diff else {})}
        print(json.dumps(doc, indent=2), file=out)
        return 0
    print(f"branched {args.checkpoint} at batch {args.from_batch} into {result.branch.checkpoint} "
          f"({result.branch.copied} files copied, {len(result.branch.dropped)} dropped); ran batches "
          f"{f'{ran[0]}..{ran[-1]}' if ran else 'none'}, {decisions} decisions to {result.settings.output}", file=out)
    if diff:
        print(format_diff(diff), file=out)
    return 0
