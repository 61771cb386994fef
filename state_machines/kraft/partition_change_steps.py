"""One run of KRaft's `PartitionChangeBuilder.build()`: Kafka's steps, in Kafka's order,
over a working copy of the targets (partition_change_builder.py's docstring lists them).

Source: metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java
(apache/kafka 3.9.0; 4.0 and 4.1 where said): `completeReassignmentIfNeeded`,
`maybePopulateTargetElr`, `tryElection` / `electLeader` / `canElectLastKnownLeader`, the
two `triggerLeaderEpochBump...IfNeeded`, `maybeUpdateRecordElr`,
`maybeUpdateLastKnownLeader` and `setAssignmentChanges`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..election import (
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
)
from ..model import NO_LEADER
from ..states import LeaderRecoveryState
from .java_hash_set import hash_set_iteration_order
from .partition_change import (
    DefaultDirProviderNotSet,
    Election,
    ElectionResult,
    PartitionChangeTargets,
)
from .partition_reassignment_replicas import PartitionReassignmentReplicas
from .records import NO_LEADER_CHANGE, PartitionChangeRecord, change_record_is_no_op


def _contains(a: Sequence[int], b: Sequence[int]) -> bool:
    """`Replicas.contains(List, int[])`: `a` holds every member of `b` (as multisets)."""
    return not (Counter(b) - Counter(a))


class BuildRun:
    """One run of `build()`: Kafka's builder mutates its targets as it goes, and so does this
    working copy, which lives only inside one call."""

    __slots__ = ("b", "p", "isr", "replicas", "removing", "adding", "elr", "last_known_elr")

    def __init__(self, b: PartitionChangeTargets) -> None:
        p = b.partition
        self.b = b
        self.p = p
        self.isr: tuple[int, ...] = b.resolved_target_isr
        self.replicas: tuple[int, ...] = (
            p.replicas if b.target_replicas is None else b.target_replicas
        )
        self.removing: tuple[int, ...] = (
            p.removing_replicas if b.target_removing is None else b.target_removing
        )
        self.adding: tuple[int, ...] = (
            p.adding_replicas if b.target_adding is None else b.target_adding
        )
        self.elr: tuple[int, ...] = p.elr
        self.last_known_elr: tuple[int, ...] = p.last_known_elr

    def build(self) -> PartitionChangeRecord | None:
        b, p = self.b, self.p
        record = PartitionChangeRecord(b.topic_id, b.partition_id)
        self.complete_reassignment_if_needed()
        self.maybe_populate_target_elr()
        record = self.try_election(record)
        record = self.trigger_leader_epoch_bump_for_replica_reassignment_if_needed(record)
        record = self.maybe_update_record_elr(record)
        # With ELR enabled the ISR may become empty.
        if (
            record.isr is None
            and (self.isr or b.eligible_leader_replicas_enabled)
            and self.isr != p.isr
        ):
            record = replace(record, isr=self.isr)
        record = self.trigger_leader_epoch_bump_for_isr_shrink_if_needed(record)
        record = self.maybe_update_last_known_leader(record)
        record = self.set_assignment_changes(record)
        target_state = b.target_leader_recovery_state
        if target_state is not None and target_state is not p.leader_recovery_state:
            record = replace(record, leader_recovery_state=target_state)
        return None if change_record_is_no_op(record) else record

    # -- election ----------------------------------------------------------------------

    def _candidates(self) -> tuple[int, ...]:
        # `isValidNewLeader`: in the ISR, or in the ELR when the ISR is empty.
        return self.isr if self.isr else self.elr

    def _is_valid_new_leader(self, replica: int) -> bool:
        return replica in self._candidates() and self.b.is_acceptable_leader(replica)

    def elect_leader(self) -> ElectionResult:
        """`electLeader`. The replica scans are the ZK controller's algorithms: "first
        acceptable candidate in target order" is `offlinePartitionLeaderElection` with the
        candidates as its ISR, and the preferred check is `preferredReplica...Election`."""
        candidates = self._candidates()
        # Kafka asks the predicate only about candidates (`isValidNewLeader` tests ISR or ELR
        # membership first), except in the unclean scan: its LeaderAcceptor throws for a
        # replica the registration does not have, such as one a reassignment is adding.
        acceptable = tuple(
            r for r in self.replicas if r in candidates and self.b.is_acceptable_leader(r)
        )
        if self.b.election is Election.PREFERRED:
            preferred = preferred_replica_partition_leader_election(
                self.replicas, candidates, acceptable
            )
            if preferred is not None:
                return ElectionResult(preferred, False)
        # Don't consider a new leader when the current one meets all the constraints.
        if self._is_valid_new_leader(self.p.leader):
            return ElectionResult(self.p.leader, False)
        # (PREFERRED skips the head, already found invalid: scanning it again finds nothing.)
        online = offline_partition_leader_election(self.replicas, candidates, acceptable, False)
        if online is not None:
            return ElectionResult(online, False)
        if self.can_elect_last_known_leader():
            return ElectionResult(self.p.last_known_elr[0], True)
        if self.b.election is Election.UNCLEAN:
            # The unclean branch alone: no candidate is clean, so the first acceptable replica.
            acceptable = tuple(r for r in self.replicas if self.b.is_acceptable_leader(r))
            unclean = offline_partition_leader_election(self.replicas, (), acceptable, True)
            if unclean is not None:
                return ElectionResult(unclean, True)
        return ElectionResult(NO_LEADER, False)

    def can_elect_last_known_leader(self) -> bool:
        b = self.b
        if (
            not b.eligible_leader_replicas_enabled
            or not b.use_last_known_leader_in_balanced_recovery
        ):
            return False
        if self.elr or self.isr:
            return False
        # Only the registration's last known ELR can hold the last known leader, and only as
        # its single member (with the last known leader off, it holds real ELR members).
        if len(self.p.last_known_elr) != 1:
            return False
        # 3.9.0 and 4.0 test `isAcceptableLeader` here but only log the outcome (inverted);
        # KAFKA-19522 returns false for a last known leader that is not acceptable. The test
        # runs either way (PartitionChangeBuilder.canElectLastKnownLeader): it is not pure,
        # since ReplicationControlManager's LeaderAcceptor looks up the directory of an
        # acceptable broker and throws for one that is no longer a replica.
        acceptable = b.is_acceptable_leader(self.p.last_known_elr[0])
        return acceptable or not b.reject_unacceptable_last_known_leader

    def try_election(self, record: PartitionChangeRecord) -> PartitionChangeRecord:
        result = self.elect_leader()
        if result.node == self.p.leader:
            return record
        node = result.node
        if node in self.elr:
            self.isr = (node,)
            self.elr = tuple(r for r in self.elr if r != node)
        record = replace(record, leader=node)
        if result.unclean:
            # An unclean leader is the whole ISR: this can lose data.
            record = replace(record, isr=(node,))
            if (
                self.p.leader_recovery_state is not LeaderRecoveryState.RECOVERING
                and self.b.metadata_version.is_leader_recovery_supported
            ):
                record = replace(record, leader_recovery_state=LeaderRecoveryState.RECOVERING)
        return record

    # -- epoch bumps -------------------------------------------------------------------

    def trigger_leader_epoch_bump_for_replica_reassignment_if_needed(
        self, record: PartitionChangeRecord
    ) -> PartitionChangeRecord:
        if record.leader != NO_LEADER_CHANGE:
            return record  # the leader is changing: the epoch moves anyway
        if not _contains(self.replicas, self.p.replicas):
            return replace(record, leader=self.p.leader)
        return record

    def trigger_leader_epoch_bump_for_isr_shrink_if_needed(
        self, record: PartitionChangeRecord
    ) -> PartitionChangeRecord:
        """Call only once the record's ISR is set."""
        if not (
            self.b.metadata_version.is_leader_epoch_bump_required_on_isr_shrink
            or self.b.zk_migration_enabled
        ):
            return record
        if record.leader != NO_LEADER_CHANGE or record.isr is None:
            return record
        if not _contains(record.isr, self.p.isr):
            return replace(record, leader=self.p.leader)
        return record

    # -- reassignment and assignment ---------------------------------------------------

    def complete_reassignment_if_needed(self) -> None:
        ongoing = PartitionReassignmentReplicas(self.removing, self.adding, self.replicas)
        completed = ongoing.maybe_complete_reassignment(self.isr)
        if completed is None:
            return
        self.isr = completed.isr
        self.replicas = completed.replicas
        self.removing = ()
        self.adding = ()

    def set_assignment_changes(self, record: PartitionChangeRecord) -> PartitionChangeRecord:
        p = self.p
        if self.replicas:
            if self.b.metadata_version.is_directory_assignment_supported:
                directories = tuple(self._directory(r) for r in self.replicas)
                if directories != p.directories:
                    record = replace(record, directories=directories)
            if self.replicas != p.replicas:
                record = replace(record, replicas=self.replicas)
        if self.removing != p.removing_replicas:
            record = replace(record, removing_replicas=self.removing)
        if self.adding != p.adding_replicas:
            record = replace(record, adding_replicas=self.adding)
        return record

    def _directory(self, replica: int) -> str:
        # `targetDirectories.getOrDefault(replica, defaultDirProvider.defaultDir(replica))`:
        # Java evaluates the default first, so an unset provider fails for every replica.
        provider = self.b.default_dir_provider
        if provider is None:
            raise DefaultDirProviderNotSet("DefaultDirProvider is not set")
        default = provider(replica)
        if replica in self.b.directory_overrides:
            return self.b.directory_overrides[replica]
        for r, d in zip(self.p.replicas, self.p.directories, strict=True):
            if r == replica:
                return d
        return default

    # -- ELR (KIP-966) -----------------------------------------------------------------

    def maybe_populate_target_elr(self) -> None:
        b = self.b
        if not b.eligible_leader_replicas_enabled:
            return
        if len(self.isr) >= b.min_isr:
            self.elr = ()
            self.last_known_elr = ()
            return
        target_isr = set(self.isr)
        unclean = b.unclean_shutdown_replicas
        # The candidates: the ELR and the old ISR, as one HashSet; the ELR keeps those not in
        # the target ISR and not shut down uncleanly.
        old_elr = self.elr
        candidates = hash_set_iteration_order(old_elr, self.p.isr)
        self.elr = tuple(
            r for r in candidates if r not in target_isr and (unclean is None or r not in unclean)
        )
        # The last known ELR: the same set plus the last known ELR, without the target ISR
        # and the new ELR.
        candidates = hash_set_iteration_order(old_elr, self.p.isr, self.last_known_elr)
        self.last_known_elr = tuple(
            r for r in candidates if r not in target_isr and r not in self.elr
        )

    def maybe_update_record_elr(self, record: PartitionChangeRecord) -> PartitionChangeRecord:
        b, p = self.b, self.p
        # An unclean election has already set the record's ISR.
        clean_election = record.isr is None
        if not clean_election or not b.eligible_leader_replicas_enabled:
            self.elr = ()
            self.last_known_elr = ()
        if self.elr != p.elr:
            record = replace(record, eligible_leader_replicas=self.elr)
        if (
            b.use_last_known_leader_in_balanced_recovery
            and len(p.last_known_elr) == 1
            and (
                record.leader == NO_LEADER
                or (record.leader == NO_LEADER_CHANGE and p.leader == NO_LEADER)
            )
        ):
            # The last known ELR holds the last known leader: it stays while there is no leader.
            # (Kafka's assignment; since the branch below returns, nothing reads it after.)
            self.last_known_elr = p.last_known_elr
        if b.use_last_known_leader_in_balanced_recovery:
            return record  # maybe_update_last_known_leader decides the field
        if self.last_known_elr != p.last_known_elr:
            record = replace(record, last_known_elr=self.last_known_elr)
        return record

    def maybe_update_last_known_leader(
        self, record: PartitionChangeRecord
    ) -> PartitionChangeRecord:
        b, p = self.b, self.p
        if (
            not b.use_last_known_leader_in_balanced_recovery
            or not b.eligible_leader_replicas_enabled
        ):
            return record
        if (
            record.isr is not None
            and not record.isr
            and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader)
        ):
            # Only the first time the partition becomes leaderless.
            return replace(record, last_known_elr=(p.leader,))
        if (
            record.leader >= 0 or (p.leader != NO_LEADER and record.leader != NO_LEADER)
        ) and p.last_known_elr:
            # The partition will have, or keeps, a leader.
            return replace(record, last_known_elr=())
        return record
