"""Scenarios ported from Kafka 3.9.0
`core/src/test/scala/unit/kafka/controller/ControllerIntegrationTest.scala`.

Each case runs an event log from `logs/` through the real command
`shadow-controller simulate LOG --state-out STATE.json --out DECISIONS.jsonl` and checks the
final (or an intermediate) partition state and the decision records Kafka's test checks.
Expected values come from Kafka's assertions and from Kafka's controller source
(as docs/kafka-semantics.md lists them), never from running this code.

How Kafka's test actions become contract events:

* `makeServers(n)`: `BrokerStartup` for brokers 0..n-1 with made-up broker epochs (Kafka's
  broker epoch is the registration znode's czxid: 100+id at first start, 200+id / 300+id
  after a restart), then `ControllerFailover` (the controller is broker 0, epoch 1, unless
  the servers are created in reverse order).
* `server.shutdown()`: `makeServers` enables controlled shutdown by default, so
  `KafkaServer.shutdown` first sends a ControlledShutdownRequest, then its registration goes:
  `ControlledShutdown` followed by `BrokerFailure`. `server.startup()`: `BrokerStartup` with a
  higher epoch.
* `createTopic`: `TopicCreation`; `createPartitionReassignment`: `PartitionReassignment`;
  `createPreferredReplicaElection`: `ReplicaLeaderElection` PREFERRED with trigger `zk`.
* Followers rejoin the ISR asynchronously in Kafka (the leader sees them catch up and sends
  AlterPartition). Here that request is an explicit `AlterPartition` line from the leader
  (ids `leader-<id>-adds-caught-up-<id>`), carrying the leader epoch and partition epoch the
  leader last received in a LeaderAndIsr request.

Epoch arithmetic used below (ZK mode): every controller write bumps the leader epoch (LE);
every successful write of the partition-state znode bumps the partition epoch (PE = znode
version); a leader's accepted AlterPartition bumps PE only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().parent / "logs"

UNCLEAN_ENABLED_TOML = '[controller]\n"unclean.leader.election.enable" = true\n'

ONLINE = "OnlinePartition"
OFFLINE = "OfflinePartition"


# ---------------------------------------------------------------------------------------
# running the command


@dataclass(frozen=True)
class Run:
    state: dict[str, Any]
    decisions: list[dict[str, Any]]
    stderr: str
    log_lines: list[str]

    def partition(self, name: str) -> dict[str, Any]:
        assert name in self.state["partitions"], (
            f"{name} not in state: {sorted(self.state['partitions'])}"
        )
        return self.state["partitions"][name]

    def offset_of(self, event_id: str) -> int:
        for index, line in enumerate(self.log_lines):
            if json.loads(line).get("id") == event_id:
                return index
        raise AssertionError(f"no event with id {event_id!r} in the log")

    def records(self, cause_id: str, type_: str | None = None) -> list[dict[str, Any]]:
        offset = self.offset_of(cause_id)
        return [
            r
            for r in self.decisions
            if r["cause_offset"] == offset and (type_ is None or r["type"] == type_)
        ]

    def one(self, cause_id: str, type_: str) -> dict[str, Any]:
        found = self.records(cause_id, type_)
        assert len(found) == 1, f"expected one {type_} caused by {cause_id!r}, got {found}"
        return found[0]


def simulate(
    tmp_path: Path, name: str, *, until: str | None = None, config: str | None = None
) -> Run:
    """Run `logs/<name>.jsonl` (up to and including the event with id `until`) through the CLI."""
    lines = (LOGS / f"{name}.jsonl").read_text().splitlines(keepends=True)
    if until is not None:
        ids = [json.loads(line).get("id") for line in lines]
        assert until in ids, f"no event with id {until!r} in {name}"
        lines = lines[: ids.index(until) + 1]
    stem = f"{name}--{until or 'all'}"
    log = tmp_path / f"{stem}.jsonl"
    log.write_text("".join(lines))
    state_out, decisions_out = tmp_path / f"{stem}.state.json", tmp_path / f"{stem}.decisions.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "shadow_controller.cli",
        "simulate",
        str(log),
        "--state-out",
        str(state_out),
        "--out",
        str(decisions_out),
    ]
    if config is not None:
        toml = tmp_path / f"{stem}.toml"
        toml.write_text(config)
        cmd += ["--config", str(toml)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"simulate failed ({proc.returncode}):\n{proc.stderr}"
    decisions = [
        json.loads(line) for line in decisions_out.read_text().splitlines() if line.strip()
    ]
    return Run(json.loads(state_out.read_text()), decisions, proc.stderr, lines)


def assert_partition(run: Run, name: str, **expected: Any) -> None:
    """Compare the named fields of a partition in the --state-out JSON, all at once."""
    actual = run.partition(name)
    assert {k: actual.get(k) for k in expected} == expected


def leadership(
    leader: int,
    leader_epoch: int,
    isr: list[int],
    partition_epoch: int,
    recovery: str = "RECOVERED",
    state: str = ONLINE,
) -> dict[str, Any]:
    return {
        "leader": leader,
        "leader_epoch": leader_epoch,
        "isr": isr,
        "partition_epoch": partition_epoch,
        "leader_recovery_state": recovery,
        "state": state,
    }


# ---------------------------------------------------------------------------------------
# topic creation and partition expansion


def test_testTopicCreation(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testTopicCreation")
    # waitForPartitionState(tp, firstControllerEpoch, 0, InitialLeaderEpoch)
    assert run.state["controller_epoch"] == 1
    assert_partition(run, "t-0", **leadership(0, 0, [0], 0), replica_states={"0": "OnlineReplica"})
    lair = run.one("create-t", "LeaderAndIsr")
    assert (lair["leader"], lair["leader_epoch"], lair["controller_epoch"], lair["is_new"]) == (
        0,
        0,
        1,
        True,
    )


def test_testTopicCreationWithOfflineReplica(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testTopicCreationWithOfflineReplica")
    # Broker 1 (first in the assignment) is down: the first live replica leads, the ISR is the
    # live replicas only. onNewPartitionCreation moves every replica New -> Online, dead or not.
    assert_partition(
        run,
        "t-0",
        **leadership(0, 0, [0], 0),
        replicas=[1, 0],
        replica_states={"0": "OnlineReplica", "1": "OnlineReplica"},
    )
    # initializeLeaderAndIsrForPartitions sends LeaderAndIsr(isNew) to the ISR members only
    lair = run.one("create-t", "LeaderAndIsr")
    assert (lair["leader"], lair["leader_epoch"], lair["is_new"], lair["recipients"]) == (
        0,
        0,
        True,
        [0],
    )


def test_testTopicPartitionExpansion(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testTopicPartitionExpansion")
    assert_partition(run, "t-1", **leadership(0, 0, [0], 0), replicas=[0])
    assert_partition(run, "t-0", **leadership(0, 0, [0], 0))


def test_testTopicPartitionExpansionWithOfflineReplica(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testTopicPartitionExpansionWithOfflineReplica")
    assert_partition(run, "t-1", **leadership(0, 0, [0], 0), replicas=[1, 0])
    # t-0 lost its leader 1 to the controlled shutdown: leader 0, ISR without 1, LE 1
    assert_partition(run, "t-0", **leadership(0, 1, [0], 1), replicas=[1, 0])


# ---------------------------------------------------------------------------------------
# partition reassignment (KafkaController.onPartitionReassignment, kafka-semantics 4.6)


def test_testPartitionReassignment(tmp_path: Path) -> None:
    # [0] -> [1]. Phase A: LE 1 (PE 1). Broker 1 catches up, leader 0 adds it (PE 2); the
    # reassignment completes: reassign election of 1 (LE 2, PE 3), 0 leaves the ISR (LE 3, PE 4).
    started = simulate(tmp_path, "testPartitionReassignment", until="reassign-to-1")
    assert_partition(
        started,
        "t-0",
        **leadership(0, 1, [0], 1),
        replicas=[1, 0],
        adding_replicas=[1],
        removing_replicas=[0],
        replica_states={"0": "OnlineReplica", "1": "NewReplica"},
    )

    run = simulate(tmp_path, "testPartitionReassignment")
    # waitForPartitionState(tp, firstControllerEpoch, otherBrokerId, InitialLeaderEpoch + 3);
    # the topic znode holds the target assignment and the reassignment is no longer in progress
    assert_partition(
        run,
        "t-0",
        **leadership(1, 3, [1], 4),
        replicas=[1],
        adding_replicas=[],
        removing_replicas=[],
        replica_states={"1": "OnlineReplica"},
    )
    ack = run.one("leader-0-adds-caught-up-1", "AlterPartitionResult")
    assert (
        ack["error"],
        ack["leader"],
        ack["leader_epoch"],
        ack["isr"],
        ack["partition_epoch"],
    ) == (None, 0, 1, [0, 1], 2)
    lairs = run.records("leader-0-adds-caught-up-1", "LeaderAndIsr")
    assert any(
        r["election"] == "reassign" and r["leader"] == 1 and r["leader_epoch"] == 2 for r in lairs
    ), lairs
    stops = run.records("leader-0-adds-caught-up-1", "StopReplica")
    assert any(r["broker_id"] == 0 and r["delete_partition"] for r in stops), stops


def test_testPartitionReassignmentWithOfflineReplicaHaltingProgress(tmp_path: Path) -> None:
    # Kafka's test shuts broker 1 down *before* writing the ZK reassignment node; the ZK path
    # does not check that target brokers are alive. The contract's PartitionReassignment is
    # the API path, which refuses dead targets (see the `_api` case below), so here the
    # target goes down right after the reassignment started: the same halted state.
    run = simulate(tmp_path, "testPartitionReassignmentWithOfflineReplicaHaltingProgress")
    # waitForPartitionState(tp, firstControllerEpoch, controllerId, InitialLeaderEpoch + 1),
    # and the reassignment stays in progress
    assert_partition(
        run,
        "t-0",
        **leadership(0, 1, [0], 1),
        replicas=[1, 0],
        adding_replicas=[1],
        removing_replicas=[0],
        replica_states={"0": "OnlineReplica", "1": "OfflineReplica"},
    )


def test_testPartitionReassignmentWithOfflineReplicaHaltingProgress_api(tmp_path: Path) -> None:
    # The API path (KafkaController.validateReplicas): adding replicas must be live brokers,
    # else INVALID_REPLICA_ASSIGNMENT and nothing changes.
    run = simulate(tmp_path, "testPartitionReassignmentWithOfflineReplicaHaltingProgress_api")
    refusal = run.one("reassign-to-offline-1", "StateChangeFailed")
    assert "INVALID_REPLICA_ASSIGNMENT" in refusal["reason"]
    assert run.records("reassign-to-offline-1", "LeaderAndIsr") == []
    assert_partition(
        run,
        "t-0",
        **leadership(0, 0, [0], 0),
        replicas=[0],
        adding_replicas=[],
        removing_replicas=[],
    )


def test_testPartitionReassignmentResumesAfterReplicaComesOnline(tmp_path: Path) -> None:
    # Halted at LE 1 (see above). Broker 1's startup re-runs phase A (LE 2, PE 2); leader 0
    # adds the caught-up replica (PE 3); completion: reassign election (LE 3, PE 4), 0 leaves
    # the ISR (LE 4, PE 5). Reference 5.6: "target offline at start => LE 4".
    resumed = simulate(
        tmp_path, "testPartitionReassignmentResumesAfterReplicaComesOnline", until="broker-1-up"
    )
    assert_partition(
        resumed,
        "t-0",
        **leadership(0, 2, [0], 2),
        replicas=[1, 0],
        adding_replicas=[1],
        removing_replicas=[0],
    )

    run = simulate(tmp_path, "testPartitionReassignmentResumesAfterReplicaComesOnline")
    # waitForPartitionState(tp, firstControllerEpoch, otherBrokerId, InitialLeaderEpoch + 4)
    assert_partition(
        run,
        "t-0",
        **leadership(1, 4, [1], 5),
        replicas=[1],
        adding_replicas=[],
        removing_replicas=[],
        replica_states={"1": "OnlineReplica"},
    )


# ---------------------------------------------------------------------------------------
# preferred replica election (ControllerIntegrationTest.preferredReplicaLeaderElection)


def test_testPreferredReplicaLeaderElection(tmp_path: Path) -> None:
    name = "testPreferredReplicaLeaderElection"
    # after otherBroker.shutdown(): waitForPartitionState(controllerId, leaderEpoch + 1)
    down = simulate(tmp_path, name, until="broker-1-down")
    assert_partition(down, "t-0", **leadership(0, 1, [0], 1))
    # "restarted broker failed to join in-sync replicas": ISR == {0, 1}
    rejoined = simulate(tmp_path, name, until="leader-0-adds-caught-up-1")
    assert_partition(rejoined, "t-0", **leadership(0, 1, [0, 1], 2))

    run = simulate(tmp_path, name)
    # waitForPartitionState(otherBroker, leaderEpoch + 2); the preferred strategy keeps the ISR
    assert_partition(run, "t-0", **leadership(1, 2, [0, 1], 3))
    result = run.one("preferred-election", "ElectionResult")
    assert (result["election_type"], result["error"], result["leader"]) == ("PREFERRED", None, 1)
    lair = run.one("preferred-election", "LeaderAndIsr")
    assert (lair["election"], lair["leader"], lair["leader_epoch"], sorted(lair["recipients"])) == (
        "preferred",
        1,
        2,
        [0, 1],
    )


def test_testBackToBackPreferredReplicaLeaderElections(tmp_path: Path) -> None:
    name = "testBackToBackPreferredReplicaLeaderElections"
    first = simulate(tmp_path, name, until="preferred-election")
    assert_partition(first, "t-0", **leadership(1, 2, [0, 1], 3))
    # second round, leaderEpoch = InitialLeaderEpoch + 2: controlled shutdown of leader 1
    # moves leadership to 0 and drops 1 from the ISR (LE 3, PE 4)
    down = simulate(tmp_path, name, until="broker-1-down-again")
    assert_partition(down, "t-0", **leadership(0, 3, [0], 4))

    run = simulate(tmp_path, name)
    assert_partition(run, "t-0", **leadership(1, 4, [0, 1], 6))
    result = run.one("preferred-election-again", "ElectionResult")
    assert (result["error"], result["leader"]) == (None, 1)


def test_testPreferredReplicaLeaderElectionWithOfflinePreferredReplica(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testPreferredReplicaLeaderElectionWithOfflinePreferredReplica")
    # the preferred replica is down: the election gives up, the state stays at the shutdown's
    # result: waitForPartitionState(controllerId, InitialLeaderEpoch + 1)
    assert_partition(run, "t-0", **leadership(0, 1, [0], 1))
    result = run.one("preferred-election", "ElectionResult")
    assert (result["error"], result["leader"]) == ("PREFERRED_LEADER_NOT_AVAILABLE", None)
    assert run.records("preferred-election", "LeaderAndIsr") == []


def test_testAutoPreferredReplicaLeaderElection(tmp_path: Path) -> None:
    # makeServers(2, autoLeaderRebalanceEnable = true): onControllerFailover schedules the
    # first check 5 s after the failover (ts 1000 here), so the ticks at 5999 and 6000 ms
    # straddle it. At the check, t-0's preferred replica 1 is back in the ISR and broker 1
    # leads 0 of its 1 partition (ratio 1.0 > 0.10): checkAndTriggerAutoLeaderRebalance ->
    # onReplicaElection(PREFERRED, AutoTriggered), which writes no ElectionResult.
    name = "testAutoPreferredReplicaLeaderElection"
    down = simulate(tmp_path, name, until="broker-1-down")
    assert_partition(down, "t-0", **leadership(0, 1, [0], 1))
    before = simulate(tmp_path, name, until="tick-5999")
    assert_partition(before, "t-0", **leadership(0, 1, [0, 1], 2))
    assert before.records("tick-5999") == []
    run = simulate(tmp_path, name)
    # waitForPartitionState(tp, firstControllerEpoch, otherBrokerId, InitialLeaderEpoch + 2)
    assert_partition(run, "t-0", **leadership(1, 2, [0, 1], 3))
    assert [r["election"] for r in run.records("tick-6000", "LeaderAndIsr")] == ["preferred"]
    assert run.records("tick-6000", "ElectionResult") == []


# ---------------------------------------------------------------------------------------
# entire ISR offline


@pytest.mark.parametrize(
    ("log", "config"),
    [
        pytest.param(
            "testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionDisabled",
            None,
            id="testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionDisabled",
        ),
        pytest.param(
            "testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled",
            UNCLEAN_ENABLED_TOML,
            id="testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled-cluster-config",
        ),
        pytest.param(
            "testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled_topic_config",
            None,
            id="testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled-topic-config",
        ),
        pytest.param(
            "testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled_topic_config_change",
            None,
            id="testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionEnabled-topic-config-change",
        ),
    ],
)
def test_testLeaderAndIsrWhenEntireIsrOffline(tmp_path: Path, log: str, config: str | None) -> None:
    created = simulate(tmp_path, log, until="create-t", config=config)
    assert_partition(created, "t-0", **leadership(1, 0, [1], 0))

    run = simulate(tmp_path, log, config=config)
    # The only replica is down, so even an unclean election finds no live replica. Kafka:
    # leader NoLeader, LE InitialLeaderEpoch + 1, ISR == List(otherBrokerId) (the last ISR
    # member is never removed).
    assert_partition(
        run,
        "t-0",
        **leadership(-1, 1, [1], 1, state=OFFLINE),
        replica_states={"1": "OfflineReplica"},
    )
    elected = [r for r in run.records("broker-1-down", "LeaderAndIsr") if r["leader"] != -1]
    assert elected == []
    # partitionLeadersOnBroker skips RF 1 partitions: nothing left to move
    assert run.one("shutdown-1", "ControlledShutdownResult")["partitions_remaining"] == []


# ---------------------------------------------------------------------------------------
# controlled shutdown


@pytest.mark.parametrize(
    ("until", "remaining", "isr", "leader_epoch"),
    [
        # follower 2 leaves the ISR (OfflineReplica: LE 1, PE 1); nothing left to move
        ("controlled-shutdown-2", [], [0, 1], 1),
        # follower 1 leaves the ISR (LE 2, PE 2)
        ("controlled-shutdown-1", [], [0], 2),
        # leader 0: every other replica is shutting down, the election fails, 0 stays leader
        ("controlled-shutdown-0", ["test-0"], [0], 2),
    ],
    ids=["shutdown-2", "shutdown-1", "shutdown-0"],
)
def test_testControlledShutdown(
    tmp_path: Path, until: str, remaining: list[str], isr: list[int], leader_epoch: int
) -> None:
    run = simulate(tmp_path, "testControlledShutdown", until=until)
    result = run.one(until, "ControlledShutdownResult")
    assert result["partitions_remaining"] == remaining
    assert result.get("error") is None
    assert_partition(run, "test-0", **leadership(0, leader_epoch, isr, leader_epoch))


def test_testControlledShutdown_final_state(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testControlledShutdown")
    assert_partition(
        run,
        "test-0",
        **leadership(0, 2, [0], 2),
        replicas=[0, 1, 2],
        replica_states={"0": "OnlineReplica", "1": "OfflineReplica", "2": "OfflineReplica"},
    )
    assert {b: (v["live"], v["shutting_down"]) for b, v in run.state["brokers"].items()} == {
        "0": (False, True),
        "1": (False, True),
        "2": (False, True),
    }
    # leader 0's failed controlled-shutdown election writes nothing
    assert run.records("controlled-shutdown-0", "LeaderAndIsr") == []


def test_testControllerRejectControlledShutdownRequestWithStaleBrokerEpoch(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testControllerRejectControlledShutdownRequestWithStaleBrokerEpoch")
    result = run.one("stale-controlled-shutdown-0", "ControlledShutdownResult")
    assert result["error"] == "STALE_BROKER_EPOCH"
    assert run.state["brokers"]["0"] == {"live": True, "shutting_down": False, "broker_epoch": 101}


# ---------------------------------------------------------------------------------------
# brokers and controller epochs


def test_testControllerDetectsBouncedBrokers(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testControllerDetectsBouncedBrokers")
    # a bounce is onBrokerFailure then onBrokerStartup: follower 1 leaves the ISR (LE 1,
    # PE 1), then gets a LeaderAndIsr again (the broker "initializes after restart")
    assert run.state["brokers"]["1"] == {"live": True, "shutting_down": False, "broker_epoch": 201}
    assert_partition(
        run,
        "t-0",
        **leadership(0, 1, [0], 1),
        replica_states={"0": "OnlineReplica", "1": "OnlineReplica"},
    )
    lairs = run.records("bounce-1", "LeaderAndIsr")
    assert any(
        1 in r["recipients"] and r["leader"] == 0 and r["leader_epoch"] == 1 for r in lairs
    ), lairs


def test_testControllerMoveIncrementsControllerEpoch(tmp_path: Path) -> None:
    name = "testControllerMoveIncrementsControllerEpoch"
    # testEmptyCluster: a controller is elected with firstControllerEpoch
    first = simulate(tmp_path, name, until="first-election")
    assert (first.state["active"], first.state["controller_epoch"]) == (True, 1)
    # testControllerEpochPersistsWhenAllBrokersDown
    down = simulate(tmp_path, name, until="controller-down")
    assert down.state["controller_epoch"] == 1
    run = simulate(tmp_path, name)
    assert (run.state["active"], run.state["controller_epoch"]) == (True, 2)


def test_testMetadataPropagationOnBrokerChange(tmp_path: Path) -> None:
    name = "testMetadataPropagationOnBrokerChange"
    down = simulate(tmp_path, name, until="broker-1-down")
    # partition 0 = [0, 1]: 1 is offline and out of the ISR; partition 1 = [0, 2] untouched
    assert_partition(
        down,
        "topic1-0",
        **leadership(0, 1, [0], 1),
        replicas=[0, 1],
        replica_states={"0": "OnlineReplica", "1": "OfflineReplica"},
    )
    assert_partition(
        down,
        "topic1-1",
        **leadership(0, 0, [0, 2], 0),
        replicas=[0, 2],
        replica_states={"0": "OnlineReplica", "2": "OnlineReplica"},
    )
    run = simulate(tmp_path, name)
    # after the startup no replica is offline and the assignments are unchanged
    assert_partition(
        run,
        "topic1-0",
        replicas=[0, 1],
        replica_states={"0": "OnlineReplica", "1": "OnlineReplica"},
    )
    assert_partition(run, "topic1-1", **leadership(0, 0, [0, 2], 0), replicas=[0, 2])


def test_testMetadataPropagationForOfflineReplicas(tmp_path: Path) -> None:
    name = "testMetadataPropagationForOfflineReplicas"
    down = simulate(tmp_path, name, until="broker-1-down")
    # the only replica's broker is down: no leader, the ISR keeps its last member (LE 1, PE 1)
    assert_partition(
        down,
        "topic1-0",
        **leadership(-1, 1, [1], 1, state=OFFLINE),
        replicas=[1],
        replica_states={"1": "OfflineReplica"},
    )
    run = simulate(tmp_path, name)
    # The re-elected controller (epoch 2) moves the dead replica to OfflineReplica again; it
    # is still in the ISR (as its last member), so doRemoveReplicasFromIsr writes once more:
    # leader -1, ISR [1], LE 2, PE 2 (ReplicaStateMachine.doRemoveReplicasFromIsr).
    assert run.state["controller_epoch"] == 2
    assert_partition(
        run,
        "topic1-0",
        **leadership(-1, 2, [1], 2, state=OFFLINE),
        replicas=[1],
        replica_states={"1": "OfflineReplica"},
    )


# ---------------------------------------------------------------------------------------
# AlterPartition (KafkaController.tryProcessAlterPartition, kafka-semantics 2.4)


def test_testAlterPartition(tmp_path: Path) -> None:
    run = simulate(tmp_path, "testAlterPartition")
    # the request carries the current state: the response is that state
    ack = run.one("alter-partition-current-state", "AlterPartitionResult")
    assert (
        ack["error"],
        ack["leader"],
        ack["leader_epoch"],
        ack["isr"],
        ack["partition_epoch"],
    ) == (None, 0, 0, [0], 0)
    assert_partition(run, "t-0", **leadership(0, 0, [0], 0))


@pytest.mark.parametrize(
    "cause", ["shrink-to-1", "resend-stale-partition-epoch", "resend-current-partition-epoch"]
)
def test_testIdempotentAlterPartition(tmp_path: Path, cause: str) -> None:
    run = simulate(tmp_path, "testIdempotentAlterPartition")
    # every answer is leader 1, LE 0, PE 1, ISR [1]; a re-sent request changes nothing
    ack = run.one(cause, "AlterPartitionResult")
    assert (
        ack["error"],
        ack["leader"],
        ack["leader_epoch"],
        ack["isr"],
        ack["partition_epoch"],
    ) == (None, 1, 0, [1], 1)
    assert_partition(run, "t-0", **leadership(1, 0, [1], 1))


def test_testShutdownBrokerNotAddedToIsr(tmp_path: Path) -> None:
    name = "testShutdownBrokerNotAddedToIsr"
    down = simulate(tmp_path, name, until="broker-1-down")
    # "We expect only the controller (online broker) to be in ISR"
    assert_partition(down, "t-0", **leadership(0, 1, [0], 1))

    refused = simulate(tmp_path, name, until="add-offline-1-to-isr")
    result = refused.one("add-offline-1-to-isr", "AlterPartitionResult")
    assert (
        result["error"] == "INELIGIBLE_REPLICA"
    )  # AlterPartition v2+ (OPERATION_NOT_ATTEMPTED for v0-1)
    assert_partition(refused, "t-0", **leadership(0, 1, [0], 1))

    run = simulate(tmp_path, name)
    # "Wait for broker to rejoin ISR": fullIsr once broker 1 is back
    ack = run.one("leader-0-adds-caught-up-1", "AlterPartitionResult")
    assert (ack["error"], ack["isr"], ack["partition_epoch"]) == (None, [0, 1], 2)
    assert_partition(run, "t-0", **leadership(0, 1, [0, 1], 2))


@pytest.fixture(scope="module")
def alter_partition_errors(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return simulate(tmp_path_factory.mktemp("alter-partition-errors"), "testAlterPartitionErrors")


# t-0 = [0, 1], leader 0, LE 0, PE 0, ISR [0, 1]; each request differs from a valid one in
# the named field. UNKNOWN_TOPIC_ID (random topic id) has no contract counterpart.
# The partition is at LE 0 / PE 0, so Kafka's "epoch - 1" requests carry -1, which Kafka
# answers (FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION, tryProcessAlterPartition); the
# `*-minus-1` cases check that the shadow controller answers them too.
ALTER_PARTITION_ERRORS = [
    ("stale-broker-epoch", "STALE_BROKER_EPOCH"),
    ("unknown-broker", "STALE_BROKER_EPOCH"),
    ("unknown-topic", "UNKNOWN_TOPIC_OR_PARTITION"),
    ("unknown-partition", "UNKNOWN_TOPIC_OR_PARTITION"),
    ("partition-epoch-minus-1", "INVALID_UPDATE_VERSION"),
    ("partition-epoch-plus-1", "NOT_CONTROLLER"),
    ("leader-epoch-minus-1", "FENCED_LEADER_EPOCH"),
    ("leader-epoch-plus-1", "NOT_CONTROLLER"),
    ("recovering", "INVALID_REQUEST"),
    ("recovering-isr-0", "INVALID_REQUEST"),
    # version/epoch errors take precedence over the recovery-state checks
    ("recovering-partition-epoch-minus-1", "INVALID_UPDATE_VERSION"),
    ("recovering-partition-epoch-plus-1", "NOT_CONTROLLER"),
    ("recovering-leader-epoch-minus-1", "FENCED_LEADER_EPOCH"),
    ("recovering-leader-epoch-plus-1", "NOT_CONTROLLER"),
]


@pytest.mark.parametrize(
    ("cause", "error"), ALTER_PARTITION_ERRORS, ids=[c for c, _ in ALTER_PARTITION_ERRORS]
)
def test_testAlterPartitionErrors(alter_partition_errors: Run, cause: str, error: str) -> None:
    assert alter_partition_errors.one(cause, "AlterPartitionResult")["error"] == error
    assert alter_partition_errors.records(cause, "LeaderAndIsr") == []


def test_testAlterPartitionErrors_state_unchanged(alter_partition_errors: Run) -> None:
    assert_partition(alter_partition_errors, "t-0", **leadership(0, 0, [0, 1], 0))


def test_testAlterPartitionErrors_invalid_recovery_state(alter_partition_errors: Run) -> None:
    # Kafka answers leaderRecoveryState = 25 with a top-level UNKNOWN_SERVER_ERROR; in the
    # contract a value outside RECOVERED/RECOVERING is bad input: not applied, dead-lettered.
    run = alter_partition_errors
    assert run.records("invalid-recovery-state") == []
    assert f":{run.offset_of('invalid-recovery-state') + 1}: skipped" in run.stderr


@pytest.fixture(scope="module")
def after_unclean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("alter-partition-after-unclean")


def test_testAlterPartitionErrorsAfterUncleanElection_setup(after_unclean: Path) -> None:
    name = "testAlterPartitionErrorsAfterUncleanElection"
    first = simulate(after_unclean, name, until="replica1-down", config=UNCLEAN_ENABLED_TOML)
    # partitionStateAfterFirstShutdown: leader replica2, ISR {replica2}
    assert_partition(first, "t-0", **leadership(2, 1, [2], 1))
    second = simulate(after_unclean, name, until="replica2-down", config=UNCLEAN_ENABLED_TOML)
    # partitionStateAfterSecondShutdown: leader -1, ISR {replica2}
    assert_partition(second, "t-0", **leadership(-1, 2, [2], 2, state=OFFLINE))
    # replica2's controlled shutdown could not move the leadership anywhere
    assert second.one("shutdown-replica2", "ControlledShutdownResult")["partitions_remaining"] == [
        "t-0"
    ]
    restart = simulate(after_unclean, name, until="replica1-up", config=UNCLEAN_ENABLED_TOML)
    # partitionStateAfterRestart: unclean election of replica1, ISR {replica1}, RECOVERING
    assert_partition(restart, "t-0", **leadership(1, 3, [1], 3, recovery="RECOVERING"))
    lair = [r for r in restart.records("replica1-up", "LeaderAndIsr") if r["election"] is not None]
    assert [(r["election"], r["leader"], r["leader_recovery_state"]) for r in lair] == [
        ("unclean", 1, "RECOVERING")
    ]


# broker 1 epoch 201, LE 3, PE 3, ISR sent {1, 2}, RECOVERED unless named
ALTER_PARTITION_ERRORS_AFTER_UNCLEAN = [
    ("stale-broker-epoch", "STALE_BROKER_EPOCH"),
    ("unknown-broker", "STALE_BROKER_EPOCH"),
    ("partition-epoch-minus-1", "INVALID_UPDATE_VERSION"),
    ("partition-epoch-plus-1", "NOT_CONTROLLER"),
    ("leader-epoch-minus-1", "FENCED_LEADER_EPOCH"),
    ("leader-epoch-plus-1", "NOT_CONTROLLER"),
    ("recovering", "INVALID_REQUEST"),
    ("recovering-partition-epoch-minus-1", "INVALID_UPDATE_VERSION"),
    ("recovering-partition-epoch-plus-1", "NOT_CONTROLLER"),
    ("recovering-leader-epoch-minus-1", "FENCED_LEADER_EPOCH"),
    ("recovering-leader-epoch-plus-1", "NOT_CONTROLLER"),
    # beyond Kafka's test (kafka-semantics 2.4, row 8): replica 2 is down
    ("isr-with-offline-replica2", "INELIGIBLE_REPLICA"),
]


@pytest.fixture(scope="module")
def alter_partition_after_unclean(after_unclean: Path) -> Run:
    return simulate(
        after_unclean, "testAlterPartitionErrorsAfterUncleanElection", config=UNCLEAN_ENABLED_TOML
    )


@pytest.mark.parametrize(
    ("cause", "error"),
    ALTER_PARTITION_ERRORS_AFTER_UNCLEAN,
    ids=[c for c, _ in ALTER_PARTITION_ERRORS_AFTER_UNCLEAN],
)
def test_testAlterPartitionErrorsAfterUncleanElection(
    alter_partition_after_unclean: Run, cause: str, error: str
) -> None:
    assert alter_partition_after_unclean.one(cause, "AlterPartitionResult")["error"] == error


def test_testAlterPartitionErrorsAfterUncleanElection_recovered(
    alter_partition_after_unclean: Run,
) -> None:
    # Beyond Kafka's test: the refused requests changed nothing; then the leader reports
    # recovery with ISR [1], which is accepted (PE 4, LE unchanged, RECOVERED).
    run = alter_partition_after_unclean
    ack = run.one("leader-1-recovered", "AlterPartitionResult")
    assert (
        ack["error"],
        ack["leader"],
        ack["leader_epoch"],
        ack["isr"],
        ack["partition_epoch"],
    ) == (None, 1, 3, [1], 4)
    assert_partition(run, "t-0", **leadership(1, 3, [1], 4), replicas=[1, 2])
