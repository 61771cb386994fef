"""Port of Kafka's `PartitionChangeBuilderTest` (apache/kafka 3.9.0; 4.0 and 4.1 where said).

Source: metadata/src/test/java/org/apache/kafka/controller/PartitionChangeBuilderTest.java.
One test per Kafka method, named after it and parametrized as Kafka does: by
PartitionChangeRecord version (mapped to a metadata.version by
`metadataVersionForPartitionChangeRecordVersion`) or by metadata.version strings. Where
Kafka checks one field of a record, these check the whole record, its version and the
replayed registration.

Version 2 maps to 4.0-IV1, as on Kafka's trunk from 4.0; 3.9.0's test says 4.0-IV0, which
was ELR's version only while 4.0's versions were unstable (see metadata_version.py).
Kafka's tests that use `MetadataVersion.latestTesting()` use 4.0-IV1, 3.9.0's latest.
The fixtures are in pcb_context.py; the ELR (KIP-966) methods in
test_partition_change_builder_elr.py.

Not ported: `testChangeRecordIsNoOp`'s schema checks (the number of tagged fields of the
generated message class), which have no counterpart without Kafka's message generator.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.partition_change import DefaultDirProviderNotSet, Election, ElectionResult
from state_machines.kraft.partition_change_builder import PartitionChangeBuilder
from state_machines.kraft.partition_reassignment_replicas import (
    PartitionReassignmentReplicas,
    PartitionReassignmentRevert,
)
from state_machines.kraft.partition_registration import PartitionRegistration
from state_machines.kraft.records import (
    MIGRATING_DIRECTORY,
    NO_LEADER_CHANGE,
    UNASSIGNED_DIRECTORY,
    PartitionChangeRecord,
    change_record_is_no_op,
)
from state_machines.model import NO_LEADER
from tests.unit.kraft.pcb_context import (
    BAR,
    BAR_DIRS,
    BAR_ID,
    FOO,
    FOO_DIRS,
    FOO_ID,
    OFFLINE_ID,
    RECORD_VERSIONS,
    RECOVERED,
    RECOVERING,
    TOPIC_ID,
    bar_builder,
    baz_builder,
    built,
    default_dir,
    elr_builder,
    foo_at,
    foo_builder,
    foo_builder_v,
    offline_builder,
)

# -- testChangeRecordIsNoOp --------------------------------------------------------------


def test_change_record_is_no_op() -> None:
    """testChangeRecordIsNoOp (without the schema checks)."""
    empty = PartitionChangeRecord(FOO_ID, 0)
    assert change_record_is_no_op(empty)
    for changed in (
        replace(empty, leader=1),
        replace(empty, isr=(1, 2, 3)),
        replace(empty, removing_replicas=(1,)),
        replace(empty, adding_replicas=(4,)),
        replace(empty, eligible_leader_replicas=(5,)),
        replace(empty, last_known_elr=(6,)),
        replace(empty, leader_recovery_state=RECOVERED),
        replace(
            empty,
            directories=(
                "5JwD0VNXRV2Wr9CCON38Tw",
                "zpL1bRzTQXmmgdxlLHOWuw",
                "6iGUpAkHQXC6bY0FTcPRDw",
            ),
        ),
    ):
        assert not change_record_is_no_op(changed), changed
    # A leader set to NO_LEADER is a change (the partition goes offline); only -2 is not.
    assert not change_record_is_no_op(replace(empty, leader=NO_LEADER))


# -- testElectLeader ---------------------------------------------------------------------


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_elect_leader(version: int) -> None:
    """testElectLeader."""

    def elect(b: PartitionChangeBuilder) -> ElectionResult:
        return b.elect_leader()

    assert elect(foo_builder_v(version, election=Election.PREFERRED)) == ElectionResult(2, False)
    assert elect(foo_builder_v(version)) == ElectionResult(1, False)
    assert elect(foo_builder_v(version, election=Election.UNCLEAN)) == ElectionResult(1, False)
    assert elect(foo_builder_v(version, target_isr=(1, 3))) == ElectionResult(1, False)
    assert elect(
        foo_builder_v(version, election=Election.UNCLEAN, target_isr=(1, 3))
    ) == ElectionResult(1, False)
    assert elect(foo_builder_v(version, target_isr=(3,))) == ElectionResult(NO_LEADER, False)
    assert elect(
        foo_builder_v(version, election=Election.UNCLEAN, target_isr=(3,))
    ) == ElectionResult(2, True)
    assert elect(
        foo_builder_v(
            version, election=Election.UNCLEAN, target_isr=(4,), target_replicas=(2, 1, 3, 4)
        )
    ) == ElectionResult(4, False)

    assert elect(baz_builder(version, election=Election.PREFERRED)) == ElectionResult(3, False)
    assert elect(baz_builder(version)) == ElectionResult(3, False)
    assert elect(baz_builder(version, election=Election.UNCLEAN)) == ElectionResult(3, False)


# -- leader epoch bumps ------------------------------------------------------------------


def trigger_leader_epoch_bump_if_needed(builder: PartitionChangeBuilder) -> int:
    """Kafka's helper `testTriggerLeaderEpochBumpIfNeeded`: the reassignment bump, then the
    builder's target ISR into the record, then the ISR-shrink bump; returns the leader field."""
    record = builder.trigger_leader_epoch_bump_for_replica_reassignment_if_needed(
        PartitionChangeRecord(FOO_ID, 0)
    )
    record = replace(record, isr=builder.resolved_target_isr)
    return builder.trigger_leader_epoch_bump_for_isr_shrink_if_needed(record).leader


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_no_leader_epoch_bump_if_nothing_changed(version: int) -> None:
    """testNoLeaderEpochBumpIfNothingChanged."""
    assert trigger_leader_epoch_bump_if_needed(foo_builder_v(version)) == NO_LEADER_CHANGE


