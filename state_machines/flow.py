"""One command's run over one partition: the thread that ties a flow's machine calls together.

A flow (flows.py, reassignment.py, topic_deletion.py) is the slice of a `KafkaController`
method that touches one partition. It calls the two state machines in Kafka's order;
each call returns a new record and its outputs, and `Run` keeps the latest record and the
outputs in order. A flow changes the record only through a machine or a named write of the
record (`PartitionRecord.with_*`), never by assigning its fields.

`Run` also carries what the partition tells Kafka's TopicDeletionManager when its topic is
queued for deletion (`DeletionReport`): whether a reassignment ran (the topic becomes
ineligible), completed (deletion resumes), or the partition was removed.

Each machine call is one Kafka batch (`newBatch` ... `sendRequestsToBrokers`). A flow names
the call's `site`, its place among the batches of its Kafka method, so that the
UpdateMetadata shares of all the partitions in one batch meet again (update_metadata.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import partition_state_machine as psm
from . import replica_state_machine as rsm
from .election import ElectionStrategy
from .outputs import Output, StateChangeFailedRecord
from .partition_record import Facts, PartitionRecord
from .partition_state_machine import Refusal
from .requests import RequestBatch
from .states import PartitionState, ReplicaState
from .update_metadata import partition_state
from .update_metadata_records import UpdateMetadataShare


class Run:
    __slots__ = ("rec", "facts", "out", "mark_ineligible", "resume_deletion", "removed", "scope")

    def __init__(self, rec: PartitionRecord, facts: Facts) -> None:
        self.rec = rec
        self.facts = facts
        self.out: list[Output] = []
        # onPartitionReassignment ran for a topic queued for deletion:
        # markTopicIneligibleForDeletion
        self.mark_ineligible = False
        # a reassignment completed for a topic queued for deletion: resumeDeletionForTopics
        self.resume_deletion = False
        # completeDeleteTopic: the partition is gone
        self.removed = False
        # the UpdateMetadata scope of the batches being run ("": shared with other partitions)
        self.scope = ""

    def replicas(
        self,
        brokers: Sequence[int],
        target: ReplicaState,
        site: int = 0,
        call_order: Sequence[int] = (),
    ) -> None:
        """`replicaStateMachine.handleStateChanges(replicas on brokers, target)`; `call_order`:
        the order of the call's brokers across its partitions, when it matters
        (`rsm.handle_state_changes`)."""
        if brokers:
            step = rsm.handle_state_changes(self.rec, self.facts, brokers, target, call_order)
            self.rec = step.record
            self.out.extend(step.outputs)
            if step.update_metadata:
                self.update_metadata(site)

    def partition(
        self, target: PartitionState, strategy: ElectionStrategy | None = None, site: int = 0
    ) -> Refusal | None:
        """`partitionStateMachine.handleStateChanges(Seq(partition), target, strategy)`."""
        step = psm.handle_state_changes(self.rec, self.facts, target, strategy)
        self.rec = step.record
        self.out.extend(step.outputs)
        if step.update_metadata:
            self.update_metadata(site)
        return step.refusal

    def update_metadata(self, site: int, mark: bool = False) -> None:
        """`addUpdateMetadataRequestForBrokers(liveOrShuttingDownBrokerIds, Set(partition))`
        in the batch at `site`: this partition's share of that UpdateMetadata send, with its
        state now. `mark`: the batch ran for this partition without sending anything."""
        if self.facts.config.emit_update_metadata:
            rec = self.rec
            state = None if mark else partition_state(rec, self.facts)
            self.out.append(
                UpdateMetadataShare(site, self.scope, rec.topic, rec.partition, state, mark)
            )

    def set_offline_dirs(self, offline_dirs: tuple[int, ...]) -> None:
        """`replicasOnOfflineDirs` changed for this partition: the record and what this run
        reads of liveness follow."""
        if offline_dirs != self.rec.offline_dirs:
            self.rec = self.rec.with_offline_dirs(offline_dirs)
            f = self.facts
            self.facts = Facts(f.ctx, f.config, f.brokers, offline_dirs)

    def send(self, batch: RequestBatch, site: int = 0) -> None:
        """`sendRequestsToBrokers` of a batch a flow opened itself."""
        self.out.extend(batch.records(self.rec.topic, self.rec.partition, self.facts.is_registered))
        if batch.update_metadata:
            self.update_metadata(site)

    def failed(self, target: str, reason: str) -> None:
        """A failure Kafka logs (or answers an admin request with) outside the machines."""
        self.out.append(
            StateChangeFailedRecord(self.rec.topic, self.rec.partition, None, target, reason)
        )
