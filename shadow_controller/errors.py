"""The tools' errors, all under the project's root error
(`state_machines.errors.ShadowControllerError`).

An error a command reports as a usage mistake derives from `streaming.exits.UsageError`
and so carries exit code 2; the CLI's `main` turns any of them into the command's one
line on stderr (`console.report`). A delivery the broker did not confirm is the shell's
`streaming.kafka.errors.DeliveryFailed`, not a class of the tools' own.
"""

from __future__ import annotations

from state_machines.errors import ShadowControllerError
from streaming.exits import INTERRUPTED, CommandError, UsageError


class Interrupted(CommandError):
    """Ctrl-C in a one-shot command."""

    exit_code = INTERRUPTED


class BridgeError(ShadowControllerError):
    """Base of the bridge's errors."""


class ClusterUnreachable(BridgeError):
    """The live cluster did not answer."""


class StateMismatch(BridgeError):
    """The bridge's state file belongs to another cluster."""


class RuleSetMismatch(BridgeError):
    """The shadow's controller settings contradict the rules the live cluster runs."""


class BrokerError(ShadowControllerError):
    """The embedded broker could not be started, or a topic could not be created."""


class InspectError(UsageError):
    """The checkpoint cannot answer the question (no such batch, not a job checkpoint)."""


class ReplayError(UsageError):
    """A replay that cannot be made as asked (bad batch, target not empty, ...)."""
