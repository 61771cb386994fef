"""`shadow-controller replay`: run an incident again from micro-batch N under other settings.

    replay --checkpoint CKPT --from-batch N --to DIR \
        --set controller.unclean.leader.election.enable=true --diff

1. branch CKPT at batch N into DIR (`shadow_controller/branch.py`: the branch ends with batch N
   committed; CKPT is only read);
2. run the job on the branch to the end of the available input with the original run's
   settings (CKPT/settings.json, written by `shadow-controller run` through
   `save_settings`) plus the overrides, decisions into DIR/out unless told otherwise;
3. with --diff, compare the branch's decisions with the original run's for the causes
   decided after batch N (`shadow_controller/replay_diff.py`): per partition, the final leader,
   whether it ended offline (leader -1), unclean elections and the leader epoch.

A migration what-if, `--set controller.mode=kraft` on a ZK-era checkpoint (or back), cannot
continue the checkpoint's state: a ZK partition is no KRaft registration. The branch is
then rebuilt: a new checkpoint that runs the input from its start under the other rule set,
so that the state at batch N is the one KRaft's rules would have reached on the same
events; the diff still compares only the causes after batch N.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streaming.exits import CommandError
from streaming.settings import schema as settings_mod
from streaming.settings.checkpoint import (
    FROZEN,
    REBUILT,
    frozen_value,
    load_settings,
    save_settings,
)
from streaming.settings.schema import JobSettings

from .branch import Branch, branch_checkpoint, check_branch, first_offset_after
from .console import PROGRESS_DELAY_S, report
from .errors import ReplayError
from .replay_diff import decisions_paths, diff_json, diff_replay, format_diff

# -- the branch's settings -----------------------------------------------------------------


def branch_settings(
    original: JobSettings,
    to: str,
    overrides: list[str],
    input: str | None = None,
    output: str | None = None,
) -> tuple[JobSettings, dict[str, str], str]:
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
        if name != REBUILT and frozen_value(settings, name) != frozen_value(original, name):
            raise ReplayError(
                f"{name} is frozen into the checkpoint ({frozen_value(original, name)}); "
                f"it cannot be changed"
            )
    if rebuilds(original, settings):
        # the other rule set starts from the input's first event (a new checkpoint)
        settings = dataclasses.replace(settings, starting_offsets="earliest")
    return settings, settings_mod.spark_conf(values), settings_mod.master(values)


def rebuilds(original: JobSettings, branch: JobSettings) -> bool:
    """Whether the branch runs another rule set than the checkpoint's (a migration what-if)."""
    return bool(frozen_value(original, REBUILT) != frozen_value(branch, REBUILT))


# -- the replay ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Replay:
    branch: Branch
    settings: JobSettings
    stats: dict[int, dict[str, int]]


def replay(
    spark: Any,
    checkpoint: str,
    from_batch: int,
    to: str,
    overrides: tuple[str, ...] | list[str] = (),
    *,
    input: str | None = None,
    output: str | None = None,
) -> Replay:
    """Branch CHECKPOINT at `from_batch` into TO and run the job there to the end of the
    available input. `spark` must have the job's configuration (`job.spark_session`)."""
    from streaming.job import start

    original = load_settings(checkpoint)
    settings, _, _ = branch_settings(original, to, list(overrides), input, output)
    if rebuilds(original, settings):
        check_branch(checkpoint, from_batch, to)
        os.makedirs(to, exist_ok=True)
        branch = Branch(os.path.abspath(to), from_batch, 0, (), ())
        start_offset = 0
    else:
        branch = branch_checkpoint(checkpoint, from_batch, to)
        start_offset = first_offset_after(checkpoint, from_batch) or 0
    save_settings(settings, to)
    query, sink = start(spark, settings, available_now=True)
    try:
        with _progress(spark, settings, start_offset):
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
    from pyspark.sql.streaming.listener import StreamingQueryListener
    from tqdm import tqdm

    total = _lines_in(settings.input[5:]) - start if settings.input.startswith("file:") else None
    bar = tqdm(total=total, unit=" events", desc="replay", file=sys.stderr, delay=PROGRESS_DELAY_S)

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            # every source but the deletion feedback ({"batch": n} offsets) reads events
            bar.update(
                sum(
                    s.numInputRows
                    for s in event.progress.sources
                    if '"batch"' not in str(s.endOffset)
                )
            )

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
    files = [
        os.path.join(directory, n) for n in os.listdir(directory) if not n.startswith((".", "_"))
    ]
    return sum(sum(1 for _ in open(f, "rb")) for f in files if os.path.isfile(f))


