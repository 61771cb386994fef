"""Broker events and the runs of PartitionChangeRecords around their anchors: fence,
unregistration, registration (records before the anchor); unfence and the controlled
shutdown flag (records after it); offline directories (verifier.py has the table)."""

from __future__ import annotations

from ..kraft.partition_change import PartitionChange
from ..kraft.partition_registration import PartitionRegistration
from ..kraft.records import (
    FENCING_CHANGE_FENCE,
    PartitionChangeRecord,
)
from .base import VerifierBase, broker_of, directories_offline, fencing
from .entries import (
    LogEntry,
    describe_change,
    partition_change_record,
)
from .log_state import ReplayError, TopicPartition
from .predict import (
    HANDLERS,
    broker_event,
    handler_targets,
    partitions_in,
    same_change,
)
from .severity import BENIGN, SAFETY, classify
from .verdicts import Claim, Divergence, OpenEvent

# QuorumController.MAX_RECORDS_PER_BATCH: a non-atomic event's appends (appendRecords)
MAX_RECORDS_PER_BATCH = 10_000


class BrokerEvents(VerifierBase):
    # -- broker events --------------------------------------------------------------------

    def _after_anchor(self, e: LogEntry, kind: str) -> None:
        """An unfence or a controlled-shutdown flag: replay it, then predict the partition
        changes its handler writes after it."""
        broker_id = broker_of(e)
        claim = Claim(kind, broker_id, e, {})
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
            batch = after.anchor.batch if after.anchor else None
            while i < len(run):
                r = partition_change_record(run[i].fields)
                tp = (r.topic_id, r.partition_id)
                if tp not in after.predicted or tp in seen:
                    break
                if run[i].batch != batch:
                    # a later append of the same event only after a full one (appendRecords)
                    if (len(after.claimed) + 1) % MAX_RECORDS_PER_BATCH:
                        break
                    batch = run[i].batch
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
            if fencing(nxt) == FENCING_CHANGE_FENCE:
                tail_kind = "BrokerFenced"
            elif nxt.name == "UnregisterBrokerRecord":
                tail_kind = "BrokerUnregistered"
            elif nxt.name == "RegisterBrokerRecord":
                tail_kind = "BrokerRegistration"
            elif directories_offline(nxt):
                tail_kind = "DirectoriesOffline"
            if tail_kind is not None:
                broker_id = broker_of(nxt)
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
            if start is None:
                # an epoch that is no offset of this run (a log written with other epochs):
                # in the registration's own batch (it is atomic), the tail of partitions
                # holding the broker in their ISR or ELR
                earlier = next((k for k, x in enumerate(rest) if x.batch == nxt.batch), len(rest))
                self._unanchored(rest[:earlier])
                del rest[:earlier]
                start = self._tail_start(rest, "BrokerUnregistered", broker_id, nxt.batch)
        else:
            # (explains a prefix itself)
            start = self._tail_start(rest, tail_kind, broker_id, nxt.batch)
        # the request explained just before the event's records, if any
        before = (
            run[i + unclaimed - len(rest) + start - 1] if unclaimed - len(rest) + start else None
        )
        self._unanchored(rest[:start])
        claim = Claim(tail_kind, broker_id, nxt, {})
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
        existing = self.state.registry.registration(broker_of(e))
        return existing is None or existing.incarnation_id != str(e.fields.get("incarnation_id"))

    def _registration_start(self, e: LogEntry, rest: list[LogEntry]) -> int | None:
        """registerBroker's new broker epoch is `offsetControl.nextWriteOffset()` when the
        event started: the offset of its first record. None: the epoch names no record of
        the run nor the registration itself (`_check_registration` reports it)."""
        if not self._new_incarnation(e):
            return len(rest)
        epoch = int(e.fields.get("broker_epoch", -1))
        if epoch == e.offset:
            return len(rest)
        for k, x in enumerate(rest):
            if x.offset == epoch:
                return k
        return None

    def _tail_start(
        self, rest: list[LogEntry], kind: str, broker_id: int, anchor_batch: int
    ) -> int:
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
        # `appendRecords` splits a non-atomic event into appends of maxRecordsPerBatch, each
        # whole in one batch: the event's last append shares the anchor's batch, and what
        # comes before it in other batches is whole appends
        j = len(rest)
        while j > k and rest[j - 1].batch == anchor_batch:
            j -= 1
        return j - (j - k) // MAX_RECORDS_PER_BATCH * MAX_RECORDS_PER_BATCH

    def _broker_event(self, claim: Claim, ambiguous: str | None, replay_anchor: bool) -> None:
        kind = claim.kind
        method, _ = HANDLERS[kind]
        if kind in ("BrokerShutdown", "BrokerUncleanShutdown"):
            kind = "BrokerRegistration"
        anchor = claim.anchor
        offsets = [x.offset for x, _ in claim.claimed] + ([anchor.offset] if anchor else [])
        ev = OpenEvent(kind, method, min(offsets), max(offsets))
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

    def _check_registration(self, ev: OpenEvent, e: LogEntry, claim: Claim) -> None:
        """registerBroker's input checks: a new incarnation takes the offset of the event's
        first record as its epoch and starts fenced; the same incarnation keeps its epoch."""
        f = e.fields
        epoch = int(f.get("broker_epoch", -1))
        existing = self.state.registry.registration(broker_of(e))
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
