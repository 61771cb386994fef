"""`shadow-controller`: the command line.

The front door of both the shell (`run`, the streaming job) and the tools (`simulate`,
`produce`, `demo`, `audit`, `bridge`, `replay`, `inspect`, `timeline`, `health`,
`what-if`, `metadata-log`): each command's parser is registered here or by its own module,
and `main` dispatches.

A mistake is one line on stderr, `shadow-controller <command>: <what, and what to check>`,
and an exit code from `streaming/exits.py`; `main` is where errors become that line
(`console.report`). Commands check their arguments, files and settings before they start
Spark or connect.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from pathlib import Path
from typing import Any, NoReturn

from state_machines.errors import ShadowControllerError
from state_machines.model import ControllerConfig
from streaming import exits
from streaming.exits import UsageError
from streaming.preflight import check_broker, check_readable_file, quiet_client
from streaming.spark_log import set_verbose

from .console import PROG, report
from .errors import Interrupted


class Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake as one line (and exit 2) rather than the usage text."""

    def error(self, message: str, prog: str | None = None) -> NoReturn:
        prog = prog or self.prog
        print(f"{prog}: {message} (see {prog} --help)", file=sys.stderr)
        sys.exit(exits.USAGE)

    def parse_args(  # type: ignore[override]
        self, args: Any = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        # argparse reports a subcommand's unknown flags as the top-level parser's; name the command
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, "command", None)
            self.error(
                f"unrecognized arguments: {' '.join(extras)}",
                f"{self.prog} {command}" if command else None,
            )
        return parsed


# -- run -----------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    import logging

    from streaming.settings import schema as settings

    pairs = [settings.parse_override(item) for item in args.set or []]
    pairs += [
        (name, flag)
        for name, flag in (
            ("job.input", args.input),
            ("job.output", args.output),
            ("job.checkpoint", args.checkpoint),
            ("kafka.bootstrap_servers", args.bootstrap_servers),
        )
        if flag
    ]
    job, spark_conf, master = settings.job_settings(settings.load(args.config, pairs))
    note = settings.default_file_note(args.config)
    if note:
        print(f"{PROG} run: {note}", file=sys.stderr)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from streaming.runner import run

    return run(job, spark_conf, master, available_now=args.available_now)


# -- the other commands --------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import DEFAULT_SCENARIO, run_demo

    if args.scenario:
        check_readable_file(args.scenario, "events file")
    return run_demo(
        Path(args.scenario) if args.scenario else DEFAULT_SCENARIO,
        verbose=args.verbose,
        controller=ControllerConfig(mode=args.mode),
    )


def cmd_produce(args: argparse.Namespace) -> int:
    """Write an events file to a topic, one record per line, checking every delivery."""
    from streaming.kafka.errors import DeliveryFailed
    from streaming.kafka.producer import CheckedProducer

    check_readable_file(args.events, "events file")
    check_broker(args.bootstrap_servers, "--bootstrap-server", timeout_s=args.timeout)
    producer = CheckedProducer(
        quiet_client({"bootstrap.servers": args.bootstrap_servers, "enable.idempotence": True})
    )
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
        raise exits.Unreachable(
            f"not every one of {count} records was delivered to {args.topic}: {exc}"
        ) from None
    print(f"produced {count} events to {args.topic}")
    return exits.OK


def cmd_audit(args: argparse.Namespace) -> int:
    from .audit import main as audit_main

    if not os.path.exists(args.decisions):
        raise UsageError(f"{args.decisions}: no such decisions file or directory")
    # audit raises UsageError itself for empty input and for a bad line (file and line)
    return audit_main(args.decisions, args.report, json_output=args.json_output)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-shadow-controller")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown (not installed)"


# The commands whose parsers their own modules add, in the order `--help` lists them; each
# module imports what its command needs (the core, pyarrow, the metadata-log decoders), so
# a command line imports only the one it names (`build_parser`).
LAZY_COMMANDS = {
    "simulate": "simulate",
    "bridge": "bridge_cli",
    "replay": "replay",
    "inspect": "inspect",
    "timeline": "timeline",
    "health": "health",
    "what-if": "what_if_cli",
    "metadata-log": "metadata_log_cli",
}


def _add_lazy(sub: Any, name: str, wanted: str | None) -> None:
    """Add command `name`'s parser: its module's, when the command line names it or names no
    command this table knows (`--help`, a mistyped command: their text lists every
    command's help); otherwise a bare parser of that name, which parsing never reaches."""
    if wanted is None or wanted == name:
        importlib.import_module(f".{LAZY_COMMANDS[name]}", __package__).add_parser(sub)
    else:
        sub.add_parser(name)


