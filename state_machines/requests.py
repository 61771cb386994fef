"""The controller's requests to brokers, and one request batch, for one partition.

Theory of operation
-------------------
In Kafka a state transition does not send requests: it adds them to the open
`ControllerBrokerRequestBatch` (ControllerChannelManager.scala), and whoever opened the
batch sends it when the whole state change is done (`sendRequestsToBrokers`). Here too:
a transition adds its requests to the `RequestBatch` its state machine call opened, and
`RequestBatch.records` turns the sent batch into output records.

The batch keeps Kafka's merge rules, restricted to one partition:

* `addLeaderAndIsrRequestForBrokers`: one LeaderAndIsr partition state per broker; a later
  one replaces an earlier one, and `isNew` stays true once set;
* `addStopReplicaRequestForBrokers`: one StopReplica per broker; a later one replaces an
  earlier one, and `deletePartition` stays true once set;
* `sendRequestsToBrokers`: each broker gets its LeaderAndIsr requests, then its StopReplica
  requests, if it is live or shutting down at that moment (a request queued for a dead
  broker is dropped). Brokers sent the same LeaderAndIsr partition state share one record.

* `addLeaderAndIsrRequestForBrokers` ends with `addUpdateMetadataRequestForBrokers(
  liveOrShuttingDownBrokerIds, Set(partition))`, whatever its recipients: the batch then
  sends UpdateMetadata for this partition to every live or shutting-down broker. An
  OfflineReplica transition of a partition with no leadership asks for the same without a
  LeaderAndIsr (it sets `update_metadata` itself). The batch only notes that it was asked
  (`update_metadata`): one UpdateMetadata request goes to every broker with the states of
  all the partitions of a Kafka batch, so the partitions' shares are merged across
  partitions (`flow.Run`, `update_metadata.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .model import LeaderAndIsr
from .outputs import LeaderAndIsrRecord, Output, StopReplicaRecord
from .speed import quick_init
from .states import LeaderRecoveryState

# each state's name, read without the enum's `value` property (a Python call per read)
_RECOVERY_NAME: dict[LeaderRecoveryState, str] = {s: s.value for s in LeaderRecoveryState}


@quick_init
@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartitionState:
    """What a LeaderAndIsr request carries for this partition (`LeaderAndIsrPartitionState`
    of LeaderAndIsrRequest.json): the leadership, the assignment and the election's label."""

    leadership: LeaderAndIsr
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    election: str | None


class RequestBatch:
    """One `ControllerBrokerRequestBatch`, restricted to one partition."""

    __slots__ = ("leader_and_isr", "stop_replica", "update_metadata")

    def __init__(self) -> None:
        self.leader_and_isr: dict[int, tuple[LeaderAndIsrPartitionState, bool]] = {}
        self.stop_replica: dict[int, tuple[bool, int]] = {}
        # UpdateMetadata for this partition to every live or shutting-down broker
        self.update_metadata = False

    def add_leader_and_isr(
        self, brokers: Iterable[int], state: LeaderAndIsrPartitionState, is_new: bool
    ) -> None:
        # brokerIds.filter(_ >= 0): the -1 of a leaderless ISR is never a recipient
        self.update_metadata = True
        entries = self.leader_and_isr
        entry = (state, is_new)  # one entry for all (RequestBatch.records groups by identity first)
        for b in brokers:
            if b < 0:
                continue
            previous = entries.get(b)
            entries[b] = entry if previous is None or is_new or not previous[1] else (state, True)

    def add_stop_replica(self, broker: int, delete_partition: bool, leader_epoch: int) -> None:
        if broker < 0:
            return
        previous = self.stop_replica.get(broker)
        self.stop_replica[broker] = (
            delete_partition or (previous is not None and previous[0]),
            leader_epoch,
        )

    def records(self, topic: str, partition: int, reachable: Callable[[int], bool]) -> list[Output]:
        """`sendRequestsToBrokers`: the batch as output records, LeaderAndIsr first.

        `sendLeaderAndIsrRequest` and `sendStopReplicaRequests` send only to brokers that are
        live or shutting down when the batch is sent (`liveOrShuttingDownBrokerIds.contains`):
        what was queued for any other broker is dropped, and a request left with no
        recipient is no record."""
        out: list[Output] = []
        groups: list[tuple[LeaderAndIsrPartitionState, bool, list[int]]] = []
        entries = self.leader_and_isr
        if entries:
            # Usually every recipient holds the same state object, and grouping by value
            # (which hashes it) can be skipped: one pass finds whether any differs.
            recipients: list[int] = []
            first: tuple[LeaderAndIsrPartitionState, bool] | None = None
            same = True
            for b, entry in entries.items():
                if reachable(b):
                    if first is None:
                        first = entry
                    elif entry is not first and (entry[0] is not first[0] or entry[1] != first[1]):
                        same = False
                    recipients.append(b)
            if first is not None and same:
                groups.append((first[0], first[1], recipients))
            elif recipients:
                by_value: dict[tuple[LeaderAndIsrPartitionState, bool], list[int]] = {}
                for b in recipients:
                    by_value.setdefault(entries[b], []).append(b)
                groups.extend((s, n, brokers) for (s, n), brokers in by_value.items())
        for state, is_new, recipients in groups:
            la = state.leadership
            out.append(
                LeaderAndIsrRecord(
                    topic,
                    partition,
                    la.leader,
                    la.leader_epoch,
                    la.isr,
                    la.partition_epoch,
                    la.controller_epoch,
                    state.replicas,
                    state.adding_replicas,
                    state.removing_replicas,
                    _RECOVERY_NAME[la.leader_recovery_state],
                    is_new,
                    tuple(recipients),
                    state.election,
                )
            )
        for broker, (delete, epoch) in self.stop_replica.items():
            if reachable(broker):
                out.append(StopReplicaRecord(topic, partition, broker, delete, epoch))
        return out
