"""KRaft's broker registry: `ClusterControlManager`'s broker facts and their records.

Source: metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java and
metadata/src/main/java/org/apache/kafka/metadata/BrokerRegistration.java (apache/kafka
3.9.0). The registry maps a broker id to its registration: the broker epoch (the offset of
its RegisterBrokerRecord), its incarnation, whether it is fenced, whether it is in
controlled shutdown, and its online log directories.

As in Kafka, a transition only *produces* records; the registry changes only when a record
is replayed (`replay`). Which record a transition writes depends on metadata.version:

=====================  ==============================================================
fence / unfence        `FenceBrokerRecord` / `UnfenceBrokerRecord` before 3.3-IV2, then
                       `BrokerRegistrationChangeRecord` (fenced = 1 / -1), version 0
controlled shutdown    `BrokerRegistrationChangeRecord` (inControlledShutdown = 1), version
                       1, from 3.3-IV3 and only if the broker is not already in it; before,
                       nothing records it
register               `RegisterBrokerRecord`, version 0..3 (`registerBrokerRecordVersion`)
=====================  ==============================================================

The predicates are the ones ReplicationControlManager's handlers pass to
PartitionChangeBuilder: `is_active` (registered, unfenced and not in controlled shutdown:
an acceptable leader and ISR member), `is_unfenced`, `in_controlled_shutdown`, and
`has_online_dir` (`DirectoryId.isOnline`).

Not reproduced: listeners, racks, features and their validation (`processRegistrationFeature`),
controller registrations, the replica placer, the heartbeat sessions (the caller says whether
a broker holds a valid session; broker_heartbeat_manager has the state a heartbeat moves
to) and the unclean-shutdown handler's records, which ReplicationControlManager writes
(`handle_broker_unclean_shutdown` is the caller's to add).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..errors import ShadowControllerError
from ..kafka_errors import Errors
from .metadata_version import MetadataVersion
from .records import (
    FENCING_CHANGE_FENCE,
    FENCING_CHANGE_UNFENCE,
    IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
    LOST_DIRECTORY,
    MIGRATING_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    ApiMessageAndVersion,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)


class ClusterControlError(ShadowControllerError):
    """Kafka's RuntimeException/IllegalStateException on replay: a broken invariant."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """`BrokerRegistration`, the fields the controller's rules read."""

    id: int
    epoch: int
    incarnation_id: str = ""
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[str, ...] = ()

    def has_online_dir(self, directory: str) -> bool:
        """`BrokerRegistration.hasOnlineDir` (`DirectoryId.isOnline`)."""
        if directory in (UNASSIGNED_DIRECTORY, MIGRATING_DIRECTORY):
            return True
        if directory == LOST_DIRECTORY:
            return False
        # No directories: registered before 3.7-IV2, so unknown; assume online (KAFKA-16162).
        return not self.directories or directory in self.directories

    def directory_intersection(self, directories: Iterable[str]) -> tuple[str, ...]:
        """`directoryIntersection`: this broker's directories among `directories`, in its order."""
        others = set(directories)
        return tuple(d for d in self.directories if d in others)

    def directory_difference(self, directories: Iterable[str]) -> tuple[str, ...]:
        """`directoryDifference`: this broker's directories not among `directories`."""
        others = set(directories)
        return tuple(d for d in self.directories if d not in others)


