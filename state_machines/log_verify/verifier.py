"""Group a metadata log's records into the quorum controller's events and check each one.

How the quorum controller writes (apache/kafka 3.9.0, QuorumController.java): a write
event (`ControllerWriteEvent.run`) generates all its records first, from the state before
it, and appends them in one go (`appendRecords`): an atomic result (`ControllerResult
.atomicOf`: topic creation, broker registration, configs, reassignments) as one append, a
non-atomic one in appends of at most `maxRecordsPerBatch` (10,000) records. The raft
client's `BatchAccumulator.append` never splits an append across batches, but several
appends (of several events) may share a batch until it lingers out or fills. So a batch
boundary is an event boundary only sometimes, and the records' content decides the rest.

Each event has an anchor record, or none:

==========================  =================================  =============================
anchor                      event (Kafka)                      its PartitionChangeRecords
==========================  =================================  =============================
fence (BrokerRegistration-  handleBrokerFenced (session        before it: the partitions
ChangeRecord fenced=1, or   timeout, or a heartbeat)           with the broker in the ISR
FenceBrokerRecord)
UnregisterBrokerRecord      handleBrokerUnregistered           before it: ISR, then ELR
RegisterBrokerRecord        registerBroker                     before it (4.0, ELR):
                                                               handleBrokerUncleanShutdown;
                                                               the new broker epoch is the
                                                               offset of the event's first
                                                               record, so the start is exact
unfence (fenced=-1, or      handleBrokerUnfenced               after it: partitions without
UnfenceBrokerRecord)                                           a leader
inControlledShutdown=1      handleBrokerInControlledShutdown   after it: ISR
TopicRecord                 createTopic                        its ConfigRecords and
                                                               PartitionRecords follow
ConfigRecord                incrementalAlterConfigs            4.0: ClearElrRecords follow
==========================  =================================  =============================

An anchored event claims the PartitionChangeRecords next to its anchor that the rules say it
writes (each partition once); the rest of a run of PartitionChangeRecords are requests
without a record of their own (AlterPartition, reassignments, elections and the periodic
tasks): `explanations` names the causes that could have written each one. When
records of such requests sit in the same batch right next to an anchored event's, where one
ends and the other begins is not in the log: the verdict says the grouping is ambiguous.

Inputs (registrations, fencing asked by heartbeats, the controlled-shutdown flag, a
creation's placement, an ISR asked by a leader, a reassignment's target, configs, features)
are taken as given and checked against the rules (`refused`: safety). Decisions (the
handlers' partition changes, elections, reassignment completion, ELR, a new partition's ISR
and leader) are predicted and compared with the log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ShadowControllerError
from ..kraft import replication_control as rc
from ..kraft.partition_change_builder import PartitionChange
from ..kraft.partition_registration import PartitionRegistration
from ..kraft.records import (
    FENCING_CHANGE_FENCE,
    FENCING_CHANGE_UNFENCE,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)
from ..model import NO_LEADER
from .entries import (
    LogEntry,
    describe_change,
    describe_partition,
    partition_change_record,
    partition_record,
)
from .log_state import LogState, ReplayError, StaticConfig, TopicPartition
from .predict import (
    HANDLERS,
    broker_event,
    explanations,
    handler_targets,
    partitions_in,
    same_change,
)
from .severity import BENIGN, SAFETY, classify

MATCH = "match"
_RANK = {MATCH: 0, BENIGN: 1, SAFETY: 2}


@dataclass(frozen=True, slots=True)
class Divergence:
    severity: str
    reasons: tuple[str, ...]
    method: str
    offsets: tuple[int, ...] = ()
    partition: str | None = None
    log: dict[str, Any] | None = None  # the log's record (the fields it sets)
    predicted: dict[str, Any] | None = None  # what the rules write (None: nothing)

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "partition": self.partition,
            "offsets": list(self.offsets),
            "reasons": list(self.reasons),
            "log": self.log,
            "predicted": self.predicted,
            "kafka_method": self.method,
        }


@dataclass(frozen=True, slots=True)
class EventVerdict:
    kind: str
    method: str
    first_offset: int
    last_offset: int
    records: int
    decisions: int  # decisions compared (partitions the log or the rules changed)
    matched: int
    inputs: int  # inputs checked
    outcome: str  # match | benign | safety
    divergences: tuple[Divergence, ...] = ()
    grouping: str | None = None  # why the grouping is ambiguous, if it is
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kafka_method": self.method,
            "offsets": [self.first_offset, self.last_offset],
            "records": self.records,
            "decisions": self.decisions,
            "matched": self.matched,
            "inputs": self.inputs,
            "outcome": self.outcome,
            "grouping": self.grouping,
            "note": self.note,
            "divergences": [d.to_json() for d in self.divergences],
        }


@dataclass
class Summary:
    batches: int = 0
    records: int = 0
    control_records: int = 0
    snapshot_records: int = 0
    snapshot_end_offset: int | None = None
    events: int = 0
    decisions: int = 0
    matched: int = 0
    inputs: int = 0
    divergent: Counter[str] = field(default_factory=Counter)  # divergences by class
    events_by_outcome: Counter[str] = field(default_factory=Counter)
    events_by_kind: Counter[str] = field(default_factory=Counter)
    ambiguous: int = 0
    not_checked: Counter[str] = field(default_factory=Counter)  # records the rules do not read
    metadata_version: str | None = None
    elr_enabled: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "records": self.records,
            "control_records": self.control_records,
            "snapshot": {"records": self.snapshot_records, "end_offset": self.snapshot_end_offset},
            "events": self.events,
            "events_by_kind": dict(sorted(self.events_by_kind.items())),
            "events_by_outcome": {k: self.events_by_outcome.get(k, 0) for k in _RANK},
            "decisions_checked": self.decisions,
            "matched": self.matched,
            "inputs_checked": self.inputs,
            "divergent": {k: self.divergent.get(k, 0) for k in (BENIGN, SAFETY)},
            "ambiguous_groupings": self.ambiguous,
            "records_not_checked": dict(sorted(self.not_checked.items())),
            "metadata_version": self.metadata_version,
            "eligible_leader_replicas": self.elr_enabled,
        }


# -- one event being checked ---------------------------------------------------------------


@dataclass
class _Event:
    kind: str
    method: str
    first: int
    last: int
    records: int = 0
    decisions: int = 0
    matched: int = 0
    inputs: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    grouping: str | None = None
    note: str | None = None
    topic_id: str | None = None
    replication_factor: int | None = None
    next_partition: int = 0
    pending_clear: list[str] = field(default_factory=list)  # ClearElrRecords still due

    def add(self, e: LogEntry) -> None:
        self.records += 1
        self.last = max(self.last, e.offset)
        self.first = min(self.first, e.offset)

    def verdict(self) -> EventVerdict:
        outcome = MATCH
        for d in self.divergences:
            if _RANK[d.severity] > _RANK[outcome]:
                outcome = d.severity
        return EventVerdict(
            self.kind,
            self.method,
            self.first,
            self.last,
            self.records,
            self.decisions,
            self.matched,
            self.inputs,
            outcome,
            tuple(self.divergences),
            self.grouping,
            self.note,
        )


@dataclass
class _Claim:
    """An anchored broker event's share of a run of PartitionChangeRecords."""

    kind: str
    broker_id: int
    anchor: LogEntry | None
    predicted: dict[TopicPartition, PartitionChange]
    claimed: list[tuple[LogEntry, PartitionChangeRecord]] = field(default_factory=list)
    errors: list[Divergence] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _body(r: MetadataPartitionRecord) -> tuple[object, ...]:
    """A PartitionRecord without its topic and partition ids."""
    return (
        r.replicas,
        r.isr,
        r.leader,
        r.leader_epoch,
        r.partition_epoch,
        r.directories,
        r.removing_replicas,
        r.adding_replicas,
        r.leader_recovery_state,
        r.eligible_leader_replicas,
        r.last_known_elr,
    )


