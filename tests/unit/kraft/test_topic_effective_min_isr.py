"""The effective min ISR the quorum controller's rules give ELR (KIP-966): Kafka's
`ReplicationControlManager.getTopicEffectiveMinIsr` (apache/kafka 3.9.0) is
min.insync.replicas at most `topics.get(topicId).parts.get(0).replicas.length`, partition
0's replica count now.

Found by the kraft-mode property machine (tests/property/test_kraft_machine.py,
KraftElrMachine): `KraftView.topic_context` (state_machines/kraft/quorum_controller.py)
takes the count as `len(rec.brokers_of(0))`, partition 0's fan-out set, which keeps every
broker ever named for it. Once partition 0 has been reassigned to fewer replicas (or a
reassignment to more was cancelled, or refused), the rules keep an ELR that Kafka clears.
Not fixed yet: the directory does not see partition 0's replicas after its reassignment
completes (that happens in the partition step), so a fix needs partition 0's replica count
fed back to the directory. Strict xfail: fixing it turns this red, and then the tolerance
in tests/property/kraft_topic_configs.py (`effective_min_isr`) goes too.
"""

from __future__ import annotations

from typing import Any

import pytest

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


@pytest.mark.xfail(strict=True, reason="KNOWN WIRING BUG: the rules take partition 0's replication factor from "
                                       "its fan-out set (quorum_controller.KraftView.topic_context)")
def test_min_isr_uses_partition_zero_replicas() -> None:
    engine, records = _run([
        {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
        {"type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
        {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {"type": "TopicCreation", "topic": "t0", "partitions": {"0": [1, 2], "1": [1, 2]},
         "configs": {"min.insync.replicas": "2"}},
        # partition 0 goes to one replica: Kafka's effective min ISR for t0 is now min(2, 1) = 1
        {"type": "PartitionReassignment", "topic": "t0", "partition": 0, "target_replicas": [1]},
        {"type": "AlterPartition", "topic": "t0", "partition": 0, "broker_id": 1, "leader_epoch": 1,
         "partition_epoch": 1, "isr": [1], "leader_recovery_state": "RECOVERED", "broker_epoch": 101},
        {"type": "ControlledShutdown", "broker_id": 1, "broker_epoch": 101},
    ])
    assert engine.state_json()["partitions"]["t0-0"]["replicas"] == [1]
    t0_1 = [r for r in records if r["type"] == "PartitionChangeRecord" and r["partition"] == 1]
    assert t0_1 and t0_1[0]["isr"] == [2]
    # ISR [2] is at the effective min ISR 1: maybePopulateTargetElr clears the ELR
    assert engine.state_json()["partitions"]["t0-1"]["eligible_leader_replicas"] == []
