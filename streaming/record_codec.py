"""Compact encoding of a partition's record, the value every partition touches on every
command: a JSON array with its version first, written from a template and read with each
distinct tail decoded once. `codec.dumps`/`codec.loads` pick it by type; the command's
text (`command_codec.py`) writes its contexts' brokers and leaderships the same way.
"""

from __future__ import annotations

import json
from typing import Any

from state_machines import model, partition
from state_machines.states import LeaderRecoveryState, PartitionState, ReplicaState

from .json_text import json_ints, json_str
from .versions import COMPACT_VERSION, check_compact

_Rec = partition.PartitionRecord
_R = {s.value: s for s in ReplicaState}
_P = {s.value: s for s in PartitionState}
_LRS = LeaderRecoveryState


def la_out(la: model.LeaderAndIsr | None) -> list[Any] | None:
    if la is None:
        return None
    return [
        la.leader,
        la.leader_epoch,
        list(la.isr),
        la.partition_epoch,
        la.leader_recovery_state.value,
        la.controller_epoch,
    ]


_LRS_BY_NAME = {s.value: s for s in _LRS}


def la_in(a: list[Any] | None) -> model.LeaderAndIsr | None:
    if a is None:
        return None
    return model.LeaderAndIsr(a[0], a[1], tuple(a[2]), a[3], _LRS_BY_NAME[a[4]], a[5])


def brokers_out(brokers: tuple[Any, ...]) -> list[Any]:
    return [[b, f.registered, f.shutting_down, f.broker_epoch] for b, f in brokers]


# A cluster has few distinct broker facts and every partition holds a few: decode each once.
_FACTS: dict[tuple[Any, ...], model.BrokerFact] = {}


def _fact(registered: bool, shutting_down: bool, epoch: int | None) -> model.BrokerFact:
    key = (registered, shutting_down, epoch)
    fact = _FACTS.get(key)
    if fact is None:
        if len(_FACTS) > 65536:
            _FACTS.clear()
        fact = _FACTS[key] = model.BrokerFact(registered, shutting_down, epoch)
    return fact


# Partitions with the same replicas hold the same view of their brokers: decode each view
# once and let them share it (the partition step works out a view's update once for all
# the partitions that share it: state_machines/partition.py, `_begin`).
_VIEWS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def brokers_in(a: list[Any]) -> tuple[Any, ...]:
    key = tuple(map(tuple, a))
    view = _VIEWS.get(key)
    if view is None:
        if len(_VIEWS) > 65536:
            _VIEWS.clear()
        view = _VIEWS[key] = tuple([(b, _fact(reg, sd, ep)) for b, reg, sd, ep in a])
    return view


def record_out(r: partition.PartitionRecord) -> list[Any]:
    a = r.assignment
    out = [
        COMPACT_VERSION,
        r.topic,
        r.partition,
        list(a.replicas),
        list(a.adding_replicas),
        list(a.removing_replicas),
        r.state.value if r.state else None,
        la_out(r.leadership),
        [[b, s.value] for b, s in r.replica_states],
        brokers_out(r.brokers),
        r.being_reassigned,
    ]
    if (
        r.offline_dirs or r.reassignment_started
    ):  # trailing fields, written only when set: older records read the same
        out.append(list(r.offline_dirs))
    if r.reassignment_started:
        out.append(list(r.reassignment_started))
    return out


# The same bytes as `compact_json(record_out(r))`, written directly: the JSON encoder
# builds a C encoder object per call, and the nested lists it would read are built only to
# be read. Every partition a command changes is written once per batch.
# (tests/unit/test_codec.py holds the two to the same bytes.)
_BOOL = {True: "true", False: "false"}
_QUOTED: dict[Any, str] = {
    s: json_str(s.value) for enum in (_R.values(), _P.values(), _LRS) for s in enum
}


def record_text(r: partition.PartitionRecord) -> str:
    a = r.assignment
    la = r.leadership
    if la is None:
        leadership = "null"
    else:
        leadership = (
            f"[{la.leader},{la.leader_epoch},{json_ints(la.isr)},{la.partition_epoch},"
            f"{_QUOTED[la.leader_recovery_state]},{la.controller_epoch}]"
        )
    states = ",".join([f"[{b},{_QUOTED[s]}]" for b, s in r.replica_states])
    brokers = ",".join(
        [
            f"[{b},{_BOOL[f.registered]},{_BOOL[f.shutting_down]},"
            f"{'null' if f.broker_epoch is None else f.broker_epoch}]"
            for b, f in r.brokers
        ]
    )
    return (
        f"[{COMPACT_VERSION},{json_str(r.topic)},{r.partition},{json_ints(a.replicas)},"
        f"{json_ints(a.adding_replicas)},"
        f"{json_ints(a.removing_replicas)},{'null' if r.state is None else _QUOTED[r.state]},"
        f"{leadership},"
        f"[{states}],[{brokers}],{_BOOL[r.being_reassigned]}"
        f"{',' + json_ints(r.offline_dirs) if r.offline_dirs or r.reassignment_started else ''}"
        f"{_started_text(r.reassignment_started) if r.reassignment_started else ''}]"
    )


def _started_text(started: tuple[int, int | None]) -> str:
    offset, ts = started
    return f",[{offset},{'null' if ts is None else ts}]"


def record_in(a: list[Any]) -> partition.PartitionRecord:
    check_compact("partition state", a[0])
    return partition.PartitionRecord(
        a[1],
        a[2],
        model.ReplicaAssignment(tuple(a[3]), tuple(a[4]), tuple(a[5])),
        _P[a[6]] if a[6] is not None else None,
        la_in(a[7]),
        tuple([(b, _R[s]) for b, s in a[8]]),
        brokers_in(a[9]),
        a[10],
        tuple(a[11]) if len(a) > 11 else (),
        (a[12][0], a[12][1]) if len(a) > 12 else None,
    )


# A partition's record as text is its topic and number, then a tail (the assignment, the
# states, the leadership, the replica states, the broker view and the reassignment's
# fields) that many partitions of a cluster share: the tails of a million partitions take
# a few thousand values. Each distinct tail is decoded once into the record's fields,
# which the records that share it then share (they are immutable). A topic name holds no
# quote or backslash (Kafka's legal characters), so the topic ends at the first quote;
# any other text is decoded whole.
_RECORD_HEAD = f'[{COMPACT_VERSION},"'
_TOPIC_START = len(_RECORD_HEAD)
_TAILS: dict[str, tuple[Any, ...]] = {}


def record_from_text(text: str) -> partition.PartitionRecord:
    start = _TOPIC_START
    if text.startswith(_RECORD_HEAD):
        topic_end = text.find('"', start)
        number_end = text.find(",", topic_end + 2)
        if (
            topic_end > 0
            and text[topic_end + 1] == ","
            and number_end > 0
            and "\\" not in text[start:topic_end]
        ):
            tail = text[number_end + 1 :]
            fields = _TAILS.get(tail)
            if fields is not None:
                return _Rec(text[start:topic_end], int(text[topic_end + 2 : number_end]), *fields)
            rec = record_in(json.loads(text))
            if len(_TAILS) >= 65536:
                _TAILS.clear()
            _TAILS[tail] = (
                rec.assignment,
                rec.state,
                rec.leadership,
                rec.replica_states,
                rec.brokers,
                rec.being_reassigned,
                rec.offline_dirs,
                rec.reassignment_started,
            )
            return rec
    return record_in(json.loads(text))
