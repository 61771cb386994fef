"""A metadata-log record as the verifier takes it, and its fields as the KRaft rules' values.

The reader (`streaming.metadata_log`) decodes each record to Kafka's record name, version
and fields under their snake_case JSON names (a field absent from the version holds its
schema default). The verifier needs three more facts: the record's offset, the batch it came
in (the quorum controller never splits one append across batches:
`BatchAccumulator.append`), and whether it is a control record (LeaderChange,
SnapshotHeader, ...), which is never metadata.

The converters build the KRaft rules' record values (state_machines/kraft/records.py) from
those fields, with Kafka's defaults read as "no change": a PartitionChangeRecord's null
lists, its leader -2 (`NO_LEADER_CHANGE`) and its leader recovery state -1
(`LeaderRecoveryState.NO_CHANGE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kraft.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataPartitionRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from ..states import LeaderRecoveryState

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of the log: `batch` is the base offset of its batch; `snapshot` says it
    was loaded from a snapshot (state, not a decision)."""

    offset: int
    batch: int
    name: str
    version: int = 0
    fields: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    control: bool = False
    snapshot: bool = False


# LeaderRecoveryState's bytes (LeaderRecoveryState.java): 0 RECOVERED, 1 RECOVERING, -1 none
_LRS = {0: LeaderRecoveryState.RECOVERED, 1: LeaderRecoveryState.RECOVERING}
LRS_BYTE = {LeaderRecoveryState.RECOVERED: 0, LeaderRecoveryState.RECOVERING: 1}


def _ints(value: Any) -> tuple[int, ...]:
    # the decoder gives tuples: no copy then
    if type(value) is tuple:
        return value
    return tuple(value) if value is not None else ()


def _maybe_ints(value: Any) -> tuple[int, ...] | None:
    return value if value is None or type(value) is tuple else tuple(value)


def _maybe_strs(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def lrs_of(value: Any) -> LeaderRecoveryState | None:
    """A record's leader recovery state byte; None for -1 (no change) and unknown bytes."""
    return _LRS.get(int(value)) if value is not None else None


def partition_change_record(f: Mapping[str, Any]) -> PartitionChangeRecord:
    return PartitionChangeRecord(
        topic_id=str(f["topic_id"]),
        partition_id=int(f["partition_id"]),
        isr=_maybe_ints(f.get("isr")),
        leader=int(f.get("leader", NO_LEADER_CHANGE)),
        replicas=_maybe_ints(f.get("replicas")),
        removing_replicas=_maybe_ints(f.get("removing_replicas")),
        adding_replicas=_maybe_ints(f.get("adding_replicas")),
        leader_recovery_state=lrs_of(f.get("leader_recovery_state", -1)),
        directories=_maybe_strs(f.get("directories")),
        eligible_leader_replicas=_maybe_ints(f.get("eligible_leader_replicas")),
        last_known_elr=_maybe_ints(f.get("last_known_elr")),
    )


def partition_record(f: Mapping[str, Any]) -> MetadataPartitionRecord:
    return MetadataPartitionRecord(
        topic_id=str(f["topic_id"]),
        partition_id=int(f["partition_id"]),
        replicas=_ints(f.get("replicas")),
        isr=_ints(f.get("isr")),
        leader=int(f.get("leader", -1)),
        leader_epoch=int(f.get("leader_epoch", 0)),
        partition_epoch=int(f.get("partition_epoch", 0)),
        directories=tuple(f.get("directories") or ()),
        removing_replicas=_ints(f.get("removing_replicas")),
        adding_replicas=_ints(f.get("adding_replicas")),
        leader_recovery_state=lrs_of(f.get("leader_recovery_state", 0))
        or LeaderRecoveryState.RECOVERED,
        eligible_leader_replicas=_ints(f.get("eligible_leader_replicas")),
        last_known_elr=_ints(f.get("last_known_elr")),
    )


BrokerRecord = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | BrokerRegistrationChangeRecord
)


def broker_record(name: str, f: Mapping[str, Any]) -> BrokerRecord | None:
    """The broker registry's records (ClusterControlManager.replay), or None for others."""
    if name == "RegisterBrokerRecord":
        return RegisterBrokerRecord(
            broker_id=int(f["broker_id"]),
            broker_epoch=int(f["broker_epoch"]),
            incarnation_id=str(f.get("incarnation_id", "")),
            fenced=bool(f.get("fenced", True)),
            in_controlled_shutdown=bool(f.get("in_controlled_shutdown", False)),
            is_migrating_zk_broker=bool(f.get("is_migrating_zk_broker", False)),
            log_dirs=tuple(f.get("log_dirs") or ()),
        )
    if name == "UnregisterBrokerRecord":
        return UnregisterBrokerRecord(int(f["broker_id"]), int(f["broker_epoch"]))
    if name == "FenceBrokerRecord":
        return FenceBrokerRecord(int(f["id"]), int(f["epoch"]))
    if name == "UnfenceBrokerRecord":
        return UnfenceBrokerRecord(int(f["id"]), int(f["epoch"]))
    if name == "BrokerRegistrationChangeRecord":
        return BrokerRegistrationChangeRecord(
            broker_id=int(f["broker_id"]),
            broker_epoch=int(f["broker_epoch"]),
            fenced=int(f.get("fenced", 0)),
            in_controlled_shutdown=int(f.get("in_controlled_shutdown", 0)),
            log_dirs=tuple(f.get("log_dirs") or ()),
        )
    return None


def describe_change(r: PartitionChangeRecord | None) -> dict[str, Any] | None:
    """A PartitionChangeRecord as the report shows it: only the fields it sets, in Kafka's
    encoding (leader recovery state as its byte)."""
    if r is None:
        return None
    out: dict[str, Any] = {}
    if r.leader != NO_LEADER_CHANGE:
        out["leader"] = r.leader
    for name in (
        "isr",
        "replicas",
        "removing_replicas",
        "adding_replicas",
        "eligible_leader_replicas",
        "last_known_elr",
    ):
        value = getattr(r, name)
        if value is not None:
            out[name] = list(value)
    if r.leader_recovery_state is not None:
        out["leader_recovery_state"] = LRS_BYTE[r.leader_recovery_state]
    if r.directories is not None:
        out["directories"] = list(r.directories)
    return out


def describe_partition(r: MetadataPartitionRecord | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "replicas": list(r.replicas),
        "isr": list(r.isr),
        "leader": r.leader,
        "leader_epoch": r.leader_epoch,
        "partition_epoch": r.partition_epoch,
        "removing_replicas": list(r.removing_replicas),
        "adding_replicas": list(r.adding_replicas),
        "leader_recovery_state": LRS_BYTE[r.leader_recovery_state],
        "eligible_leader_replicas": list(r.eligible_leader_replicas),
        "last_known_elr": list(r.last_known_elr),
        "directories": list(r.directories),
    }
