"""PartitionChangeRecords no anchor claims: the requests and periodic tasks that write one
record a partition without a record of their own (AlterPartition, reassignments,
elections), each explained by `predict.explanations`."""

from __future__ import annotations

from ..errors import ShadowControllerError
from .base import VerifierBase
from .entries import (
    LogEntry,
    describe_change,
    partition_change_record,
)
from .predict import (
    explanations,
    same_change,
)
from .severity import SAFETY, classify
from .verdicts import Divergence, OpenEvent


class Requests(VerifierBase):
    # -- PartitionChangeRecords no anchor claims --------------------------------------------

    def _unanchored(self, entries: list[LogEntry]) -> None:
        group: OpenEvent | None = None
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

    def _explain(self, x: LogEntry) -> OpenEvent:
        st = self.state
        r = partition_change_record(x.fields)
        tp = (r.topic_id, r.partition_id)
        old = st.partition(*tp)
        if old is None:
            ev = OpenEvent("PartitionChange", "QuorumController.replay", x.offset, x.offset)
            ev.add(x)
            self._replay(ev, x, r)
            return ev
        try:
            candidates = explanations(st, tp, old, r)
        except ShadowControllerError as exc:
            ev = OpenEvent("PartitionChange", "QuorumController.replay", x.offset, x.offset)
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
        ev = OpenEvent((chosen or first).kind, (chosen or first).method, x.offset, x.offset)
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
