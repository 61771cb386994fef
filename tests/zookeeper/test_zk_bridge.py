"""`bridge --zookeeper` against a real ZooKeeper written as Kafka 3.9 writes it: each
correct history verifies clean, each altered controller write is a safety divergence."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_event
from tests.zookeeper.conftest import CONFIG
from tests.zookeeper.scenarios import ALTERED, SCENARIOS, start

pytestmark = pytest.mark.zookeeper

# what the job replaying the bridge's events reports (see the test below)
JOB_DIVERGENCES = {"controller failover": ["benign"]}


def report(name: str, bridge: Any) -> None:
    """The scenario's verdict output, kept for the closing note (/tmp is scratch)."""
    out = Path("/tmp/zkbridge/verdicts")
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {name}"]
    for v in bridge.verdicts():
        if v["verdict"] == "match":
            lines.append(f"MATCH {v['znode']} v{v['version']} ({v['kafka_method']})")
        else:
            lines.append(
                v["verdict"].upper()
                + f" {v['znode']} v{v['version']}: {v['reason']}"
                + (
                    f"; written {v['written']}, predicted {v['predicted']} ({v['kafka_method']})"
                    if v["verdict"] in ("benign", "safety")
                    else ""
                )
            )
    (out / (name.replace(" ", "_") + ".txt")).write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_correct_history_verifies_clean(name: str, cluster: Any, bridge_at: Any) -> None:
    w = start(cluster, bridge_at, None)
    SCENARIOS[name](w)
    checked = w.bridge.wait_checked(w.writes)
    report(name, w.bridge)
    assert [v for v in checked if v["verdict"] != "match"] == []
    assert len(checked) == w.writes
    if name == "reassignment":  # each write named by the step of onPartitionReassignment
        assert [v["kafka_method"] for v in checked[3:]] == [
            "KafkaController.updateLeaderEpochAndSendRequest",
            "KafkaController.processAlterPartition",
            "KafkaController.moveReassignedPartitionLeaderIfRequired "
            "(ReassignPartitionLeaderElectionStrategy)",
            "ZkReplicaStateMachine.removeReplicasFromIsr",
        ]
    assert [v for v in w.bridge.verdicts() if v["verdict"] == "gap"] == []
    # every event the bridge wrote is a contract event, and the job beside it, replaying
    # them (the in-process engine, as `simulate` runs it), finds every observed write as
    # it decides. Except one: contract v1 has no event for "the controller is gone", so
    # the job takes the failed controller's BrokerFailure as that controller's to act on
    # (one write) where the new controller's startup made two (removeReplicasFromIsr,
    # then the election): p0's leader epoch is one behind, a benign divergence. The
    # bridge's own checker starts again from ZooKeeper at the failover, as Kafka does.
    engine = Engine(CONFIG)
    decisions = [
        d for i, e in enumerate(w.bridge.events()) for d in engine.process(parse_event(e, i))
    ]
    divergences = [d for d in decisions if d["type"] == "Divergence"]
    assert [d["severity"] for d in divergences] == JOB_DIVERGENCES.get(name, [])
    assert engine.observations["match"] > 0


@pytest.mark.parametrize("alter", list(ALTERED))
def test_an_altered_controller_write_is_a_safety_divergence(
    alter: str, cluster: Any, bridge_at: Any
) -> None:
    w = start(cluster, bridge_at, alter)
    SCENARIOS[ALTERED[alter]](w)
    assert w.altered is not None, "the scenario never made the altered write"
    checked = w.bridge.wait_checked(w.writes)
    report(f"altered {alter}", w.bridge)
    znode, version = w.altered
    [hit] = [v for v in checked if v["znode"] == znode and v["version"] == version]
    assert hit["verdict"] == "safety", hit
    assert hit["kafka_method"] and hit["written"] and hit["reason"]
    # only that write diverges
    assert [v for v in checked if v["verdict"] != "match"] == [hit]
    with Path("/tmp/zkbridge/altered.jsonl").open("a") as fh:
        fh.write(json.dumps({"alter": alter, **hit}) + "\n")


def test_a_write_the_rules_predict_that_never_comes_is_reported(
    cluster: Any, bridge_at: Any
) -> None:
    """A stuck controller: broker 2's registration is gone and the controller writes
    nothing. After the quiet while, each partition's predicted write is reported missing,
    as safety: every ISR still holds the dead broker, and p1 still names it leader."""
    w = start(cluster, bridge_at, None, missing_after_s=2.0)
    cluster.fail_broker(2)
    deadline = time.monotonic() + 60
    while len([v for v in w.bridge.verdicts() if v["version"] == 1]) < 3:
        assert time.monotonic() < deadline, w.bridge.lines
        time.sleep(0.05)
    missing = {v["znode"].split("/")[5]: v for v in w.bridge.verdicts() if v["version"] == 1}
    assert {p: v["verdict"] for p, v in missing.items()} == {
        "0": "safety",
        "1": "safety",
        "2": "safety",
    }
    assert missing["1"]["predicted"]["leader"] == 3  # the election that never came
    assert "its leader 2 has no registration" in missing["1"]["reason"]
    assert missing["0"]["kafka_method"] == "ZkReplicaStateMachine.removeReplicasFromIsr"
    assert all(v["written"] is None for v in missing.values())
