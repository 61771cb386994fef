"""Port of Kafka's `ClusterControlManagerTest` (apache/kafka 3.9.0), for the broker facts
cluster_control keeps: one test per Kafka method, named after it.

Source: metadata/src/test/java/org/apache/kafka/controller/ClusterControlManagerTest.java.
Kafka's registrations carry listeners, racks and features, which are not kept here, so the
records below have none. Not ported (machinery not built): testRegistrationWithIncorrectClusterId,
testPlaceReplicas, testRegistrationsToRecords, testRegistrationWithUnsupportedFeature,
testRegistrationWithUnsupportedKraftVersion, testRegistrationWithUnsupportedMetadataVersion,
testRegisterControlWithOlderMetadataVersion, testRegistrationWithIncorrectInterBrokerListenerName.
"""

from __future__ import annotations

import pytest

from state_machines.kraft.cluster_control import (
    BrokerRegistration,
    BrokerRegistry,
    ClusterControlError,
    controlled_shutdown_record,
    fence_broker_record,
    register_broker,
    register_broker_record_version,
    unfence_broker_record,
    unregister_broker_record,
)
from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.records import (
    FENCING_CHANGE_FENCE,
    FENCING_CHANGE_UNFENCE,
    IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
    LOST_DIRECTORY,
    MIGRATING_DIRECTORY,
    UNASSIGNED_DIRECTORY,
    ApiMessageAndVersion,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)

DEFAULT_MV = MV.IBP_3_9_IV0  # FeatureControlManager's default: the latest production version


def register_new_broker_with_dirs(
    registry: BrokerRegistry, broker_id: int, dirs: list[str]
) -> BrokerRegistry:
    """The test's `registerNewBrokerWithDirs` (a random incarnation; epoch 123); a refusal
    is returned as Kafka's exception message."""
    records, reply = register_broker(
        registry,
        broker_id,
        f"incarnation-{broker_id}-{len(registry.brokers)}",
        123,
        DEFAULT_MV,
        log_dirs=dirs,
    )
    if reply.error is not None:
        raise ValueError(reply.message)
    return registry.replay_all(records)


@pytest.mark.parametrize("mv", [MV.IBP_3_0_IV1, MV.IBP_3_3_IV2])
def test_replay(mv: MV) -> None:
    """testReplay: the fencing records before 3.3-IV2, BrokerRegistrationChangeRecord from it."""
    registry = BrokerRegistry()
    assert not registry.is_unfenced(0)
    registry = registry.replay(RegisterBrokerRecord(1, 100, ""))
    assert registry.check_broker_epoch(1, 100) is None
    assert registry.check_broker_epoch(1, 101) == "STALE_BROKER_EPOCH"
    assert registry.check_broker_epoch(2, 100) == "STALE_BROKER_EPOCH"
    assert not registry.is_unfenced(0) and not registry.is_unfenced(1)
    unfence = unfence_broker_record(1, 100, mv)
    if mv.is_less_than(MV.IBP_3_3_IV2):
        assert unfence == ApiMessageAndVersion(UnfenceBrokerRecord(1, 100), 0)
    else:
        assert unfence == ApiMessageAndVersion(
            BrokerRegistrationChangeRecord(1, 100, fenced=FENCING_CHANGE_UNFENCE), 0
        )
    registry = registry.replay(unfence.message)
    assert not registry.is_unfenced(0) and registry.is_unfenced(1)
    fence = fence_broker_record(registry, 1, mv)
    if mv.is_less_than(MV.IBP_3_3_IV2):
        assert fence == ApiMessageAndVersion(FenceBrokerRecord(1, 100), 0)
    else:
        assert fence == ApiMessageAndVersion(
            BrokerRegistrationChangeRecord(1, 100, fenced=FENCING_CHANGE_FENCE), 0
        )
    registry = registry.replay(fence.message)
    assert not registry.is_unfenced(0) and not registry.is_unfenced(1)


