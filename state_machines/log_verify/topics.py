"""Topic creations and config changes: a creation's placement (input) and its partitions'
ISR, leader and epochs (decisions: `ReplicationControlManager.createTopic` /
`buildPartitionRegistration`); ConfigRecords and 4.0's ClearElrRecords."""

from __future__ import annotations

from ..kraft import replication_control as rc
from ..kraft.partition_registration import (
    InvalidReplicaDirectoriesError,
    PartitionRegistration,
)
from ..kraft.records import (
    MetadataPartitionRecord,
)
from .base import VerifierBase, partition_body
from .entries import (
    LogEntry,
    describe_partition,
    partition_record,
)
from .severity import BENIGN, SAFETY, classify
from .verdicts import Divergence, OpenEvent


class Topics(VerifierBase):
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
            ev = self._open = OpenEvent(
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
        elif predicted is not None and partition_body(predicted) == partition_body(r):
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
            try:
                written = PartitionRegistration.from_record(r)
            except InvalidReplicaDirectoriesError as exc:
                self._refused(ev, e, exc, label)
                return
            severity, reasons = classify(
                None,
                written,
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
            ev = self._open = OpenEvent(
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
        elif ev.kind == "CreateTopics" and scope == self.state.name_of(ev.topic_id or ""):
            # the new topic's own min.insync.replicas through incrementalAlterConfig (4.0):
            # whether 4.0's createTopic adds it is not settled here; taken as given
            ev.note = "a ClearElrRecord for the new topic, taken as given"
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
