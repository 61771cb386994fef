"""The effective min ISR the quorum controller's rules give ELR (KIP-966): Kafka's
`ReplicationControlManager.getTopicEffectiveMinIsr` (apache/kafka 3.9.0) is
min.insync.replicas at most `topics.get(topicId).parts.get(0).replicas.length`, partition
0's replica count now.

Found by the kraft-mode property machine (tests/property/test_kraft_machine.py,
KraftElrMachine): the rules took the count from partition 0's fan-out set, which keeps
every broker ever named for it, so after partition 0 was reassigned to fewer replicas they
kept an ELR that Kafka clears. They now read partition 0's summary
(kraft_view.partition_zero_replicas), which the loop keeps current with ELR on.
"""

from __future__ import annotations

from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig

ELR = ControllerConfig(mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1)


def _run(events: list[dict[str, Any]]) -> tuple[Engine, list[dict[str, Any]]]:
    engine = Engine(ELR)
    out: list[dict[str, Any]] = []
    for offset, event in enumerate(events):
        out = engine.process(parse_event({"v": 1, **event}, offset))
    assert not engine.errors
    return engine, out


def test_min_isr_uses_partition_zero_replicas() -> None:
    engine, records = _run(
        [
            {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
            {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
            {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
            {
                "type": "TopicCreation",
                "topic": "t0",
                "partitions": {"0": [1, 2], "1": [1, 2]},
                "configs": {"min.insync.replicas": "2"},
            },
            # partition 0 goes to one replica: Kafka's effective min ISR for t0 is now min(2, 1) = 1
            {
                "type": "PartitionReassignment",
                "topic": "t0",
                "partition": 0,
                "target_replicas": [1],
            },
            {
                "type": "AlterPartition",
                "topic": "t0",
                "partition": 0,
                "broker_id": 1,
                "leader_epoch": 1,
                "partition_epoch": 1,
                "isr": [1],
                "leader_recovery_state": "RECOVERED",
                "broker_epoch": 101,
            },
            {"type": "ControlledShutdown", "broker_id": 1, "broker_epoch": 101},
        ]
    )
    assert engine.state_json()["partitions"]["t0-0"]["replicas"] == [1]
    t0_1 = [r for r in records if r["type"] == "PartitionChangeRecord" and r["partition"] == 1]
    assert t0_1 and t0_1[0]["isr"] == [2]
    # ISR [2] is at the effective min ISR 1: maybePopulateTargetElr clears the ELR
    assert engine.state_json()["partitions"]["t0-1"]["eligible_leader_replicas"] == []
