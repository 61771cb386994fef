"""The input events of contract v1, as values (decoding and validation: events.py).

Each class is one event `type` of the contract (docs/contract.md), with the fields the
contract gives it; `Envelope` places an event in the log (its offset is the `cause_offset`
of everything it causes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControllerFailover:
    controller_id: int
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerStartup:
    broker_id: int
    broker_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class BrokerFailure:
    broker_id: int


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    broker_id: int
    broker_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class TopicCreation:
    topic: str
    partitions: tuple[tuple[int, tuple[int, ...]], ...]
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionExpansion:
    topic: str
    partitions: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    topic: str


@dataclass(frozen=True, slots=True)
class StopReplicaResponse:
    topic: str
    partition: int
    broker_id: int
    error: str | None


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    topic: str
    partition: int
    target_replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class AlterPartition:
    topic: str
    partition: int
    broker_id: int
    broker_epoch: int | None
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: str = "RECOVERED"


@dataclass(frozen=True, slots=True)
class ReplicaLeaderElection:
    election_type: str
    partitions: tuple[tuple[str, int], ...] | None
    trigger: str = "admin"


@dataclass(frozen=True, slots=True)
class TopicConfigChange:
    topic: str
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class PartitionStateSnapshot:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: str = "RECOVERED"


@dataclass(frozen=True, slots=True)
class ObservedPartitionState:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int | None = None
    controller_epoch: int | None = None
    replicas: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class BrokerConfigChange:
    """The cluster-wide dynamic broker defaults changed (`/config/brokers/<default>`,
    Kafka's `DynamicBrokerConfig`): each key carried takes the new value, None returns it
    to the job's static setting, a key left out keeps its value."""

    configs: tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class ReplicaDirFailure:
    """A broker answered a LeaderAndIsr with KAFKA_STORAGE_ERROR for these partitions (its
    log dir failed, LogDirEventNotification): their replicas on it are offline while the
    broker stays alive."""

    broker_id: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ControllerTick:
    """Time passes (the envelope's `ts`): scheduled controller tasks that are due run."""


Event = (
    ControllerFailover
    | BrokerStartup
    | BrokerFailure
    | ControlledShutdown
    | TopicCreation
    | PartitionExpansion
    | TopicDeletion
    | StopReplicaResponse
    | PartitionReassignment
    | AlterPartition
    | ReplicaLeaderElection
    | TopicConfigChange
    | PartitionStateSnapshot
    | ObservedPartitionState
    | BrokerConfigChange
    | ReplicaDirFailure
    | ControllerTick
)


@dataclass(frozen=True, slots=True)
class Envelope:
    """An event with its place in the log: `offset` is the cause_offset of its outputs."""

    offset: int
    event: Event
    id: str | None = None
    ts: int | None = None


@dataclass(frozen=True, slots=True)
class RebalanceCheck:
    """Internal, never an input (parse_event never makes one): an automatic leader
    rebalance check that came due, run as a step of the cause whose `ts` reached it
    (leader_balance.py)."""


@dataclass(frozen=True, slots=True)
class KraftTask:
    """Internal, never an input: one of the KRaft quorum controller's deferred write events
    that came due (`task`: "balance" for maybeBalancePartitionLeaders, "unclean" for
    maybeElectUncleanLeaders), run as a step of the cause whose `ts` reached it; `after`
    is its second half, which reschedules once the partitions folded the run
    (kraft/periodic_tasks.py)."""

    task: str
    after: bool = False
    ts: int | None = None  # the run's time, for the reschedule
    hit_max: bool = False  # the run tried maxElectionsPerImbalance partitions


# What one step of a cause applies: an input event, or a check the controller runs itself.
CauseStep = Event | RebalanceCheck | KraftTask