@pytest.mark.parametrize("mv", ["3.6-IV0", "3.7-IV2", "4.0-IV0"])
def test_no_leader_epoch_bump_on_isr_shrink(mv: str) -> None:
    """testNoLeaderEpochBumpOnIsrShrink: from 3.6-IV0 an ISR shrink keeps the leader epoch."""
    builder = foo_builder(MV.from_version_string(mv), target_isr=(2, 1))
    assert trigger_leader_epoch_bump_if_needed(builder) == NO_LEADER_CHANGE


@pytest.mark.parametrize("mv", ["3.4-IV0", "3.5-IV2"])
def test_leader_epoch_bump_on_isr_shrink(mv: str) -> None:
    """testLeaderEpochBumpOnIsrShrink: before 3.6-IV0 it bumps (KAFKA-15021)."""
    builder = foo_builder(MV.from_version_string(mv), target_isr=(2, 1))
    assert trigger_leader_epoch_bump_if_needed(builder) == 1


@pytest.mark.parametrize("mv", ["3.6-IV0", "3.7-IV2", "4.0-IV0"])
def test_leader_epoch_bump_on_isr_shrink_with_zk_migration(mv: str) -> None:
    """testLeaderEpochBumpOnIsrShrinkWithZkMigration (3.9.0; 4.0 removed ZK migration)."""
    builder = foo_builder(MV.from_version_string(mv), zk_migration_enabled=True, target_isr=(2, 1))
    assert trigger_leader_epoch_bump_if_needed(builder) == 1


@pytest.mark.parametrize("mv", ["3.4-IV0", "3.5-IV2", "3.6-IV0", "3.7-IV2", "4.0-IV0"])
def test_no_leader_epoch_bump_on_isr_expansion(mv: str) -> None:
    """testNoLeaderEpochBumpOnIsrExpansion."""
    builder = foo_builder(MV.from_version_string(mv), target_isr=(2, 1, 3, 4))
    assert trigger_leader_epoch_bump_if_needed(builder) == NO_LEADER_CHANGE


@pytest.mark.parametrize("mv", ["3.4-IV0", "3.5-IV2", "3.6-IV0", "3.7-IV2", "4.0-IV0"])
def test_no_leader_epoch_bump_on_isr_expansion_during_migration(mv: str) -> None:
    """testNoLeaderEpochBumpOnIsrExpansionDuringMigration (3.9.0)."""
    builder = foo_builder(
        MV.from_version_string(mv), zk_migration_enabled=True, target_isr=(2, 1, 3, 4)
    )
    assert trigger_leader_epoch_bump_if_needed(builder) == NO_LEADER_CHANGE


