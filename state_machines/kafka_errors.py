"""Kafka's error codes, as `clients/.../common/protocol/Errors.java` names them.

The rules write an error's name into a decision (`ApiError.error`, a result record's
`error`) and the job persists it in its checkpoint; a `StrEnum` keeps those values the exact
strings Kafka's names are (`Errors.NONE == "NONE"`, and JSON, f-strings and Arrow see the
plain string), while a misspelt name is an attribute error that mypy reports. Only the errors
the rules return are listed; add one here, with Kafka's code, before writing it.
"""

from __future__ import annotations

from enum import StrEnum


class Errors(StrEnum):
    """`org.apache.kafka.common.protocol.Errors`: the name (the value written) and its code."""

    UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
    NONE = "NONE"
    UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
    BROKER_NOT_AVAILABLE = "BROKER_NOT_AVAILABLE"
    INVALID_TOPIC_EXCEPTION = "INVALID_TOPIC_EXCEPTION"
    INVALID_PARTITIONS = "INVALID_PARTITIONS"
    INVALID_REPLICATION_FACTOR = "INVALID_REPLICATION_FACTOR"
    INVALID_REPLICA_ASSIGNMENT = "INVALID_REPLICA_ASSIGNMENT"
    INVALID_CONFIG = "INVALID_CONFIG"
    NOT_CONTROLLER = "NOT_CONTROLLER"
    INVALID_REQUEST = "INVALID_REQUEST"
    OPERATION_NOT_ATTEMPTED = "OPERATION_NOT_ATTEMPTED"
    TOPIC_DELETION_DISABLED = "TOPIC_DELETION_DISABLED"
    FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
    STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
    PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
    ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
    NO_REASSIGNMENT_IN_PROGRESS = "NO_REASSIGNMENT_IN_PROGRESS"
    INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
    UNKNOWN_TOPIC_ID = "UNKNOWN_TOPIC_ID"
    DUPLICATE_BROKER_REGISTRATION = "DUPLICATE_BROKER_REGISTRATION"
    INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
    NEW_LEADER_ELECTED = "NEW_LEADER_ELECTED"
    INVALID_REGISTRATION = "INVALID_REGISTRATION"

    @property
    def code(self) -> int:
        """The error's code on the wire (`Errors.code()`)."""
        return CODES[self]


CODES: dict[Errors, int] = {
    Errors.UNKNOWN_SERVER_ERROR: -1,
    Errors.NONE: 0,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: 3,
    Errors.BROKER_NOT_AVAILABLE: 8,
    Errors.INVALID_TOPIC_EXCEPTION: 17,
    Errors.INVALID_PARTITIONS: 37,
    Errors.INVALID_REPLICATION_FACTOR: 38,
    Errors.INVALID_REPLICA_ASSIGNMENT: 39,
    Errors.INVALID_CONFIG: 40,
    Errors.NOT_CONTROLLER: 41,
    Errors.INVALID_REQUEST: 42,
    Errors.OPERATION_NOT_ATTEMPTED: 55,
    Errors.TOPIC_DELETION_DISABLED: 73,
    Errors.FENCED_LEADER_EPOCH: 74,
    Errors.STALE_BROKER_EPOCH: 77,
    Errors.PREFERRED_LEADER_NOT_AVAILABLE: 80,
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: 83,
    Errors.ELECTION_NOT_NEEDED: 84,
    Errors.NO_REASSIGNMENT_IN_PROGRESS: 85,
    Errors.INVALID_UPDATE_VERSION: 95,
    Errors.UNKNOWN_TOPIC_ID: 100,
    Errors.DUPLICATE_BROKER_REGISTRATION: 101,
    Errors.INELIGIBLE_REPLICA: 107,
    Errors.NEW_LEADER_ELECTED: 108,
    Errors.INVALID_REGISTRATION: 119,
}
