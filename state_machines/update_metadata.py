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
after each cause. The Spark job gathers each task's pieces there (`gather`, the states as
their JSON) and joins the tasks' rounds in its sink (`Round.join_head`, then `chunks`, as
`merge` does). The record is keyed by its place, `update-metadata-<round>[-<scope>]-<site>`,
so that a cause spread over micro-batches numbers its sends the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from .model import LeaderAndIsr
from .partition_record import Facts, PartitionRecord
from .update_metadata_records import (
    ROUND_BROKERS,
    MetadataState,
    UpdateMetadataRecord,
    UpdateMetadataSend,
    UpdateMetadataShare,
)

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
    is_online = facts.is_online
    offline = tuple([r for r in replicas if not is_online(r)])
    if facts.queued:
        return (
            rec.topic,
            rec.partition,
            la.controller_epoch,
            _LEADER_DURING_DELETE,
            0,
            la.isr,
            0,
            replicas,
            offline,
        )
    return (
        rec.topic,
        rec.partition,
        la.controller_epoch,
        la.leader,
        la.leader_epoch,
        la.isr,
        la.partition_epoch,
        replicas,
        offline,
    )


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


S = TypeVar("S")


@dataclass(slots=True)
class Round(Generic[S]):
    """One (cause, round)'s pieces, gathered: the round's live or shutting-down brokers, the
    directory's explicit sends by site, the sites any partition shared at, and per (scope,
    site) each partition's state (a later share of the same partition replaces the earlier).
    `S` is what a state is to the gatherer: the `MetadataState` itself, or its JSON for the
    job, whose tasks gather their own partitions and whose sink joins the tasks' rounds
    (`join_head`, the shares added as they are read: a partition folds in one task, so
    the tasks' partitions never meet)."""

    cause_id: str | None
    live: tuple[int, ...] = ()
    explicit: dict[int, UpdateMetadataSend] = field(default_factory=dict)
    shared_sites: set[int] = field(default_factory=set)
    shares: dict[tuple[str, int], dict[tuple[str, int], S | None]] = field(default_factory=dict)

    def add(self, item: UpdateMetadataShare | UpdateMetadataSend, state: S | None) -> None:
        if isinstance(item, UpdateMetadataSend):
            if item.site == ROUND_BROKERS:
                self.live = item.recipients
            else:
                self.explicit[item.site] = item
            return
        self.shared_sites.add(item.site)
        if not item.mark:
            self.shares.setdefault((item.scope, item.site), {})[(item.topic, item.partition)] = (
                state
            )

    def join_head(
        self, live: tuple[int, ...], explicit: dict[int, UpdateMetadataSend], shared_sites: set[int]
    ) -> None:
        """Another task's part of this round, but its shares (which the joiner adds to
        `shares` as it reads them): its live brokers if it saw them, its explicit sends
        and the sites its partitions shared at."""
        if live:
            self.live = live
        self.explicit.update(explicit)
        self.shared_sites |= shared_sites


def gather(
    pieces: Iterable[Piece], state: Callable[[MetadataState], S]
) -> dict[tuple[int, int], Round[S]]:
    """The pieces by (cause, round), each share's state as `state` makes it."""
    rounds: dict[tuple[int, int], Round[S]] = {}
    for p in pieces:
        r = rounds.get((p.cause_offset, p.round))
        if r is None:
            r = rounds[(p.cause_offset, p.round)] = Round(p.cause_id)
        item = p.item
        r.add(
            item,
            None
            if isinstance(item, UpdateMetadataSend) or item.state is None
            else state(item.state),
        )
    return rounds


class Chunk(NamedTuple, Generic[S]):
    """One UpdateMetadata record's worth of a send: its key and seq, recipients, the live
    brokers and its partitions' states in (topic, partition) order."""

    key: str
    seq: int
    recipients: tuple[int, ...]
    live: tuple[int, ...]
    states: tuple[S, ...]


def chunks(round_: int, r: Round[S]) -> Iterator[Chunk[S]]:
    """The round's sends in order, each split into records of at most
    MAX_PARTITIONS_PER_RECORD partitions."""
    shares = r.shares
    for site, sent in r.explicit.items():
        if not any(s in r.shared_sites for s in sent.unless_sites):
            shares.setdefault(("", site), {})
    for scope, site in sorted(shares):
        own = r.explicit.get(site) if scope == "" else None
        recipients = own.recipients if own is not None else r.live
        if not recipients:
            continue  # the broker set was empty, or none of it is live: nothing is sent
        states = [s for _, s in sorted(shares[(scope, site)].items(), key=_place) if s is not None]
        key = f"update-metadata-{round_:03d}" + (f"-{scope}" if scope else "") + f"-{site:03d}"
        parts = [
            states[i : i + MAX_PARTITIONS_PER_RECORD]
            for i in range(0, len(states), MAX_PARTITIONS_PER_RECORD)
        ]
        for seq, part in enumerate(parts or [[]]):
            yield Chunk(key, seq, recipients, r.live, tuple(part))


def _place(kv: tuple[tuple[str, int], object]) -> tuple[str, int]:
    return kv[0]


def _same(state: MetadataState) -> MetadataState:
    return state


def merge(pieces: Iterable[Piece]) -> Iterator[Send]:
    """The UpdateMetadata records of the pieces, per (cause, round) in send order."""
    for (cause, round_), r in sorted(gather(pieces, _same).items(), key=lambda kv: kv[0]):
        for c in chunks(round_, r):
            yield Send(
                cause,
                r.cause_id,
                c.key,
                c.seq,
                UpdateMetadataRecord(c.key, c.recipients, c.live, c.states),
            )
