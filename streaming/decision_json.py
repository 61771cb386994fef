"""Decisions as the contract's JSON (docs/contract.md): the bytes of
`json.dumps(outputs.to_contract(...))` with compact separators, which
tests/unit/test_codec.py holds every record of generated logs to.

The seven records a fan-out produces by the ten thousand are written from templates (a
preferred election of everything answers every partition with an ElectionResult, and
a StateChangeFailed where the preferred replica already leads); the others go through the
compact encoder, which writes tuples as arrays, so no lists are built.
The contract's version is the codec's (`versions.VERSIONS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from state_machines import contract_record, outputs, update_metadata_records

from .json_text import compact_json, json_ints, json_opt, json_str
from .versions import CONTRACT_VERSION


def _head(rec: Any, cause_offset: int, cause_id: str | None, seq: int) -> str:
    return (
        f'{{"v":{CONTRACT_VERSION},"type":"{rec.TYPE}","cause_offset":{cause_offset},"cause_id":{json_opt(cause_id)},"seq":{seq},'
        f'"topic":{json_str(rec.topic)},"partition":{rec.partition},'
    )


def _lair_json(
    r: outputs.LeaderAndIsrRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"leader":{r.leader},'
        f'"leader_epoch":{r.leader_epoch},'
        f'"isr":{json_ints(r.isr)},"partition_epoch":{r.partition_epoch},'
        f'"controller_epoch":{r.controller_epoch},'
        f'"replicas":{json_ints(r.replicas)},"adding_replicas":{json_ints(r.adding_replicas)},'
        f'"removing_replicas":{json_ints(r.removing_replicas)},'
        f'"leader_recovery_state":{json_str(r.leader_recovery_state)},'
        f'"is_new":{"true" if r.is_new else "false"},"recipients":{json_ints(r.recipients)},'
        f'"election":{json_opt(r.election)}}}'
    )


def _stop_json(
    r: outputs.StopReplicaRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"broker_id":{r.broker_id},'
        f'"delete_partition":{"true" if r.delete_partition else "false"},'
        f'"leader_epoch":{r.leader_epoch}}}'
    )


def _replica_change_json(
    r: outputs.ReplicaStateChangeRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"broker_id":{r.broker_id},'
        f'"from_state":{json_str(r.from_state)},'
        f'"to_state":{json_str(r.to_state)}}}'
    )


def _partition_change_json(
    r: outputs.PartitionStateChangeRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"from_state":{json_str(r.from_state)},'
        f'"to_state":{json_str(r.to_state)}}}'
    )


def _failed_json(
    r: outputs.StateChangeFailedRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"broker_id":{_int_opt(r.broker_id)},'
        f'"target_state":{json_str(r.target_state)},"reason":{json_str(r.reason)}}}'
    )


def _election_json(
    r: outputs.ElectionResultRecord, cause_offset: int, cause_id: str | None, seq: int
) -> str:
    return (
        f'{_head(r, cause_offset, cause_id, seq)}"election_type":{json_str(r.election_type)},'
        f'"error":{json_opt(r.error)},"leader":{_int_opt(r.leader)}}}'
    )


def _int_opt(value: int | None) -> str:
    return "null" if value is None else str(value)


def metadata_state_json(s: update_metadata_records.MetadataState) -> str:
    """One UpdateMetadataPartitionState of an UpdateMetadata record, as the contract writes it."""
    t, p, ce, leader, le, isr, zk, replicas, offline = s
    return (
        f'{{"topic":{json_str(t)},"partition":{p},"controller_epoch":{ce},"leader":{leader},"leader_epoch":{le},'
        f'"isr":{json_ints(isr)},"zk_version":{zk},"replicas":{json_ints(replicas)},'
        f'"offline_replicas":{json_ints(offline)}}}'
    )


def update_metadata_json(
    cause_offset: int,
    cause_id: str | None,
    seq: int,
    send: str,
    recipients: tuple[int, ...],
    live_brokers: tuple[int, ...],
    states: Iterable[str],
) -> str:
    """An UpdateMetadata record from its partitions' states written already
    (`metadata_state_json`): a send to a starting broker names every partition."""
    return (
        f'{{"v":{CONTRACT_VERSION},"type":"UpdateMetadata","cause_offset":{cause_offset},'
        f'"cause_id":{json_opt(cause_id)},"seq":{seq},"send":{json_str(send)},"recipients":{json_ints(recipients)},'
        f'"live_brokers":{json_ints(live_brokers)},"partitions":[{",".join(states)}]}}'
    )


def _update_metadata_json(
    r: update_metadata_records.UpdateMetadataRecord,
    cause_offset: int,
    cause_id: str | None,
    seq: int,
) -> str:
    return update_metadata_json(
        cause_offset,
        cause_id,
        seq,
        r.send,
        r.recipients,
        r.live_brokers,
        map(metadata_state_json, r.partitions),
    )


_TEMPLATES: dict[type, Any] = {
    update_metadata_records.UpdateMetadataRecord: _update_metadata_json,
    outputs.LeaderAndIsrRecord: _lair_json,
    outputs.StopReplicaRecord: _stop_json,
    outputs.ReplicaStateChangeRecord: _replica_change_json,
    outputs.PartitionStateChangeRecord: _partition_change_json,
    outputs.StateChangeFailedRecord: _failed_json,
    outputs.ElectionResultRecord: _election_json,
}


def decision_json(record: outputs.Record, cause_offset: int, cause_id: str | None, seq: int) -> str:
    cls: type = type(record)
    template = _TEMPLATES.get(cls)
    if template is not None:
        text: str = template(record, cause_offset, cause_id, seq)
        return text
    if cls in outputs._WRITERS:  # a record with a writer of its own (kraft mode's AppendedRecord)
        return compact_json(outputs.to_contract(record, cause_offset, cause_id, seq))
    doc = {
        "v": CONTRACT_VERSION,
        "type": record.TYPE,
        "cause_offset": cause_offset,
        "cause_id": cause_id,
        "seq": seq,
    }
    doc.update((n, getattr(record, n)) for n in contract_record.field_names(cls))
    return compact_json(doc)
