"""KRaft decisions replayed as the quorum controller's followers replay them, and the
invariants a KRaft metadata log keeps, checked after every record.

A KRaft run's decisions are metadata records, not whole states: a `PartitionRecord`
creates (or restates) a partition, and a `PartitionChangeRecord` names only what changes.
So each partition's registration is rebuilt record by record, as
`ReplicationControlManager.replay` does (Kafka 3.9.0; `PartitionRegistration.merge`: a
field left out keeps its value, a leader that is set bumps the leader epoch, every record
bumps the partition epoch), and the broker records (`RegisterBrokerRecord`,
`BrokerRegistrationChangeRecord`, `FenceBrokerRecord`, `UnfenceBrokerRecord`,
`UnregisterBrokerRecord`) rebuild the broker registry as `ClusterControlManager.replay`
does. A partition is known by its topic id and partition id: a deleted and re-created
topic has a new id, so its epochs start again.

The rules, each a boolean per partition record (`partition_states` gives the frame):

- `leader_in_isr_or_elr`: the leader, when not -1, is in the ISR or the ELR
  (`PartitionChangeBuilder` elects from the ISR, from the ELR (KIP-966), or, unclean, sets
  the ISR to the leader alone).
- `isr_within_replicas`: the ISR and the ELR are within the replicas.
- `epochs_never_go_back`: the leader epoch never decreases and the partition epoch grows
  with every record (only a `PartitionRecord` restating a partition can break it: a
  change record's epochs are the merge's).
- `one_leader_per_epoch`: one leader per (partition, leader epoch).
- `leader_is_active`: after each cause, no partition is led by a broker the log has
  fenced, put in controlled shutdown or unregistered: every election accepts only active
  brokers (`ClusterControlManager.isActive`, through `LeaderAcceptor`), and fencing or a
  controlled shutdown moves leadership in the same batch (`generateLeaderAndIsrUpdates`).
  A broker the log never registered is not judged. A partition that keeps such a leader
  without a record of its own in that cause is added as a row of that cause.

A `PartitionChangeRecord` of a partition no `PartitionRecord` in the input created (one
created before the input starts, such as before the shadow's first `ControllerFailover`)
cannot be replayed: it and that partition's later change records are counted as
unchecked (`unchecked`), never as held. A `RemoveTopicRecord` removes its topic's
partitions, as `ReplicationControlManager.replay(RemoveTopicRecord)` does.

Records are replayed in (cause_offset, seq, position in the input) order, per partition;
whatever order a cause's records of different keys come in, each partition's own records
keep theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PARTITION_TYPES = frozenset({"PartitionRecord", "PartitionChangeRecord"})
BROKER_TYPES = frozenset(
    {
        "RegisterBrokerRecord",
        "BrokerRegistrationChangeRecord",
        "FenceBrokerRecord",
        "UnfenceBrokerRecord",
        "UnregisterBrokerRecord",
    }
)
RULES = {
    "leader_in_isr_or_elr": "the leader (when not -1) is in the ISR or the ELR",
    "isr_within_replicas": "the ISR and the ELR are within the replicas",
    "epochs_never_go_back": "a partition's leader epoch never decreases and its partition epoch "
    "grows with every record",
    "one_leader_per_epoch": "one leader per (partition, leader epoch)",
    "leader_is_active": "after each cause, no leader is a broker the log fenced, put in "
    "controlled shutdown or unregistered",
}
NO_LEADER = -1
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE: the change record's default
RECOVERING = 1  # LeaderRecoveryState.RECOVERING's byte

_INT_LISTS = (
    "replicas",
    "isr",
    "removing_replicas",
    "adding_replicas",
    "eligible_leader_replicas",
    "last_known_elr",
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def problem(record: dict[str, Any]) -> str | None:
    """Why a KRaft record is not one the rules can read, or None (other types: None)."""
    t = record["type"]
    if t in PARTITION_TYPES:
        if not isinstance(record.get("topic"), str):
            return f"{t} without a string 'topic'"
        for name in ("partition", "partition_id"):
            if not _is_int(record.get(name)):
                return f"{t} without an integer '{name}'"
        if not isinstance(record.get("topic_id"), str):
            return f"{t} without a string 'topic_id'"
        required = (
            ("replicas", "isr", "leader", "leader_epoch", "partition_epoch")
            if t == "PartitionRecord"
            else ()
        )
        for name in required:
            if name not in record:
                return f"{t} without '{name}'"
        for name in ("leader", "leader_epoch", "partition_epoch", "leader_recovery_state"):
            if name in record and not _is_int(record[name]):
                return f"{t} with a non-integer '{name}'"
        for name in _INT_LISTS:
            value = record.get(name)
            if value is not None and (
                not isinstance(value, list) or not all(_is_int(x) for x in value)
            ):
                return f"{t} with '{name}' not a list of integers"
    elif t in BROKER_TYPES:
        key = "id" if t in ("FenceBrokerRecord", "UnfenceBrokerRecord") else "broker_id"
        if not _is_int(record.get(key)):
            return f"{t} without an integer '{key}'"
    return None


# -- the registrations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Registration:
    """A partition's `PartitionRegistration`: the fields the rules read."""

    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(value or ())


