"""The fixtures of Kafka's `PartitionChangeBuilderTest` (apache/kafka 3.9.0): the FOO, BAR,
BAZ and OFFLINE partitions, their builders and the record-version mapping, for
test_partition_change_builder.py and test_partition_change_builder_elr.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.partition_change import Election, PartitionChange
from state_machines.kraft.partition_change_builder import PartitionChangeBuilder
from state_machines.kraft.partition_registration import PartitionRegistration
from state_machines.kraft.records import MIGRATING_DIRECTORY, UNASSIGNED_DIRECTORY
from state_machines.model import NO_LEADER
from state_machines.states import LeaderRecoveryState

RECOVERED = LeaderRecoveryState.RECOVERED
RECOVERING = LeaderRecoveryState.RECOVERING
RECORD_VERSIONS = [0, 1, 2]  # PartitionChangeRecord LOWEST..HIGHEST_SUPPORTED_VERSION


def default_dir(broker_id: int) -> str:
    """The test's DEFAULT_DIR_PROVIDER."""
    return UNASSIGNED_DIRECTORY


def mv_for_record_version(version: int) -> MV:
    """`metadataVersionForPartitionChangeRecordVersion`."""
    return {0: MV.IBP_3_7_IV0, 1: MV.IBP_3_7_IV2, 2: MV.IBP_4_0_IV1}[version]


def is_elr_enabled(version: int) -> bool:
    return version >= 2


FOO = PartitionRegistration(
    replicas=(2, 1, 3),
    directories=("dpdvA5AZSWySmnPFTnu5Kw", "V60B3cglScq3Xk8BX1NxAQ", UNASSIGNED_DIRECTORY),
    isr=(2, 1, 3),
    leader=1,
    leader_epoch=100,
    partition_epoch=200,
)
FOO_ID = "FbrrdcfiR-KC2CPSTHaJrg"
FOO_DIRS = dict(zip(FOO.replicas, FOO.directories, strict=True))

BAR = PartitionRegistration(
    replicas=(1, 2, 3, 4),
    directories=(
        UNASSIGNED_DIRECTORY,
        "X5FnAcIgTheWgTMzeO5WHw",
        "GtrcdoSOTm2vFMGFeZq0eg",
        "YcOqPw5ARmeKr1y9W3AkFw",
    ),
    isr=(1, 2, 3),
    removing_replicas=(1,),
    adding_replicas=(4,),
    leader=1,
    leader_epoch=100,
    partition_epoch=200,
)
BAR_ID = "LKfUsCBnQKekvL9O5dY9nw"
BAR_DIRS = dict(zip(BAR.replicas, BAR.directories, strict=True))

BAZ = PartitionRegistration(
    replicas=(2, 1, 3),
    directories=("ywnfFpTBTbOsFdZ6uAdOmw", "Th0x70ecRbWvZNNV33jyRA", "j216tuSoQsC9JFd1Z5ZP6w"),
    isr=(1, 3),
    leader=3,
    leader_epoch=100,
    partition_epoch=200,
)
BAZ_ID = "wQzt5gkSTwuQNXZF5gIw7A"

OFFLINE_WITHOUT_ELR = PartitionRegistration(
    replicas=(2, 1, 3),
    directories=("iYGgiDV5Sb2EtH6hbgYnCA", "XI2t4qAUSkGlLZSKeEVf8g", "eqRW24kIRlitzQFzmovE0Q"),
    isr=(3,),
    leader=NO_LEADER,
    leader_epoch=100,
    partition_epoch=200,
)
OFFLINE_WITH_ELR = PartitionRegistration(
    replicas=(2, 1, 3),
    directories=("CQEqt7trRrmqyNxUT1CY0g", "59Mb9smoSsC0bGUP2FYV8A", "LBTmsCVJREqJuIEtwqxRDg"),
    elr=(3,),
    isr=(),
    last_known_elr=(2,),
    leader=NO_LEADER,
    leader_epoch=100,
    partition_epoch=200,
)
OFFLINE_ID = "LKfUsCBnQKekvL9O5dY9nw"

