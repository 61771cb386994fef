"""Exceptions of the pure core. Refusals the controller answers (a stale epoch, an invalid
transition) are result records, never exceptions; these are for input that cannot be
applied at all and for broken invariants."""


class ShadowControllerError(Exception):
    """Root of every error this project raises."""


class InvalidEvent(ShadowControllerError):
    """An input record that violates the contract (docs/contract.md). Its message is the one-line
    reason written to the dead-letter topic."""


class InvariantViolation(ShadowControllerError):
    """The engine reached a state Kafka's controller cannot reach: a bug here, not bad input."""
