"""KRaft's broker lifecycle as a heartbeat sees it:
`BrokerHeartbeatManager.calculateNextBrokerState`.

Source: metadata/src/main/java/org/apache/kafka/controller/BrokerHeartbeatManager.java,
BrokerControlState.java and `ReplicationControlManager.processBrokerHeartbeat` (apache/kafka
3.9.0). A broker's state is `FENCED`, `UNFENCED` or `CONTROLLED_SHUTDOWN` (`SHUTDOWN_NOW` is
only ever a next state). On each heartbeat:

==================== =================================================== ===================
current              heartbeat                                           next
==================== =================================================== ===================
FENCED               wants shutdown                                      SHUTDOWN_NOW
FENCED               does not want fencing, caught up to its             UNFENCED
                     RegisterBrokerRecord's offset
FENCED               otherwise                                           FENCED
UNFENCED             wants fencing (and shutdown)                        FENCED (SHUTDOWN_NOW)
UNFENCED             wants shutdown, leads a partition                   CONTROLLED_SHUTDOWN
UNFENCED             wants shutdown, leads nothing                       SHUTDOWN_NOW
UNFENCED             otherwise                                           UNFENCED
CONTROLLED_SHUTDOWN  still leads a partition                             CONTROLLED_SHUTDOWN
CONTROLLED_SHUTDOWN  its shutdown offset is at most the lowest active    SHUTDOWN_NOW
                     broker's metadata offset
CONTROLLED_SHUTDOWN  otherwise                                           CONTROLLED_SHUTDOWN
==================== =================================================== ===================

A change of state runs one ReplicationControlManager handler (`heartbeat_handler`): FENCED
and SHUTDOWN_NOW fence, UNFENCED unfences, CONTROLLED_SHUTDOWN starts the controlled
shutdown. Session timeouts (`findOneStaleBroker`) fence without a heartbeat; sessions,
clocks and the offsets are the caller's.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


class BrokerControlState(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    """`BrokerControlState`."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW)

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerControlState.SHUTDOWN_NOW

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerControlState.CONTROLLED_SHUTDOWN


def current_broker_state(fenced: bool, shutting_down: bool) -> BrokerControlState:
    """`currentBrokerState`: shutting down (a controlled shutdown offset is set) first."""
    if shutting_down:
        return BrokerControlState.CONTROLLED_SHUTDOWN
    return BrokerControlState.FENCED if fenced else BrokerControlState.UNFENCED


def calculate_next_broker_state(
    current: BrokerControlState,
    *,
    want_fence: bool,
    want_shut_down: bool,
    current_metadata_offset: int,
    register_broker_record_offset: int,
    has_leaderships: bool,
    controlled_shutdown_offset: int = -1,
    lowest_active_offset: int | None = None,
) -> BrokerControlState:
    """`calculateNextBrokerState`. `lowest_active_offset` None: no active broker
    (Kafka's Long.MAX_VALUE)."""
    s = BrokerControlState
    if current is s.FENCED:
        if want_shut_down:
            return s.SHUTDOWN_NOW
        if not want_fence and current_metadata_offset >= register_broker_record_offset:
            return s.UNFENCED
        return s.FENCED
    if current is s.UNFENCED:
        if want_fence:
            return s.SHUTDOWN_NOW if want_shut_down else s.FENCED
        if want_shut_down:
            return s.CONTROLLED_SHUTDOWN if has_leaderships else s.SHUTDOWN_NOW
        return s.UNFENCED
    if current is s.CONTROLLED_SHUTDOWN:
        if has_leaderships:
            return s.CONTROLLED_SHUTDOWN
        if lowest_active_offset is None or controlled_shutdown_offset <= lowest_active_offset:
            return s.SHUTDOWN_NOW
        return s.CONTROLLED_SHUTDOWN
    return s.SHUTDOWN_NOW


HeartbeatHandler = Literal[
    "handleBrokerFenced", "handleBrokerUnfenced", "handleBrokerInControlledShutdown"
]


def heartbeat_handler(
    current: BrokerControlState, next_state: BrokerControlState
) -> HeartbeatHandler | None:
    """`processBrokerHeartbeat`: the handler a change of state runs, None if it stays."""
    if current is next_state:
        return None
    if next_state in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW):
        return "handleBrokerFenced"
    if next_state is BrokerControlState.UNFENCED:
        return "handleBrokerUnfenced"
    return "handleBrokerInControlledShutdown"
