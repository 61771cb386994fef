"""What every part of the verifier shares: the log state, the summary, the verdicts so far,
and how an event is closed and a record replayed (verifier.py has the theory)."""

from __future__ import annotations

from ..errors import ShadowControllerError
from ..kraft.partition_registration import PartitionRegistration
from ..kraft.records import (
    FENCING_CHANGE_FENCE,
    FENCING_CHANGE_UNFENCE,
    MetadataPartitionRecord,
    PartitionChangeRecord,
)
from .entries import (
    LogEntry,
)
from .log_state import LogState, StaticConfig
from .severity import BENIGN, SAFETY
from .verdicts import Claim, Divergence, EventVerdict, OpenEvent, Summary


def partition_body(r: MetadataPartitionRecord) -> tuple[object, ...]:
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


def fencing(e: LogEntry) -> int:
    """1 fence, -1 unfence, 0 neither (BrokerRegistrationChangeRecord, Fence/Unfence)."""
    if e.name == "FenceBrokerRecord":
        return FENCING_CHANGE_FENCE
    if e.name == "UnfenceBrokerRecord":
        return FENCING_CHANGE_UNFENCE
    if e.name == "BrokerRegistrationChangeRecord":
        return int(e.fields.get("fenced", 0))
    return 0


def directories_offline(e: LogEntry) -> bool:
    """A BrokerRegistrationChangeRecord (version 2) naming the directories left online:
    the end of a heartbeat's `handleDirectoriesOffline`."""
    f = e.fields
    return (
        e.name == "BrokerRegistrationChangeRecord"
        and not int(f.get("fenced", 0))
        and not int(f.get("in_controlled_shutdown", 0))
        and bool(f.get("log_dirs"))
    )


def broker_of(e: LogEntry) -> int:
    f = e.fields
    return int(f["id"] if "id" in f and "broker_id" not in f else f["broker_id"])


class VerifierBase:
    """The verifier's state, which its parts (topics, broker_events, requests) share: the
    log state, the verdicts and summary, the run of PartitionChangeRecords waiting for its
    anchor, the event still taking records."""

    def __init__(self, static: StaticConfig | None = None) -> None:
        self.state = LogState(static or StaticConfig())
        self.summary = Summary()
        self.verdicts: list[EventVerdict] = []
        self._run: list[LogEntry] = []
        self._after: Claim | None = None  # an unfence or shutdown waiting for its records
        self._open: OpenEvent | None = None  # a creation or config change taking more records
        self._batch: int | None = None
        self._group_batch: int | None = None
        self._offline_dirs: frozenset[str] = frozenset()
        self._placements_for: tuple[object, object] | None = None
        self._placements: dict[
            tuple[tuple[int, ...], int | None],
            tuple[MetadataPartitionRecord, PartitionRegistration],
        ] = {}

    # -- events -------------------------------------------------------------------------

    def _emit(self, ev: OpenEvent) -> None:
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
        ev: OpenEvent,
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
            self._refused(ev, e, exc)
            return False
        return True

    @staticmethod
    def _refused(ev: OpenEvent, e: LogEntry, exc: Exception, label: str | None = None) -> None:
        """A record Kafka's replay refuses: a safety divergence of `ev`."""
        reason = (f"Kafka's replay refuses this record: {exc}",)
        ev.divergences.append(
            Divergence(SAFETY, reason, "QuorumController.replay", (e.offset,), label)
        )

    def _check_version(self, ev: OpenEvent, e: LogEntry, version: int) -> None:
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

    def _unanchored(self, entries: list[LogEntry]) -> None:
        raise NotImplementedError  # requests.Requests
