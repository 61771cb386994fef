"""Exit codes of every `shadow-controller` command, and the errors that carry them.

A command that fails prints one line on stderr, `shadow-controller <command>: <what
failed, where, and what to check>`, and exits with one of these codes. No traceback
reaches the user for a mistake or a fault the command can name; `main` in `shadow_controller/cli.py`
is the one place that turns these errors into the line and the code.

| code | meaning |
|---|---|
| 0 | done |
| 1 | a check failed: an audit rule broke or a divergence was found |
| 2 | usage: a bad flag, setting, file or checkpoint; nothing was started |
| 3 | unreachable: a broker or cluster did not answer in time |
| 4 | the streaming job failed at run time (the checkpoint is intact; a restart resumes) |
| 5 | the job gave up waiting for its broker (`job.on_broker_outage = "exit"`) |
| 6 | `health`: a partition is under its min ISR (none is offline) |
| 7 | `health`: a partition is offline |
| 130 | interrupted before anything was written (Ctrl-C in a one-shot tool) |
| 141 | the reader of the command's output went away (`head` after `simulate LOG`) |
"""

from __future__ import annotations

from state_machines.errors import ShadowControllerError

OK = 0
CHECK_FAILED = 1
USAGE = 2
UNREACHABLE = 3
JOB_FAILED = 4
OUTAGE = 5
# `health` found a problem: scripts and alerting tell the two apart by the code
UNDER_MIN_ISR = 6
OFFLINE = 7
INTERRUPTED = 130
# stdout's reader closed the pipe: 128 + SIGPIPE, what a shell reports for a filter ended so
PIPE_CLOSED = 141


class CommandError(ShadowControllerError):
    """An error a command reports as one line and an exit code."""

    exit_code = JOB_FAILED


class UsageError(CommandError):
    """A bad flag, setting, file or checkpoint: found before anything starts."""

    exit_code = USAGE


class Unreachable(CommandError):
    """A broker or cluster did not answer."""

    exit_code = UNREACHABLE


class CheckFailed(CommandError):
    """A check ran and found a problem (the message says which)."""

    exit_code = CHECK_FAILED


class BrokerOutage(CommandError):
    """The job stopped waiting for its broker, as `job.on_broker_outage = "exit"` asks."""

    exit_code = OUTAGE
