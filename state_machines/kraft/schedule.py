"""The directory's records of the quorum controller's in-memory state beside the metadata
log (QuorumController.java, BrokerHeartbeatManager.java, 3.9.0): the periodic tasks'
counts and `ImbalanceSchedule`s (periodic_tasks.py), and which brokers the heartbeat
manager holds in controlled shutdown (broker_lifecycle.py)."""

from __future__ import annotations

from dataclasses import dataclass

TASKS_KEY = "kraft-tasks"
HEARTBEATS_KEY = "kraft-heartbeats"
DEFERRED, IMMEDIATELY, SCHEDULED = "DEFERRED", "IMMEDIATELY", "SCHEDULED"


@dataclass(frozen=True, slots=True)
class KraftTasks:
    """`imbalancedPartitions.size()`, the partitions without a leader, and each task's
    `ImbalanceSchedule` with its deadline (event time, ms) while SCHEDULED."""

    imbalanced: int = 0
    leaderless: int = 0
    balance: str = DEFERRED
    balance_due: int | None = None
    unclean: str = DEFERRED
    unclean_due: int | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatStates:
    """The brokers `BrokerHeartbeatManager` holds in controlled shutdown (a
    `controlledShutdownOffset` set): after a heartbeat that moved one to
    CONTROLLED_SHUTDOWN, until a heartbeat or a record fences it, or a new active controller
    starts a new manager. The registration's `inControlledShutdown` outlives it."""

    shutting_down: frozenset[int] = frozenset()
