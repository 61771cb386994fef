"""KRaft's `PartitionChangeBuilder`: from a registration and the targets a handler asks for,
the `PartitionChangeRecord` that gets there (only the changed fields; None if nothing
changes) and the registration after it is replayed.

Source: metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java
(apache/kafka 3.9.0; 4.0 and 4.1 where said). The builder is a frozen value: what Kafka
sets with `setTargetIsr`, `setElection`, ... are its fields (change them with
`dataclasses.replace`), and `build()` is pure. Liveness is the `is_acceptable_leader`
predicate, never looked up; min ISR, unclean-election and ELR settings are arguments,
decided by the caller (`ReplicationControlManager`) from the topic config and features.

`build()` runs Kafka's steps in Kafka's order:

1. `completeReassignmentIfNeeded`: a reassignment completes when the target ISR, without
   the removing replicas, covers the remaining replicas (partition_reassignment_replicas).
2. `maybePopulateTargetElr` (KIP-966, only with ELR enabled): an ISR at or above min ISR
   clears ELR and last known ELR; below it, the ELR becomes (ELR + old ISR) minus the
   target ISR and the unclean-shutdown replicas, and the last known ELR collects the rest
   of the old ISR and the last known ELR, minus the target ISR and the new ELR. Both come
   out in Java HashSet order (java_hash_set).
3. `tryElection`: the `Election` type picks the algorithm. PREFERRED takes the first
   target replica if valid, else keeps a valid leader, else the first valid replica.
   ONLINE and UNCLEAN keep a still-valid leader, else take the first valid replica in
   target order. A valid leader is acceptable and in the target ISR (in the ELR when the
   ISR is empty). Then, with ELR enabled and an empty ISR and ELR, the last known leader
   (`useLastKnownLeaderInBalancedRecovery`, counted unclean); then, for UNCLEAN only, the
   first acceptable replica, unclean. A new leader from the ELR becomes the ISR alone and
   leaves the ELR; an unclean one becomes the ISR alone and, from 3.2-IV0 (KIP-704), the
   partition RECOVERING unless it already is. A leader change is in the record even when
   no leader is found (-1).
4. `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: a replica set that loses a
   replica sets the leader field to the current leader, which bumps the leader epoch.
5. `maybeUpdateRecordElr`: an unclean election or disabled ELR clears ELR and last known
   ELR; changes go in the record (the last known ELR only when it is not holding the last
   known leader).
6. The target ISR goes in the record if it differs and is not empty (empty is allowed with
   ELR enabled).
7. `triggerLeaderEpochBumpForIsrShrinkIfNeeded`: before 3.6-IV0 (KAFKA-15021) or during ZK
   migration (KAFKA-15109, 3.9 only: 4.0 removed the migration) an ISR that loses a
   member bumps the leader epoch the same way.
8. `maybeUpdateLastKnownLeader`: with the last known leader in use and ELR enabled, an ISR
   that becomes empty records the old leader as the last known ELR (once); a partition that
   has or keeps a leader clears it.
9. `setAssignmentChanges`: replicas, removing, adding, and from 3.7-IV2 (KIP-858) the
   directories of the target replicas (each replica's current or overridden directory,
   else the `default_dir_provider`'s), each only if changed.
10. An explicit `target_leader_recovery_state` that differs from the registration's.

Where versions differ: ZK migration's epoch bump exists in 3.9 only (`zk_migration_enabled`,
keep it False for 4.x). In 3.9.0 and 4.0, `canElectLastKnownLeader` tests whether the last
known leader is acceptable but only logs the (inverted) outcome, so a fenced last known
leader is elected; KAFKA-19522 (apache/kafka#20200, merged to trunk in July 2025, after
4.0; whether 4.1.0 carries it could not be checked here) refuses it:
`reject_unacceptable_last_known_leader=True`. ELR's metadata.version moved from 4.0-IV0
(3.9.0, unstable) to 4.0-IV1 (4.0): see metadata_version.py.

The steps are partition_change_steps.py's, the values partition_change.py's.

Not reproduced: logging, `toString`, `setTargetIsrWithBrokerStates` (pass the broker ids),
and targets for ELR and last known ELR, which Kafka offers no setter for either.
"""

from __future__ import annotations

from dataclasses import dataclass

from .partition_change import ElectionResult, PartitionChange, PartitionChangeTargets
from .partition_change_steps import BuildRun
from .records import PartitionChangeRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeBuilder(PartitionChangeTargets):
    """`PartitionChangeBuilder`: its targets (`PartitionChangeTargets`, set them with
    `dataclasses.replace`) and `build()`."""

    def build(self) -> PartitionChange | None:
        """`PartitionChangeBuilder.build`, with the record replayed
        (`PartitionRegistration.merge`)."""
        run = BuildRun(self)
        record = run.build()
        if record is None:
            return None
        return PartitionChange(
            record,
            self.metadata_version.partition_change_record_version,
            self.partition.merge(record),
        )

    # Kafka's package-private steps, on the builder as set (before `build` moves any target),
    # as PartitionChangeBuilderTest calls them.

    def elect_leader(self) -> ElectionResult:
        return BuildRun(self).elect_leader()

    def trigger_leader_epoch_bump_for_replica_reassignment_if_needed(
        self, record: PartitionChangeRecord
    ) -> PartitionChangeRecord:
        return BuildRun(self).trigger_leader_epoch_bump_for_replica_reassignment_if_needed(record)

    def trigger_leader_epoch_bump_for_isr_shrink_if_needed(
        self, record: PartitionChangeRecord
    ) -> PartitionChangeRecord:
        return BuildRun(self).trigger_leader_epoch_bump_for_isr_shrink_if_needed(record)