def _fencing(e: LogEntry) -> int:
    """1 fence, -1 unfence, 0 neither (BrokerRegistrationChangeRecord, Fence/Unfence)."""
    if e.name == "FenceBrokerRecord":
        return FENCING_CHANGE_FENCE
    if e.name == "UnfenceBrokerRecord":
        return FENCING_CHANGE_UNFENCE
    if e.name == "BrokerRegistrationChangeRecord":
        return int(e.fields.get("fenced", 0))
    return 0


def _directories_offline(e: LogEntry) -> bool:
    """A BrokerRegistrationChangeRecord (version 2) naming the directories left online:
    the end of a heartbeat's `handleDirectoriesOffline`."""
    f = e.fields
    return (
        e.name == "BrokerRegistrationChangeRecord"
        and not int(f.get("fenced", 0))
        and not int(f.get("in_controlled_shutdown", 0))
        and bool(f.get("log_dirs"))
    )


def _broker_of(e: LogEntry) -> int:
    f = e.fields
    return int(f["id"] if "id" in f and "broker_id" not in f else f["broker_id"])


class Verifier:
    """Feed it the log's records in order (`snapshot` ones first); read `verdicts` and
    `summary`. Keeps every event's verdict (a few hundred bytes each) and, at a time, one
    run of consecutive PartitionChangeRecords."""

    def __init__(self, static: StaticConfig | None = None) -> None:
        self.state = LogState(static or StaticConfig())
        self.summary = Summary()
        self.verdicts: list[EventVerdict] = []
        self._run: list[LogEntry] = []
        self._after: _Claim | None = None  # an unfence or shutdown waiting for its records
        self._open: _Event | None = None  # a creation or config change taking more records
        self._batch: int | None = None
        self._group_batch: int | None = None
        self._offline_dirs: frozenset[str] = frozenset()
        self._placements_for: tuple[object, object] | None = None
        self._placements: dict[
            tuple[tuple[int, ...], int | None],
            tuple[MetadataPartitionRecord, PartitionRegistration],
        ] = {}

    # -- feeding ------------------------------------------------------------------------

    def load_snapshot(self, entries: Iterable[LogEntry], end_offset: int) -> None:
        """A snapshot's records, replayed as Kafka loads them (no decisions in it)."""
        for e in entries:
            if e.control:
                self.summary.control_records += 1
                continue
            self.summary.snapshot_records += 1
            self.state.replay(e)
        self.summary.snapshot_end_offset = end_offset

    def feed(self, e: LogEntry) -> None:
        s = self.summary
        if e.batch != self._batch:
            self._batch = e.batch
            s.batches += 1
        if e.control:
            s.control_records += 1
            if e.name == "LeaderChange":
                self.state.replay(e)
            return
        s.records += 1
        if e.name == "PartitionChangeRecord":
            self._close_open()
            self._run.append(e)
            return
        self._flush_run(e)
        self._record(e)

    def finish(self) -> Summary:
        self._flush_run(None)
        self._close_open()
        s = self.summary
        s.metadata_version = self.state.mv.value if self.state.mv_seen else None
        s.elr_enabled = self.state.elr_version >= 1 and self.state.mv.is_elr_supported
        return s

    # -- events -------------------------------------------------------------------------

    def _emit(self, ev: _Event) -> None:
        v = ev.verdict()
        self.verdicts.append(v)
        s = self.summary
        s.events += 1
        s.events_by_kind[v.kind] += 1
        s.events_by_outcome[v.outcome] += 1
        s.decisions += v.decisions
        s.matched += v.matched
        s.inputs += v.inputs
        for d in v.divergences:
            s.divergent[d.severity] += 1
        if v.grouping is not None:
            s.ambiguous += 1

    def _close_open(self) -> None:
        ev = self._open
        if ev is None:
            return
        for scope in ev.pending_clear:
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (
                        f"no ClearElrRecord for {scope or 'every topic'} after its "
                        "min.insync.replicas changed: ELRs built under the old minimum stay "
                        "eligible to lead",
                    ),
                    "ConfigurationControlManager.createClearElrRecordsAsNeeded (4.0)",
                    (ev.first, ev.last),
                )
            )
        self._emit(ev)
        self._open = None

    def _replay(
        self,
        ev: _Event,
        e: LogEntry,
        record: PartitionChangeRecord | MetadataPartitionRecord | None = None,
    ) -> bool:
        """Replay `e` (`record`: its fields already converted); a record Kafka's replay
        refuses is a safety divergence of `ev`."""
        try:
            if isinstance(record, PartitionChangeRecord):
                self.state.replay_change(record)
            elif isinstance(record, MetadataPartitionRecord):
                self.state.replay_partition(record)
            else:
                self.state.replay(e)
        except ShadowControllerError as exc:  # ReplayError, InvalidReplicaDirectoriesError
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (f"Kafka's replay refuses this record: {exc}",),
                    "QuorumController.replay",
                    (e.offset,),
                )
            )
            return False
        return True

    def _record(self, e: LogEntry) -> None:
        """A record other than a PartitionChangeRecord."""
        name = e.name
        if name == "PartitionRecord":
            self._partition_record(e)
            return
        if name == "ConfigRecord":
            self._config_record(e)
            return
        if (
            name == "ClearElrRecord"
            and self._open is not None
            and self._open.kind == "IncrementalAlterConfigs"
        ):
            self._clear_elr(e)
            return
        self._close_open()
        if name == "TopicRecord":
            ev = _Event("CreateTopics", "ReplicationControlManager.createTopic", e.offset, e.offset)
            ev.add(e)
            ev.inputs += 1
            topic = str(e.fields.get("name"))
            if topic in self.state.topic_ids:
                ev.divergences.append(
                    Divergence(
                        SAFETY,
                        (f"topic {topic} already exists (TOPIC_ALREADY_EXISTS)",),
                        ev.method,
                        (e.offset,),
                    )
                )
            self._replay(ev, e)
            ev.topic_id = str(e.fields.get("topic_id"))
            self._open = ev
            return
        fencing = _fencing(e)
        if name == "RegisterBrokerRecord":
            pass  # handled with its run (`_flush_run`): 4.0's unclean-shutdown records lead it
        elif fencing == FENCING_CHANGE_UNFENCE:
            self._after_anchor(e, "BrokerUnfenced")
        elif (
            name == "BrokerRegistrationChangeRecord"
            and int(e.fields.get("in_controlled_shutdown", 0)) == 1
        ):
            self._after_anchor(e, "ControlledShutdown")
        elif (
            fencing == FENCING_CHANGE_FENCE
            or name == "UnregisterBrokerRecord"
            or _directories_offline(e)
        ):
            pass  # handled with its run (`_flush_run`)
        elif name in ("RemoveTopicRecord", "FeatureLevelRecord"):
            kind, method = (
                ("DeleteTopics", "ReplicationControlManager.deleteTopics")
                if name == "RemoveTopicRecord"
                else (
                    "UpdateFeatures",
                    "FeatureControlManager.replay (bootstrap or UpdateFeatures)",
                )
            )
            ev = _Event(kind, method, e.offset, e.offset)
            ev.add(e)
            ev.inputs += 1
            self._replay(ev, e)
            self._emit(ev)
        else:
            self.summary.not_checked[name] += 1
            try:
                self.state.replay(e)
            except ReplayError:
                self.summary.not_checked[f"{name} (not replayable)"] += 1

    # -- topics and configs ---------------------------------------------------------------

    def _partition_record(self, e: LogEntry) -> None:
        """createTopic / createPartitions: the placement is the input; the ISR (the active
        replicas), the leader (the first of them), epochs 0 and the directories are the
        rules' (`buildPartitionRegistration`)."""
        st = self.state
        r = partition_record(e.fields)
        ev = self._open
        if (
            ev is None
            or ev.topic_id != r.topic_id
            or ev.kind not in ("CreateTopics", "CreatePartitions")
        ):
            self._close_open()
            ev = self._open = _Event(
                "CreatePartitions", "ReplicationControlManager.createPartitions", e.offset, e.offset
            )
            ev.topic_id = r.topic_id
            existing = st.partitions.get(r.topic_id, {})
            ev.next_partition = len(existing)
            zero = existing.get(0)
            ev.replication_factor = len(zero.replicas) if zero is not None else None
        ev.add(e)
        ev.inputs += 1
        ev.decisions += 1
        pid = r.partition_id
        refusal: str | None = None
        if r.topic_id not in st.topic_names:
            refusal = f"a PartitionRecord of topic id {r.topic_id}, which no TopicRecord created"
        elif pid != ev.next_partition:
            refusal = (
                f"partition {pid} where Kafka numbers the next one {ev.next_partition}: "
                "partitions are a consecutive 0-based sequence (INVALID_REPLICA_ASSIGNMENT)"
            )
        predicted: MetadataPartitionRecord | None = None
        replayed: PartitionRegistration | None = None
        if refusal is None:
            predicted, replayed, refusal = self._placement(r, ev.replication_factor)
        ev.next_partition = pid + 1
        if ev.replication_factor is None:
            ev.replication_factor = len(r.replicas)
        label = f"{st.name_of(r.topic_id)}-{pid}"
        if refusal is not None:
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (f"the rules refuse this placement: {refusal}",),
                    ev.method,
                    (e.offset,),
                    label,
                    describe_partition(r),
                )
            )
        elif predicted is not None and _body(predicted) == _body(r):
            ev.matched += 1
            self._check_version(ev, e, st.mv.partition_record_version)
            # the registration the record replays to: the same for every partition placed
            # on these replicas (PartitionRegistration(PartitionRecord) reads no id)
            assert replayed is not None
            tp = (r.topic_id, pid)
            if pid in st.partitions.get(r.topic_id, {}):
                self._replay(ev, e, r)
            else:
                st.set_partition(tp, None, replayed)
            return
        else:
            assert predicted is not None
            severity, reasons = classify(
                None,
                PartitionRegistration.from_record(r),
                PartitionRegistration.from_record(predicted),
                st.registry,
                st.context(r.topic_id).unclean_leader_election
                if r.topic_id in st.topic_names
                else False,
            )
            ev.divergences.append(
                Divergence(
                    severity,
                    tuple(reasons),
                    "ReplicationControlManager.buildPartitionRegistration",
                    (e.offset,),
                    label,
                    describe_partition(r),
                    describe_partition(predicted),
                )
            )
        self._replay(ev, e, r)

    def _check_version(self, ev: _Event, e: LogEntry, version: int) -> None:
        """The record version Kafka writes at the log's metadata.version
        (`MetadataVersion.partitionRecordVersion`, `partitionChangeRecordVersion`)."""
        if e.version != version:
            ev.divergences.append(
                Divergence(
                    BENIGN,
                    (
                        f"{e.name} version {e.version} where Kafka writes version {version} at "
                        f"metadata.version {self.state.mv.value}",
                    ),
                    "MetadataVersion.partitionChangeRecordVersion / partitionRecordVersion",
                    (e.offset,),
                )
            )

    def _placement(
        self, r: MetadataPartitionRecord, replication_factor: int | None
    ) -> tuple[MetadataPartitionRecord | None, PartitionRegistration | None, str | None]:
        """`createTopic`'s record for a partition placed on `r.replicas`: it depends on the
        replicas, the replication factor, the broker registry and metadata.version only, so
        it is made once per distinct placement while those last (a cluster has few)."""
        st = self.state
        if self._placements_for != (st.registry, st.mv):
            self._placements_for = (st.registry, st.mv)
            self._placements = {}
        key = (r.replicas, replication_factor)
        hit = self._placements.get(key)
        if hit is not None:
            return hit[0], hit[1], None
        records, registration, error = rc.create_partition(
            r.replicas,
            r.topic_id,
            r.partition_id,
            st.registry,
            st.mv,
            manual=True,
            replication_factor=replication_factor,
        )
        if registration is None:
            return None, None, f"{error.error}: {error.message}"
        record = records[0].message
        assert isinstance(record, MetadataPartitionRecord)
        hit = self._placements[key] = (record, PartitionRegistration.from_record(record))
        return hit[0], hit[1], None

    def _config_record(self, e: LogEntry) -> None:
        f = e.fields
        ev = self._open
        topic = str(f.get("resource_name"))
        in_creation = (
            ev is not None
            and ev.kind == "CreateTopics"
            and int(f.get("resource_type", 0)) == 2
            and ev.topic_id == self.state.topic_ids.get(topic)
            and ev.next_partition == 0
        )
        if not in_creation and (ev is None or ev.kind != "IncrementalAlterConfigs"):
            self._close_open()
            ev = self._open = _Event(
                "IncrementalAlterConfigs",
                "ConfigurationControlManager.incrementalAlterConfigs",
                e.offset,
                e.offset,
            )
        assert ev is not None
        ev.add(e)
        ev.inputs += 1
        self._replay(ev, e)
        if (
            ev.kind == "IncrementalAlterConfigs"
            and f.get("name") == "min.insync.replicas"
            and self.state.elr_version >= 1
            and self.state.mv.is_elr_supported
        ):
            # 4.0: createClearElrRecordsAsNeeded writes a ClearElrRecord for it
            scope = topic if int(f.get("resource_type", 0)) == 2 else ""
            ev.pending_clear.append(scope)
            ev.decisions += 1

    def _clear_elr(self, e: LogEntry) -> None:
        ev = self._open
        assert ev is not None
        ev.add(e)
        scope = str(e.fields.get("topic_name") or "")
        if scope in ev.pending_clear:
            ev.pending_clear.remove(scope)
            ev.matched += 1
        else:
            ev.divergences.append(
                Divergence(
                    BENIGN,
                    (
                        f"a ClearElrRecord for {scope or 'every topic'} that no "
                        "min.insync.replicas change asks for",
                    ),
                    "ConfigurationControlManager.createClearElrRecordsAsNeeded",
                    (e.offset,),
                )
            )
        self._replay(ev, e)

    # -- broker events --------------------------------------------------------------------

    def _after_anchor(self, e: LogEntry, kind: str) -> None:
        """An unfence or a controlled-shutdown flag: replay it, then predict the partition
        changes its handler writes after it."""
        broker_id = _broker_of(e)
        claim = _Claim(kind, broker_id, e, {})
        was = self.state.registry.registration(broker_id)
        try:
            self.state.replay(e)
        except ReplayError as exc:
            claim.errors.append(
                Divergence(
                    SAFETY,
                    (f"Kafka's replay refuses this record: {exc}",),
                    "ClusterControlManager.replay",
                    (e.offset,),
                )
            )
        targets = handler_targets(self.state, kind, broker_id)
        predicted = broker_event(self.state, kind, broker_id, targets)
        claim.predicted = {tp: c for tp, c in predicted.items() if c is not None}
        if kind == "BrokerUnfenced" and was is not None and not was.fenced:
            claim.notes.append(
                f"broker {broker_id} was not fenced (Kafka unfences only a fenced broker)"
            )
        if kind == "ControlledShutdown" and was is not None and was.fenced:
            claim.notes.append(
                f"broker {broker_id} was fenced (a fenced broker is granted SHUTDOWN_NOW)"
            )
        self._after = claim

    def _flush_run(self, nxt: LogEntry | None) -> None:
        """The run of PartitionChangeRecords before `nxt`: the head claimed by a pending
        unfence or shutdown, the tail by `nxt` if it anchors a fence, an unregistration or
        a registration, the rest explained one by one."""
        run, self._run = self._run, []
        i = 0
        after = self._after
        if after is not None:
            self._after = None
            seen: set[TopicPartition] = set()
            while i < len(run):
                r = partition_change_record(run[i].fields)
                tp = (r.topic_id, r.partition_id)
                if tp not in after.predicted or tp in seen:
                    break
                seen.add(tp)
                after.claimed.append((run[i], r))
                i += 1
            ambiguous = None
            if i < len(run) and run[i].batch == (
                run[i - 1].batch if i else after.anchor.batch if after.anchor else None
            ):
                ambiguous = (
                    f"the PartitionChangeRecords from offset {run[i].offset} share the batch: they "
                    "are read as later requests, though the event's records and theirs are not "
                    "delimited in the log"
                )
            self._broker_event(after, ambiguous, replay_anchor=False)
        tail_kind: str | None = None
        broker_id = -1
        if nxt is not None:
            if _fencing(nxt) == FENCING_CHANGE_FENCE:
                tail_kind = "BrokerFenced"
            elif nxt.name == "UnregisterBrokerRecord":
                tail_kind = "BrokerUnregistered"
            elif nxt.name == "RegisterBrokerRecord":
                tail_kind = "BrokerRegistration"
            elif _directories_offline(nxt):
                tail_kind = "DirectoriesOffline"
            if tail_kind is not None:
                broker_id = _broker_of(nxt)
        if tail_kind is None:
            self._unanchored(run[i:])
            return
        assert nxt is not None
        if tail_kind == "DirectoriesOffline":
            # handleDirectoriesOffline: the broker's directories the record leaves out
            reg = self.state.registry.registration(broker_id)
            online = set(nxt.fields.get("log_dirs") or ())
            self._offline_dirs = frozenset(
                d for d in (reg.directories if reg is not None else ()) if d not in online
            )
        rest = run[i:]
        unclaimed = len(rest)
        if tail_kind == "BrokerRegistration":
            start = self._registration_start(nxt, rest)
        else:
            start = self._tail_start(rest, tail_kind, broker_id)  # explains a prefix itself
        # the request explained just before the event's records, if any
        before = (
            run[i + unclaimed - len(rest) + start - 1] if unclaimed - len(rest) + start else None
        )
        self._unanchored(rest[:start])
        claim = _Claim(tail_kind, broker_id, nxt, {})
        claim.claimed = [(x, partition_change_record(x.fields)) for x in rest[start:]]
        if tail_kind != "BrokerRegistration":
            claim.predicted = self._predicted(tail_kind, broker_id)
        elif self._new_incarnation(nxt):
            claim.kind, claim.predicted = self._shutdown_reading(broker_id, claim.claimed)
        ambiguous = None
        first = rest[start] if start < len(rest) else nxt
        if before is not None and before.offset < first.offset and before.batch == first.batch:
            ambiguous = (
                f"the PartitionChangeRecords up to offset {before.offset} share the batch: they "
                "are read as earlier requests, though theirs and the event's records are not "
                "delimited in the log"
            )
        self._broker_event(claim, ambiguous, replay_anchor=True)

    def _targets(self, kind: str, broker_id: int) -> list[TopicPartition]:
        if kind == "DirectoriesOffline":
            return partitions_in(self.state, self._offline_dirs)
        return handler_targets(self.state, kind, broker_id)

    def _predicted(self, kind: str, broker_id: int) -> dict[TopicPartition, PartitionChange]:
        targets = self._targets(kind, broker_id)
        return {
            tp: c
            for tp, c in broker_event(self.state, kind, broker_id, targets).items()
            if c is not None
        }

    def _shutdown_reading(
        self, broker_id: int, claimed: list[tuple[LogEntry, PartitionChangeRecord]]
    ) -> tuple[str, dict[TopicPartition, PartitionChange]]:
        """A new incarnation's registration starts with its previous one's shutdown: with
        ELR (3.9: metadata.version alone; 4.0: the feature) an unclean one
        (`handleBrokerUncleanShutdown`), and from 4.0 (KAFKA-18106) a clean one, or any one
        without ELR, removes the broker from the ISRs as a fence does (`handleBrokerShutdown`).
        Whether it was clean is the request's `previousBrokerEpoch`, not in the log: the
        reading that writes the log's records is taken, else the unclean one with ELR."""
        if not claimed:
            return "BrokerRegistration", {}  # 3.9 writes none (no ELR), 4.0 often none
        log = {(r.topic_id, r.partition_id): r for _, r in claimed}
        readings: list[tuple[str, dict[TopicPartition, PartitionChange]]] = []
        if self.state.mv.is_elr_supported:
            readings.append(
                ("BrokerUncleanShutdown", self._predicted("BrokerUncleanShutdown", broker_id))
            )
        readings.append(("BrokerShutdown", self._predicted("BrokerFenced", broker_id)))
        for kind, predicted in readings:
            if set(predicted) == set(log) and all(
                same_change(log[tp], c) for tp, c in predicted.items()
            ):
                return kind, predicted
        return readings[0]

    def _new_incarnation(self, e: LogEntry) -> bool:
        existing = self.state.registry.registration(_broker_of(e))
        return existing is None or existing.incarnation_id != str(e.fields.get("incarnation_id"))

    def _registration_start(self, e: LogEntry, rest: list[LogEntry]) -> int:
        """registerBroker's new broker epoch is `offsetControl.nextWriteOffset()` when the
        event started: the offset of its first record."""
        if not self._new_incarnation(e):
            return len(rest)
        epoch = int(e.fields.get("broker_epoch", -1))
        for k, x in enumerate(rest):
            if x.offset == epoch:
                return k
        return len(rest)

    def _tail_start(self, rest: list[LogEntry], kind: str, broker_id: int) -> int:
        """Where a fence's or unregistration's records start: the longest tail of distinct
        partitions that all hold the broker in their ISR (or ELR) by the time they come."""
        seen: set[TopicPartition] = set()
        start = len(rest)
        while start > 0:
            r = rest[start - 1].fields
            tp = (str(r["topic_id"]), int(r["partition_id"]))
            if tp in seen:
                break
            seen.add(tp)
            start -= 1
        self._unanchored(rest[:start])
        del rest[:start]
        candidates = set(self._targets(kind, broker_id))
        k = len(rest)
        while k > 0:
            r = rest[k - 1].fields
            if (str(r["topic_id"]), int(r["partition_id"])) not in candidates:
                break
            k -= 1
        return k

    def _broker_event(self, claim: _Claim, ambiguous: str | None, replay_anchor: bool) -> None:
        kind = claim.kind
        method, _ = HANDLERS[kind]
        if kind in ("BrokerShutdown", "BrokerUncleanShutdown"):
            kind = "BrokerRegistration"
        anchor = claim.anchor
        offsets = [x.offset for x, _ in claim.claimed] + ([anchor.offset] if anchor else [])
        ev = _Event(kind, method, min(offsets), max(offsets))
        ev.grouping = ambiguous
        ev.inputs += 1
        ev.records = len(offsets)
        ev.divergences.extend(claim.errors)
        notes = list(claim.notes)
        st = self.state
        before: dict[TopicPartition, PartitionRegistration | None] = {}
        after_log: dict[TopicPartition, PartitionRegistration | None] = {}
        entries: dict[TopicPartition, tuple[LogEntry, PartitionChangeRecord]] = {}
        for x, r in claim.claimed:
            tp = (r.topic_id, r.partition_id)
            before[tp] = st.partition(*tp)
            entries[tp] = (x, r)
            if self._replay(ev, x, r):
                after_log[tp] = st.partition(*tp)
        if kind == "BrokerRegistration" and anchor is not None:
            self._check_registration(ev, anchor, claim)
        if replay_anchor and anchor is not None:
            self._replay(ev, anchor)
        registry = st.registry
        for tp in sorted(set(entries) | set(claim.predicted)):
            ev.decisions += 1
            change = claim.predicted.get(tp)
            got = entries.get(tp)
            if got is not None and same_change(got[1], change):
                ev.matched += 1
                assert change is not None
                self._check_version(ev, got[0], change.version)
                continue
            old = before.get(tp, st.partition(*tp) if got is None else None)
            log_after = after_log.get(tp, old) if got is not None else old
            pred_after = change.registration if change is not None else old
            severity, reasons = classify(
                old,
                log_after,
                pred_after,
                registry,
                st.context(tp[0]).unclean_leader_election if tp[0] in st.topic_names else False,
            )
            what = (
                "missing from the log"
                if got is None
                else ("not written by the rules" if change is None else "differs")
            )
            ev.divergences.append(
                Divergence(
                    severity,
                    (f"the decision for {st.label(tp)} {what}", *reasons),
                    method,
                    (got[0].offset,) if got is not None else (),
                    st.label(tp),
                    describe_change(got[1]) if got is not None else None,
                    describe_change(change.record) if change is not None else None,
                )
            )
        ev.note = "; ".join(notes) or None
        self._emit(ev)

    def _check_registration(self, ev: _Event, e: LogEntry, claim: _Claim) -> None:
        """registerBroker's input checks: a new incarnation takes the offset of the event's
        first record as its epoch and starts fenced; the same incarnation keeps its epoch."""
        f = e.fields
        epoch = int(f.get("broker_epoch", -1))
        existing = self.state.registry.registration(_broker_of(e))
        first = min([x.offset for x, _ in claim.claimed] + [e.offset])
        if self._new_incarnation(e):
            if epoch != first:
                ev.divergences.append(
                    Divergence(
                        BENIGN,
                        (
                            f"a new incarnation's broker epoch {epoch} is not the offset of the "
                            f"event's first record ({first}): Kafka sets it to nextWriteOffset",
                        ),
                        "ClusterControlManager.registerBroker",
                        (e.offset,),
                    )
                )
            if not bool(f.get("fenced", True)):
                ev.divergences.append(
                    Divergence(
                        SAFETY,
                        ("a new incarnation registers unfenced: Kafka registers it fenced",),
                        "ClusterControlManager.registerBroker",
                        (e.offset,),
                    )
                )
        elif existing is not None and epoch != existing.epoch:
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (
                        f"the same incarnation re-registers at epoch {epoch}, "
                        f"not its {existing.epoch}",
                    ),
                    "ClusterControlManager.registerBroker",
                    (e.offset,),
                )
            )

    # -- PartitionChangeRecords no anchor claims --------------------------------------------

    def _unanchored(self, entries: list[LogEntry]) -> None:
        group: _Event | None = None
        for x in entries:
            ev = self._explain(x)
            if (
                group is not None
                and group.kind == ev.kind
                and x.batch == self._group_batch
                and not ev.divergences
                and not group.divergences
            ):
                group.records += 1
                group.last = x.offset
                group.decisions += ev.decisions
                group.matched += ev.matched
                group.inputs += ev.inputs
                group.grouping = None
                group.note = (
                    "consecutive records of one batch, read as one request (several requests "
                    "may share a batch; each record is checked on its own)"
                )
                continue
            if group is not None:
                self._emit(group)
            group, self._group_batch = ev, x.batch
        if group is not None:
            self._emit(group)

    def _explain(self, x: LogEntry) -> _Event:
        st = self.state
        r = partition_change_record(x.fields)
        tp = (r.topic_id, r.partition_id)
        old = st.partition(*tp)
        if old is None:
            ev = _Event("PartitionChange", "QuorumController.replay", x.offset, x.offset)
            ev.add(x)
            self._replay(ev, x, r)
            return ev
        try:
            candidates = explanations(st, tp, old, r)
        except ShadowControllerError as exc:
            ev = _Event("PartitionChange", "QuorumController.replay", x.offset, x.offset)
            ev.add(x)
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (f"the rules cannot decide on this partition's state: {exc}",),
                    "ReplicationControlManager",
                    (x.offset,),
                    st.label(tp),
                    describe_change(r),
                )
            )
            self._replay(ev, x, r)
            return ev
        chosen = next((c for c in candidates if same_change(r, c.change)), None)
        first = candidates[0]
        ev = _Event((chosen or first).kind, (chosen or first).method, x.offset, x.offset)
        ev.add(x)
        ev.inputs += 1
        ev.decisions += 1
        if chosen is not None:
            ev.matched += 1
            if chosen.change is not None and chosen.kind != "AssignReplicasToDirs":
                self._check_version(ev, x, chosen.change.version)
            if chosen.admin_unclean:
                ev.note = (
                    "an unclean election while the topic does not allow one: only an admin's "
                    "ElectLeaders(UNCLEAN) writes it"
                )
            self._replay(ev, x, r)
            return ev
        self._replay(ev, x, r)
        log_after = st.partition(*tp)
        if first.refused is not None:
            ev.divergences.append(
                Divergence(
                    SAFETY,
                    (
                        f"the rules refuse the {first.kind} this record answers: "
                        f"{first.refused.error}"
                        + (f" ({first.refused.message})" if first.refused.message else ""),
                    ),
                    first.method,
                    (x.offset,),
                    st.label(tp),
                    describe_change(r),
                    None,
                )
            )
            return ev
        pred_after = first.change.registration if first.change is not None else old
        severity, reasons = classify(
            old,
            log_after,
            pred_after,
            st.registry,
            st.context(tp[0]).unclean_leader_election or first.admin_unclean,
        )
        ev.divergences.append(
            Divergence(
                severity,
                (f"no request the rules answer writes this record for {st.label(tp)}", *reasons),
                first.method,
                (x.offset,),
                st.label(tp),
                describe_change(r),
                describe_change(first.change.record) if first.change is not None else None,
            )
        )
        return ev


def verify_entries(
    entries: Iterable[LogEntry], static: StaticConfig | None = None
) -> tuple[list[EventVerdict], Summary]:
    """The verdicts and summary of a whole log (snapshot records first, flagged)."""
    v = Verifier(static)
    snapshot: list[LogEntry] = []
    end = None
    for e in entries:
        if e.snapshot:
            snapshot.append(e)
            end = e.offset + 1
            continue
        if snapshot:
            v.load_snapshot(snapshot, end or 0)
            snapshot = []
        v.feed(e)
    if snapshot:
        v.load_snapshot(snapshot, end or 0)
    return v.verdicts, v.finish()


def divergent(verdicts: Iterable[EventVerdict]) -> Iterator[EventVerdict]:
    return (v for v in verdicts if v.outcome != MATCH)


__all__ = [
    "Divergence",
    "EventVerdict",
    "NO_LEADER",
    "Summary",
    "Verifier",
    "divergent",
    "verify_entries",
]
