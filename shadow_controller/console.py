"""What a command shows on the terminal besides its result: a mistake as the command's one
line on stderr (`report`, with the exit code the error carries), and how long a command
runs before a progress bar appears. Used by the CLI's `main` and by the commands that
tests and notebooks call directly (`inspect`, `replay`)."""

from __future__ import annotations

import sys

from streaming import exits

PROG = "shadow-controller"
# a progress bar (on a terminal only) appears once a command has run this long
PROGRESS_DELAY_S = 1.0


def report(command: str | None, exc: BaseException) -> int:
    """Print the error as the command's one line on stderr; its exit code."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    print(f"{PROG}{' ' + command if command else ''}: {lines[0]}", file=sys.stderr)
    return getattr(exc, "exit_code", exits.JOB_FAILED)
