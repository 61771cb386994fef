"""A cluster with exactly one offline partition, one partition under its min ISR and one
stuck reassignment, for `health` and `what-if` (in process and on a real checkpoint).

- logs-0 [5]: broker 5 fails, no replica is live: offline;
- orders-0 [1,2,3] with min.insync.replicas=2: its leader shrinks the ISR to [1]: under min ISR;
- events-0 [1,2] reassigned to [3,4]: the adding replicas never join the ISR: stuck;
- orders-1, metrics-0: healthy (metrics-0 [6] is at its min ISR, 1, and its only broker is
  shutting down, which leaves it where it is).
"""

from __future__ import annotations

import json
from typing import Any

from shadow_controller.controller_state import ControllerState
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig

T0 = 1_700_000_000_000


def _event(second: int, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": T0 + second * 1000, **fields}


EVENTS: list[dict[str, Any]] = [
    *[_event(0, type="BrokerStartup", broker_id=b, broker_epoch=100 + b) for b in range(1, 7)],
    _event(1, type="ControllerFailover", controller_id=1, controller_epoch=1),
    _event(
        2,
        type="TopicCreation",
        topic="orders",
        partitions={"0": [1, 2, 3], "1": [2, 3, 1]},
        configs={"min.insync.replicas": "2"},
    ),
    _event(3, type="TopicCreation", topic="logs", partitions={"0": [5]}),
    _event(4, type="TopicCreation", topic="events", partitions={"0": [1, 2]}),
    _event(5, type="TopicCreation", topic="metrics", partitions={"0": [6]}),
    _event(
        6,
        type="AlterPartition",
        topic="orders",
        partition=0,
        broker_id=1,
        leader_epoch=0,
        partition_epoch=0,
        isr=[1],
    ),
    _event(7, type="PartitionReassignment", topic="events", partition=0, target_replicas=[3, 4]),
    _event(8, type="BrokerFailure", broker_id=5),
    _event(9, type="ControlledShutdown", broker_id=6, broker_epoch=106),
    _event(10, type="ControllerTick"),
]
REASSIGNMENT_OFFSET = 12  # the PartitionReassignment's line

# What-if: broker 2 fails, unclean election is turned on cluster-wide, broker 1 fails (an
# unclean election), broker 3 shuts down, orders-1 is moved.
HYPOTHETICAL: list[dict[str, Any]] = [
    _event(20, type="BrokerFailure", broker_id=2),
    _event(21, type="BrokerConfigChange", configs={"unclean.leader.election.enable": "true"}),
    _event(22, type="BrokerFailure", broker_id=1),
    _event(23, type="ControlledShutdown", broker_id=3, broker_epoch=103),
    _event(24, type="PartitionReassignment", topic="orders", partition=1, target_replicas=[4, 3]),
]


def lines(events: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


def engine_state(
    events: list[dict[str, Any]] = EVENTS, config: ControllerConfig = ControllerConfig()
) -> tuple[Engine, ControllerState]:
    """The events through the in-process engine, and a copy of its state as a checkpoint
    would give it (`next_offset` after the last event)."""
    engine = Engine(config)
    for i, e in enumerate(events):
        engine.process(parse_event(e, i))
    return engine, ControllerState(
        config, dict(engine.directory), dict(engine.partitions), len(events)
    )