@dataclass(frozen=True, slots=True)
class BrokerRegistry:
    """`ClusterControlManager.brokerRegistrations`, read only: `replay` returns a new one."""

    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def of(registrations: Iterable[BrokerRegistration]) -> BrokerRegistry:
        return BrokerRegistry(MappingProxyType({r.id: r for r in registrations}))

    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def is_unfenced(self, broker_id: int) -> bool:
        r = self.brokers.get(broker_id)
        return r is not None and not r.fenced

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        r = self.brokers.get(broker_id)
        return r is not None and r.in_controlled_shutdown

    def is_active(self, broker_id: int) -> bool:
        """`isActive`: registered, not fenced and not in controlled shutdown."""
        r = self.brokers.get(broker_id)
        return r is not None and not r.fenced and not r.in_controlled_shutdown

    def has_online_dir(self, broker_id: int, directory: str) -> bool:
        r = self.brokers.get(broker_id)
        return r is not None and r.has_online_dir(directory)

    def default_dir(self, broker_id: int) -> str:
        """`defaultDir`: a new replica's directory, known only if the broker has exactly one."""
        r = self.brokers.get(broker_id)
        if r is None:
            return UNASSIGNED_DIRECTORY
        if not r.directories:
            return MIGRATING_DIRECTORY
        if len(r.directories) == 1:
            return r.directories[0]
        return UNASSIGNED_DIRECTORY

    def fenced_broker_ids(self) -> frozenset[int]:
        return frozenset(r.id for r in self.brokers.values() if r.fenced)

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> str | None:
        """`checkBrokerEpoch`: None, or STALE_BROKER_EPOCH (Kafka throws; here a refusal)."""
        r = self.brokers.get(broker_id)
        if r is None or r.epoch != broker_epoch:
            return Errors.STALE_BROKER_EPOCH
        return None

    # -- replay ------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> BrokerRegistry:
        """`ClusterControlManager.replay`: the registry after `record` (others leave it alone)."""
        if isinstance(record, RegisterBrokerRecord):
            registration = BrokerRegistration(
                record.broker_id,
                record.broker_epoch,
                record.incarnation_id,
                record.fenced,
                record.in_controlled_shutdown,
                record.is_migrating_zk_broker,
                record.log_dirs,
            )
            return self._with(registration)
        if isinstance(record, UnregisterBrokerRecord):
            self._current(record.broker_id, record.broker_epoch, record)
            return BrokerRegistry(
                MappingProxyType({k: v for k, v in self.brokers.items() if k != record.broker_id})
            )
        if isinstance(record, FenceBrokerRecord):
            return self._change(record, record.id, record.epoch, True, None, None)
        if isinstance(record, UnfenceBrokerRecord):
            return self._change(record, record.id, record.epoch, False, None, None)
        if isinstance(record, BrokerRegistrationChangeRecord):
            fenced = {FENCING_CHANGE_FENCE: True, FENCING_CHANGE_UNFENCE: False}.get(record.fenced)
            shutdown = (
                True
                if record.in_controlled_shutdown
                == IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN
                else None
            )
            return self._change(
                record,
                record.broker_id,
                record.broker_epoch,
                fenced,
                shutdown,
                record.log_dirs or None,
            )
        return self

    def replay_all(self, records: Iterable[ApiMessageAndVersion]) -> BrokerRegistry:
        registry = self
        for r in records:
            registry = registry.replay(r.message)
        return registry

    def _current(self, broker_id: int, epoch: int, record: MetadataRecord) -> BrokerRegistration:
        r = self.brokers.get(broker_id)
        if r is None:
            raise ClusterControlError(
                f"Unable to replay {record}: no broker registration found for that id"
            )
        if r.epoch != epoch:
            raise ClusterControlError(
                f"Unable to replay {record}: no broker registration with that epoch found"
            )
        return r

    def _change(
        self,
        record: MetadataRecord,
        broker_id: int,
        epoch: int,
        fenced: bool | None,
        in_controlled_shutdown: bool | None,
        directories: tuple[str, ...] | None,
    ) -> BrokerRegistry:
        """`replayRegistrationChange` (`BrokerRegistration.cloneWith`)."""
        r = self._current(broker_id, epoch, record)
        changed = replace(
            r,
            fenced=r.fenced if fenced is None else fenced,
            in_controlled_shutdown=r.in_controlled_shutdown
            if in_controlled_shutdown is None
            else in_controlled_shutdown,
            directories=r.directories if directories is None else directories,
        )
        return self if changed == r else self._with(changed)

    def _with(self, registration: BrokerRegistration) -> BrokerRegistry:
        brokers = dict(self.brokers)
        brokers[registration.id] = registration
        return BrokerRegistry(MappingProxyType(brokers))


# -- the transitions' records ----------------------------------------------------------


def register_broker_record_version(mv: MetadataVersion) -> int:
    """`MetadataVersion.registerBrokerRecordVersion`."""
    if mv.is_directory_assignment_supported:
        return 3
    if mv.is_at_least(MetadataVersion.IBP_3_4_IV0):  # isMigrationSupported
        return 2
    if mv.is_at_least(MetadataVersion.IBP_3_3_IV3):  # isInControlledShutdownStateSupported
        return 1
    return 0


@dataclass(frozen=True, slots=True)
class BrokerRegistrationReply:
    """`registerBroker`'s answer: the broker epoch, or the error Kafka throws."""

    broker_epoch: int
    error: str | None = None
    message: str | None = None


def register_broker(
    registry: BrokerRegistry,
    broker_id: int,
    incarnation_id: str,
    new_broker_epoch: int,
    mv: MetadataVersion,
    *,
    log_dirs: Sequence[str] = (),
    has_valid_session: bool = False,
    is_migrating_zk_broker: bool = False,
) -> tuple[tuple[ApiMessageAndVersion, ...], BrokerRegistrationReply]:
    """`ClusterControlManager.registerBroker`, without listeners, features and the migration
    checks. A new incarnation takes `new_broker_epoch` and starts fenced; the same incarnation
    re-registering keeps its epoch, fencing and controlled shutdown. A new incarnation while
    the old one holds a session is refused (DUPLICATE_BROKER_REGISTRATION). The
    unclean-shutdown records Kafka writes before a new incarnation's (only with ELR) are the
    caller's: `replication_control.handle_broker_unclean_shutdown`."""
    existing = registry.registration(broker_id)
    if existing is not None and has_valid_session and existing.incarnation_id != incarnation_id:
        return (), BrokerRegistrationReply(
            -1,
            Errors.DUPLICATE_BROKER_REGISTRATION,
            "Another broker is registered with that broker id.",
        )
    dirs = tuple(log_dirs)
    if mv.is_directory_assignment_supported:
        error = _invalid_log_dirs(registry, broker_id, dirs)
        if error is not None:
            return (), BrokerRegistrationReply(-1, Errors.INVALID_REGISTRATION, error)
    else:
        dirs = ()
    if existing is None or existing.incarnation_id != incarnation_id:
        record = RegisterBrokerRecord(
            broker_id,
            new_broker_epoch,
            incarnation_id,
            is_migrating_zk_broker=is_migrating_zk_broker,
            log_dirs=dirs,
        )
    else:
        record = RegisterBrokerRecord(
            broker_id,
            existing.epoch,
            incarnation_id,
            existing.fenced,
            existing.in_controlled_shutdown,
            is_migrating_zk_broker,
            dirs,
        )
    return (
        (ApiMessageAndVersion(record, register_broker_record_version(mv)),),
        BrokerRegistrationReply(record.broker_epoch),
    )


