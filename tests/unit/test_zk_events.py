"""The ZooKeeper bridge's pure parts: znode changes as the controller's inputs, in zxid
order (zk_events), and the checks of the controller's state writes (zk_checks). The same
paths against a real ZooKeeper are in tests/zookeeper."""

from __future__ import annotations

import json
from typing import Any

from shadow_controller.zk_bridge import states_of
from shadow_controller.zk_checks import Checker
from shadow_controller.zk_events import (
    Change,
    ControllerGone,
    Emit,
    Note,
    StateWrite,
    Translator,
    bootstrap,
    diff_nodes,
)
from shadow_controller.zk_znodes import Node
from state_machines.model import ControllerConfig


def node(doc: Any, czxid: int, mzxid: int | None = None, version: int = 0) -> Node:
    data = doc if isinstance(doc, str) else json.dumps(doc)
    return Node(data, czxid, czxid if mzxid is None else mzxid, version, 1_000 + czxid)


def state(leader: int, epoch: int, isr: list[int], version: int, zxid: int, ce: int = 1) -> Node:
    doc = {
        "controller_epoch": ce,
        "leader": leader,
        "version": 1,
        "leader_epoch": epoch,
        "isr": isr,
    }
    return node(doc, 10, zxid, version)


def topic(
    parts: dict[int, list[int]],
    adding: dict[int, list[int]] | None = None,
    removing: dict[int, list[int]] | None = None,
) -> dict[str, Any]:
    return {
        "removing_replicas": {str(p): r for p, r in (removing or {}).items()},
        "partitions": {str(p): r for p, r in parts.items()},
        "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
        "adding_replicas": {str(p): r for p, r in (adding or {}).items()},
        "version": 3,
    }


def events(items: list[Any]) -> list[dict[str, Any]]:
    return [i.event for i in items if isinstance(i, Emit)]


def test_changes_come_in_zxid_order_and_a_failover_reads_its_controller_first() -> None:
    old = {"/brokers/ids/1": node("{}", 5), "/brokers/ids/2": node("{}", 6)}
    new = {
        "/brokers/ids/1": node("{}", 5),
        "/controller": node({"brokerid": 1}, 40),
        "/controller_epoch": node("2", 3, 40, 1),
        "/brokers/ids/3": node("{}", 30),
    }
    changes = diff_nodes(old, new, {"/brokers/ids/2": 20})
    assert [(c.path, c.zxid) for c in changes] == [
        ("/brokers/ids/2", 20),
        ("/brokers/ids/3", 30),
        ("/controller", 40),
        ("/controller_epoch", 40),
    ]
    t = Translator(old)
    out = [e for c in changes for e in events(t.apply(c))]
    assert out == [
        {"v": 1, "type": "BrokerFailure", "broker_id": 2},
        {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 30},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 2},
    ]


def test_a_registration_made_again_is_a_startup_with_its_new_epoch() -> None:
    t = Translator({"/brokers/ids/2": node("{}", 6)})
    [item] = t.apply(Change("/brokers/ids/2", node("{}", 6), node("{}", 50), 50))
    assert isinstance(item, Emit) and item.event["broker_epoch"] == 50
    # the broker rewrote its registration (same czxid): no event
    assert t.apply(Change("/brokers/ids/2", node("{}", 50), node("{}", 50, 60, 1), 60)) == []


def test_topic_znode_changes_are_creation_expansion_and_reassignment() -> None:
    t = Translator({"/config/topics/orders": node({"version": 1, "config": {"a": "b"}}, 7)})
    before = node(topic({0: [1, 2]}), 8)
    [created] = t.apply(Change("/brokers/topics/orders", None, before, 8))
    assert isinstance(created, Emit)
    assert created.event == {
        "v": 1,
        "type": "TopicCreation",
        "topic": "orders",
        "partitions": {"0": [1, 2]},
        "configs": {"a": "b"},
    }
    moving = node(topic({0: [3, 2, 1], 1: [2, 1]}, {0: [3]}, {0: [1]}), 8, 9, 1)
    assert events(t.apply(Change("/brokers/topics/orders", before, moving, 9))) == [
        {"v": 1, "type": "PartitionExpansion", "topic": "orders", "partitions": {"1": [2, 1]}},
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "orders",
            "partition": 0,
            "target_replicas": [3, 2],
        },
    ]
    done = node(topic({0: [3, 2], 1: [2, 1]}), 8, 10, 2)  # the controller's own last write
    assert t.apply(Change("/brokers/topics/orders", moving, done, 10)) == []


def test_state_writes_deletions_and_what_is_no_input() -> None:
    t = Translator({})
    path = "/brokers/topics/orders/partitions/0/state"
    [w] = t.apply(Change(path, None, state(1, 0, [1, 2], 0, 11), 11))
    assert isinstance(w, StateWrite) and (w.topic, w.partition, w.state.version) == ("orders", 0, 0)
    assert t.apply(Change("/controller", node({"brokerid": 1}, 3), None, 12)) == [
        ControllerGone(12)
    ]
    [note] = t.apply(Change("/brokers/topics/bad", None, node("{not json", 13), 13))
    assert isinstance(note, Note) and "not JSON" in note.text
    default = "/config/brokers/<default>"
    on = node({"version": 1, "config": {"unclean.leader.election.enable": "true"}}, 14)
    assert events(t.apply(Change(default, None, on, 14))) == [
        {
            "v": 1,
            "type": "BrokerConfigChange",
            "configs": {"unclean.leader.election.enable": "true"},
        }
    ]
    off = node({"version": 1, "config": {}}, 14, 15, 1)
    assert events(t.apply(Change(default, on, off, 15))) == [
        {"v": 1, "type": "BrokerConfigChange", "configs": {"unclean.leader.election.enable": None}}
    ]


