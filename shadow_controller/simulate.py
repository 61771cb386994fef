"""`shadow-controller simulate EVENTS`: the controller in process over an events file, with
no Spark: the core's `Engine` over the job's decoder, the decisions as JSON lines.

A bad line is skipped with its 1-based line number and offset (as the job's file-mode dead
letters name it); an event the controller refuses is dead-lettered with its reason; the
summary (`--json`) counts both. The settings are `run`'s: `--config`'s [controller] and
`--set` for [controller] and [input] (streaming/settings/schema.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from state_machines.engine import Engine
from state_machines.errors import InvalidEvent
from state_machines.events import DEFAULT_LIMITS, Envelope, InputLimits, parse_line
from state_machines.model import ControllerConfig
from streaming import exits
from streaming.collector import run_settled
from streaming.exits import UsageError
from streaming.preflight import check_output_file, check_readable_file

from .console import PROGRESS_DELAY_S


def read_events(
    path: str,
    errors: TextIO,
    limits: InputLimits = DEFAULT_LIMITS,
    counts: Counter[str] | None = None,
) -> Iterator[Envelope]:
    """Contract events from a JSON-lines file; the 0-based line index is the cause_offset.
    A bad line is reported with its 1-based line number (as the job's file-mode dead
    letters name it in `source`) and its offset, and skipped. `counts` gets `lines` and
    `skipped`. On a terminal, a progress bar of the bytes read."""
    from tqdm import tqdm

    counts = Counter() if counts is None else counts
    with (
        open(path, "rb") as fh,
        tqdm(
            total=Path(path).stat().st_size,
            unit="B",
            unit_scale=True,
            desc="simulate",
            file=sys.stderr,
            disable=None,
            delay=PROGRESS_DELAY_S,
        ) as bar,
    ):
        for index, raw in enumerate(fh):
            bar.update(len(raw))
            counts["lines"] += 1
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                counts["skipped"] += 1
                print(f"{path}:{index + 1}: skipped (offset {index}): empty line", file=errors)
                continue
            try:
                envelope = parse_line(line, index, limits)
            except InvalidEvent as exc:
                counts["skipped"] += 1
                print(f"{path}:{index + 1}: skipped (offset {index}): {exc}", file=errors)
                continue
            except Exception as exc:
                counts["skipped"] += 1
                print(
                    f"{path}:{index + 1}: skipped (offset {index}): not decodable: "
                    f"{type(exc).__name__}",
                    file=errors,
                )
                continue
            yield envelope


def simulate_settings(
    config_path: str | None, overrides: list[str]
) -> tuple[ControllerConfig, InputLimits]:
    """simulate's controller settings and input bounds: the `--config` TOML's [controller]
    (default: Kafka's defaults), then `--set SECTION.KEY=VALUE` as `run` reads it (the same
    names, checks and aliases). Only [controller] and [input] settings mean anything to a
    run in process; any other is refused rather than ignored."""
    from streaming.settings import schema

    config = schema.read_controller_config(config_path) if config_path else ControllerConfig()
    values = schema.check_all(schema.parse_override(item) for item in overrides)
    other = sorted(n for n in values if not n.startswith(("controller.", "input.")))
    if other:
        raise UsageError(
            f"--set {other[0]}: simulate runs in process and reads only [controller] and "
            "[input] settings"
        )
    base = schema.JobSettings(input="", output="", checkpoint="", controller=config)
    applied = schema.apply(base, values)
    return applied.controller, applied.limits


def cmd_simulate(args: argparse.Namespace) -> int:
    check_readable_file(args.events, "events file")
    for path, flag in ((args.out, "--out"), (args.state_out, "--state-out")):
        if path:
            check_output_file(path, flag)
    if args.json and not args.out:
        raise UsageError(
            "--json prints the summary on stdout: write the decisions elsewhere with --out"
        )
    config, limits = simulate_settings(args.config, args.set or [])
    engine = Engine(config)
    lines: Counter[str] = Counter()
    decisions: Counter[str] = Counter()
    with open(args.out, "w") if args.out else contextlib.nullcontext(sys.stdout) as out:
        events = read_events(args.events, sys.stderr, limits, counts=lines)
        for record in run_settled(engine, events):
            decisions[record["type"]] += 1
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    if args.state_out:
        Path(args.state_out).write_text(
            json.dumps(engine.state_json(), indent=2, sort_keys=True) + "\n"
        )
    for offset, reason in engine.errors:
        print(
            f"{args.events}:{offset + 1}: dead-lettered (offset {offset}): {reason}",
            file=sys.stderr,
        )
    shadow = {k: engine.observations.get(k, 0) for k in ("match", "benign", "safety")}
    if args.json:
        print(
            json.dumps(
                {
                    "events": lines["lines"] - lines["skipped"],
                    "lines": lines["lines"],
                    "skipped_lines": lines["skipped"],
                    "dead_lettered": len(engine.errors),
                    "decisions": sum(decisions.values()),
                    "decisions_by_type": dict(sorted(decisions.items())),
                    "shadow": shadow,
                },
                indent=2,
            )
        )
    elif engine.observations:
        print(
            f"shadow: {shadow['match']} observed states matched, {shadow['benign']} benign and "
            f"{shadow['safety']} safety divergences",
            file=sys.stderr,
        )
    return exits.OK


def add_parser(subparsers: Any) -> None:
    """Register `simulate` on the CLI's subparsers."""
    sim = subparsers.add_parser(
        "simulate", help="run the controller in process over an events file"
    )
    sim.add_argument("events", help="contract events, one JSON object a line")
    sim.add_argument("--config", help="TOML file with cluster-level controller settings")
    sim.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="override one [controller] or [input] setting, as run's --set "
        "(e.g. controller.mode=kraft)",
    )
    sim.add_argument("--out", help="write decisions here (default: stdout)")
    sim.add_argument("--state-out", help="write the final controller state as JSON here")
    sim.add_argument(
        "--json",
        action="store_true",
        help="print a summary (events, decisions, skipped lines, dead letters, shadow counts) "
        "as JSON",
    )
    sim.set_defaults(func=cmd_simulate)
