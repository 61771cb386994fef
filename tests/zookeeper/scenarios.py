"""Histories of a ZooKeeper-mode cluster, written as Kafka 3.9 writes them, each controller
write named by the Kafka method that makes it. `alter` replaces one controller write with
a wrong one; the history stops after it (the controller would go on from its own write).

Common start: brokers 1-4 registered, broker 1 the controller (epoch 1), topic `orders`
created by the admin client with p0 [1,2,3], p1 [2,3,1], p2 [3,1,2], and the controller's
initial elections (`initializeLeaderAndIsrForPartitions`: the first live replica leads,
every live replica in the ISR).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.zookeeper.kafka_zk import KafkaZkCluster

T = "orders"


@dataclass
class Writer:
    """The controller's state writes, each waited for at the bridge (so no watch merges two
    writes of one znode), and the altered one in place of its clean one."""

    cluster: KafkaZkCluster
    bridge: Any
    alter: str | None = None
    writes: int = 0
    altered: tuple[str, int] | None = None  # (znode, version) of the altered write

    def state(
        self,
        p: int,
        leader: int,
        epoch: int,
        isr: list[int],
        *,
        name: str = "",
        wrong: tuple[int, int, list[int]] | None = None,
        ce: int | None = None,
    ) -> None:
        if self.alter is not None and name == self.alter and wrong is not None:
            leader, epoch, isr = wrong
            self.altered = (
                f"/brokers/topics/{T}/partitions/{p}/state",
                self.cluster.states[T, p].version + 1,
            )
        self.cluster.write_state(T, p, leader, epoch, isr, ce)
        self.writes += 1
        self.bridge.wait_checked(self.writes)

    def initial(self, p: int, leader: int, isr: list[int]) -> None:
        self.cluster.write_initial(T, p, leader, isr)
        self.writes += 1
        self.bridge.wait_checked(self.writes)

    @property
    def stopped(self) -> bool:
        return self.altered is not None


def start(
    cluster: KafkaZkCluster, bridge_at: Callable[..., Any], alter: str | None, **bridge: Any
) -> Writer:
    for b in (1, 2, 3, 4):
        cluster.start_broker(b)
    cluster.elect_controller(1)
    bridge = bridge_at(cluster.connect, **bridge)
    bridge.wait_events(5)  # the bootstrap: 4 BrokerStartup, ControllerFailover
    w = Writer(cluster, bridge, alter)
    cluster.create_topic(T, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    w.initial(0, 1, [1, 2, 3])
    w.initial(1, 2, [2, 3, 1])
    w.initial(2, 3, [3, 1, 2])
    return w


def broker_failure_and_return(w: Writer) -> None:
    c = w.cluster
    c.fail_broker(2)
    # onBrokerFailure: the partitions it led elect first (OfflinePartitionLeaderElection:
    # the first live replica in the ISR; the ISR less the dead), then removeReplicasFromIsr
    w.state(1, 3, 1, [3, 1], name="leader outside the ISR", wrong=(3, 1, [1]))
    if w.stopped:
        return
    w.state(0, 1, 1, [1, 3], name="fenced broker kept in the ISR", wrong=(1, 1, [1, 3, 2]))
    if w.stopped:
        return
    w.state(2, 3, 1, [3, 1])
    c.start_broker(2)  # onBrokerStartup writes nothing; the leaders take it back in:
    w.state(0, 1, 1, [1, 3, 2])  # AlterPartition from leader 1
    w.state(1, 3, 1, [3, 1, 2])  # from leader 3
    w.state(2, 3, 1, [3, 1, 2])


def controlled_shutdown(w: Writer) -> None:
    c = w.cluster
    # doControlledShutdown(3): the partitions it leads elect (ControlledShutdown strategy:
    # the first replica live, in the ISR and not shutting down), then it leaves the others'
    # ISRs (removeReplicasFromIsr)
    w.state(2, 1, 1, [1, 2], name="skipped leader epoch", wrong=(1, 2, [1, 2]))
    if w.stopped:
        return
    w.state(0, 1, 1, [1, 2])
    w.state(1, 2, 1, [2, 1])
    c.fail_broker(3)  # it stops: nothing left to move


def reassignment(w: Writer) -> None:
    c = w.cluster
    # AlterPartitionReassignments p0 -> [4,2,3]: onPartitionReassignment
    c.write_assignment(T, 0, [4, 2, 3, 1], [4], [1])  # U1: RS = TRS + ORS
    w.state(0, 1, 1, [1, 2, 3])  # U2: updateLeaderEpochAndSendRequest
    w.state(0, 1, 1, [1, 2, 3, 4])  # broker 4 caught up: AlterPartition from leader 1
    w.state(0, 4, 2, [1, 2, 3, 4])  # B2: moveReassignedPartitionLeaderIfRequired
    w.state(0, 4, 3, [2, 3, 4])  # B3: the removed replica 1 goes offline
    c.write_assignment(T, 0, [4, 2, 3], [], [])  # B4


def topic_deletion(w: Writer) -> None:
    c = w.cluster
    c.request_deletion(T)
    # onPartitionDeletion: every replica OfflineReplica, broker by broker (groupBy order
    # 1, 2, 3), each removeReplicasFromIsr: the ISR keeps its last member, a leader that
    # leaves leaves no leader
    isr = {p: list(c.states[T, p].isr) for p in (0, 1, 2)}
    leader = {p: c.states[T, p].leader for p in (0, 1, 2)}
    epoch = {p: c.states[T, p].leader_epoch for p in (0, 1, 2)}
    for broker in (1, 2, 3):
        for p in (0, 1, 2):
            if broker not in isr[p]:
                continue
            if leader[p] == broker:
                leader[p] = -1
            if len(isr[p]) > 1:
                isr[p].remove(broker)
            epoch[p] += 1
            w.state(p, leader[p], epoch[p], list(isr[p]))
    c.delete_topic_znodes(T)  # completeDeleteTopic, after every StopReplica answered


def isr_expansion(w: Writer) -> None:
    # AlterPartition from leader 1: broker 3 fell behind, then caught up
    w.state(0, 1, 0, [1, 2])
    w.state(0, 1, 0, [1, 2, 3])


def partition_expansion(w: Writer) -> None:
    w.cluster.add_partitions(T, {3: [4, 1, 2]})
    # processPartitionModifications -> onNewPartitionCreation: the new partition's election
    w.initial(3, 4, [4, 1, 2])


def controller_failover(w: Writer) -> None:
    c = w.cluster
    c.fail_broker(1)  # the controller's session ends: /brokers/ids/1 and /controller go
    c.elect_controller(2)  # /controller = 2, /controller_epoch = 2 (one multi-op)
    # onControllerFailover: replicaStateMachine.startup takes broker 1's replicas offline
    # (removeReplicasFromIsr), then partitionStateMachine.startup elects p0
    w.state(0, -1, 1, [2, 3])
    w.state(1, 2, 1, [2, 3])
    w.state(2, 3, 1, [3, 2])
    w.state(0, 2, 2, [2, 3])


def last_isr_member_fails(w: Writer) -> None:
    c = w.cluster
    w.state(1, 2, 0, [2])  # AlterPartition from leader 2: its followers fell behind
    c.fail_broker(2)
    # p1 has no live ISR member and unclean election is off: no election; broker 2's
    # replicas go offline (removeReplicasFromIsr): p1 keeps its last ISR member, no leader
    w.state(0, 1, 1, [1, 3])
    w.state(1, -1, 1, [2], name="unclean election with unclean disabled", wrong=(3, 1, [3]))
    if w.stopped:
        return
    w.state(2, 3, 1, [3, 1])


SCENARIOS = {
    "broker failure and return": broker_failure_and_return,
    "controlled shutdown": controlled_shutdown,
    "reassignment": reassignment,
    "topic deletion": topic_deletion,
    "ISR expansion": isr_expansion,
    "partition expansion": partition_expansion,
    "controller failover": controller_failover,
    "last ISR member fails": last_isr_member_fails,
}

# the altered write -> the scenario that holds it
ALTERED = {
    "leader outside the ISR": "broker failure and return",
    "fenced broker kept in the ISR": "broker failure and return",
    "skipped leader epoch": "controlled shutdown",
    "unclean election with unclean disabled": "last ISR member fails",
}