@pytest.mark.parametrize("mv", ["3.4-IV0", "3.5-IV2", "3.6-IV0", "3.7-IV2", "4.0-IV0"])
def test_leader_epoch_bump_on_new_replica_set_disjoint(mv: str) -> None:
    """testLeaderEpochBumpOnNewReplicaSetDisjoint: losing a replica always bumps."""
    builder = foo_builder(MV.from_version_string(mv), target_replicas=(2, 1, 4))
    assert trigger_leader_epoch_bump_if_needed(builder) == 1


@pytest.mark.parametrize("mv", ["3.4-IV0", "3.5-IV2", "3.6-IV0", "3.7-IV2"])
def test_no_leader_epoch_bump_on_empty_target_isr(mv: str) -> None:
    """testNoLeaderEpochBumpOnEmptyTargetIsr (KAFKA-16624): no ISR in the record, no bump."""
    metadata_version = MV.from_version_string(mv)
    partition = PartitionRegistration(
        replicas=(2,),
        directories=("dpdvA5AZSWySmnPFTnu5Kw",),
        isr=(2,),
        leader=2,
        leader_epoch=100,
        partition_epoch=200,
    )
    builder = PartitionChangeBuilder(
        partition=partition,
        topic_id=FOO_ID,
        partition_id=0,
        is_acceptable_leader=lambda r: True,
        metadata_version=metadata_version,
        min_isr=2,
        eligible_leader_replicas_enabled=metadata_version.is_elr_supported,
        default_dir_provider=default_dir,
        target_replicas=(),
    )
    record = builder.trigger_leader_epoch_bump_for_isr_shrink_if_needed(
        PartitionChangeRecord(FOO_ID, 0)
    )
    assert record.leader == NO_LEADER_CHANGE


