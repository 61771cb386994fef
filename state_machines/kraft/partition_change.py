"""The values of KRaft's `PartitionChangeBuilder` (partition_change_builder.py): its
`Election` and `ElectionResult` (inner types in Kafka), and what `build()` returns.

Source: metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java
(apache/kafka 3.9.0). `PartitionChangeTargets` is the builder's state, apart from `build()`
(partition_change_builder.py), so that a run (partition_change_steps.py) reads it without
importing the builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from ..election import BrokerPredicate
from ..errors import ShadowControllerError
from ..states import LeaderRecoveryState
from .metadata_version import MetadataVersion
from .partition_registration import PartitionRegistration
from .records import PartitionChangeRecord

DefaultDirProvider = Callable[[int], str]


class Election(str, Enum):  # noqa: UP042 - StrEnum changes str() and f"{}" of members
    """`PartitionChangeBuilder.Election`."""

    PREFERRED = "PREFERRED"  # elect the preferred replica if it is in the ISR
    ONLINE = "ONLINE"  # elect from the ISR to keep the partition online
    UNCLEAN = "UNCLEAN"  # prefer the ISR, but elect outside it rather than go offline


@dataclass(frozen=True, slots=True)
class ElectionResult:
    node: int
    unclean: bool


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """What `build()` decided: the record, the version Kafka writes it at
    (`ApiMessageAndVersion`) and the registration once it is replayed."""

    record: PartitionChangeRecord
    version: int
    registration: PartitionRegistration


class DefaultDirProviderNotSet(ShadowControllerError):
    """Kafka's IllegalStateException("DefaultDirProvider is not set")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeTargets:
    """What a `PartitionChangeBuilder` is set with (Kafka's constructor and setters): the
    registration, the targets, the election and the settings. `build()` reads only these
    (partition_change_steps.py)."""

    partition: PartitionRegistration
    topic_id: str
    partition_id: int
    is_acceptable_leader: BrokerPredicate
    metadata_version: MetadataVersion
    min_isr: int
    # The targets: None keeps the registration's value (Kafka's constructor copies it).
    target_isr: tuple[int, ...] | None = None
    target_replicas: tuple[int, ...] | None = None
    target_removing: tuple[int, ...] | None = None
    target_adding: tuple[int, ...] | None = None
    target_leader_recovery_state: LeaderRecoveryState | None = None
    unclean_shutdown_replicas: tuple[int, ...] | None = None
    election: Election = Election.ONLINE
    zk_migration_enabled: bool = False
    eligible_leader_replicas_enabled: bool = False
    use_last_known_leader_in_balanced_recovery: bool = True
    # `setDirectory(brokerId, dir)` calls, over the registration's own assignment.
    directory_overrides: Mapping[int, str] = field(default_factory=dict)
    default_dir_provider: DefaultDirProvider | None = None
    # KAFKA-19522 (after 4.0): never elect a last known leader that is not acceptable.
    reject_unacceptable_last_known_leader: bool = False

    @property
    def resolved_target_isr(self) -> tuple[int, ...]:
        """`targetIsr()`."""
        return self.partition.isr if self.target_isr is None else self.target_isr