def created(r: Mapping[str, Any]) -> Registration:
    """`new PartitionRegistration(PartitionRecord)`."""
    return Registration(
        r["topic_id"],
        _ints(r["replicas"]),
        _ints(r["isr"]),
        _ints(r.get("eligible_leader_replicas")),
        int(r["leader"]),
        int(r["leader_epoch"]),
        int(r["partition_epoch"]),
        int(r.get("leader_recovery_state") or 0),
        _ints(r.get("adding_replicas")),
        _ints(r.get("removing_replicas")),
    )


def merged(prev: Registration, r: Mapping[str, Any]) -> Registration:
    """`PartitionRegistration.merge(PartitionChangeRecord)`: a field left out (or null)
    keeps its value; a leader that is set bumps the leader epoch; the partition epoch is
    bumped by every record. `LeaderRecoveryState.changeTo`: -1 (NO_CHANGE) keeps it."""

    def pick(name: str, old: tuple[int, ...]) -> tuple[int, ...]:
        value = r.get(name)
        return old if value is None else tuple(value)

    leader = r.get("leader", NO_LEADER_CHANGE)
    leader = NO_LEADER_CHANGE if leader is None else int(leader)
    recovery = r.get("leader_recovery_state")
    return Registration(
        prev.topic_id,
        pick("replicas", prev.replicas),
        pick("isr", prev.isr),
        pick("eligible_leader_replicas", prev.elr),
        prev.leader if leader == NO_LEADER_CHANGE else leader,
        prev.leader_epoch if leader == NO_LEADER_CHANGE else prev.leader_epoch + 1,
        prev.partition_epoch + 1,
        prev.leader_recovery_state if recovery is None or recovery < 0 else int(recovery),
        pick("adding_replicas", prev.adding),
        pick("removing_replicas", prev.removing),
    )


@dataclass
class Broker:
    """What the log says of a broker: `ClusterControlManager`'s registration, as replayed."""

    fenced: bool = True
    in_controlled_shutdown: bool = False

    @property
    def active(self) -> bool:
        return not self.fenced and not self.in_controlled_shutdown


def replay_broker(brokers: dict[int, Broker], r: Mapping[str, Any]) -> int:
    """Apply one broker record; the broker's id. `fenced` is read in either encoding a
    record may carry it in: RegisterBrokerRecord's boolean, and
    BrokerRegistrationChangeRecord's BrokerRegistrationFencingChange (1 fence, -1 unfence,
    0 none; a boolean there means fence or none)."""
    t = r["type"]
    # a broker first seen in a change was registered before the input starts: only the
    # change is known of it
    if t in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        broker = int(r["id"])
        brokers.setdefault(broker, Broker(fenced=False)).fenced = t == "FenceBrokerRecord"
        if t == "FenceBrokerRecord":
            brokers[broker].in_controlled_shutdown = False
        return broker
    broker = int(r["broker_id"])
    if t == "RegisterBrokerRecord":
        brokers[broker] = Broker(
            fenced=bool(r.get("fenced", True)),
            in_controlled_shutdown=bool(r.get("in_controlled_shutdown", False)),
        )
    elif t == "UnregisterBrokerRecord":
        brokers[broker] = Broker(fenced=True)
    else:  # BrokerRegistrationChangeRecord
        b = brokers.setdefault(broker, Broker(fenced=False))
        fenced = r.get("fenced")
        if fenced is True or fenced == 1:
            b.fenced, b.in_controlled_shutdown = True, False
        elif fenced == -1:
            b.fenced = False
        shutdown = r.get("in_controlled_shutdown")
        if shutdown is True or shutdown == 1:
            b.in_controlled_shutdown = True
    return broker


# -- the rules -------------------------------------------------------------------------------


@dataclass
class _Partition:
    reg: Registration | None = None
    leaders: dict[int, int] = field(default_factory=dict)  # leader epoch -> leader
    history: list[str] = field(default_factory=list)