# -- build -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_no_change(version: int) -> None:
    """testNoChange: a change that changes nothing emits nothing."""
    assert foo_builder_v(version).build() is None
    assert foo_builder_v(version, election=Election.UNCLEAN).build() is None
    assert bar_builder(version).build() is None
    assert bar_builder(version, election=Election.UNCLEAN).build() is None
    assert baz_builder(version, election=Election.PREFERRED).build() is None


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_isr_change_doesnt_bump_leader_epoch(version: int) -> None:
    """testIsrChangeDoesntBumpLeaderEpoch."""
    change = built(foo_builder_v(version, target_isr=(2, 1)))
    assert change.record == PartitionChangeRecord(FOO_ID, 0, isr=(2, 1))
    assert change.version == version
    assert change.registration == replace(foo_at(version), isr=(2, 1), partition_epoch=201)


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_isr_change_and_leader_change(version: int) -> None:
    """testIsrChangeAndLeaderChange."""
    change = built(foo_builder_v(version, target_isr=(2, 3)))
    assert change.record == PartitionChangeRecord(FOO_ID, 0, isr=(2, 3), leader=2)
    assert change.version == version
    assert change.registration == replace(
        foo_at(version), isr=(2, 3), leader=2, leader_epoch=101, partition_epoch=201
    )


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_reassignment_rearranges_replicas(version: int) -> None:
    """testReassignmentRearrangesReplicas: directories follow their replicas from 3.7-IV2."""
    dirs = (FOO_DIRS[3], FOO_DIRS[2], FOO_DIRS[1]) if version >= 1 else None
    change = built(foo_builder_v(version, target_replicas=(3, 2, 1)))
    assert change.record == PartitionChangeRecord(FOO_ID, 0, replicas=(3, 2, 1), directories=dirs)
    assert change.version == version
    # Before 3.7-IV2 the registration keeps its (MIGRATING) directories.
    assert change.registration == replace(
        foo_at(version),
        replicas=(3, 2, 1),
        directories=dirs or foo_at(version).directories,
        partition_epoch=201,
    )


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_isr_enlargement_completes_reassignment(version: int) -> None:
    """testIsrEnlargementCompletesReassignment."""
    dirs = (BAR_DIRS[2], BAR_DIRS[3], BAR_DIRS[4]) if version >= 1 else None
    change = built(bar_builder(version, target_isr=(1, 2, 3, 4)))
    assert change.record == PartitionChangeRecord(
        BAR_ID,
        0,
        replicas=(2, 3, 4),
        isr=(2, 3, 4),
        leader=2,
        removing_replicas=(),
        adding_replicas=(),
        directories=dirs,
    )
    assert change.version == version


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_revert_reassignment(version: int) -> None:
    """testRevertReassignment."""
    revert = PartitionReassignmentRevert.of(BAR)
    assert revert.replicas == (1, 2, 3)
    assert revert.isr == (1, 2, 3)
    assert not revert.unclean
    dirs = (BAR_DIRS[1], BAR_DIRS[2], BAR_DIRS[3]) if version >= 1 else None
    change = built(
        bar_builder(
            version,
            target_replicas=revert.replicas,
            target_isr=revert.isr,
            target_removing=(),
            target_adding=(),
        )
    )
    assert change.record == PartitionChangeRecord(
        BAR_ID,
        0,
        replicas=(1, 2, 3),
        leader=1,
        removing_replicas=(),
        adding_replicas=(),
        directories=dirs,
    )
    assert change.version == version
    # Losing replica 4 bumps the leader epoch though leader 1 stays.
    assert change.registration.leader_epoch == 101
    assert change.registration.partition_epoch == 201


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_removing_replica_reassignment(version: int) -> None:
    """testRemovingReplicaReassignment."""
    replicas = PartitionReassignmentReplicas.from_assignments(FOO.replicas, (1, 2))
    assert replicas.removing == (3,)
    assert replicas.adding == ()
    assert replicas.replicas == (1, 2, 3)
    dirs = (FOO_DIRS[1], FOO_DIRS[2]) if version >= 1 else None
    change = built(
        foo_builder_v(version, target_replicas=replicas.replicas, target_removing=replicas.removing)
    )
    assert change.record == PartitionChangeRecord(
        FOO_ID, 0, replicas=(1, 2), isr=(2, 1), leader=1, directories=dirs
    )
    assert change.version == version


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_adding_replica_reassignment(version: int) -> None:
    """testAddingReplicaReassignment: the new replica's directory comes from the provider."""
    replicas = PartitionReassignmentReplicas.from_assignments(FOO.replicas, (1, 2, 3, 4))
    assert replicas.removing == ()
    assert replicas.adding == (4,)
    assert replicas.replicas == (1, 2, 3, 4)
    dirs = (FOO_DIRS[1], FOO_DIRS[2], FOO_DIRS[3], UNASSIGNED_DIRECTORY) if version >= 1 else None
    change = built(
        foo_builder_v(version, target_replicas=replicas.replicas, target_adding=replicas.adding)
    )
    assert change.record == PartitionChangeRecord(
        FOO_ID, 0, replicas=(1, 2, 3, 4), adding_replicas=(4,), directories=dirs
    )
    assert change.version == version


@pytest.mark.parametrize("version", RECORD_VERSIONS)
def test_unclean_leader_election(version: int) -> None:
    """testUncleanLeaderElection."""
    change = built(foo_builder_v(version, election=Election.UNCLEAN, target_isr=(3,)))
    assert change.record == PartitionChangeRecord(
        FOO_ID, 0, isr=(2,), leader=2, leader_recovery_state=RECOVERING
    )
    assert change.version == version
    assert change.registration == replace(
        foo_at(version),
        isr=(2,),
        leader=2,
        leader_recovery_state=RECOVERING,
        leader_epoch=101,
        partition_epoch=201,
    )

    expected = PartitionChangeRecord(
        OFFLINE_ID, 0, isr=(1,), leader=1, leader_recovery_state=RECOVERING
    )
    if version >= 2:
        # The partition has ELR fields, which the unclean election clears.
        expected = replace(expected, eligible_leader_replicas=(), last_known_elr=())
    assert built(offline_builder(version, election=Election.UNCLEAN)).record == expected
    assert (
        built(offline_builder(version, election=Election.UNCLEAN, target_isr=(2,))).record
        == expected
    )