def _invalid_log_dirs(
    registry: BrokerRegistry, broker_id: int, dirs: tuple[str, ...]
) -> str | None:
    if not dirs:
        return "No directories specified in request"
    # `DirectoryId.reserved` spans Uuid(0, 0..99); the three named ones are all Kafka uses.
    if any(d in (UNASSIGNED_DIRECTORY, MIGRATING_DIRECTORY, LOST_DIRECTORY) for d in dirs):
        return "Reserved directory ID in request"
    if len(set(dirs)) != len(dirs):
        return "Duplicate directory ID in request"
    for d in dirs:
        for other in registry.brokers.values():
            if other.id != broker_id and d in other.directories:
                return f"Broker {other.id} is already registered with directory {d}"
    return None


def fence_broker_record(
    registry: BrokerRegistry, broker_id: int, mv: MetadataVersion
) -> ApiMessageAndVersion:
    """The record closing `ReplicationControlManager.handleBrokerFenced`, at the broker's
    registered epoch."""
    r = registry.registration(broker_id)
    if r is None:
        raise ClusterControlError(f"Can't find broker registration for broker {broker_id}")
    if mv.is_at_least(MetadataVersion.IBP_3_3_IV2):  # isBrokerRegistrationChangeRecordSupported
        return ApiMessageAndVersion(
            BrokerRegistrationChangeRecord(broker_id, r.epoch, fenced=FENCING_CHANGE_FENCE), 0
        )
    return ApiMessageAndVersion(FenceBrokerRecord(broker_id, r.epoch), 0)


def unfence_broker_record(
    broker_id: int, broker_epoch: int, mv: MetadataVersion
) -> ApiMessageAndVersion:
    """The record opening `ReplicationControlManager.handleBrokerUnfenced`."""
    if mv.is_at_least(MetadataVersion.IBP_3_3_IV2):
        return ApiMessageAndVersion(
            BrokerRegistrationChangeRecord(broker_id, broker_epoch, fenced=FENCING_CHANGE_UNFENCE),
            0,
        )
    return ApiMessageAndVersion(UnfenceBrokerRecord(broker_id, broker_epoch), 0)


def controlled_shutdown_record(
    registry: BrokerRegistry, broker_id: int, broker_epoch: int, mv: MetadataVersion
) -> ApiMessageAndVersion | None:
    """The record opening `handleBrokerInControlledShutdown`: none before 3.3-IV3 or when
    the broker is already in controlled shutdown."""
    if not mv.is_at_least(MetadataVersion.IBP_3_3_IV3) or registry.in_controlled_shutdown(
        broker_id
    ):
        return None
    return ApiMessageAndVersion(
        BrokerRegistrationChangeRecord(
            broker_id,
            broker_epoch,
            in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
        ),
        1,
    )


def unregister_broker_record(broker_id: int, broker_epoch: int) -> ApiMessageAndVersion:
    """The record closing `handleBrokerUnregistered`."""
    return ApiMessageAndVersion(UnregisterBrokerRecord(broker_id, broker_epoch), 0)


def directories_offline_record(
    registry: BrokerRegistry, broker_id: int, broker_epoch: int, offline_dirs: Sequence[str]
) -> tuple[tuple[str, ...], ApiMessageAndVersion | None]:
    """`handleDirectoriesOffline`'s broker half: the broker's directories newly reported
    offline and, if any, the BrokerRegistrationChangeRecord (version 2) naming the ones left
    online. Kafka writes it after the changes of the partitions in those directories
    (`replication_control.handle_directories_offline`)."""
    r = registry.registration(broker_id)
    if r is None:
        raise ClusterControlError(f"Can't find broker registration for broker {broker_id}")
    newly_offline = r.directory_intersection(offline_dirs)
    if not newly_offline:
        return (), None
    return newly_offline, ApiMessageAndVersion(
        BrokerRegistrationChangeRecord(
            broker_id, broker_epoch, log_dirs=r.directory_difference(offline_dirs)
        ),
        2,
    )