def test_replay_register_broker_record() -> None:
    """testReplayRegisterBrokerRecord: a RegisterBrokerRecord replaces the registration whole."""
    registry = BrokerRegistry()
    assert not registry.is_unfenced(0) and not registry.in_controlled_shutdown(0)
    registry = registry.replay(
        RegisterBrokerRecord(0, 100, "", fenced=True, in_controlled_shutdown=True)
    )
    assert not registry.is_unfenced(0) and registry.in_controlled_shutdown(0)
    registry = registry.replay(
        RegisterBrokerRecord(0, 100, "", fenced=True, in_controlled_shutdown=False)
    )
    assert not registry.is_unfenced(0) and not registry.in_controlled_shutdown(0)
    registry = registry.replay(
        RegisterBrokerRecord(0, 100, "", fenced=False, in_controlled_shutdown=False)
    )
    assert registry.is_unfenced(0) and not registry.in_controlled_shutdown(0)


def test_replay_broker_registration_change_record() -> None:
    """testReplayBrokerRegistrationChangeRecord: unfencing leaves controlled shutdown alone."""
    registry = BrokerRegistry().replay(RegisterBrokerRecord(0, 100, "", fenced=False))
    assert registry.is_unfenced(0) and not registry.in_controlled_shutdown(0)
    record = controlled_shutdown_record(registry, 0, 100, DEFAULT_MV)
    assert record == ApiMessageAndVersion(
        BrokerRegistrationChangeRecord(
            0, 100, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN
        ),
        1,
    )
    registry = registry.replay(record.message)
    assert (
        registry.is_unfenced(0) and registry.in_controlled_shutdown(0) and not registry.is_active(0)
    )
    # Only once, as handleBrokerInControlledShutdown checks.
    assert controlled_shutdown_record(registry, 0, 100, DEFAULT_MV) is None
    registry = registry.replay(
        BrokerRegistrationChangeRecord(0, 100, fenced=FENCING_CHANGE_UNFENCE)
    )
    assert registry.is_unfenced(0) and registry.in_controlled_shutdown(0)


@pytest.mark.parametrize("mv", list(MV))
def test_register_broker_record_version(mv: MV) -> None:
    """testRegisterBrokerRecordVersion (the record without features)."""
    dirs = (
        ["63k9SN1nQOS0dFHSCIMA0A", "Vm1MjsOCR1OjDDydOsDbzg"]
        if mv.is_directory_assignment_supported
        else []
    )
    records, reply = register_broker(
        BrokerRegistry(), 0, "0H4fUu1xQEKXFYwB1aBjhg", 123, mv, log_dirs=dirs
    )
    expected_version = (
        3
        if mv.is_directory_assignment_supported
        else 2
        if mv.is_at_least(MV.IBP_3_4_IV0)
        else 1
        if mv.is_at_least(MV.IBP_3_3_IV3)
        else 0
    )
    assert register_broker_record_version(mv) == expected_version
    assert records == (
        ApiMessageAndVersion(
            RegisterBrokerRecord(
                0,
                123,
                "0H4fUu1xQEKXFYwB1aBjhg",
                fenced=True,
                in_controlled_shutdown=False,
                log_dirs=tuple(dirs),
            ),
            expected_version,
        ),
    )
    assert reply.broker_epoch == 123 and reply.error is None


def test_unregister() -> None:
    """testUnregister."""
    registry = BrokerRegistry().replay(RegisterBrokerRecord(1, 100, "fPZv1VBsRFmnlRvmGcOW9w"))
    assert registry.registration(1) == BrokerRegistration(
        1, 100, "fPZv1VBsRFmnlRvmGcOW9w", fenced=True, in_controlled_shutdown=False
    )
    registry = registry.replay(unregister_broker_record(1, 100).message)
    assert 1 not in registry.brokers
    # A record at another epoch is a broken invariant.
    with pytest.raises(ClusterControlError):
        registry.replay(unregister_broker_record(1, 100).message)


def test_register_with_duplicate_directory_id() -> None:
    """testRegisterWithDuplicateDirectoryId."""
    registry = BrokerRegistry().replay(
        RegisterBrokerRecord(
            0, 100, "", log_dirs=("yJGxmjfbQZSVFAlNM3uXZg", "Mj3CW3OSRi29cFeNJlXuAQ")
        )
    )
    # The same broker may register again with its directories.
    register_new_broker_with_dirs(registry, 0, ["yJGxmjfbQZSVFAlNM3uXZg", "Mj3CW3OSRi29cFeNJlXuAQ"])
    for dirs, message in (
        ([], "No directories specified in request"),
        (
            ["TyNK6XSSQJaJc2q9uflNHg", "Mj3CW3OSRi29cFeNJlXuAQ"],
            "Broker 0 is already registered with directory Mj3CW3OSRi29cFeNJlXuAQ",
        ),
        (["TyNK6XSSQJaJc2q9uflNHg", UNASSIGNED_DIRECTORY], "Reserved directory ID in request"),
        (["aR6lssMrSeyXRf65hiUovQ", "aR6lssMrSeyXRf65hiUovQ"], "Duplicate directory ID in request"),
    ):
        with pytest.raises(ValueError, match=f"^{message}$"):
            register_new_broker_with_dirs(registry, 1, dirs)


