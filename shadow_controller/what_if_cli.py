"""`shadow-controller what-if`'s command line: the flags, the checks made before Spark
starts, and which question is asked (`what_if.py`: events; `what_if_restart.py`: a broker's
restart). The exit code is the answer's, health's codes (7 offline, 6 under min ISR)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .controller_state import check_checkpoint, load_state
from .what_if import WhatIfError, check_events, hypotheses, what_if
from .what_if_render import render
from .what_if_restart import render_restart, restart_broker

# -- the command line ------------------------------------------------------------------------


def cmd_what_if(args: argparse.Namespace) -> int:
    from streaming.settings.checkpoint import load_settings

    restart = args.restart_broker
    events = [] if restart is not None else hypotheses(args.event, args.events)
    check_checkpoint(args.checkpoint, args.batch)
    check_events(events, load_settings(args.checkpoint).limits)
    if args.limit < 0:
        raise WhatIfError(f"--limit {args.limit}: give a number of lines, 0 or more")
    state = load_state(args.checkpoint, args.batch, "shadow-controller-what-if")
    if restart is not None:
        result = restart_broker(state, restart)
        text = render_restart(result, args.limit)
    else:
        result = what_if(state, events)
        text = render(result, args.limit)
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else text)
    code: int = result["exit_code"]
    return code


def add_parser(subparsers: Any) -> None:
    """Register `what-if` on the CLI's subparsers."""
    p = subparsers.add_parser(
        "what-if",
        help="the decisions and impact of hypothetical events at a micro-batch "
        "(the checkpoint is only read)",
    )
    p.add_argument("--checkpoint", required=True, help="the job's checkpoint directory (only read)")
    p.add_argument("--batch", type=int, help="micro-batch id (default: the latest committed)")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--event",
        action="append",
        metavar="JSON",
        help='a contract event (repeatable, applied in order); "v" may be left out',
    )
    given.add_argument("--events", metavar="FILE", help="contract events, one JSON object a line")
    given.add_argument(
        "--restart-broker",
        type=int,
        metavar="ID",
        help="is it safe to restart broker ID now? its controlled shutdown, its going away and "
        "its return, with a verdict (exit 7: a partition goes offline, 6: under its min ISR)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=40,
        metavar="N",
        help="decisions and moves listed in text (default 40)",
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON object (every decision) instead of text"
    )
    p.set_defaults(func=cmd_what_if)
