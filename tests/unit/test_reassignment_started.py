"""What the core keeps for the operator's tools beyond Kafka's state: when the reassignment
in progress was asked for (cause offset and event time) and the latest event time seen.
Neither changes a decision; both survive the codec, and older encodings read without them."""

from __future__ import annotations

from state_machines.directory import CONTROLLER_KEY, ControllerRecord
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.partition import PartitionRecord
from streaming import codec

SETUP = [
    {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": b, "ts": 1_000}
    for b in (1, 2, 3, 4)
] + [
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1, "ts": 2_000},
    {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": {"0": [1, 2]}, "ts": 3_000},
]


def run(events: list[dict]) -> Engine:
    engine = Engine()
    for i, e in enumerate(events):
        engine.process(parse_event(e, i))
    return engine


def test_a_reassignment_keeps_when_it_was_asked_for_until_it_completes() -> None:
    ask = {
        "v": 1,
        "type": "PartitionReassignment",
        "topic": "t",
        "partition": 0,
        "target_replicas": [3, 4],
        "ts": 4_000,
    }
    engine = run(SETUP + [ask])
    rec = engine.partitions[("t", 0)]
    assert rec.assignment.adding_replicas == (3, 4)
    assert rec.reassignment_started == (len(SETUP), 4_000)
    assert codec.loads(codec.dumps(rec), PartitionRecord) == rec
    # a failover resumes it, and still knows when it started
    failover = {
        "v": 1,
        "type": "ControllerFailover",
        "controller_id": 2,
        "controller_epoch": 2,
        "ts": 5_000,
    }
    engine.process(parse_event(failover, len(SETUP) + 1))
    assert engine.partitions[("t", 0)].reassignment_started == (len(SETUP), 4_000)
    # the adding replicas join the ISR: phase B completes it, and the start is forgotten
    la = engine.partitions[("t", 0)].leadership
    assert la is not None
    alter = {
        "v": 1,
        "type": "AlterPartition",
        "topic": "t",
        "partition": 0,
        "broker_id": la.leader,
        "leader_epoch": la.leader_epoch,
        "partition_epoch": la.partition_epoch,
        "isr": [1, 2, 3, 4],
    }
    engine.process(parse_event(alter, len(SETUP) + 2))
    done = engine.partitions[("t", 0)]
    assert done.assignment.replicas == (3, 4) and done.reassignment_started is None


def test_the_controller_keeps_the_latest_event_time() -> None:
    engine = run(
        SETUP
        + [
            {"v": 1, "type": "ControllerTick", "ts": 9_000},
            {"v": 1, "type": "ControllerTick", "ts": 8_000},
        ]
    )
    controller = engine.directory[CONTROLLER_KEY]
    assert controller.event_time == 9_000
    assert codec.loads(codec.dumps(controller), codec.DirectoryRecord) == controller


def test_records_written_without_the_new_fields_read_with_their_defaults() -> None:
    old_controller = '["C",1,true,1,1,["t"],[1,2],[]]'
    assert codec.loads(old_controller, codec.DirectoryRecord) == ControllerRecord(
        True, 1, 1, frozenset({"t"}), frozenset({1, 2}), frozenset()
    )
    old_partition = (
        '[1,"t",0,[1,2],[],[],"OnlinePartition",[1,0,[1,2],0,"RECOVERED",1],[],[],false]'
    )
    rec = codec.loads(old_partition, PartitionRecord)
    assert rec.reassignment_started is None and rec.offline_dirs == ()
    assert codec.dumps(rec) == old_partition