def test_has_online_dir() -> None:
    """testHasOnlineDir."""
    registry = register_new_broker_with_dirs(
        BrokerRegistry(), 1, ["dir1SEbpRuG1dcpTRGOvJw", "dir2xaEwR2m3JHTiy7PWwA"]
    )
    registration = registry.registration(1)
    assert registration is not None and registration.has_online_dir("dir1SEbpRuG1dcpTRGOvJw")
    assert registry.has_online_dir(1, "dir1SEbpRuG1dcpTRGOvJw")
    assert registry.has_online_dir(1, "dir2xaEwR2m3JHTiy7PWwA")
    assert registry.has_online_dir(1, UNASSIGNED_DIRECTORY)
    assert registry.has_online_dir(1, MIGRATING_DIRECTORY)
    assert not registry.has_online_dir(1, "otherAA1QFK4U1GWzkjZ5A")
    assert not registry.has_online_dir(77, "8xVRVs6UQHGVonA9SRYseQ")
    assert not registry.has_online_dir(1, LOST_DIRECTORY)


def test_default_dir() -> None:
    """testDefaultDir."""
    registry = BrokerRegistry().replay(RegisterBrokerRecord(1, 100, ""))
    registry = register_new_broker_with_dirs(registry, 2, ["singleOnlineDirectoryA"])
    registry = register_new_broker_with_dirs(
        registry, 3, ["s4fRmyNFSH6J0vI8AVA5ew", "UbtxBcqYSnKUEMcnTyZFWw"]
    )
    assert registry.default_dir(1) == MIGRATING_DIRECTORY
    assert registry.default_dir(2) == "singleOnlineDirectoryA"
    assert registry.default_dir(3) == UNASSIGNED_DIRECTORY
    assert registry.default_dir(4) == UNASSIGNED_DIRECTORY


@pytest.mark.parametrize("new_incarnation_id", [False, True])
def test_re_registration_and_broker_epoch(new_incarnation_id: bool) -> None:
    """testReRegistrationAndBrokerEpoch: the same incarnation keeps its epoch."""
    dirs = ["Vv1gzkM2QpuE-PPrIc6XEw"]
    records, _ = register_broker(
        BrokerRegistry(), 1, "mISEfEFwQIuaD1gKCc5tzQ", 100, DEFAULT_MV, log_dirs=dirs
    )
    registry = BrokerRegistry().replay_all(records)
    incarnation = "07OOcU7MQFeSmGAFPP2Zww" if new_incarnation_id else "mISEfEFwQIuaD1gKCc5tzQ"
    records, reply = register_broker(registry, 1, incarnation, 111, DEFAULT_MV, log_dirs=dirs)
    registry = registry.replay_all(records)
    registration = registry.registration(1)
    assert registration is not None
    assert (registration.incarnation_id, registration.epoch, reply.broker_epoch) == (
        (incarnation, 111, 111) if new_incarnation_id else (incarnation, 100, 100)
    )


def test_duplicate_broker_registration_while_session_is_valid() -> None:
    """registerBroker: another incarnation while the broker holds a session is refused
    (DuplicateBrokerRegistrationException); no Kafka test method covers it alone."""
    records, _ = register_broker(
        BrokerRegistry(), 1, "a", 100, DEFAULT_MV, log_dirs=["Vv1gzkM2QpuE-PPrIc6XEw"]
    )
    registry = BrokerRegistry().replay_all(records)
    records, reply = register_broker(
        registry,
        1,
        "b",
        111,
        DEFAULT_MV,
        log_dirs=["Vv1gzkM2QpuE-PPrIc6XEw"],
        has_valid_session=True,
    )
    assert records == () and reply.error == "DUPLICATE_BROKER_REGISTRATION"
