"""The requests that never appear in ZooKeeper (AlterPartition, ControlledShutdown,
ElectLeaders), read from the one write that only their sender could have caused. Pure:
`infer_request` asks the checker's facts (`ClusterFacts`) and returns a contract event.
See `zk_checks` for where it is used and why."""

from __future__ import annotations

from typing import Any, Protocol

from state_machines.model import NO_LEADER

from .zk_events import StateWrite
from .zk_znodes import PartitionStateZnode


class ClusterFacts(Protocol):
    """What the rules know of the cluster, as the checker's engine holds it."""

    def is_live(self, broker: int) -> bool: ...

    def shutting_down(self, broker: int) -> bool: ...

    def broker_epoch(self, broker: int) -> int | None: ...

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]: ...


def infer_request(
    w: StateWrite, before: PartitionStateZnode, checker: ClusterFacts
) -> tuple[dict[str, Any], str] | None:
    """The request only its sender could have made that explains an unpredicted write, as a
    contract event, and why; None when no such request explains it."""
    s = w.state
    tp = f"{w.topic}-{w.partition}"
    base = {"v": 1, "topic": w.topic, "partition": w.partition}
    if (
        s.leader == before.leader
        and s.leader != NO_LEADER
        and s.leader_epoch == before.leader_epoch
        and (
            set(s.isr) != set(before.isr) or s.leader_recovery_state != before.leader_recovery_state
        )
    ):
        event = {
            **base,
            "type": "AlterPartition",
            "broker_id": s.leader,
            "leader_epoch": s.leader_epoch,
            "partition_epoch": before.version,
            "isr": list(s.isr),
        }
        epoch = checker.broker_epoch(s.leader)
        if epoch is not None:
            event["broker_epoch"] = epoch
        if s.leader_recovery_state == 1:
            event["leader_recovery_state"] = "RECOVERING"
        return event, (
            f"AlterPartition from broker {s.leader}, the leader of {tp}: ISR {list(before.isr)} "
            f"-> {list(s.isr)} (KafkaController.processAlterPartition)"
        )
    if s.leader_epoch <= before.leader_epoch:
        return None
    # a request's write bumps the leader epoch by one; one that skips is still that
    # request's (its shape says whose), and the check then says it skipped
    removed = set(before.isr) - set(s.isr)
    if len(removed) == 1:
        (broker,) = removed
        moved_off = before.leader == broker and s.leader != broker
        dropped = s.leader == before.leader and set(s.isr) == set(before.isr) - {broker}
        if (moved_off or dropped) and checker.is_live(broker) and not checker.shutting_down(broker):
            event = {"v": 1, "type": "ControlledShutdown", "broker_id": broker}
            epoch = checker.broker_epoch(broker)
            if epoch is not None:
                event["broker_epoch"] = epoch
            return event, (
                f"ControlledShutdown from broker {broker}: it leaves the ISR of {tp} with a new "
                "leader epoch while registered (KafkaController.doControlledShutdown)"
            )
    election = {
        "v": 1,
        "type": "ReplicaLeaderElection",
        "partitions": [{"topic": w.topic, "partition": w.partition}],
    }
    replicas = checker.replicas(w.topic, w.partition)
    if (
        replicas
        and s.leader == replicas[0]
        and before.leader != s.leader
        and s.leader in before.isr
        and set(s.isr) == set(before.isr)
    ):
        return {**election, "election_type": "PREFERRED"}, (
            f"ElectLeaders PREFERRED for {tp}: broker {s.leader}, its preferred replica, "
            "leads (KafkaController.processReplicaLeaderElection)"
        )
    if before.leader == NO_LEADER and s.leader not in before.isr and s.isr == (s.leader,):
        return {**election, "election_type": "UNCLEAN"}, (
            f"ElectLeaders UNCLEAN for {tp}: broker {s.leader}, outside the ISR, leads "
            "(KafkaController.processReplicaLeaderElection)"
        )
    return None
