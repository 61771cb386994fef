"""Requests go only to brokers that are live or shutting down when the batch is sent.

Kafka 3.9.0 `ControllerChannelManager.scala`: `AbstractControllerBrokerRequestBatch`'s
`sendLeaderAndIsrRequest` and `sendStopReplicaRequests` skip every broker that is not in
`liveOrShuttingDownBrokerIds` at send time; the requests queued for it are dropped (and
`ControllerChannelManager.sendRequest` would drop them too, since a dead broker has no
`brokerStateInfo`). Both cases of issue 15 run through the engine:

* a broker fails (`processBrokerChange` removes it from the live brokers, then
  `onBrokerFailure` -> `onReplicasBecomeOffline` -> `replicaStateMachine.handleStateChanges(
  OfflineReplica)`): the StopReplica queued for it is not sent;
* a reassignment resumed after an adding replica died (`onBrokerStartup` ->
  `maybeResumeReassignments` -> `onPartitionReassignment` phase A ->
  `updateLeaderEpochAndSendRequest`): the LeaderAndIsr with isNew queued for the dead adding
  replica is not sent, the live ones are.
"""

from __future__ import annotations

import json
from typing import Any

from state_machines.engine import Engine
from state_machines.events import parse_event


def run(events: list[dict[str, Any]]) -> tuple[Engine, dict[str, list[dict[str, Any]]]]:
    engine = Engine()
    by_id: dict[str, list[dict[str, Any]]] = {}
    for offset, event in enumerate(events):
        by_id[event["id"]] = engine.process(parse_event({"v": 1, **event}, offset))
    return engine, by_id


def started(*brokers: int) -> list[dict[str, Any]]:
    return [
        {"type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b, "id": f"b{b}-up"}
        for b in brokers
    ]


def test_no_stop_replica_to_the_broker_that_just_failed() -> None:
    _, out = run(
        [
            *started(1, 2, 3),
            {
                "type": "ControllerFailover",
                "controller_id": 1,
                "controller_epoch": 1,
                "id": "elected",
            },
            {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2, 3]}, "id": "create"},
            {"type": "BrokerFailure", "broker_id": 3, "id": "b3-down"},
        ]
    )
    records = out["b3-down"]
    assert [r for r in records if r["type"] == "StopReplica"] == []
    # the replica still leaves the ISR, and the survivors are told
    lair = [r for r in records if r["type"] == "LeaderAndIsr"]
    assert [(r["isr"], r["recipients"]) for r in lair] == [([1, 2], [1, 2])]
    assert {
        (r["broker_id"], r["to_state"]) for r in records if r["type"] == "ReplicaStateChange"
    } == {(3, "OfflineReplica")}


def test_no_leader_and_isr_to_a_dead_adding_replica_when_a_reassignment_resumes() -> None:
    engine, out = run(
        [
            *started(1, 2, 3, 4, 5),
            {
                "type": "ControllerFailover",
                "controller_id": 1,
                "controller_epoch": 1,
                "id": "elected",
            },
            {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2, 3]}, "id": "create"},
            {
                "type": "PartitionReassignment",
                "topic": "t",
                "partition": 0,
                "target_replicas": [4, 5, 3],
                "id": "reassign",
            },
            {"type": "BrokerFailure", "broker_id": 5, "id": "b5-down"},
            # broker 4 bounces: its startup resumes the reassignment whose target holds it
            {"type": "BrokerStartup", "broker_id": 4, "broker_epoch": 204, "id": "b4-bounce"},
        ]
    )
    # while both adding replicas were live, both were sent isNew (by the epoch bump's batch,
    # then by each one's NewReplica transition)
    first = [r for r in out["reassign"] if r["type"] == "LeaderAndIsr" and r["is_new"]]
    assert {b for r in first for b in r["recipients"]} == {4, 5}
    resumed = [r for r in out["b4-bounce"] if r["type"] == "LeaderAndIsr" and r["is_new"]]
    assert resumed, json.dumps(out["b4-bounce"], indent=1)
    assert {b for r in resumed for b in r["recipients"]} == {4}
    assert all(
        5 not in r.get("recipients", [r.get("broker_id")])
        for r in out["b4-bounce"]
        if r["type"] in ("LeaderAndIsr", "StopReplica")
    )
