"""Metadata logs as the quorum controller writes them (apache/kafka 3.9.0, and 4.0 for ELR),
record by record, for `metadata-log verify` (issue 45 §4).

Each record below is worked out by hand from Kafka's handlers, not by the project's rules:
the method that writes it is named beside it (ReplicationControlManager, RCM below;
ClusterControlManager, CCM; PartitionChangeBuilder, PCB). A scenario writes each event's
records in the order Kafka appends them, an atomic event in one batch.

`KafkaLog(alter=...)` replays the same story with decisions changed: a labelled record is
passed through `alter[label]` (return None to drop it). Offsets are given as the records
are added, so a dropped record moves the later ones, and broker epochs (the offset of the
registration) follow, as they would in a log Kafka wrote that way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from state_machines.log_verify.entries import LogEntry
from state_machines.log_verify.log_state import LogState
from streaming.metadata_log.encode import (
    control_value,
    encode_batch,
    metadata_value,
    write_segment,
    write_snapshot,
)

Fields = dict[str, Any]
Alter = Callable[[Fields], Fields | None]

# Kafka's Uuid strings (Uuid.toString: URL-safe base64, 22 characters)
TOPIC_T = "3uv2Ux6HQMqsTWeSWl1XsA"
TOPIC_U = "LkS8Ec3gSSq2J3iZqmr0WQ"
DIRS = {b: f"Dir{b:03d}".ljust(21, "x") + "A" for b in range(1, 10)}
INCARNATIONS = {
    (b, n): f"Inc{b:02d}{n:02d}".ljust(21, "x") + "Q" for b in range(1, 10) for n in range(9)
}
LEADER_CHANGE: Fields = {
    "leader_id": 1000,
    "voters": [{"voter_id": 1000}],
    "granting_voters": [{"voter_id": 1000}],
}
MV_3_9 = 21  # MetadataVersion.IBP_3_9_IV0.featureLevel()
MV_4_0 = 25  # IBP_4_0_IV3, 4.0's latest production version (ELR from IBP_4_0_IV1, level 23)


@dataclass
class Rec:
    name: str
    version: int
    fields: Fields
    label: str | None = None


@dataclass
class KafkaLog:
    alter: Mapping[str, Alter] = field(default_factory=dict)
    batches: list[list[tuple[int, Rec]]] = field(default_factory=list)
    next_offset: int = 1  # offset 0: the quorum leader's LeaderChange control record
    incarnation: dict[int, int] = field(default_factory=dict)
    epochs: dict[int, int] = field(default_factory=dict)

    def batch(self, *records: Rec) -> None:
        out = []
        for r in records:
            if r.label is not None and r.label in self.alter:
                changed = self.alter[r.label](dict(r.fields))
                if changed is None:
                    continue
                r = Rec(r.name, r.version, changed, r.label)
            out.append((self.next_offset, r))
            self.next_offset += 1
        if out:
            self.batches.append(out)

    # -- writing -------------------------------------------------------------------------

    def write(self, directory: Path, roll_every: int | None = None, start: int = 0) -> Path:
        """The log as segment files in `directory` (one segment, or a new one every
        `roll_every` batches) with a LeaderChange control batch first, as a new quorum
        leader writes it; from the batch at `start` on (a log whose start was cleaned)."""
        directory.mkdir(parents=True, exist_ok=True)
        encoded: list[tuple[int, bytes]] = [(0, control_batch(0))] if start == 0 else []
        for b in self.batches:
            if b[0][0] < start:
                continue
            base = b[0][0]
            encoded.append(
                (
                    base,
                    encode_batch(
                        [metadata_value(r.name, r.version, **r.fields) for _, r in b], base
                    ),
                )
            )
        segments: list[list[tuple[int, bytes]]] = [encoded]
        if roll_every:
            segments = [encoded[i : i + roll_every] for i in range(0, len(encoded), roll_every)]
        for seg in segments:
            write_segment(directory, seg[0][0], [data for _, data in seg])
        return directory

    def entries(self) -> list[LogEntry]:
        """The same records as the verifier takes them, without the files."""
        leader = LogEntry(0, 0, "LeaderChange", 0, LEADER_CHANGE, control=True)
        return [leader] + [
            LogEntry(offset, b[0][0], r.name, r.version, r.fields)
            for b in self.batches
            for offset, r in b
        ]

    # -- the records, each as Kafka writes it ----------------------------------------------

    def register(self, broker: int, mv: int = MV_3_9, before: Sequence[Rec] = ()) -> None:
        """CCM.registerBroker: a new incarnation, fenced, its epoch the offset of the event's
        first record (`offsetControl.nextWriteOffset()`); atomic: one batch."""
        n = self.incarnation.get(broker, -1) + 1
        self.incarnation[broker] = n
        epoch = self.next_offset
        self.epochs[broker] = epoch
        fields: Fields = {
            "broker_id": broker,
            "incarnation_id": INCARNATIONS[(broker, n)],
            "broker_epoch": epoch,
            "fenced": True,
            "rack": None,
        }
        fields["log_dirs"] = [DIRS[broker]]
        self.batch(*before, Rec("RegisterBrokerRecord", 3, fields, f"register-{broker}-{n}"))

    def change(self, broker: int, label: str | None = None, **fields: int) -> Rec:
        """A BrokerRegistrationChangeRecord (fenced 1 / -1: version 0; the controlled
        shutdown flag: version 1)."""
        version = 1 if "in_controlled_shutdown" in fields else 0
        return Rec(
            "BrokerRegistrationChangeRecord",
            version,
            {"broker_id": broker, "broker_epoch": self.epochs[broker], **fields},
            label,
        )


def write_snapshot_of(log: KafkaLog, directory: Path, end_offset: int) -> Path:
    """The snapshot a controller takes at `end_offset` (a batch boundary): the state the
    records before it replay to, written as Kafka's snapshot records
    (`*ControlManager.iterator`/`MetadataImage` write: features, brokers, topics, configs,
    partitions whole)."""
    state = LogState()
    for e in log.entries():
        if e.offset < end_offset:
            state.replay(e)
    values = [
        metadata_value(
            "FeatureLevelRecord", 0, name="metadata.version", feature_level=state.mv.feature_level
        )
    ]
    if state.elr_version:
        values.append(
            metadata_value(
                "FeatureLevelRecord",
                0,
                name="eligible.leader.replicas.version",
                feature_level=state.elr_version,
            )
        )
    for b, broker in sorted(state.registry.brokers.items()):
        values.append(
            metadata_value(
                "RegisterBrokerRecord",
                3,
                broker_id=b,
                incarnation_id=broker.incarnation_id,
                broker_epoch=broker.epoch,
                fenced=broker.fenced,
                in_controlled_shutdown=broker.in_controlled_shutdown,
                log_dirs=list(broker.directories),
                rack=None,
            )
        )
    for topic_id, name in sorted(state.topic_names.items()):
        values.append(metadata_value("TopicRecord", 0, name=name, topic_id=topic_id))
        for key, value in sorted(state.configs.get((2, name), {}).items()):
            values.append(
                metadata_value(
                    "ConfigRecord", 0, resource_type=2, resource_name=name, name=key, value=value
                )
            )
        for pid, reg in state.partitions_of(topic_id):
            values.append(
                metadata_value(
                    "PartitionRecord",
                    state.mv.partition_record_version,
                    topic_id=topic_id,
                    partition_id=pid,
                    replicas=list(reg.replicas),
                    isr=list(reg.isr),
                    leader=reg.leader,
                    leader_epoch=reg.leader_epoch,
                    partition_epoch=reg.partition_epoch,
                    directories=list(reg.directories),
                    removing_replicas=list(reg.removing_replicas),
                    adding_replicas=list(reg.adding_replicas),
                    leader_recovery_state=0
                    if reg.leader_recovery_state.value == "RECOVERED"
                    else 1,
                    **(
                        {
                            "eligible_leader_replicas": list(reg.elr),
                            "last_known_elr": list(reg.last_known_elr),
                        }
                        if state.mv.is_elr_supported
                        else {}
                    ),
                )
            )
    return write_snapshot(directory, end_offset, 1, values)


def feature(name: str, level: int) -> Rec:
    return Rec("FeatureLevelRecord", 0, {"name": name, "feature_level": level})


def topic(name: str, topic_id: str) -> Rec:
    return Rec("TopicRecord", 0, {"name": name, "topic_id": topic_id})


def config(topic_name: str, key: str, value: str | None) -> Rec:
    return Rec(
        "ConfigRecord",
        0,
        {"resource_type": 2, "resource_name": topic_name, "name": key, "value": value},
    )


def partition(
    topic_id: str, p: int, replicas: list[int], isr: list[int] | None = None, version: int = 1
) -> Rec:
    """RCM.createTopic / buildPartitionRegistration: every replica active, so the ISR is the
    replicas and the first leads, epochs 0, each replica in its broker's one directory."""
    isr = list(replicas) if isr is None else isr
    return Rec(
        "PartitionRecord",
        version,
        {
            "topic_id": topic_id,
            "partition_id": p,
            "replicas": replicas,
            "isr": isr,
            "leader": isr[0],
            "leader_epoch": 0,
            "partition_epoch": 0,
            "directories": [DIRS[b] for b in replicas],
            "removing_replicas": [],
            "adding_replicas": [],
        },
    )


