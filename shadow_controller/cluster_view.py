"""The bridge's pure part: a live cluster as a value (`ClusterView`), the stand-ins for
what the admin API does not show (`settle`), and the contract events between the view the
bridge emitted last and the one it sees now (`diff`). No I/O; `bridge_io` reads the views
and `bridge` runs the loop.

First poll (no previous view): the bootstrap, what a newly elected Kafka controller reads
from its store: `BrokerStartup` for every broker and a `PartitionStateSnapshot` for every
partition (loaded while the shadow is inactive), then `ControllerFailover`.

Later polls, in this order (KafkaController.processBrokerChange starts new brokers before it
fails dead ones): `BrokerStartup` for brokers that joined, `BrokerFailure` for brokers that
left, `ControllerFailover` when the controller id changed, `TopicDeletion`, `TopicCreation`
(a topic whose id changed is a deletion then a creation), `PartitionExpansion`, and last an
`ObservedPartitionState` for every partition that is new or whose leader, ISR (as a set) or
leader epoch changed. A poll where nothing changed emits nothing.

Stand-ins (`settle`), for what no admin API exposes:

* The leader epoch, when the broker answers a Metadata version older than v7 (or -1): 0
  for a new partition, +1 whenever the observed leader changes.
* The partition epoch (ZK znode version / KRaft partition epoch): `ObservedPartitionState`
  omits it (the shadow then compares leader, epoch and ISR), and `PartitionStateSnapshot`
  carries `SNAPSHOT_PARTITION_EPOCH` (0).
* The controller epoch: 1 for the first controller seen, +1 whenever the observed
  controller id changes to another broker. Snapshots carry the current one.
* Broker epochs: `BrokerStartup` omits `broker_epoch`, so a broker that restarts between
  two polls is not seen as a bounce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

NO_LEADER = -1
NO_CONTROLLER = -1
SNAPSHOT_PARTITION_EPOCH = (
    0  # stand-in: the partition epoch is not observable through the admin API
)
FIRST_CONTROLLER_EPOCH = 1  # stand-in: the controller epoch is not observable either


# ---------------------------------------------------------------------------------------
# the view


@dataclass(frozen=True, slots=True)
class PartitionView:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]
    # None: the cluster did not report it (Metadata < v7, or -1); `settle` fills a stand-in.
    leader_epoch: int | None


@dataclass(frozen=True, slots=True)
class TopicView:
    partitions: tuple[tuple[int, PartitionView], ...]  # sorted by partition number
    topic_id: str | None = None

    def partition_map(self) -> dict[int, PartitionView]:
        return dict(self.partitions)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the bridge saw of the cluster in one poll (and, once settled, what it emitted)."""

    brokers: frozenset[int]
    controller_id: int
    topics: tuple[tuple[str, TopicView], ...]  # sorted by name
    controller_epoch: int | None = None  # None until `settle`
    cluster_id: str | None = None

    def topic_map(self) -> dict[str, TopicView]:
        return dict(self.topics)

    @staticmethod
    def of(
        brokers: Iterable[int],
        controller_id: int | None,
        topics: Mapping[str, Mapping[int, PartitionView] | TopicView],
        *,
        cluster_id: str | None = None,
        controller_epoch: int | None = None,
    ) -> ClusterView:
        """Build a view from plain mappings (sorted here, so equal clusters give equal views)."""
        items = []
        for name, value in topics.items():
            tv = value if isinstance(value, TopicView) else TopicView(tuple(sorted(value.items())))
            items.append((name, replace(tv, partitions=tuple(sorted(tv.partitions)))))
        return ClusterView(
            frozenset(brokers),
            NO_CONTROLLER if controller_id is None else controller_id,
            tuple(sorted(items)),
            controller_epoch,
            cluster_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "brokers": sorted(self.brokers),
            "controller_id": self.controller_id,
            "controller_epoch": self.controller_epoch,
            "topics": {
                name: {
                    "topic_id": tv.topic_id,
                    "partitions": {
                        str(p): {
                            "replicas": list(pv.replicas),
                            "leader": pv.leader,
                            "leader_epoch": pv.leader_epoch,
                            "isr": list(pv.isr),
                        }
                        for p, pv in tv.partitions
                    },
                }
                for name, tv in self.topics
            },
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> ClusterView:
        topics = {
            name: TopicView(
                tuple(
                    sorted(
                        (
                            int(p),
                            PartitionView(
                                tuple(pv["replicas"]),
                                pv["leader"],
                                tuple(pv["isr"]),
                                pv["leader_epoch"],
                            ),
                        )
                        for p, pv in t["partitions"].items()
                    )
                ),
                t.get("topic_id"),
            )
            for name, t in doc["topics"].items()
        }
        return ClusterView.of(
            doc["brokers"],
            doc["controller_id"],
            topics,
            cluster_id=doc.get("cluster_id"),
            controller_epoch=doc["controller_epoch"],
        )


def settle(previous: ClusterView | None, current: ClusterView) -> ClusterView:
    """Fill what the cluster does not show from the previous emitted view: the controller
    epoch (1 first, +1 when the controller id changes to another broker) and any missing
    leader epoch (0 for a new partition, +1 when the leader changed)."""
    if previous is None or previous.controller_epoch is None:
        epoch = FIRST_CONTROLLER_EPOCH
    elif current.controller_id != NO_CONTROLLER and current.controller_id != previous.controller_id:
        epoch = previous.controller_epoch + 1
    else:
        epoch = previous.controller_epoch
    before = previous.topic_map() if previous is not None else {}
    topics = []
    for name, tv in current.topics:
        old = before.get(name)
        old_parts = old.partition_map() if old is not None and old.topic_id == tv.topic_id else {}
        parts = []
        for p, pv in tv.partitions:
            if pv.leader_epoch is None:
                prev = old_parts.get(p)
                if prev is None or prev.leader_epoch is None:
                    stand_in = 0
                else:
                    stand_in = prev.leader_epoch + (1 if prev.leader != pv.leader else 0)
                pv = replace(pv, leader_epoch=stand_in)
            parts.append((p, pv))
        topics.append((name, replace(tv, partitions=tuple(parts))))
    return replace(current, controller_epoch=epoch, topics=tuple(topics))


# ---------------------------------------------------------------------------------------
# the diff


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, **fields}