def cluster() -> dict[str, Node]:
    return {
        "/brokers/ids/1": node("{}", 5),
        "/brokers/ids/2": node("{}", 6),
        "/controller": node({"brokerid": 1}, 7),
        "/controller_epoch": node("1", 3, 7, 1),
        "/brokers/topics/orders": node(topic({0: [1, 2]}), 8),
        "/brokers/topics/orders/partitions/0/state": state(1, 0, [1, 2], 0, 9),
    }


def test_the_bootstrap_is_what_a_new_controller_reads() -> None:
    assert [e["type"] for e in events(bootstrap(cluster()))] == [
        "BrokerStartup",
        "BrokerStartup",
        "PartitionStateSnapshot",
        "ControllerFailover",
    ]
    [snapshot] = [e for e in events(bootstrap(cluster())) if "partition" in e]
    assert snapshot["partition_epoch"] == 0 and snapshot["controller_epoch"] == 1


def primed() -> tuple[Checker, dict[str, Node]]:
    nodes = cluster()
    checker = Checker(ControllerConfig(auto_leader_rebalance_enable=False))
    checker.prime(bootstrap(nodes), states_of(nodes))
    return checker, nodes


def write(leader: int, epoch: int, isr: list[int], version: int) -> StateWrite:
    path = "/brokers/topics/orders/partitions/0/state"
    t = Translator({})
    [w] = t.apply(Change(path, None, state(leader, epoch, isr, version, 100 + version), 0))
    assert isinstance(w, StateWrite)
    return w


def test_an_isr_change_keeping_leader_and_epoch_is_the_leaders_alter_partition() -> None:
    checker, nodes = primed()
    emitted, verdicts = checker.handle(write(1, 0, [1], 1), nodes)
    assert [e["type"] for e in emitted] == ["AlterPartition", "ObservedPartitionState"]
    assert emitted[0]["broker_id"] == 1 and emitted[0]["partition_epoch"] == 0
    assert [v.verdict for v in verdicts] == ["inferred", "match"]


def test_an_isr_keeping_a_broker_without_registration_is_safety() -> None:
    checker, nodes = primed()
    checker.handle(Emit({"v": 1, "type": "BrokerFailure", "broker_id": 2}, 0, 0), nodes)
    _, verdicts = checker.handle(write(1, 1, [1, 2], 1), nodes)  # rules: isr [1]
    [v] = verdicts
    assert v.verdict == "safety" and "without a registration" in v.reason
    assert v.predicted is not None and v.predicted["isr"] == [1]
    assert v.kafka_method == "ZkReplicaStateMachine.removeReplicasFromIsr"


def test_a_version_that_jumps_is_a_gap_reported_not_filled() -> None:
    checker, nodes = primed()
    _, verdicts = checker.handle(write(1, 0, [1, 2], 3), nodes)
    assert verdicts[0].verdict == "gap" and "versions 1..2" in verdicts[0].reason
    assert all(v.verdict != "inferred" for v in verdicts)


def test_an_alter_partition_taking_in_a_broker_without_registration_is_refused_and_safety() -> None:
    checker, nodes = primed()
    checker.handle(Emit({"v": 1, "type": "BrokerFailure", "broker_id": 2}, 0, 0), nodes)
    checker.handle(write(1, 1, [1], 1), nodes)
    _, verdicts = checker.handle(write(1, 1, [1, 2], 2), nodes)
    assert [v.verdict for v in verdicts] == ["inferred", "safety"]
    assert "takes in broker [2] without a registration" in verdicts[1].reason
    assert verdicts[1].kafka_method == (
        "KafkaController.processAlterPartition refuses it: INELIGIBLE_REPLICA"
    )


def test_the_position_is_the_whole_view_and_a_journal_of_batches(tmp_path: Any) -> None:
    from shadow_controller.zk_state import StateFile

    path = str(tmp_path / "state.json")
    view = cluster()
    store = StateFile(path, "zk:2181")
    store.save(view)
    gone = "/brokers/ids/2"
    moved = node({"brokerid": 2}, 70)
    store.append([Change(gone, view[gone], None, 60), Change("/controller", None, moved, 70)], view)
    assert (tmp_path / "state.json.journal").exists()
    expected = {**{p: n for p, n in view.items() if p != gone}, "/controller": moved}
    assert StateFile(path, "zk:2181").load() == expected
    # a torn last line (a crash while appending) is not applied
    with open(tmp_path / "state.json.journal", "a") as fh:
        fh.write('{"generation":1,"set":{"/brokers/ids/9"')
    assert StateFile(path, "zk:2181").load() == expected
    # a journal left from before the whole view was written again is never applied to it
    journal = (tmp_path / "state.json.journal").read_text()
    again = StateFile(path, "zk:2181")
    again.load()
    again.save(view)
    (tmp_path / "state.json.journal").write_text(journal)
    assert StateFile(path, "zk:2181").load() == view
