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

from collections.abc import Iterable, Iterator

from ..kraft.records import (
    FENCING_CHANGE_FENCE,
    FENCING_CHANGE_UNFENCE,
)
from .base import directories_offline, fencing
from .broker_events import BrokerEvents
from .entries import (
    LogEntry,
)
from .log_state import ReplayError, StaticConfig
from .requests import Requests
from .severity import SAFETY
from .topics import Topics
from .verdicts import MATCH, Divergence, EventVerdict, OpenEvent, Summary


class Verifier(BrokerEvents, Requests, Topics):
    """Feed it the log's records in order (`snapshot` ones first); read `verdicts` and
    `summary`. Keeps every event's verdict (a few hundred bytes each) and, at a time, one
    run of consecutive PartitionChangeRecords."""

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
            and self._open.kind in ("IncrementalAlterConfigs", "CreateTopics")
        ):
            self._clear_elr(e)
            return
        self._close_open()
        if name == "TopicRecord":
            ev = OpenEvent(
                "CreateTopics", "ReplicationControlManager.createTopic", e.offset, e.offset
            )
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
        change = fencing(e)
        if name == "RegisterBrokerRecord":
            pass  # handled with its run (`_flush_run`): 4.0's unclean-shutdown records lead it
        elif change == FENCING_CHANGE_UNFENCE:
            self._after_anchor(e, "BrokerUnfenced")
        elif (
            name == "BrokerRegistrationChangeRecord"
            and int(e.fields.get("in_controlled_shutdown", 0)) == 1
        ):
            self._after_anchor(e, "ControlledShutdown")
        elif (
            change == FENCING_CHANGE_FENCE
            or name == "UnregisterBrokerRecord"
            or directories_offline(e)
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
            ev = OpenEvent(kind, method, e.offset, e.offset)
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
    "Summary",
    "Verifier",
    "divergent",
    "verify_entries",
]