def _snapshot(topic: str, p: int, pv: PartitionView, controller_epoch: int) -> dict[str, Any]:
    return _event(
        "PartitionStateSnapshot",
        topic=topic,
        partition=p,
        replicas=list(pv.replicas),
        leader=pv.leader,
        leader_epoch=pv.leader_epoch,
        isr=list(pv.isr),
        partition_epoch=SNAPSHOT_PARTITION_EPOCH,
        controller_epoch=controller_epoch,
    )


def _observed(topic: str, p: int, pv: PartitionView) -> dict[str, Any]:
    # partition_epoch and controller_epoch are left out: the cluster does not show them.
    return _event(
        "ObservedPartitionState",
        topic=topic,
        partition=p,
        leader=pv.leader,
        leader_epoch=pv.leader_epoch,
        isr=list(pv.isr),
        replicas=list(pv.replicas),
    )


def _assignment(parts: Iterable[tuple[int, PartitionView]]) -> dict[str, list[int]]:
    return {str(p): list(pv.replicas) for p, pv in parts}


def _changed(old: PartitionView, new: PartitionView) -> bool:
    return (
        old.leader != new.leader
        or old.leader_epoch != new.leader_epoch
        or frozenset(old.isr) != frozenset(new.isr)
    )


def bootstrap(current: ClusterView) -> list[dict[str, Any]]:
    """The first poll: brokers and partition states loaded while inactive, then the failover."""
    _require_settled(current)
    epoch = current.controller_epoch
    assert epoch is not None  # settled
    events = [_event("BrokerStartup", broker_id=b) for b in sorted(current.brokers)]
    for name, tv in current.topics:
        events.extend(_snapshot(name, p, pv, epoch) for p, pv in tv.partitions)
    if current.controller_id != NO_CONTROLLER:
        events.append(
            _event(
                "ControllerFailover",
                controller_id=current.controller_id,
                controller_epoch=current.controller_epoch,
            )
        )
    return events


def diff(previous: ClusterView | None, current: ClusterView) -> list[dict[str, Any]]:
    """The contract events that take the shadow from `previous` (the last emitted view, None
    before the first poll) to `current` (a settled view). Nothing changed: no events."""
    if previous is None:
        return bootstrap(current)
    _require_settled(current)
    events = [
        _event("BrokerStartup", broker_id=b) for b in sorted(current.brokers - previous.brokers)
    ]
    events += [
        _event("BrokerFailure", broker_id=b) for b in sorted(previous.brokers - current.brokers)
    ]
    controller_moved = current.controller_id != previous.controller_id
    if controller_moved and current.controller_id != NO_CONTROLLER:
        events.append(
            _event(
                "ControllerFailover",
                controller_id=current.controller_id,
                controller_epoch=current.controller_epoch,
            )
        )
    before, after = previous.topic_map(), current.topic_map()
    recreated = {n for n in before.keys() & after.keys() if before[n].topic_id != after[n].topic_id}
    events += [
        _event("TopicDeletion", topic=n) for n in sorted(before.keys() - after.keys() | recreated)
    ]
    created = sorted(after.keys() - before.keys() | recreated)
    events += [
        _event("TopicCreation", topic=n, partitions=_assignment(after[n].partitions))
        for n in created
    ]
    observed: list[dict[str, Any]] = []
    for name, tv in current.topics:
        if name in created:
            observed += [_observed(name, p, pv) for p, pv in tv.partitions]
            continue
        old = before[name].partition_map()
        added = [(p, pv) for p, pv in tv.partitions if p not in old]
        if added:
            events.append(_event("PartitionExpansion", topic=name, partitions=_assignment(added)))
        observed += [
            _observed(name, p, pv)
            for p, pv in tv.partitions
            if p not in old or _changed(old[p], pv)
        ]
    return events + observed


def event_key(event: Mapping[str, Any]) -> str:
    """The record key: the entity the event is about."""
    if "partition" in event:
        return f"{event['topic']}-{event['partition']}"
    if "topic" in event:
        return f"topic-{event['topic']}"
    if "broker_id" in event:
        return f"broker-{event['broker_id']}"
    return "controller"


def _require_settled(view: ClusterView) -> None:
    if view.controller_epoch is None or any(
        pv.leader_epoch is None for _, tv in view.topics for _, pv in tv.partitions
    ):
        raise ValueError("diff needs a settled view (see settle)")