# -- the command ---------------------------------------------------------------------------


def add_parser(
    subparsers: argparse._SubParsersAction[Any],
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="branch a checkpoint at a micro-batch and run the rest again under other settings",
    )
    p.add_argument("--checkpoint", required=True, help="the job's checkpoint (only read)")
    p.add_argument(
        "--from-batch",
        type=int,
        required=True,
        metavar="N",
        help="the branch ends with this batch committed",
    )
    p.add_argument(
        "--to", required=True, metavar="DIR", help="new directory for the branch (its checkpoint)"
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="override one setting of the original run",
    )
    p.add_argument("--input", help="kafka, or file:DIR (default: the original run's input)")
    p.add_argument("--output", help="kafka, or file:DIR (default: file:DIR/out of the branch)")
    p.add_argument(
        "--diff", action="store_true", help="compare the branch's decisions with the original run's"
    )
    p.add_argument(
        "--original-decisions",
        metavar="PATH",
        help=(
            "the original run's decisions (file-output directory or JSON lines; default: its "
            "file output)"
        ),
    )
    p.add_argument(
        "--json", action="store_true", help="print the result (and the diff) as one JSON object"
    )
    p.set_defaults(func=cmd_replay)
    return p


def check_args(args: argparse.Namespace) -> tuple[JobSettings, dict[str, str], str]:
    """Everything `replay` can refuse before Spark starts; the branch's (settings, Spark
    conf, master)."""
    original = load_settings(args.checkpoint)
    branch = branch_settings(original, args.to, list(args.set or []), args.input, args.output)
    committed = check_branch(args.checkpoint, args.from_batch, args.to)
    if args.from_batch == committed[-1]:
        earlier = (
            f"; branch from an earlier one ({committed[0]}..{committed[-2]})"
            if len(committed) > 1
            else ""
        )
        raise ReplayError(
            f"batch {args.from_batch} is the last committed batch of {args.checkpoint}: "
            f"there is nothing after it to replay{earlier}"
        )
    if args.diff:
        decisions_paths(original, branch[0], args.original_decisions)
    return branch


def cmd_replay(args: argparse.Namespace) -> int:
    from streaming.job import spark_session

    settings, spark_conf, master = check_args(args)
    spark = spark_session(
        settings, app_name="shadow-controller-replay", master=master, extra=spark_conf
    )
    spark.sparkContext.setLogLevel("WARN")
    try:
        return run_replay(args, spark)
    finally:
        spark.stop()


def run_replay(args: argparse.Namespace, spark: Any, out: Any = None) -> int:
    """The command with a given Spark session. Its errors are reported here as well as by
    the CLI's main, since tests and notebooks call it directly."""
    out = out or sys.stdout
    try:
        result = replay(
            spark,
            args.checkpoint,
            args.from_batch,
            args.to,
            list(args.set or []),
            input=args.input,
            output=args.output,
        )
        diff = (
            diff_replay(
                args.checkpoint,
                args.to,
                args.from_batch,
                args.original_decisions,
                rebuilt=rebuilds(load_settings(args.checkpoint), result.settings),
            )
            if args.diff
            else None
        )
    except CommandError as exc:
        return report("replay", exc)
    ran = sorted(result.stats)
    decisions = sum(s["decisions"] for s in result.stats.values())
    if args.json:
        doc = {
            "branch": result.branch.checkpoint,
            "from_batch": args.from_batch,
            "files_copied": result.branch.copied,
            "files_dropped": len(result.branch.dropped),
            "batches": ran,
            "decisions": decisions,
            "output": result.settings.output,
            **({"diff": diff_json(diff)} if diff else {}),
        }
        print(json.dumps(doc, indent=2), file=out)
        return 0
    how = (
        f"rebuilt {result.branch.checkpoint} from the input's start under controller.mode "
        f"{result.settings.controller.mode} (the other rule set cannot continue {args.checkpoint})"
        if rebuilds(load_settings(args.checkpoint), result.settings)
        else f"branched {args.checkpoint} at batch {args.from_batch} into "
        f"{result.branch.checkpoint} "
        f"({result.branch.copied} files copied, {len(result.branch.dropped)} dropped)"
    )
    print(
        f"{how}; ran batches "
        f"{f'{ran[0]}..{ran[-1]}' if ran else 'none'}, {decisions} decisions to "
        f"{result.settings.output}",
        file=out,
    )
    if diff:
        print(format_diff(diff), file=out)
    return 0
