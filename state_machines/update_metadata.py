"""UpdateMetadata: the controller's third request, one send per Kafka batch.

Theory of operation
-------------------
In Kafka (ControllerChannelManager.scala, `AbstractControllerBrokerRequestBatch`) every
`addLeaderAndIsrRequestForBrokers` also calls `addUpdateMetadataRequestForBrokers(
liveOrShuttingDownBrokerIds, Set(partition))`: the batch collects a broker set and, per
partition, the `UpdateMetadataPartitionState` read from the context at that moment (leader
-2, `LeaderAndIsr.duringDelete`, for a topic queued for deletion; nothing for a partition
without leadership). `sendRequestsToBrokers` then sends one UpdateMetadata request, the same
partition states and the same live-broker list, to every broker of the set that is live or
shutting down. `KafkaController.sendUpdateMetadataRequest(brokers, partitions)` opens a
batch for such a send alone (at failover, broker startup, after AlterPartition, at a
reassignment's end, at topic deletion, and when a broker change changed nothing).

One Kafka batch spans many partitions, and here each partition folds on its own. So a
partition's flow labels each state machine call with its `site` in Kafka's order (`flow.Run`)
and shares its partition state (`UpdateMetadataShare`); the directory states, per round of a
cause, the live or shutting-down brokers and its own explicit sends (`UpdateMetadataSend`).
`merge` joins them, with the round, into one `UpdateMetadataRecord` per send: the engine
after each cause, the Spark job in its sink. The record is keyed by its place,
`update-metadata-<round>[-<scope>]-<site>`, so that a cause spread over micro-batches numbers
its sends the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .model import LeaderAndIsr
from .outputs import ROUND_BROKERS, MetadataState, UpdateMetadataRecord, UpdateMetadataSend, UpdateMetadataShare
from .partition_record import Facts, PartitionRecord

# An UpdateMetadata send to a starting broker carries every partition of the cluster: its
# record is split after this many partitions (about 150 KB of JSON), under one key.
MAX_PARTITIONS_PER_RECORD = 1000

# LeaderAndIsr.duringDelete: leader -2, epochs at their initial values
_LEADER_DURING_DELETE = -2


def partition_state(rec: PartitionRecord, facts: Facts) -> MetadataState | None:
    """`addUpdateMetadataRequestForBrokers`' UpdateMetadataPartitionState for this partition,
    or None without leadership ("Leader not yet assigned ... Skip")."""
    la: LeaderAndIsr | None = rec.leadership
    if la is None:
        return None
    replicas = rec.assignment.replicas
    # replicas.filter(!isReplicaOnline(_, partition)): shutting-down brokers count as offline
    offline = tuple(r for r in replicas if not facts.is_online(r))
    if facts.queued:
        return (rec.topic, rec.partition, la.controller_epoch, _LEADER_DURING_DELETE, 0, la.isr, 0, replicas, offline)
    return (rec.topic, rec.partition, la.controller_epoch, la.leader, la.leader_epoch, la.isr, la.partition_epoch,
            replicas, offline)


class Piece(NamedTuple):
    """One share or send with its place: the cause and the round it was made in."""

    cause_offset: int
    cause_id: str | None
    round: int
    item: UpdateMetadataShare | UpdateMetadataSend


class Send(NamedTuple):
    cause_offset: int
    cause_id: str | None
    key: str
    seq: int
    record: UpdateMetadataRecord


def merge(pieces: Iterable[Piece]) -> Iterator[Send]:
    """The UpdateMetadata records of the pieces, per (cause, round) in send order."""
    rounds: dict[tuple[int, int], list[Piece]] = {}
    for p in pieces:
        rounds.setdefault((p.cause_offset, p.round), []).append(p)
    for (cause, round_), got in sorted(rounds.items(), key=lambda kv: kv[0]):
        yield from _round(cause, got[0].cause_id, round_, got)


def _round(cause: int, cause_id: str | None, round_: int, pieces: list[Piece]) -> Iterator[Send]:
    live: tuple[int, ...] = ()
    explicit: dict[int, UpdateMetadataSend] = {}
    # (scope, site) -> partition -> state; and the sites any partition shared at
    shares: dict[tuple[str, int], dict[tuple[str, int], MetadataState | None]] = {}
    shared_sites: set[int] = set()
    for p in pieces:
        item = p.item
        if isinstance(item, UpdateMetadataSend):
            if item.site == ROUND_BROKERS:
                live = item.recipients
            else:
                explicit[item.site] = item
            continue
        shared_sites.add(item.site)
        if not item.mark:
            # a later share of the same partition in the same batch replaces the earlier
            shares.setdefault((item.scope, item.site), {})[(item.topic, item.partition)] = item.state
    for site, sent in explicit.items():
        if not any(s in shared_sites for s in sent.unless_sites):
            shares.setdefault(("", site), {})
    for scope, site in sorted(shares):
        own = explicit.get(site) if scope == "" else None
        recipients = own.recipients if own is not None else live
        if not recipients:
            continue  # the broker set was empty, or none of it is live: nothing is sent
        states = [s for _, s in sorted(shares[(scope, site)].items(), key=lambda kv: kv[0]) if s is not None]
        key = f"update-metadata-{round_:03d}" + (f"-{scope}" if scope else "") + f"-{site:03d}"
        chunks = [states[i:i + MAX_PARTITIONS_PER_RECORD] for i in range(0, len(states), MAX_PARTITIONS_PER_RECORD)]
        for seq, chunk in enumerate(chunks or [[]]):
            yield Send(cause, cause_id, key, seq, UpdateMetadataRecord(key, recipients, live, tuple(chunk)))