LEADER_RECOVERY_AND_ZK_MIGRATION = [(True, True), (True, False), (False, True), (False, False)]


def leader_recovery_mv(is_supported: bool) -> MV:
    """`leaderRecoveryMetadataVersion`."""
    return MV.IBP_3_2_IV0 if is_supported else MV.IBP_3_1_IV0


@pytest.mark.parametrize(
    ("is_leader_recovery_supported", "zk_migration_enabled"), LEADER_RECOVERY_AND_ZK_MIGRATION
)
def test_change_in_leadership_does_not_change_recovery_state(
    is_leader_recovery_supported: bool, zk_migration_enabled: bool
) -> None:
    """testChangeInLeadershipDoesNotChangeRecoveryState (3.9.0; 4.0 drops the ZK migration axis)."""
    leader_id = 1
    registration = PartitionRegistration(
        replicas=(1, 2, 3),
        directories=("1sF6XXLkSN2LtDums7CJ8Q", "iaBBVsoHQR6NDKXwliKMqw", "sHaBwjdrR2S3bL4E1RKC8Q"),
        isr=(leader_id,),
        leader=leader_id,
        leader_recovery_state=RECOVERING,
        leader_epoch=100,
        partition_epoch=200,
    )
    mv = leader_recovery_mv(is_leader_recovery_supported)

    # The last leader goes offline: the partition has no leader, the ISR keeps it, and
    # the partition stays RECOVERING.
    offline = PartitionChangeBuilder(
        partition=registration,
        topic_id=FOO_ID,
        partition_id=0,
        is_acceptable_leader=lambda b: False,
        metadata_version=mv,
        min_isr=2,
        zk_migration_enabled=zk_migration_enabled,
        target_isr=(),
    )
    change = built(offline)
    assert change.record == PartitionChangeRecord(FOO_ID, 0, leader=NO_LEADER)
    registration = change.registration
    assert registration == PartitionRegistration(
        replicas=(1, 2, 3),
        directories=registration.directories,
        isr=(leader_id,),
        leader=NO_LEADER,
        leader_recovery_state=RECOVERING,
        leader_epoch=101,
        partition_epoch=201,
    )

    # It comes back: the only ISR member leads again and stays RECOVERING.
    online = PartitionChangeBuilder(
        partition=registration,
        topic_id=FOO_ID,
        partition_id=0,
        is_acceptable_leader=lambda b: True,
        metadata_version=mv,
        min_isr=2,
        zk_migration_enabled=zk_migration_enabled,
    )
    change = built(online)
    assert change.record == PartitionChangeRecord(FOO_ID, 0, leader=leader_id)
    assert change.registration == replace(
        registration, leader=leader_id, leader_epoch=102, partition_epoch=202
    )
    assert change.registration.leader_recovery_state is RECOVERING


@pytest.mark.parametrize(
    ("is_leader_recovery_supported", "zk_migration_enabled"), LEADER_RECOVERY_AND_ZK_MIGRATION
)
def test_unclean_sets_leader_recovering_state(
    is_leader_recovery_supported: bool, zk_migration_enabled: bool
) -> None:
    """testUncleanSetsLeaderRecoveringState: RECOVERING from 3.2-IV0 only (KIP-704)."""
    leader_id = 1
    registration = PartitionRegistration(
        replicas=(1, 2, 3),
        directories=("uYpxts0pS4K4bk5XOoXB4g", "kS6fHEqwRYucduWkmvsevw", "De9RqRThQRGjKg3i3yzUxA"),
        isr=(2, 3),
        leader=NO_LEADER,
        leader_epoch=100,
        partition_epoch=200,
    )
    builder = PartitionChangeBuilder(
        partition=registration,
        topic_id=FOO_ID,
        partition_id=0,
        is_acceptable_leader=lambda b: b == leader_id,
        metadata_version=leader_recovery_mv(is_leader_recovery_supported),
        min_isr=2,
        election=Election.UNCLEAN,
        zk_migration_enabled=zk_migration_enabled,
    )
    change = built(builder)
    expected_state = RECOVERING if is_leader_recovery_supported else None
    assert change.record == PartitionChangeRecord(
        FOO_ID, 0, isr=(leader_id,), leader=leader_id, leader_recovery_state=expected_state
    )
    assert change.registration == replace(
        registration,
        isr=(leader_id,),
        leader=leader_id,
        leader_recovery_state=RECOVERING if is_leader_recovery_supported else RECOVERED,
        leader_epoch=101,
        partition_epoch=201,
    )