TOPIC_ID = "FbrrdcfiR-KC2CPSTHaJrg"  # the ELR tests' topic id


def stored(reg: PartitionRegistration, mv: MV) -> PartitionRegistration:
    """`reg` as a controller at `mv` holds it. Before 3.7-IV2 a PartitionRecord carries no
    directories, so its replay gives one MIGRATING per replica (`defaultToMigrating`).
    Kafka's tests give such registrations real ids and only look at the record `build`
    returns; here `build` also replays it (`merge`), and Kafka's constructor refuses real
    ids whose number differs from the new replicas'."""
    if mv.is_directory_assignment_supported:
        return reg
    return replace(reg, directories=(MIGRATING_DIRECTORY,) * len(reg.replicas))


def foo_at(version: int) -> PartitionRegistration:
    """FOO as a controller writing PartitionChangeRecord `version` holds it."""
    return stored(FOO, mv_for_record_version(version))


def foo_builder(mv: MV, **kw: Any) -> PartitionChangeBuilder:
    """`createFooBuilder(MetadataVersion)`."""
    return PartitionChangeBuilder(
        partition=stored(FOO, mv),
        topic_id=FOO_ID,
        partition_id=0,
        is_acceptable_leader=lambda r: r != 3,
        metadata_version=mv,
        min_isr=2,
        eligible_leader_replicas_enabled=mv.is_elr_supported,
        default_dir_provider=default_dir,
        **kw,
    )


def foo_builder_v(version: int, **kw: Any) -> PartitionChangeBuilder:
    """`createFooBuilder(short partitionChangeRecordVersion)`."""
    return foo_builder(mv_for_record_version(version), **kw)


def bar_builder(version: int, **kw: Any) -> PartitionChangeBuilder:
    return PartitionChangeBuilder(
        partition=stored(BAR, mv_for_record_version(version)),
        topic_id=BAR_ID,
        partition_id=0,
        is_acceptable_leader=lambda r: r != 3,
        metadata_version=mv_for_record_version(version),
        min_isr=2,
        eligible_leader_replicas_enabled=is_elr_enabled(version),
        default_dir_provider=default_dir,
        **kw,
    )


def baz_builder(version: int, **kw: Any) -> PartitionChangeBuilder:
    return PartitionChangeBuilder(
        partition=BAZ,
        topic_id=BAZ_ID,
        partition_id=0,
        is_acceptable_leader=lambda r: True,
        metadata_version=mv_for_record_version(version),
        min_isr=2,
        eligible_leader_replicas_enabled=is_elr_enabled(version),
        default_dir_provider=default_dir,
        **kw,
    )


def offline_builder(version: int, **kw: Any) -> PartitionChangeBuilder:
    mv = mv_for_record_version(version)
    return PartitionChangeBuilder(
        partition=OFFLINE_WITH_ELR if mv.is_elr_supported else OFFLINE_WITHOUT_ELR,
        topic_id=OFFLINE_ID,
        partition_id=0,
        is_acceptable_leader=lambda r: r == 1,
        metadata_version=mv,
        min_isr=2,
        eligible_leader_replicas_enabled=mv.is_elr_supported,
        default_dir_provider=default_dir,
        **kw,
    )


def elr_builder(
    partition: PartitionRegistration, version: int, accept: Any, **kw: Any
) -> PartitionChangeBuilder:
    """The ELR tests' builder: min ISR 3, PREFERRED election."""
    kw.setdefault("eligible_leader_replicas_enabled", is_elr_enabled(version))
    return PartitionChangeBuilder(
        partition=partition,
        topic_id=TOPIC_ID,
        partition_id=0,
        is_acceptable_leader=accept,
        metadata_version=mv_for_record_version(version),
        min_isr=3,
        election=Election.PREFERRED,
        default_dir_provider=default_dir,
        **kw,
    )


def built(builder: PartitionChangeBuilder) -> PartitionChange:
    change = builder.build()
    assert change is not None
    return change
