"""`shadow-controller`: the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from state_machines.engine import Engine
from state_machines.errors import InvalidEvent
from state_machines.events import DEFAULT_LIMITS, Envelope, InputLimits, parse_line
from state_machines.model import ControllerConfig


def load_controller_config(path: str | None) -> ControllerConfig:
    """Cluster-level controller settings from a TOML file's [controller] table (or the top
    level), e.g. `unclean.leader.election.enable = true`."""
    if path is None:
        return ControllerConfig()
    import tomllib

    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    from .settings import flatten

    return ControllerConfig.from_properties(flatten(data.get("controller", data)))


def read_events(path: str, errors: TextIO, limits: InputLimits = DEFAULT_LIMITS) -> Iterator[Envelope]:
    """Contract events from a JSON-lines file; the 0-based line index is the cause_offset.
    A bad line is reported with its 1-based line number (as the job's file-mode dead
    letters name it in `source`) and its offset, and skipped."""
    with open(path, "rb") as fh:
        for index, raw in enumerate(fh):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                print(f"{path}:{index + 1}: skipped (offset {index}): empty line", file=errors)
                continue
            try:
                yield parse_line(line, index, limits)
            except InvalidEvent as exc:
                print(f"{path}:{index + 1}: skipped (offset {index}): {exc}", file=errors)


def cmd_simulate(args: argparse.Namespace) -> int:
    config = load_controller_config(args.config)
    engine = Engine(config)
    out: TextIO = open(args.out, "w") if args.out else sys.stdout
    try:
        for record in engine.run(read_events(args.events, sys.stderr)):
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    finally:
        if args.out:
            out.close()
    if args.state_out:
        Path(args.state_out).write_text(json.dumps(engine.state_json(), indent=2, sort_keys=True) + "\n")
    for offset, reason in engine.errors:
        print(f"{args.events}:{offset + 1}: dead-lettered (offset {offset}): {reason}", file=sys.stderr)
    if engine.observations:
        o = engine.observations
        print(f"shadow: {o['match']} observed states matched, {o['benign']} benign and {o['safety']} safety divergences",
              file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    import logging

    from . import settings as settings_mod
    from .runner import run

    overrides = list(args.set or [])
    for flag, key in ((args.input, "job.input"), (args.output, "job.output"), (args.checkpoint, "job.checkpoint"),
                      (args.bootstrap_servers, "kafka.bootstrap_servers")):
        if flag:
            overrides.append(f"{key}={json.dumps(flag)}")
    doc = settings_mod.load(args.config, overrides)
    job, spark_conf, master = settings_mod.job_settings(doc)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .replay import CheckpointMismatch

    try:
        return run(job, spark_conf, master, available_now=args.available_now)
    except CheckpointMismatch as exc:
        print(f"run: {exc}", file=sys.stderr)
        return 2


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import DEFAULT_SCENARIO, run_demo

    return run_demo(Path(args.scenario) if args.scenario else DEFAULT_SCENARIO, verbose=args.verbose)


def cmd_produce(args: argparse.Namespace) -> int:
    """Write an events file to a topic, one record per line, checking every delivery."""
    from .kafka_producer import CheckedProducer, DeliveryFailed

    producer = CheckedProducer({"bootstrap.servers": args.bootstrap_servers, "enable.idempotence": True})
    count = 0
    try:
        with open(args.events, "rb") as fh:
            for line in fh:
                line = line.rstrip(b"\r\n")
                if line:
                    producer.send(args.topic, line)
                    count += 1
        producer.confirm(60)
    except DeliveryFailed as exc:
        print(f"produce: not every one of {count} records was delivered: {exc}", file=sys.stderr)
        return 1
    print(f"produced {count} events to {args.topic}")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from .audit import main as audit_main

    return audit_main(args.decisions, args.report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shadow-controller", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run the controller in process over an events file")
    sim.add_argument("events", help="contract events, one JSON object a line")
    sim.add_argument("--config", help="TOML file with cluster-level controller settings")
    sim.add_argument("--out", help="write decisions here (default: stdout)")
    sim.add_argument("--state-out", help="write the final controller state as JSON here")
    sim.set_defaults(func=cmd_simulate)

    run = sub.add_parser("run", help="run the Spark Structured Streaming job")
    run.add_argument("--config", help="settings TOML (default: conf/shadow-controller.toml)")
    run.add_argument("--input", help="kafka, or file:DIR")
    run.add_argument("--output", help="kafka, or file:DIR")
    run.add_argument("--checkpoint", help="checkpoint directory")
    run.add_argument("--bootstrap-servers", help="Kafka bootstrap servers")
    run.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE", help="override one setting")
    run.add_argument("--available-now", action="store_true", help="process what is there, then exit")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="embedded broker + the job + a cluster story, decisions as they arrive")
    demo.add_argument("--scenario", help="events JSONL to feed (default: examples/three-brokers.jsonl)")
    demo.add_argument("--verbose", action="store_true")
    demo.set_defaults(func=cmd_demo)

    prod = sub.add_parser("produce", help="write an events file to a Kafka topic")
    prod.add_argument("events")
    prod.add_argument("--bootstrap-servers", required=True)
    prod.add_argument("--topic", default="controller-events")
    prod.set_defaults(func=cmd_produce)

    aud = sub.add_parser("audit", help="check a decisions dataset against the controller's invariants (Great Expectations)")
    aud.add_argument("decisions", help="a decisions JSONL file, a file-output directory, or a topic dump")
    aud.add_argument("--report", default="audit-report", help="where the Data Docs report is rendered")
    aud.set_defaults(func=cmd_audit)

    from .bridge import add_parser as add_bridge_parser
    from .inspect import add_parser as add_incident_tools
    from .replay import add_parser as add_replay_parser

    add_bridge_parser(sub)
    add_replay_parser(sub)
    add_incident_tools(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
