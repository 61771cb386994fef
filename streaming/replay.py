"""`shadow-controller replay`: run an incident again from micro-batch N under other settings.

    replay --checkpoint CKPT --from-batch N --to DIR --set controller.unclean.leader.election.enable=true --diff

1. branch CKPT at batch N into DIR (`streaming/branch.py`: the branch ends with batch N
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
import dataclasses
import glob
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

from state_machines.model import ControllerConfig

from . import settings as settings_mod
from .branch import Branch, ReplayError, branch_checkpoint, first_offset_after
from .job import JobSettings

SETTINGS_FILE = "settings.json"
SETTINGS_VERSION = 1
# JobSettings field -> (section, key) in settings.load's document
_JOB_KEYS = {
    "input": ("job", "input"), "output": ("job", "output"), "checkpoint": ("job", "checkpoint"),
    "trigger_interval": ("job", "trigger_interval"), "max_offsets_per_trigger": ("job", "max_offsets_per_trigger"),
    "partition_buckets": ("job", "partition_buckets"), "bootstrap_servers": ("kafka", "bootstrap_servers"),
    "events_topic": ("kafka", "events_topic"), "decisions_topic": ("kafka", "decisions_topic"),
    "use_jvm_kafka": ("kafka", "use_jvm_connector"), "shuffle_partitions": ("spark", "spark.sql.shuffle.partitions"),
}
_DECISIONS_FILE = re.compile(r"decisions-(\d+)\.jsonl$")


# -- the job's settings, kept with its checkpoint ------------------------------------------

# Settings the checkpoint's state layout depends on: the groups partition state is kept
# under, and the shuffle partitions their labels are balanced over (Spark itself freezes
# spark.sql.shuffle.partitions into the checkpoint). STATE_LAYOUT names the layout version
# of scale mode's buckets (2: balanced labels, line-per-partition state).
FROZEN = ("partition_buckets", "shuffle_partitions")
STATE_LAYOUT = 2


class CheckpointMismatch(Exception):
    """The checkpoint's state was laid out under settings this run does not have."""


def check_frozen(settings: JobSettings, checkpoint: str) -> None:
    """Refuse to run on a checkpoint whose state was laid out under other settings: the
    partitions' state would not be found, and the controller would start from nothing."""
    path = os.path.join(checkpoint, SETTINGS_FILE)
    if not os.path.exists(os.path.join(checkpoint, "query")):
        return  # a new checkpoint
    if not os.path.exists(path):
        raise CheckpointMismatch(f"{checkpoint} has query state but no {SETTINGS_FILE}; cannot check its state layout")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    saved = load_settings(checkpoint)
    for name in FROZEN:
        if getattr(settings, name) != getattr(saved, name):
            raise CheckpointMismatch(f"{name} is frozen into the checkpoint {checkpoint} ({getattr(saved, name)}); "
                                     f"it cannot be changed to {getattr(settings, name)}")
    if saved.partition_buckets and doc.get("state_layout", 1) != STATE_LAYOUT:
        raise CheckpointMismatch(f"{checkpoint} keeps scale-mode state in layout {doc.get('state_layout', 1)}; "
                                 f"this build reads layout {STATE_LAYOUT}: start a new checkpoint")


