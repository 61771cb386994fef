"""The UpdateMetadata decisions of contract v1 and the values that build them.

Kafka's `ControllerChannelManager.sendUpdateMetadataRequests` (core/src/main/scala/kafka/
controller/ControllerChannelManager.scala, apache/kafka 3.9.0): one request to a set of
brokers, carrying the live brokers and an UpdateMetadataPartitionState per partition of the
batch. `UpdateMetadataShare` (a partition's share) and `UpdateMetadataSend` (the
directory's explicit sends) are internal, merged into `UpdateMetadataRecord`s by
`update_metadata.merge`; the record's contract document is written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from .contract_record import ContractRecord


@dataclass(frozen=True, slots=True)
class UpdateMetadataRecord(ContractRecord):
    """One UpdateMetadata send (`sendUpdateMetadataRequests`): the same request to every
    broker in `recipients`, carrying the cluster's `live_brokers` and the states of the
    partitions of one Kafka batch (UpdateMetadataPartitionState, `zk_version` being the
    partition epoch), in (topic, partition) order. A send of more than
    `update_metadata.MAX_PARTITIONS_PER_RECORD` partitions is split over records with
    consecutive `seq`."""

    TYPE: ClassVar[str] = "UpdateMetadata"
    # the send's place in its cause, and the record's key: update-metadata-<round>[-<scope>]-<site>
    send: str
    recipients: tuple[int, ...]
    live_brokers: tuple[int, ...]
    partitions: tuple[MetadataState, ...]

    def key(self) -> str:
        return self.send


# UpdateMetadataPartitionState as a plain tuple (a partition shares one per send: a tuple of
# ints and int tuples is not tracked by the cyclic collector), and its contract fields
MetadataState = tuple[
    str, int, int, int, int, tuple[int, ...], int, tuple[int, ...], tuple[int, ...]
]
METADATA_STATE_FIELDS = (
    "topic",
    "partition",
    "controller_epoch",
    "leader",
    "leader_epoch",
    "isr",
    "zk_version",
    "replicas",
    "offline_replicas",
)


def update_metadata_writer(
    r: UpdateMetadataRecord, cause_offset: int, cause_id: str | None, seq: int
) -> dict[str, Any]:
    return {
        "v": 1,
        "type": r.TYPE,
        "cause_offset": cause_offset,
        "cause_id": cause_id,
        "seq": seq,
        "send": r.send,
        "recipients": list(r.recipients),
        "live_brokers": list(r.live_brokers),
        "partitions": [
            {
                "topic": t,
                "partition": p,
                "controller_epoch": ce,
                "leader": leader,
                "leader_epoch": le,
                "isr": list(isr),
                "zk_version": zk,
                "replicas": list(replicas),
                "offline_replicas": list(offline),
            }
            for t, p, ce, leader, le, isr, zk, replicas, offline in r.partitions
        ],
    }


class UpdateMetadataShare(NamedTuple):
    """Internal: a partition's share of one UpdateMetadata send. `site` names the Kafka
    batch within its round (the flow's call, in Kafka's order); `scope` is "" for a batch of
    many partitions, or names the one thing the batch is for (a partition's reassignment, a
    broker's rebalance). `state` is the partition's UpdateMetadataPartitionState, or None
    when the batch names the brokers only (no leadership: Kafka skips the partition).
    `mark` only records that the batch ran (for `UpdateMetadataSend.unless_sites`)."""

    site: int
    scope: str
    topic: str
    partition: int
    state: MetadataState | None
    mark: bool = False


# UpdateMetadataSend.site of the round's live or shutting-down brokers
ROUND_BROKERS = -1


@dataclass(frozen=True, slots=True)
class UpdateMetadataSend:
    """Internal, from the directory: `site` -1 gives the round's live or shutting-down
    brokers (the recipients of every send a LeaderAndIsr queued); any other site is an
    explicit `sendUpdateMetadataRequest(recipients, ...)`, sent even without partitions
    unless a partition shared at one of `unless_sites` in the same round."""

    site: int
    recipients: tuple[int, ...]
    unless_sites: tuple[int, ...] = ()