def change(topic_id: str, p: int, label: str | None = None, version: int = 1, **fields: Any) -> Rec:
    """A PartitionChangeRecord setting only `fields` (PCB.build)."""
    return Rec(
        "PartitionChangeRecord", version, {"topic_id": topic_id, "partition_id": p, **fields}, label
    )


def _cluster(log: KafkaLog, brokers: Sequence[int], mv: int = MV_3_9, elr: bool = False) -> None:
    """Bootstrap (QuorumController's ActivationRecordsGenerator: the bootstrap records,
    atomic), then each broker registers and its first heartbeat unfences it
    (RCM.handleBrokerUnfenced: no partition has lost its leader yet)."""
    log.batch(
        feature("metadata.version", mv),
        *([feature("eligible.leader.replicas.version", 1)] if elr else []),
    )
    for b in brokers:
        log.register(b)
    for b in brokers:
        log.batch(log.change(b, fenced=-1))


# -- the scenarios ---------------------------------------------------------------------------


def rolling_restart(alter: Mapping[str, Alter] | None = None) -> KafkaLog:
    """Brokers 1, 2, 3; t's partitions on [1,2,3], [2,3,1], [3,1,2]. Brokers 1 then 2 restart:
    a controlled shutdown, the broker going away, its new incarnation, the ISR expanding
    again (AlterPartition from each leader) and the leader balancing task bringing the
    preferred leader back."""
    log = KafkaLog(alter or {})
    _cluster(log, [1, 2, 3])
    T = TOPIC_T
    log.batch(
        topic("t", T),
        partition(T, 0, [1, 2, 3]),
        partition(T, 1, [2, 3, 1]),
        partition(T, 2, [3, 1, 2]),
    )
    # broker 1: the heartbeat asking to shut down (UNFENCED -> CONTROLLED_SHUTDOWN, it leads
    # t-0): RCM.handleBrokerInControlledShutdown, the flag first, then its ISRs
    log.batch(
        log.change(1, in_controlled_shutdown=1),
        change(T, 0, "cs1-t0", isr=[2, 3], leader=2),  # leader 1 may not lead: first in ISR
        change(T, 1, isr=[2, 3]),
        change(T, 2, isr=[3, 2]),
    )
    # no leaderships left, the shutdown offset committed: SHUTDOWN_NOW -> handleBrokerFenced
    log.batch(log.change(1, "fence-1", fenced=1))
    log.register(1)
    log.batch(log.change(1, fenced=-1))  # caught up: UNFENCED; no partition without a leader
    # the leaders add 1 back (RCM.alterPartition): 2 for t-0 and t-1 in one request, 3 for t-2
    log.batch(change(T, 0, "ap1-t0", isr=[2, 3, 1]), change(T, 1, isr=[2, 3, 1]))
    log.batch(change(T, 2, isr=[3, 2, 1]))
    # RCM.maybeBalancePartitionLeaders: t-0's preferred replica 1 is in the ISR again
    log.batch(change(T, 0, "balance-t0", leader=1))
    # broker 2, the same way
    log.batch(
        log.change(2, in_controlled_shutdown=1),
        change(T, 0, isr=[3, 1]),
        change(T, 1, "cs2-t1", isr=[3, 1], leader=3),
        change(T, 2, isr=[3, 1]),
    )
    log.batch(log.change(2, fenced=1))
    log.register(2)
    log.batch(log.change(2, fenced=-1))
    log.batch(change(T, 0, isr=[3, 1, 2]))
    log.batch(change(T, 1, isr=[3, 1, 2]), change(T, 2, isr=[3, 1, 2]))
    log.batch(change(T, 1, leader=2))
    return log