def save_settings(settings: JobSettings, checkpoint: str) -> None:
    """Record the settings of a run in CHECKPOINT/settings.json (a replay starts from them)."""
    doc = {"version": SETTINGS_VERSION, "state_layout": STATE_LAYOUT, "job": dataclasses.asdict(settings)}
    os.makedirs(checkpoint, exist_ok=True)
    path = os.path.join(checkpoint, SETTINGS_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(f"{path}.tmp", path)


def load_settings(checkpoint: str) -> JobSettings:
    path = os.path.join(checkpoint, SETTINGS_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise ReplayError(f"{path} not found: the checkpoint was not written by a run that records its settings") from None
    if doc.get("version") != SETTINGS_VERSION:
        raise ReplayError(f"{path}: settings version {doc.get('version')!r}, expected {SETTINGS_VERSION}")
    job = dict(doc["job"])
    controller_fields = {f.name for f in dataclasses.fields(ControllerConfig)}
    job["controller"] = ControllerConfig(**{k: v for k, v in job.get("controller", {}).items() if k in controller_fields})
    # a field written by an older or newer JobSettings is left to its default or ignored
    known = {f.name for f in dataclasses.fields(JobSettings)}
    return JobSettings(**{k: v for k, v in job.items() if k in known})


def with_overrides(settings: JobSettings, overrides: list[str]) -> tuple[JobSettings, dict[str, str], str]:
    """`settings` with `--set SECTION.KEY=VALUE` overrides applied as `shadow-controller run`
    applies them to its TOML file: (settings, Spark conf, master)."""
    doc: dict[str, dict[str, Any]] = {"job": {}, "kafka": {"options": dict(settings.kafka_options)}, "spark": {},
                                      "controller": _controller_properties(settings.controller)}
    for name, (section, key) in _JOB_KEYS.items():
        value = getattr(settings, name)
        doc[section][key] = 0 if value is None else value
    # settings.load parses the overrides; an empty file gives the overrides alone
    over = settings_mod.load(os.devnull, overrides)
    for section, table in over.items():
        for key, value in table.items():
            if section == "kafka" and key == "options":
                doc["kafka"]["options"].update(value)
            else:
                doc[section][key] = value
    new, spark_conf, master = settings_mod.job_settings(doc)
    # fields settings.py does not know of keep their value
    untouched = {f.name: getattr(settings, f.name) for f in dataclasses.fields(JobSettings)
                 if f.name not in _JOB_KEYS and f.name not in ("controller", "kafka_options")}
    return dataclasses.replace(new, **untouched), spark_conf, master


def _controller_properties(config: ControllerConfig) -> dict[str, Any]:
    # ControllerConfig fields are the Kafka names with dots as underscores; the round trip
    # checks that every field came back.
    props = {f.name.replace("_", "."): getattr(config, f.name) for f in dataclasses.fields(ControllerConfig)}
    if ControllerConfig.from_properties(props) != config:
        raise ReplayError(f"cannot express {config} as controller properties")
    return props


def branch_settings(original: JobSettings, to: str, overrides: list[str], input: str | None = None,
                    output: str | None = None) -> tuple[JobSettings, dict[str, str], str]:
    """The branch's settings: the original's, the overrides, --input/--output, the branch as
    checkpoint, decisions into TO/out unless an output is given."""
    items = list(overrides)
    for item in items:
        key = item.split("=", 1)[0].strip()
        if key == "job.checkpoint":
            raise ReplayError("the branch's checkpoint is --to; job.checkpoint cannot be set")
    for flag, key in ((input, "job.input"), (output, "job.output")):
        if flag:
            items.append(f"{key}={json.dumps(flag)}")
    if not any(i.split("=", 1)[0].strip() == "job.output" for i in items):
        items.append(f"job.output={json.dumps('file:' + os.path.join(os.path.abspath(to), 'out'))}")
    items.append(f"job.checkpoint={json.dumps(os.path.abspath(to))}")
    settings, spark_conf, master = with_overrides(original, items)
    # frozen into the checkpoint's state layout
    for name in ("partition_buckets", "shuffle_partitions"):
        if getattr(settings, name) != getattr(original, name):
            raise ReplayError(f"{name} is frozen into the checkpoint ({getattr(original, name)}); it cannot be changed")
    return settings, spark_conf, master


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
    from .job import start

    original = load_settings(checkpoint)
    settings, _, _ = branch_settings(original, to, list(overrides), input, output)
    branch = branch_checkpoint(checkpoint, from_batch, to)
    save_settings(settings, to)
    query, sink = start(spark, settings, available_now=True)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    if query.exception() is not None:
        raise ReplayError(f"the replay failed: {query.exception()}")
    return Replay(branch, settings, dict(sink.stats))


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
    original = load_settings(checkpoint)
    if original_decisions is None:
        if not original.output.startswith("file:"):
            raise ReplayError("the original run wrote to Kafka: give its decisions with --original-decisions")
        original_decisions = original.output[5:]
    if branch_decisions is None:
        branch_out = load_settings(to).output
        if not branch_out.startswith("file:"):
            raise ReplayError("the branch wrote to Kafka: the diff needs its decisions as files")
        branch_decisions = branch_out[5:]
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
    p.set_defaults(func=cmd_replay)
    return p


def cmd_replay(args: argparse.Namespace) -> int:
    from .job import spark_session

    try:
        original = load_settings(args.checkpoint)
        settings, spark_conf, master = branch_settings(original, args.to, list(args.set or []), args.input, args.output)
    except (ReplayError, ValueError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    spark = spark_session(settings, app_name="shadow-controller-replay", master=master, extra=spark_conf)
    spark.sparkContext.setLogLevel("WARN")
    try:
        return run_replay(args, spark)
    finally:
        spark.stop()


def run_replay(args: argparse.Namespace, spark: Any, out: Any = None) -> int:
    """The command with a given Spark session."""
    out = out or sys.stdout
    try:
        result = replay(spark, args.checkpoint, args.from_batch, args.to, list(args.set or []),
                        input=args.input, output=args.output)
    except (ReplayError, ValueError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    ran = sorted(result.stats)
    print(f"branched {args.checkpoint} at batch {args.from_batch} into {result.branch.checkpoint} "
          f"({result.branch.copied} files copied, {len(result.branch.dropped)} dropped); ran batches "
          f"{f'{ran[0]}..{ran[-1]}' if ran else 'none'}, {sum(s['decisions'] for s in result.stats.values())} "
          f"decisions to {result.settings.output}", file=out)
    if args.diff:
        try:
            diff = diff_replay(args.checkpoint, args.to, args.from_batch, args.original_decisions)
        except ReplayError as exc:
            print(f"replay: {exc}", file=sys.stderr)
            return 2
        print(format_diff(diff), file=out)
    return 0
