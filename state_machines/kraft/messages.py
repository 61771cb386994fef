"""Kafka's `ApiError` and the request and response data ReplicationControlManager's
handlers read and answer, one partition's worth.

Source: clients/src/main/java/org/apache/kafka/common/requests/ApiError.java and
clients/src/main/resources/common/message/AlterPartitionRequest.json /
AlterPartitionResponse.json (apache/kafka 3.9.0). Errors are Kafka's `Errors` names.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..kafka_errors import Errors
from ..states import LeaderRecoveryState


@dataclass(frozen=True, slots=True)
class ApiError:
    """Kafka's `ApiError`: an `Errors` name and a message (None where Kafka sends none)."""

    error: str
    message: str | None = None

    @property
    def is_success(self) -> bool:
        return self.error == Errors.NONE


API_NONE = ApiError(Errors.NONE)
# `new ApiError(Errors.X)` carries the error's default message.
ELECTION_NOT_NEEDED = ApiError(
    Errors.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
)
PREFERRED_LEADER_NOT_AVAILABLE = ApiError(
    Errors.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."
)
ELIGIBLE_LEADERS_NOT_AVAILABLE = ApiError(
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available."
)


@dataclass(frozen=True, slots=True)
class BrokerState:
    """AlterPartitionRequest's `BrokerState`: an ISR member and its broker epoch (-1: unchecked;
    requests before version 3 carry ids only)."""

    broker_id: int
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AlterPartitionPartitionData:
    partition_index: int
    leader_epoch: int
    partition_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True, slots=True)
class AlterPartitionPartitionResponse:
    """AlterPartitionResponse's PartitionData, defaults as in its schema (LeaderId 0)."""

    partition_index: int
    error: str = Errors.NONE
    leader_id: int = 0
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = 0