def broker_failure(unclean: bool, alter: Mapping[str, Alter] | None = None) -> KafkaLog:
    """Brokers 1, 2, 3; t-0 on [1,2,3], t-1 on [2,1,3], t-2 on [1,2,3] whose ISR has shrunk
    to [1] (createTopic refuses replica counts that differ within a topic). Broker 1's
    session times out (QuorumController.maybeFenceReplicas -> RCM.maybeFenceOneStaleBroker
    -> handleBrokerFenced). t-2 has no other ISR member: with
    unclean election disabled it goes without a leader and ISR [1] stays (no empty ISR
    without ELR), and broker 1's return elects it again (handleBrokerUnfenced); enabled,
    broker 2 leads it at once, RECOVERING, until it reports its log recovered."""
    log = KafkaLog(alter or {})
    _cluster(log, [1, 2, 3])
    T = TOPIC_T
    configs = [config("t", "unclean.leader.election.enable", "true")] if unclean else []
    log.batch(
        topic("t", T),
        *configs,
        partition(T, 0, [1, 2, 3]),
        partition(T, 1, [2, 1, 3]),
        partition(T, 2, [1, 2, 3]),
    )
    log.batch(change(T, 2, isr=[1]))  # AlterPartition from 1: 2 and 3 fell behind
    fence: list[Rec] = [
        change(T, 0, "fail-t0", isr=[2, 3], leader=2),
        change(T, 1, "fail-t1", isr=[2, 3]),
    ]
    if unclean:
        # PCB: UNCLEAN election, no ISR member left: the first acceptable replica, alone in
        # the ISR, RECOVERING (KIP-704, metadata.version 3.2-IV0 and later)
        fence.append(change(T, 2, "fail-t2", leader=2, isr=[2], leader_recovery_state=1))
    else:
        fence.append(change(T, 2, "fail-t2", leader=-1))
    log.batch(*fence, log.change(1, "fence-1", fenced=1))
    if unclean:
        # the new leader recovered its log: AlterPartition from 2 with RECOVERED
        log.batch(change(T, 2, "recovered-t2", leader_recovery_state=0))
    log.register(1)
    back = [] if unclean else [change(T, 2, "unfence-t2", leader=1)]
    log.batch(log.change(1, fenced=-1), *back)
    return log


