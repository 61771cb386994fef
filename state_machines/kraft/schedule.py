"""The directory's record of KRaft's periodic tasks (periodic_tasks.py): the counts that give
them work and each one's `ImbalanceSchedule` (QuorumController.java, 3.9.0)."""

from __future__ import annotations

from dataclasses import dataclass

TASKS_KEY = "kraft-tasks"
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