def partition_states(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per partition record, in replay order: where it is (`topic`, `partition`,
    `cause_offset`, `seq`, `cause_id`, `type`), the registration after it (`leader`, `isr`,
    `elr`, `replicas`, `leader_epoch`, `partition_epoch`, `leader_recovery_state`,
    `unclean`: the record elected a leader from outside the ISR and the ELR) and one
    boolean per rule, and `checked`: False for a change record of a partition the input
    never created (its rules are not checked, and `partition_states_checked` leaves it
    out). `records`: every decision, in the input's order."""
    ordered = sorted(
        enumerate(records),
        key=lambda ir: (int(ir[1]["cause_offset"]), int(ir[1].get("seq") or 0), ir[0]),
    )
    parts: dict[tuple[str, int], _Partition] = {}
    brokers: dict[int, Broker] = {}
    rows: list[dict[str, Any]] = []
    cause: int | None = None
    touched: dict[tuple[str, int], dict[str, Any]] = {}  # this cause's last row per partition
    changed_brokers: set[int] = set()

    def close_cause() -> None:
        for key, part in parts.items():
            reg = part.reg
            if reg is None or reg.leader < 0:
                continue
            b = brokers.get(reg.leader)
            judged = key in touched or reg.leader in changed_brokers
            if not judged or b is None or b.active:
                continue
            row = touched.get(key)
            if row is None:  # led by a broker this cause took away, without a record
                row = _row(key, reg, {"type": "(no record)", "cause_offset": cause})
                rows.append(row)
            row["leader_is_active"] = False
        touched.clear()
        changed_brokers.clear()

    for _, r in ordered:
        offset = int(r["cause_offset"])
        if cause is not None and offset != cause:
            close_cause()
        cause = offset
        t = r["type"]
        if t in BROKER_TYPES:
            changed_brokers.add(replay_broker(brokers, r))
            continue
        if t == "RemoveTopicRecord":
            for part in parts.values():
                if part.reg is not None and part.reg.topic_id == r.get("topic_id"):
                    part.reg, part.leaders = None, {}
            continue
        if t not in PARTITION_TYPES:
            continue
        key = (str(r["topic"]), int(r["partition"]))
        part = parts.setdefault(key, _Partition())
        prev = part.reg
        if prev is not None and prev.topic_id != r["topic_id"]:
            part.reg, part.leaders, prev = None, {}, None  # a new topic of the same name
        if t == "PartitionRecord":
            reg = created(r)
        elif prev is None:
            reg = None
        else:
            reg = merged(prev, r)
        row = _row(key, reg, r)
        row["checked"] = reg is not None
        if reg is not None:
            leaders = set(reg.isr) | set(reg.elr)
            row["leader_in_isr_or_elr"] = reg.leader == NO_LEADER or reg.leader in leaders
            row["isr_within_replicas"] = leaders <= set(reg.replicas)
            row["epochs_never_go_back"] = prev is None or (
                reg.leader_epoch >= prev.leader_epoch and reg.partition_epoch > prev.partition_epoch
            )
            if reg.leader >= 0:
                first = part.leaders.setdefault(reg.leader_epoch, reg.leader)
                row["one_leader_per_epoch"] = first == reg.leader
            row["unclean"] = bool(
                prev is not None
                and reg.leader >= 0
                and reg.leader != prev.leader
                and reg.leader not in set(prev.isr) | set(prev.elr)
            ) or (
                prev is not None
                and reg.leader_recovery_state == RECOVERING
                and prev.leader_recovery_state != RECOVERING
            )
            part.reg = reg
        rows.append(row)
        touched[key] = row
    if cause is not None:
        close_cause()
    return rows


def _row(key: tuple[str, int], reg: Registration | None, r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "topic": key[0],
        "partition": key[1],
        "cause_offset": int(r["cause_offset"]),
        "seq": int(r.get("seq") or 0),
        "cause_id": r.get("cause_id"),
        "type": r["type"],
        "leader": reg.leader if reg else None,
        "isr": list(reg.isr) if reg else None,
        "elr": list(reg.elr) if reg else None,
        "replicas": list(reg.replicas) if reg else None,
        "leader_epoch": reg.leader_epoch if reg else None,
        "partition_epoch": reg.partition_epoch if reg else None,
        "leader_recovery_state": reg.leader_recovery_state if reg else None,
        "unclean": False,
        "checked": True,
        **{rule: True for rule in RULES},
    }