def _named_command(argv: list[str]) -> str | None:
    """The command the arguments name, if it is one of LAZY_COMMANDS: the first argument
    that is not an option (the top level has options without values only)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in LAZY_COMMANDS else ""
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; given the command line, with only the command it names in full."""
    wanted = _named_command(sys.argv[1:] if argv is None else argv)
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_lazy(sub, "simulate", wanted)

    run = sub.add_parser("run", help="run the Spark Structured Streaming job")
    from streaming.settings.schema import DEFAULT_FILE

    run.add_argument(
        "--config",
        metavar="FILE",
        help=f"settings TOML (default: {DEFAULT_FILE}, wherever the command runs; the built-in "
        "defaults when it is missing)",
    )
    run.add_argument(
        "--input", help="kafka, file:DIR, or metadata-log:DIR (a KRaft metadata log, followed)"
    )
    run.add_argument("--output", help="kafka, or file:DIR")
    run.add_argument("--checkpoint", help="checkpoint directory")
    run.add_argument(
        "--bootstrap-servers",
        "--bootstrap-server",
        dest="bootstrap_servers",
        help="Kafka bootstrap servers",
    )
    run.add_argument(
        "--set", action="append", metavar="SECTION.KEY=VALUE", help="override one setting"
    )
    run.add_argument(
        "--available-now", action="store_true", help="process what is there, then exit"
    )
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser(
        "demo", help="embedded broker + the job + a cluster story, decisions as they arrive"
    )
    demo.add_argument(
        "--scenario", help="events JSONL to feed (default: examples/three-brokers.jsonl)"
    )
    demo.add_argument(
        "--mode",
        choices=("zk", "kraft"),
        default="zk",
        help="the rule set: the ZK controller's (default) or KRaft's quorum controller's",
    )
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="log the job's progress, and show Spark's own output instead of its log file",
    )
    demo.set_defaults(func=cmd_demo)

    prod = sub.add_parser("produce", help="write an events file to a Kafka topic")
    prod.add_argument("events")
    prod.add_argument(
        "--bootstrap-servers", "--bootstrap-server", dest="bootstrap_servers", required=True
    )
    prod.add_argument("--topic", default="controller-events")
    prod.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long the broker has to answer first (default 10)",
    )
    prod.set_defaults(func=cmd_produce)

    aud = sub.add_parser(
        "audit",
        help="check a decisions dataset against the controller's invariants (Great Expectations)",
    )
    aud.add_argument(
        "decisions", help="a decisions JSONL file, a file-output directory, or a topic dump"
    )
    aud.add_argument(
        "--report",
        metavar="DIR",
        help="render the Data Docs report here (default: a new temporary directory, named in "
        "the output)",
    )
    aud.add_argument(
        "--json",
        action="store_true",
        dest="json_output",
        help="print the result as one JSON object on stdout",
    )
    aud.set_defaults(func=cmd_audit)

    for name in LAZY_COMMANDS:
        if name not in sub.choices:  # `simulate` comes first in `--help`, added above
            _add_lazy(sub, name, wanted)
    for name in SPARK_COMMANDS:
        command = sub.choices[name]
        if "--verbose" not in command._option_string_actions:
            command.add_argument(
                "--verbose",
                action="store_true",
                help="show Spark's own output here instead of in its log file",
            )
    return parser


# the commands that start Spark: its output goes to a log file unless --verbose
# (streaming/spark_log.py)
SPARK_COMMANDS = ("run", "demo", "replay", "inspect", "health", "what-if")


def main(argv: list[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
    set_verbose(getattr(args, "verbose", False))
    try:
        return int(args.func(args) or 0)
    except ShadowControllerError as exc:
        return report(args.command, exc)
    except KeyboardInterrupt:
        return report(args.command, Interrupted("interrupted"))
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # another pipe broke: a fault to see, not the user's `| head`
        # stdout's reader went away (`simulate LOG | head`): stop quietly, as a filter does.
        # stdout now points at /dev/null, so the interpreter's last flush cannot raise again
        # (the recipe of the signal module's "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.PIPE_CLOSED


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more: poll reports POLLERR on a pipe's
    write end once its read end is closed."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError):  # stdout closed or not a file
        return False


if __name__ == "__main__":
    sys.exit(main())
