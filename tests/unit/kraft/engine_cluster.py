"""A kraft-mode engine driven by contract events, for the ports of Kafka's
ReplicationControlManagerTest methods that drive whole requests (quorum_controller.py maps
the contract's events onto QuorumController's write events)."""

from __future__ import annotations

from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig

KRAFT = ControllerConfig(mode="kraft")
# Kafka's ReplicationControlTestContext.Builder().setIsElrEnabled(true): ELR at 4.0-IV1
# (4.0's definition, see metadata_version.py)
KRAFT_ELR = ControllerConfig(
    mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1
)


class Cluster:
    """Contract events into a kraft-mode engine; the test context's registerBrokers and
    unfenceBrokers are one BrokerStartup each (broker epoch 100 + id, as Kafka's)."""

    def __init__(self, config: ControllerConfig = KRAFT) -> None:
        self.engine = Engine(config)
        self.offset = 0

    def __call__(self, event_id: str, type_: str, **fields: Any) -> list[dict[str, Any]]:
        records = self.engine.process(
            parse_event({"v": 1, "type": type_, "id": event_id, **fields}, self.offset)
        )
        self.offset += 1
        return records

    def start(self, *brokers: int) -> None:
        self("elected", "ControllerFailover", controller_id=3000, controller_epoch=1)
        for b in brokers:
            self(f"b{b}-up", "BrokerStartup", broker_id=b, broker_epoch=100 + b)

    def state(self) -> dict[str, Any]:
        return self.engine.state_json()


def of_type(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == kind]


def partition_records(records: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    """Each PartitionRecord as (replicas, isr, leader, leader epoch, partition epoch,
    directories)."""
    return {
        r["partition_id"]: (
            r["replicas"],
            r["isr"],
            r["leader"],
            r["leader_epoch"],
            r["partition_epoch"],
            r["directories"],
        )
        for r in of_type(records, "PartitionRecord")
    }