def test_stopped_leader_is_demoted_after_reassignment_completes_even_if_no_new_eligible_leaders() -> (  # noqa: E501  Kafka's test name, cited in KAFKA_TESTS.md
    None
):
    """testStoppedLeaderIsDemotedAfterReassignmentCompletesEvenIfNoNewEligibleLeaders:
    a reassignment from [0, 1] to [2, 3] completes while no replica is acceptable; leader 0,
    being removed, must not stay leader. (Kafka's test gives real directory ids at 3.1-IV0;
    the ones a 3.1-IV0 controller holds, MIGRATING, let the record be replayed here.)"""
    part = PartitionRegistration(
        replicas=(2, 3, 0, 1),
        directories=(MIGRATING_DIRECTORY,) * 4,
        isr=(0, 1),
        removing_replicas=(0, 1),
        adding_replicas=(2, 3),
        leader=0,
        leader_epoch=0,
        partition_epoch=0,
    )
    topic_id = "3Qr8lC1tTUa5xJbDXkRRuA"
    builder = PartitionChangeBuilder(
        partition=part,
        topic_id=topic_id,
        partition_id=0,
        is_acceptable_leader=lambda b: False,
        metadata_version=leader_recovery_mv(False),
        min_isr=2,
        target_isr=(0, 1, 2, 3),
    )
    change = built(builder)
    assert change.record == PartitionChangeRecord(
        topic_id,
        0,
        replicas=(2, 3),
        isr=(2, 3),
        removing_replicas=(),
        adding_replicas=(),
        leader=NO_LEADER,
    )
    assert change.version == 0


# -- beyond Kafka's tests ----------------------------------------------------------------


def test_elr_comes_out_in_java_hash_set_order() -> None:
    """The ELR is Kafka's HashSet stream: with brokers 3, 17 and 5 the ELR is [17, 3]
    (bucket 1 before bucket 3 of a 16-bucket table), not [3, 17]."""
    partition = PartitionRegistration(
        replicas=(3, 17, 5),
        directories=(MIGRATING_DIRECTORY,) * 3,
        isr=(3, 17, 5),
        leader=5,
        leader_epoch=7,
        partition_epoch=9,
    )
    builder = elr_builder(
        partition,
        2,
        lambda r: True,
        use_last_known_leader_in_balanced_recovery=False,
        target_isr=(5,),
    )
    assert built(builder).record == PartitionChangeRecord(
        TOPIC_ID, 0, isr=(5,), eligible_leader_replicas=(17, 3)
    )


def test_directories_need_a_default_dir_provider() -> None:
    """Kafka's unset DefaultDirProvider throws as soon as directories are computed (3.7-IV2+)."""
    builder = replace(foo_builder(MV.IBP_3_9_IV0), default_dir_provider=None)
    with pytest.raises(DefaultDirProviderNotSet):
        builder.build()
    assert replace(foo_builder(MV.IBP_3_7_IV1), default_dir_provider=None).build() is None


def test_metadata_version_order_and_gates() -> None:
    assert MV.from_version_string("3.7") is MV.IBP_3_7_IV4
    assert MV.IBP_3_5_IV2 < MV.IBP_3_6_IV0 <= MV.IBP_3_6_IV0 < MV.IBP_4_0_IV1
    assert MV.IBP_3_5_IV2.is_leader_epoch_bump_required_on_isr_shrink
    assert not MV.IBP_3_6_IV0.is_leader_epoch_bump_required_on_isr_shrink
    assert [
        mv.partition_change_record_version
        for mv in (MV.IBP_3_7_IV1, MV.IBP_3_7_IV2, MV.IBP_3_9_IV0, MV.IBP_4_0_IV0, MV.IBP_4_0_IV1)
    ] == [0, 1, 1, 1, 2]
    with pytest.raises(ValueError):
        MV.from_version_string("2.8-IV1")
