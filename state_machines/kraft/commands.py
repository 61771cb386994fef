"""What the KRaft directory step tells one partition, and what a partition holds.

The loop (loop.py) carries KRaft's work in the core's `Command`, as it does the ZK
controller's: the cause, a context and one op. A `KraftContext` is what
ReplicationControlManager would look up while it works on the partition: the topic's
`TopicContext` (its id, effective min ISR, unclean setting, ELR and metadata.version) and
the registrations of the brokers the partition names (`BrokerRegistry`, read only). The
partition step (partition_step.py) never reads anything else.

The ops are the per-partition halves of Kafka's handlers (replication_control.py names
them), and `KraftPartition` is the partition's state: its `PartitionRegistration`, the
whole of what the quorum controller keeps for a partition, with the topic's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..outputs import Output
from ..speed import quick_init
from .cluster_control import BrokerRegistration
from .partition_registration import PartitionRegistration
from .replication_control import TopicContext


@dataclass(frozen=True, slots=True)
class KraftContext:
    """The controller-wide facts one KRaft command may read. `queued_for_deletion` is the
    loop's question to every context: KRaft deletes a topic in one record, so never."""

    active: bool
    topic: TopicContext
    brokers: tuple[BrokerRegistration, ...] = ()
    queued_for_deletion: bool = False
    # the cause's event time (or the latest seen), carried back with the partition's summary
    ts: int | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class KraftPartition:
    """One partition as the quorum controller holds it: the `PartitionRegistration` that
    its records replay to (`PartitionControlInfo`), under the topic's name."""

    topic: str
    partition: int
    registration: PartitionRegistration


def kraft_partition_json(rec: KraftPartition) -> dict[str, Any]:
    """The registration, as `simulate --state-out` and `inspect` show a partition."""
    r = rec.registration
    return {
        "replicas": list(r.replicas),
        "adding_replicas": list(r.adding_replicas),
        "removing_replicas": list(r.removing_replicas),
        "leader": r.leader,
        "leader_epoch": r.leader_epoch,
        "isr": list(r.isr),
        "partition_epoch": r.partition_epoch,
        "leader_recovery_state": r.leader_recovery_state.value,
        "eligible_leader_replicas": list(r.elr),
        "last_known_elr": list(r.last_known_elr),
        "directories": list(r.directories),
    }


# -- ops: each is one partition's share of a ReplicationControlManager handler ------------


@dataclass(frozen=True, slots=True)
class RegisterPartition:
    """`createTopic` / `createPartitions` for this partition (the directory validated the
    whole request first: Kafka writes all of a topic's partitions or none)."""

    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BrokerLifecycle:
    """`generateLeaderAndIsrUpdates` for one broker event (`handler`: Kafka's method name):
    handleBrokerFenced, handleBrokerInControlledShutdown and handleBrokerUnregistered reach
    the partitions with the broker in their ISR; handleBrokerUnfenced the partitions without
    a leader; handleBrokerUncleanShutdown those with the broker in ISR or ELR."""

    handler: str
    broker_id: int


@dataclass(frozen=True, slots=True)
class ElectLeader:
    """`electLeader` for one partition of an ElectLeaders request. `listed`: the request
    named its partitions (asked for every partition, Kafka leaves ELECTION_NOT_NEEDED out)."""

    election_type: str  # PREFERRED | UNCLEAN
    listed: bool = True


@dataclass(frozen=True, slots=True)
class AlterIsrData:
    """One partition of an AlterPartition request that passed the request-level checks."""

    broker_id: int
    request_version: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: str


@dataclass(frozen=True, slots=True)
class AlterReassignment:
    """`alterPartitionReassignment`: `target_replicas` None cancels."""

    target_replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class BalanceLeader:
    """One partition of `maybeBalancePartitionLeaders`: a PREFERRED election, no answer."""


@dataclass(frozen=True, slots=True)
class ElectUnclean:
    """One leaderless partition of `maybeElectUncleanLeaders`: an UNCLEAN `electLeader`
    when its topic allows it, no answer."""


@dataclass(frozen=True, slots=True)
class RemovePartition:
    """`deleteTopic`: the partition goes with its topic's `RemoveTopicRecord`."""


@dataclass(frozen=True, slots=True)
class ClearElr:
    """`ReplicationControlManager.replay(ClearElrRecord)` for this partition (4.0,
    `removeTopicElrs`): its ELR and last known ELR emptied, if it has any."""


@dataclass(frozen=True, slots=True)
class LoadRegistration:
    """A `PartitionStateSnapshot` while inactive: the registration the log holds."""

    registration: PartitionRegistration


KraftOp = (
    RegisterPartition
    | BrokerLifecycle
    | ElectLeader
    | AlterIsrData
    | AlterReassignment
    | RemovePartition
    | LoadRegistration
    | BalanceLeader
    | ElectUnclean
    | ClearElr
)


@quick_init
@dataclass(frozen=True, slots=True)
class KraftResult:
    """What the KRaft partition step returns (as `partition.PartitionResult` for the ZK
    rules): the new state, the outputs, and no deletion report (KRaft has none)."""

    state: KraftPartition | None
    outputs: tuple[Output, ...]
    report: None = None
