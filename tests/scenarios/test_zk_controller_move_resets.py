"""Issue 43, Z2: a controller move starts topic deletion's bookkeeping from scratch.

`KafkaController.onControllerResignation` (Kafka 3.9.0) ends with
`controllerContext.resetContext()`, which clears `topicsWithDeletionStarted` and
`topicsIneligibleForDeletion` (ControllerContext.scala); a controller elected elsewhere
starts from an empty context anyway. The new controller's `onControllerFailover` then runs
`TopicDeletionManager.init` with `fetchTopicDeletionsInProgress`' ineligible topics (those
with an offline replica or a reassignment in progress) and `tryTopicDeletion`. Its first
`resumeDeletions` sees every queued topic as unseen (`onTopicDeletion`: the partitions go
Offline -> Offline -> NonExistentPartition again, the first a same-state transition Kafka
logs at trace level and the project writes no record for).
"""

from __future__ import annotations

from pathlib import Path

from tests.scenarios.test_controller_integration import simulate


def test_a_new_controller_treats_a_queued_topic_as_unseen(tmp_path: Path) -> None:
    """The issue's log. t-0 on [0, 1]; broker 1 dies, then t is deleted: replica 1 goes
    ReplicaDeletionIneligible, replica 0 ReplicaDeletionStarted. The controller moves: the
    new one finds replica 1 offline (t ineligible: init) and replica 0 Online
    (initializeReplicaState), and t-0 Offline (leader -1). Broker 1's return
    (onBrokerStartup -> resumeDeletionForTopics) restarts the deletion as unseen:
    PartitionStateChange Offline -> NonExistentPartition, then StopReplica to both."""
    run = simulate(tmp_path, "zkControllerMoveForgetsDeletionStarted")
    changes = [
        (r["from_state"], r["to_state"]) for r in run.records("b1-up-again", "PartitionStateChange")
    ]
    assert changes == [("OfflinePartition", "NonExistentPartition")]
    deletes = [
        r["broker_id"] for r in run.records("b1-up-again", "StopReplica") if r["delete_partition"]
    ]
    assert deletes == [0, 1]
    p = run.partition("t-0")
    assert p["state"] == "NonExistentPartition"
    assert p["replica_states"] == {"0": "ReplicaDeletionStarted", "1": "ReplicaDeletionStarted"}


def test_a_new_controller_forgets_why_a_deletion_was_halted(tmp_path: Path) -> None:
    """The same slip the other way: a StopReplica error halts t's deletion
    (failReplicaDeletion -> markTopicIneligibleForDeletion); the other replica's success
    leaves it waiting (retryDeletionForIneligibleReplicas, but t is ineligible). A new
    controller clears topicsIneligibleForDeletion, init finds no offline replica and no
    reassignment, and tryTopicDeletion restarts the deletion at once: both replicas are
    Online again (initializeReplicaState forgets ReplicaDeletionSuccessful too) and are sent
    StopReplica with deletion."""
    run = simulate(tmp_path, "zkControllerMoveForgetsIneligibleDeletion")
    changes = [
        (r["from_state"], r["to_state"]) for r in run.records("moved", "PartitionStateChange")
    ]
    assert changes == [("OfflinePartition", "NonExistentPartition")]
    deletes = [r["broker_id"] for r in run.records("moved", "StopReplica") if r["delete_partition"]]
    assert deletes == [0, 1]
    p = run.partition("t-0")
    assert p["replica_states"] == {"0": "ReplicaDeletionStarted", "1": "ReplicaDeletionStarted"}
    assert (p["leader"], p["isr"], p["leader_epoch"]) == (-1, [1], 4)
