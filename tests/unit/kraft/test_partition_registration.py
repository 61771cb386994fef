"""`PartitionRegistration`'s directory checks (apache/kafka 3.9.0,
metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java): the two
`checkDirectories` overloads and the private constructor's length check, which together
refuse every registration whose real directory ids do not match its replicas one to one.
`testMigratingRecordDirectories` is Kafka's (PartitionRegistrationTest); the others follow
the three `throw`s."""

from __future__ import annotations

import pytest

from state_machines.kraft.partition_registration import (
    InvalidReplicaDirectoriesError,
    PartitionRegistration,
)
from state_machines.kraft.records import (
    MIGRATING_DIRECTORY,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)

TOPIC = "ONlQ7DDzQtGESsG499UDQg"
DIRS = ("FbRuu7CeQtq5YFreEzg16g", "4rtHTelWSSStAFMODOg3cQ", "Id1WXzHURROilVxZWJNZlw")


def record(directories: tuple[str, ...] = ()) -> MetadataPartitionRecord:
    return MetadataPartitionRecord(
        TOPIC,
        0,
        replicas=(0, 1),
        isr=(0, 1),
        leader=0,
        leader_epoch=0,
        partition_epoch=0,
        directories=directories,
    )


def test_migrating_record_directories() -> None:
    """testMigratingRecordDirectories: no directories become one MIGRATING per replica."""
    assert PartitionRegistration.from_record(record()).directories == (MIGRATING_DIRECTORY,) * 2


def test_a_partition_record_whose_directories_do_not_match_its_replicas_is_refused() -> None:
    """`checkDirectories(PartitionRecord)`: InvalidReplicaDirectoriesException."""
    with pytest.raises(InvalidReplicaDirectoriesError):
        PartitionRegistration.from_record(record(directories=DIRS))
    assert PartitionRegistration.from_record(record(directories=DIRS[:2])).directories == DIRS[:2]


def test_a_change_whose_directories_do_not_match_its_replicas_is_refused() -> None:
    """`checkDirectories(PartitionChangeRecord)`: both set, of different lengths."""
    reg = PartitionRegistration.from_record(record(directories=DIRS[:2]))
    change = PartitionChangeRecord(TOPIC, 0, replicas=(0, 1, 2), directories=DIRS[:2])
    with pytest.raises(InvalidReplicaDirectoriesError):
        reg.merge(change)
    grown = reg.merge(PartitionChangeRecord(TOPIC, 0, replicas=(0, 1, 2), directories=DIRS))
    assert (grown.replicas, grown.directories, grown.partition_epoch) == ((0, 1, 2), DIRS, 1)


def test_a_change_that_leaves_real_directories_of_another_length_is_refused() -> None:
    """The private constructor ("The lengths for replicas and directories do not match."):
    new replicas without new directories keep the old ids, of the old length; MIGRATING ones
    are redrawn for the new replicas (`defaultToMigrating`), so only real ids are refused."""
    real = PartitionRegistration.from_record(record(directories=DIRS[:2]))
    with pytest.raises(InvalidReplicaDirectoriesError):
        real.merge(PartitionChangeRecord(TOPIC, 0, replicas=(0, 1, 2)))
    with pytest.raises(InvalidReplicaDirectoriesError):
        real.merge(PartitionChangeRecord(TOPIC, 0, directories=DIRS))
    migrating = PartitionRegistration.from_record(record())
    grown = migrating.merge(PartitionChangeRecord(TOPIC, 0, replicas=(0, 1, 2)))
    assert grown.directories == (MIGRATING_DIRECTORY,) * 3
