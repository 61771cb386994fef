"""Port of `BrokerHeartbeatManagerTest.testCalculateNextBrokerState` (apache/kafka 3.9.0).

Source: metadata/src/test/java/org/apache/kafka/controller/BrokerHeartbeatManagerTest.java.
The manager's sessions are not kept here, so the test's registered brokers become their
current states and the lowest active offset (98, then 100 once broker 1 is fenced).
Not ported (sessions, clocks and the usable-broker iterator are the caller's):
testHasValidSession, testFindOneStaleBroker, testNextCheckTimeNs,
testMetadataOffsetComparator, testUsableBrokerIterator,
testControlledShutdownOffsetIsOnlyUpdatedOnce, testBrokerHeartbeatStateList,
testTouchThrowsExceptionUnlessRegistered.
"""

from __future__ import annotations

from state_machines.kraft.broker_heartbeat_manager import (
    BrokerControlState,
    calculate_next_broker_state,
    current_broker_state,
    heartbeat_handler,
)

FENCED = BrokerControlState.FENCED
UNFENCED = BrokerControlState.UNFENCED
CONTROLLED_SHUTDOWN = BrokerControlState.CONTROLLED_SHUTDOWN
SHUTDOWN_NOW = BrokerControlState.SHUTDOWN_NOW


def test_calculate_next_broker_state() -> None:
    """testCalculateNextBrokerState."""
    broker0 = current_broker_state(fenced=True, shutting_down=False)
    broker1 = current_broker_state(fenced=False, shutting_down=False)
    broker5 = current_broker_state(
        fenced=False, shutting_down=True
    )  # controlled shutdown offset 99
    assert (broker0, broker1, broker5) == (FENCED, UNFENCED, CONTROLLED_SHUTDOWN)

    def next_state(
        current: BrokerControlState,
        *,
        want_fence: bool = False,
        want_shut_down: bool = False,
        offset: int = 0,
        leads: bool = False,
        lowest_active_offset: int = 98,
    ) -> BrokerControlState:
        return calculate_next_broker_state(
            current,
            want_fence=want_fence,
            want_shut_down=want_shut_down,
            current_metadata_offset=offset,
            register_broker_record_offset=100,
            has_leaderships=leads,
            controlled_shutdown_offset=99,
            lowest_active_offset=lowest_active_offset,
        )

    assert next_state(broker0, want_shut_down=True) is SHUTDOWN_NOW
    assert next_state(broker0, offset=100) is UNFENCED
    assert next_state(broker0, offset=50) is FENCED
    assert next_state(broker0, want_fence=True) is FENCED

    assert next_state(broker1, want_shut_down=True, leads=True) is CONTROLLED_SHUTDOWN
    assert next_state(broker1, want_shut_down=True) is SHUTDOWN_NOW
    assert next_state(broker1) is UNFENCED

    assert next_state(broker5, want_shut_down=True, leads=True) is CONTROLLED_SHUTDOWN
    assert next_state(broker5, want_shut_down=True) is CONTROLLED_SHUTDOWN
    # Broker 1 (offset 98) is fenced: the lowest active offset is now 100.
    assert next_state(broker5, want_shut_down=True, lowest_active_offset=100) is SHUTDOWN_NOW
    assert (
        next_state(broker5, want_shut_down=True, leads=True, lowest_active_offset=100)
        is CONTROLLED_SHUTDOWN
    )


def test_heartbeat_handler() -> None:
    """`ReplicationControlManager.processBrokerHeartbeat`'s switch (no Kafka test of its own)."""
    assert heartbeat_handler(UNFENCED, UNFENCED) is None
    assert heartbeat_handler(UNFENCED, FENCED) == "handleBrokerFenced"
    assert heartbeat_handler(CONTROLLED_SHUTDOWN, SHUTDOWN_NOW) == "handleBrokerFenced"
    assert heartbeat_handler(FENCED, UNFENCED) == "handleBrokerUnfenced"
    assert heartbeat_handler(UNFENCED, CONTROLLED_SHUTDOWN) == "handleBrokerInControlledShutdown"