def reassignment(alter: Mapping[str, Alter] | None = None) -> KafkaLog:
    """Brokers 1-4; t-0 on [1,2,3] moves to [2,3,4]
    (RCM.alterPartitionReassignments, then the AlterPartition that completes it)."""
    log = KafkaLog(alter or {})
    _cluster(log, [1, 2, 3, 4])
    T = TOPIC_T
    log.batch(topic("t", T), partition(T, 0, [1, 2, 3]), partition(T, 1, [2, 3, 4]))
    # PartitionReassignmentReplicas: target first, then the replicas removed; adding [4]
    log.batch(
        change(
            T,
            0,
            "reassign-t0",
            replicas=[2, 3, 4, 1],
            removing_replicas=[1],
            adding_replicas=[4],
            directories=[DIRS[2], DIRS[3], DIRS[4], DIRS[1]],
        )
    )
    # 4 caught up: the leader asks for ISR [1,2,3,4]; PCB.completeReassignmentIfNeeded
    # drops 1, and 1 may not lead any more: 2, the first target replica in the ISR
    log.batch(
        change(
            T,
            0,
            "complete-t0",
            isr=[2, 3, 4],
            leader=2,
            replicas=[2, 3, 4],
            removing_replicas=[],
            adding_replicas=[],
            directories=[DIRS[2], DIRS[3], DIRS[4]],
        )
    )
    # t-1 moves from [2,3,4] to [2,3]: no new replica, so it completes at once; 2 keeps
    # leading, and its leader epoch moves for the replica removed
    # (PCB.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded sets the leader it has)
    log.batch(
        change(
            T,
            1,
            "shrink-t1",
            isr=[2, 3],
            leader=2,
            replicas=[2, 3],
            directories=[DIRS[2], DIRS[3]],
        )
    )
    return log


def controlled_shutdown(alter: Mapping[str, Alter] | None = None) -> KafkaLog:
    """Brokers 1, 2, 3; broker 1 shuts down. t-0 [1,2,3] moves its leader to 2; t-1 [2,1,3]
    drops 1 from the ISR; t-2 [1,2,3] whose ISR is [1] alone loses its leader (KRaft keeps no
    leader on a shutting-down broker: PCB elects none). The fence that follows changes
    nothing more: t-2's ISR cannot become empty without ELR."""
    log = KafkaLog(alter or {})
    _cluster(log, [1, 2, 3])
    T = TOPIC_T
    log.batch(
        topic("t", T),
        partition(T, 0, [1, 2, 3]),
        partition(T, 1, [2, 1, 3]),
        partition(T, 2, [1, 2, 3]),
    )
    log.batch(change(T, 2, isr=[1]))
    log.batch(
        log.change(1, in_controlled_shutdown=1),
        change(T, 0, "cs-t0", isr=[2, 3], leader=2),
        change(T, 1, "cs-t1", isr=[2, 3]),
        change(T, 2, "cs-t2", leader=-1),
    )
    log.batch(log.change(1, "fence-1", fenced=1))
    return log


