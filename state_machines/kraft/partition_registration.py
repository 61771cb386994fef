"""KRaft's partition state: `PartitionRegistration`, and how a change record is replayed.

Source: metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java
(apache/kafka 3.9.0). The quorum controller keeps no other partition state: handlers only
produce records, and the registration changes only when a record is replayed (`merge`).

Replaying a `PartitionChangeRecord`:

* every field the record sets replaces the registration's;
* a leader that is set (even to the current leader) bumps the leader epoch by one;
* every record bumps the partition epoch by one;
* directories that are all MIGRATING (or absent) become one MIGRATING per replica
  (`defaultToMigrating`); a record whose directories do not match its replicas in length
  is refused (`checkDirectories`: `InvalidReplicaDirectoriesException`), and so is any
  result whose directories, when it has some, differ in length from its replicas (the
  private constructor's `IllegalArgumentException`): a change that resizes the replicas
  of a registration with real directory ids but sets no directories is refused too.

ELR fields (KIP-966, `eligible_leader_replicas` and `last_known_elr`) are empty unless the
controller runs with ELR enabled.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ShadowControllerError
from ..states import LeaderRecoveryState
from .metadata_version import MetadataVersion
from .records import (
    MIGRATING_DIRECTORY,
    NO_LEADER_CHANGE,
    ApiMessageAndVersion,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)


class InvalidReplicaDirectoriesError(ShadowControllerError):
    """Kafka's `InvalidReplicaDirectoriesException`: a broken invariant, never a refusal."""


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    directories: tuple[str, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @staticmethod
    def from_record(record: MetadataPartitionRecord) -> PartitionRegistration:
        """`new PartitionRegistration(PartitionRecord)`: no directories (before 3.7-IV2) or
        all MIGRATING become one MIGRATING per replica (`defaultToMigrating`)."""
        directories = record.directories
        if directories and len(directories) != len(record.replicas):
            raise InvalidReplicaDirectoriesError(
                f"The record's directories do not match its replicas: {record}"
            )
        if all(d == MIGRATING_DIRECTORY for d in directories):
            directories = (MIGRATING_DIRECTORY,) * len(record.replicas)
        return PartitionRegistration(
            replicas=record.replicas,
            directories=directories,
            isr=record.isr,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            leader_recovery_state=record.leader_recovery_state,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
            elr=record.eligible_leader_replicas,
            last_known_elr=record.last_known_elr,
        )

    def to_record(
        self, topic_id: str, partition_id: int, mv: MetadataVersion
    ) -> ApiMessageAndVersion:
        """`toRecord`: the directories from 3.7-IV2, the ELR fields when ELR is supported.
        (Before 3.7-IV2 Kafka also reports real directory ids as a loss; the controller
        only writes MIGRATING then.)"""
        elr_supported = mv.is_elr_supported
        return ApiMessageAndVersion(
            MetadataPartitionRecord(
                topic_id=topic_id,
                partition_id=partition_id,
                replicas=self.replicas,
                isr=self.isr,
                leader=self.leader,
                leader_epoch=self.leader_epoch,
                partition_epoch=self.partition_epoch,
                directories=self.directories if mv.is_directory_assignment_supported else (),
                removing_replicas=self.removing_replicas,
                adding_replicas=self.adding_replicas,
                leader_recovery_state=self.leader_recovery_state,
                eligible_leader_replicas=self.elr if elr_supported else (),
                last_known_elr=self.last_known_elr if elr_supported else (),
            ),
            mv.partition_record_version,
        )

    def merge(self, record: PartitionChangeRecord) -> PartitionRegistration:
        """`PartitionRegistration.merge`: the registration after replaying `record`."""
        replicas = self.replicas if record.replicas is None else record.replicas
        if record.directories is None:
            directories = self.directories
        else:
            if (
                record.replicas is not None
                and record.directories
                and len(record.replicas) != len(record.directories)
            ):
                raise InvalidReplicaDirectoriesError(
                    f"The record's directories do not match its replicas: {record}"
                )
            directories = record.directories
        if all(d == MIGRATING_DIRECTORY for d in directories):
            directories = (MIGRATING_DIRECTORY,) * len(replicas)
        elif len(directories) != len(replicas):
            # the private constructor: "The lengths for replicas and directories do not match."
            raise InvalidReplicaDirectoriesError(
                f"The lengths for replicas and directories do not match: {record}"
            )
        if record.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = record.leader, self.leader_epoch + 1
        return PartitionRegistration(
            replicas=replicas,
            directories=directories,
            isr=self.isr if record.isr is None else record.isr,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            leader_recovery_state=(
                self.leader_recovery_state
                if record.leader_recovery_state is None
                else record.leader_recovery_state
            ),
            removing_replicas=self.removing_replicas
            if record.removing_replicas is None
            else record.removing_replicas,
            adding_replicas=self.adding_replicas
            if record.adding_replicas is None
            else record.adding_replicas,
            elr=self.elr
            if record.eligible_leader_replicas is None
            else record.eligible_leader_replicas,
            last_known_elr=self.last_known_elr
            if record.last_known_elr is None
            else record.last_known_elr,
        )
