"""`shadow-controller bridge`'s command line: its flags, the shadow job's settings it checks
the cluster's rules against (`--job-config`, `--job-set`), and its exit codes. The loop is
bridge.py's (a live cluster through its admin API); `--zookeeper` runs zk_bridge.py's.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from state_machines.model import ControllerConfig
from streaming import exits
from streaming.exits import UsageError
from streaming.settings import schema
from streaming.settings.kinds import SettingError

from .bridge import BridgeSettings, run_bridge


def cmd_bridge(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # kafka-python logs each connection failure itself; the bridge reports each failure once.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    shadow, source = _shadow_settings(args.job_config, args.job_set or [])
    if args.zookeeper:
        from .zk_bridge import cmd_zk_bridge

        logging.getLogger("kazoo").setLevel(logging.CRITICAL)
        return cmd_zk_bridge(args, shadow)
    if not args.bootstrap_servers:
        raise UsageError("bridge needs --bootstrap-servers (a live cluster) or --zookeeper")
    settings = BridgeSettings(
        bootstrap_servers=args.bootstrap_servers,
        events_bootstrap_servers=args.events_bootstrap_servers,
        topic=args.topic,
        state=args.state,
        interval_s=args.interval,
        once=args.once,
        request_timeout_s=args.timeout,
        max_retries=args.max_retries,
        backoff_initial_s=args.backoff_initial,
        backoff_max_s=args.backoff_max,
        tick_interval_s=args.tick_interval,
        shadow=shadow,
        shadow_source=source,
        detect=args.detect,
    )
    return BRIDGE_EXIT_CODES.get(run_bridge(settings), exits.JOB_FAILED)


def _shadow_settings(path: str | None, overrides: list[str]) -> tuple[ControllerConfig | None, str]:
    """The shadow job's controller settings, read as `run --config PATH --set ...` reads
    them (a mistake in them is a usage error), or None when neither flag was given."""
    if path is None and not overrides:
        return None, ""
    for item in overrides:
        if "=" not in item or "." not in item.partition("=")[0]:
            raise SettingError(f"--job-set expects SECTION.KEY=VALUE, got {item!r}")
    values = schema.load(path, [schema.parse_override(item) for item in overrides])
    source = " ".join(
        [
            path or str(schema.DEFAULT_FILE)
            if path or schema.DEFAULT_FILE.is_file()
            else "the built-in defaults",
            *(f"--job-set {item}" for item in overrides),
        ]
    )
    return schema.apply_controller(ControllerConfig(), values), source


# run_bridge's outcomes: done, gave up after --max-retries failed attempts (the cluster or
# the events cluster did not answer), the state file is another cluster's
BRIDGE_EXIT_CODES = {0: exits.OK, 1: exits.UNREACHABLE, 2: exits.USAGE}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "bridge", help="turn a live cluster's metadata changes into controller events"
    )
    p.add_argument(
        "--bootstrap-servers",
        "--bootstrap-server",
        dest="bootstrap_servers",
        help="the live cluster to observe through its admin API",
    )
    p.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/CHROOT]",
        help="a ZooKeeper-mode cluster to observe through its ZooKeeper (read only), its "
        "controller's every partition state write checked (docs/zookeeper-bridge.md)",
    )
    p.add_argument(
        "--zookeeper-auth",
        metavar="USER:PASSWORD",
        help="with --zookeeper: authenticate as this digest user (a read-only one)",
    )
    p.add_argument(
        "--events-file",
        metavar="FILE",
        help="with --zookeeper: append the events to this JSON-lines file instead of a topic",
    )
    p.add_argument(
        "--missing-after",
        type=_non_negative,
        default=60.0,
        metavar="SECONDS",
        help="with --zookeeper: after this long without a change, report the writes the rules "
        "predict that ZooKeeper never showed (default 60; 0: never)",
    )
    p.add_argument(
        "--verdicts",
        metavar="FILE",
        help="with --zookeeper: append every checked write's verdict to this JSON-lines file",
    )
    p.add_argument(
        "--events-bootstrap-servers",
        "--events-bootstrap-server",
        dest="events_bootstrap_servers",
        help="where the events topic is (default: the live cluster)",
    )
    p.add_argument(
        "--topic", default="controller-events", help="events topic (default: controller-events)"
    )
    p.add_argument(
        "--state", default="bridge-state.json", help="the bridge's position (last emitted view)"
    )
    p.add_argument(
        "--interval", type=float, default=10.0, metavar="SECONDS", help="poll interval (default 10)"
    )
    p.add_argument("--once", action="store_true", help="poll once (retrying on failure), then exit")
    p.add_argument(
        "--tick-interval",
        type=_non_negative,
        default=30.0,
        metavar="SECONDS",
        help="emit a ControllerTick after this long without events, so event time moves on "
        "(default 30; 0: never)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="admin request timeout (default 10)",
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=None,
        help="give up (exit 1) after this many consecutive failed attempts (default: never)",
    )
    p.add_argument(
        "--job-config",
        metavar="FILE",
        help="the shadow job's settings TOML: refuse to run if its [controller] mode, "
        "metadata.version or eligible.leader.replicas.version contradicts the cluster",
    )
    p.add_argument(
        "--job-set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="an override the shadow job runs with (its --set), for that check",
    )
    p.add_argument(
        "--detect",
        action="store_true",
        help="print which controller the cluster runs (ZK, or KRaft at a metadata.version) "
        "and the shadow settings that match, then exit",
    )
    p.add_argument(
        "--backoff-initial", type=float, default=1.0, metavar="SECONDS", help=argparse.SUPPRESS
    )
    p.add_argument(
        "--backoff-max",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="backoff cap (default 60)",
    )
    p.set_defaults(func=cmd_bridge)
    return p


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value