def elr_4_0(alter: Mapping[str, Alter] | None = None) -> KafkaLog:
    """Kafka 4.0 with ELR (KIP-966): metadata.version 4.0-IV3 and
    eligible.leader.replicas.version 1. t-0 on [1,2,3] with min.insync.replicas 2. Brokers
    3, 2 and 1 fail in turn: below min ISR the ELR keeps the replicas that left the ISR
    (PCB.maybePopulateTargetElr), and the last one leaves an empty ISR, no leader, and
    itself as the last known leader. Then broker 2 returns: its previous incarnation shut
    down uncleanly, so its registration first takes it out of the ELR
    (RCM.handleBrokerUncleanShutdown, before the RegisterBrokerRecord, in one batch).
    A min.insync.replicas change clears the ELRs (4.0: ClearElrRecord)."""
    log = KafkaLog(alter or {})
    _cluster(log, [1, 2, 3], mv=MV_4_0, elr=True)
    T = TOPIC_T
    log.batch(
        topic("t", T),
        config("t", "min.insync.replicas", "2"),
        partition(T, 0, [1, 2, 3], version=2),
    )
    log.batch(change(T, 0, "fail3", version=2, isr=[1, 2]), log.change(3, fenced=1))
    log.batch(
        change(T, 0, "fail2", version=2, isr=[1], eligible_leader_replicas=[2]),
        log.change(2, fenced=1),
    )
    log.batch(
        change(
            T,
            0,
            "fail1",
            version=2,
            leader=-1,
            isr=[],
            eligible_leader_replicas=[1, 2],
            last_known_elr=[1],
        ),
        log.change(1, "fence-1", fenced=1),
    )
    log.register(2, before=[change(T, 0, "unclean2", version=2, eligible_leader_replicas=[1])])
    log.batch(log.change(2, fenced=-1))  # 2 is in no ISR or ELR: nothing to elect
    log.batch(
        config("t", "min.insync.replicas", "1"),
        Rec("ClearElrRecord", 0, {"topic_name": "t"}, "clear-t"),
    )
    return log


SCENARIOS: dict[str, Callable[..., KafkaLog]] = {
    "rolling-restart": rolling_restart,
    "broker-failure-unclean-disabled": lambda alter=None: broker_failure(False, alter),
    "broker-failure-unclean-enabled": lambda alter=None: broker_failure(True, alter),
    "reassignment": reassignment,
    "controlled-shutdown": controlled_shutdown,
    "elr-4.0": elr_4_0,
}


def _set(**values: Any) -> Alter:
    return lambda f: {**f, **values}


def _drop(_: Fields) -> None:
    return None


# Decisions changed: (scenario, label, alteration, what it is), each a safety divergence
ALTERED: list[tuple[str, str, Alter, str]] = [
    (
        "broker-failure-unclean-disabled",
        "fail-t0",
        _set(leader=1),
        "a wrong leader: the fenced broker keeps t-0",
    ),
    (
        "rolling-restart",
        "cs1-t0",
        _set(leader=1, isr=[2, 3, 1]),
        "a wrong leader: the shutting-down broker keeps t-0",
    ),
    (
        "reassignment",
        "complete-t0",
        _set(leader=1, isr=[2, 3, 4]),
        "a wrong leader: a removed replica, outside the ISR",
    ),
    (
        "broker-failure-unclean-disabled",
        "fail-t1",
        _set(isr=[2, 1, 3]),
        "an ISR that keeps the fenced broker",
    ),
    (
        "controlled-shutdown",
        "cs-t1",
        _set(isr=[2, 1, 3]),
        "an ISR that keeps the broker in controlled shutdown",
    ),
    (
        "reassignment",
        "shrink-t1",
        lambda f: {k: v for k, v in f.items() if k != "leader"},
        "an epoch not bumped: a replica removed without a new leader epoch",
    ),
    (
        "broker-failure-unclean-disabled",
        "fail-t0",
        _drop,
        "a missing election: t-0 keeps the fenced leader",
    ),
    (
        "controlled-shutdown",
        "cs-t0",
        _drop,
        "a missing election: t-0 keeps the shutting-down leader",
    ),
    (
        "broker-failure-unclean-disabled",
        "fail-t2",
        _set(leader=2, isr=[2]),
        "a wrong leader: an unclean election the topic does not allow",
    ),
    ("elr-4.0", "clear-t", _drop, "a missing ClearElrRecord after min.insync.replicas changed"),
]


def control_batch(base: int) -> bytes:
    """The LeaderChange a new quorum leader (controller 1000) writes first in its epoch."""
    return encode_batch([control_value("LeaderChange", 0, **LEADER_CHANGE)], base, control=True)
