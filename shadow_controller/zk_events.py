"""ZooKeeper changes as the controller's inputs, in zxid order (pure, no I/O).

Theory of operation. The bridge keeps the znodes it has taken in as a map path -> `Node`
(the *view*). A read of the live ZooKeeper gives another map; `diff_nodes` gives the
`Change`s between the two, sorted by zxid (a creation or a change by its `mzxid`, a
deletion by its parent's `pzxid`, the zxid of the parent's last child change).
`Translator.apply` takes one change at a time and says what it means for the controller:

* an input Kafka's controller reads from ZooKeeper: a contract event (`Emit`);
* a controller's write to a partition state znode: a `StateWrite`, to be checked;
* a topic znode gone after a deletion: `TopicGone` (the StopReplica answers the deletion
  waited for were all successes, `TopicDeletionManager.completeDeleteTopic`);
* something worth saying that is no input the contract carries: a `Note`.

Which change is which input (`KafkaController`, 3.9):

* `/brokers/ids/<id>` created, or created again (a new czxid): `BrokerStartup` with
  broker_epoch = czxid (a higher epoch of a known id is a bounce); deleted: `BrokerFailure`
  (`processBrokerChange`);
* `/brokers/topics/<t>` created: `TopicCreation` with `/config/topics/<t>`
  (`processTopicChange`); more partitions: `PartitionExpansion`
  (`processPartitionModifications`); adding/removing replicas with a new target:
  `PartitionReassignment` (KIP-455: the API's and the legacy znode's reassignments both
  show here first);
* `/admin/delete_topics/<t>` created: `TopicDeletion` (`processTopicDeletion`);
* `/admin/preferred_replica_election` created: `ReplicaLeaderElection` PREFERRED, trigger zk;
* `/controller_epoch` changed: `ControllerFailover` with `/controller`'s broker id;
* `/config/topics/<t>` changed: `TopicConfigChange`; `/config/brokers/<default>` changed:
  `BrokerConfigChange` (the keys a decision reads).

The controller's own writes (the topic znode at a reassignment's end, notifications it
deletes) are no input. A reassignment's `/admin/reassign_partitions`, ISR change
notifications and config change notifications only tell the controller to read what the
rows above already read. A log dir failure notification is a `Note`: ZooKeeper does not
say which partitions were on the failed directory (the broker answers the controller's
LeaderAndIsr with them), so the contract's `ReplicaDirFailure` cannot be made from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import zk_znodes as z
from .zk_znodes import Node, PartitionStateZnode


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    old: Node | None
    new: Node | None
    zxid: int


@dataclass(frozen=True, slots=True)
class Emit:
    event: dict[str, Any]
    zxid: int
    ts: int


@dataclass(frozen=True, slots=True)
class StateWrite:
    """A write to a partition state znode (`KafkaZkClient.updateLeaderAndIsr` or
    `createTopicPartitionStatesRaw`)."""

    topic: str
    partition: int
    state: PartitionStateZnode
    path: str
    zxid: int
    ts: int


@dataclass(frozen=True, slots=True)
class TopicGone:
    topic: str
    zxid: int
    ts: int


@dataclass(frozen=True, slots=True)
class ControllerGone:
    """`/controller` deleted: no controller acts until the next one registers, and that one
    reads everything (`KafkaController.onControllerFailover`)."""

    zxid: int


@dataclass(frozen=True, slots=True)
class Note:
    text: str
    zxid: int


def _priority(path: str) -> int:
    # One multi-op (one zxid) creates /controller and sets /controller_epoch
    # (KafkaZkClient.registerControllerAndIncrementControllerEpoch): read the id first.
    if path == z.CONTROLLER:
        return 0
    if path == z.CONTROLLER_EPOCH:
        return 1
    return 2


Item = Emit | StateWrite | TopicGone | ControllerGone | Note


def change_order(change: Change) -> tuple[int, int, int, str]:
    return (change.zxid, 0 if change.new is None else 1, _priority(change.path), change.path)


def diff_nodes(
    old: Mapping[str, Node], new: Mapping[str, Node], deleted_at: Mapping[str, int]
) -> list[Change]:
    """The changes from `old` to `new`, in zxid order. `deleted_at` gives a deleted path's
    zxid (its parent's pzxid, or the last zxid seen when the parent is gone too)."""
    changes = []
    for path, node in new.items():
        before = old.get(path)
        if before is None or before.mzxid != node.mzxid or before.czxid != node.czxid:
            changes.append(Change(path, before, node, node.mzxid))
    for path, before in old.items():
        if path not in new:
            changes.append(Change(path, before, None, deleted_at.get(path, before.mzxid)))
    changes.sort(key=change_order)
    return changes


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, **fields}


def _assignment(parts: Iterable[tuple[int, z.PartitionAssignment]]) -> dict[str, list[int]]:
    return {str(p): list(a.replicas) for p, a in parts}


class Translator:
    """Applies changes to the view and says what each is (see the module docstring)."""

    def __init__(self, nodes: Mapping[str, Node] | None = None) -> None:
        self.nodes: dict[str, Node] = dict(nodes or {})
        self.last_ts = max((n.mtime for n in self.nodes.values()), default=0)

    def _topic(self, name: str) -> z.TopicZnode | None:
        node = self.nodes.get(f"{z.TOPICS}/{name}")
        return None if node is None else z.decode_topic(f"{z.TOPICS}/{name}", node)

    def _configs(self, name: str) -> dict[str, str]:
        path = f"{z.CONFIG_TOPICS}/{name}"
        node = self.nodes.get(path)
        return {} if node is None else z.decode_configs(path, node)

    def apply(self, change: Change) -> list[Item]:
        """Take `change` into the view; what it means, as the controller's inputs."""
        path, old, new = change.path, change.old, change.new
        ts = max(self.last_ts, new.mtime if new is not None else 0)
        self.last_ts = ts
        # the view holds the change before its meaning is read: a failover's epoch comes
        # with the new /controller (one multi-op), and a new topic with its configs
        if new is None:
            self.nodes.pop(path, None)
        else:
            self.nodes[path] = new
        try:
            return self._meaning(path, old, new, change.zxid, ts)
        except z.ZnodeError as exc:
            return [Note(f"skipped, not what Kafka 3.9 writes: {exc}", change.zxid)]

    def _meaning(
        self, path: str, old: Node | None, new: Node | None, zxid: int, ts: int
    ) -> list[Item]:
        if path == z.CONTROLLER and new is None:
            return [ControllerGone(zxid)]
        tp = z.parse_state_path(path)
        if tp is not None:
            if new is None:
                return []
            return [StateWrite(tp[0], tp[1], z.decode_state(path, new), path, zxid, ts)]
        if (name := z.child_of(z.BROKER_IDS, path)) is not None:
            if not name.isdigit():
                return [Note(f"{path}: not a broker id", zxid)]
            broker = int(name)
            if new is None:
                return [Emit(_event("BrokerFailure", broker_id=broker), zxid, ts)]
            if old is None or old.czxid != new.czxid:
                # KafkaZkClient.getAllBrokerAndEpochsInCluster: the epoch is the czxid
                event = _event("BrokerStartup", broker_id=broker, broker_epoch=new.czxid)
                return [Emit(event, zxid, ts)]
            return []
        if (name := z.child_of(z.TOPICS, path)) is not None:
            return self._topic_change(name, path, old, new, zxid, ts)
        if (name := z.child_of(z.DELETE_TOPICS, path)) is not None:
            if new is not None and old is None:
                return [Emit(_event("TopicDeletion", topic=name), zxid, ts)]
            return []
        if (name := z.child_of(z.CONFIG_TOPICS, path)) is not None:
            if new is None or self._topic(name) is None:
                return []  # a new topic's configs travel with its TopicCreation
            event = _event("TopicConfigChange", topic=name, configs=z.decode_configs(path, new))
            return [Emit(event, zxid, ts)]
        if path == z.BROKER_DEFAULT:
            before = {} if old is None else z.decode_configs(path, old)
            after = {} if new is None else z.decode_configs(path, new)
            configs: dict[str, str | None] = {
                k: after.get(k) for k in z.BROKER_DEFAULT_KEYS if before.get(k) != after.get(k)
            }
            if not configs:
                return []
            return [Emit(_event("BrokerConfigChange", configs=configs), zxid, ts)]
        if path == z.CONTROLLER_EPOCH:
            if new is None:
                return []
            epoch = z.decode_controller_epoch(path, new)
            controller = self.nodes.get(z.CONTROLLER)
            if controller is None:
                return [Note(f"controller epoch {epoch} without a /controller", zxid)]
            event = _event(
                "ControllerFailover",
                controller_id=z.decode_controller(z.CONTROLLER, controller),
                controller_epoch=epoch,
            )
            return [Emit(event, zxid, ts)]
        if path == z.PREFERRED_REPLICA_ELECTION and new is not None and old is None:
            partitions = [
                {"topic": t, "partition": p} for t, p in z.decode_partition_list(path, new)
            ]
            event = _event(
                "ReplicaLeaderElection", election_type="PREFERRED", partitions=partitions
            )
            event["trigger"] = "zk"
            return [Emit(event, zxid, ts)]
        if z.child_of(z.LOG_DIR_EVENT_NOTIFICATION, path) is not None and new is not None:
            broker = z.decode_log_dir_event(path, new)
            return [
                Note(
                    f"broker {broker} reported a log dir failure ({path}); ZooKeeper does not "
                    "say which partitions it held, so later writes for them may diverge",
                    zxid,
                )
            ]
        return []

    def _topic_change(
        self, name: str, path: str, old: Node | None, new: Node | None, zxid: int, ts: int
    ) -> list[Item]:
        if new is None:
            return [TopicGone(name, zxid, ts)]
        after = z.decode_topic(path, new)
        if old is None or old.czxid != new.czxid:
            out: list[Item] = []
            if old is not None:  # deleted and created again between two reads
                out.append(TopicGone(name, zxid, ts))
            event = _event("TopicCreation", topic=name, partitions=_assignment(after.partitions))
            configs = self._configs(name)
            if configs:
                event["configs"] = configs
            out.append(Emit(event, zxid, ts))
            return out
        before = z.decode_topic(path, old).partition_map()
        added = [(p, a) for p, a in after.partitions if p not in before]
        out = []
        if added:
            event = _event("PartitionExpansion", topic=name, partitions=_assignment(added))
            out.append(Emit(event, zxid, ts))
        for p, a in after.partitions:
            b = before.get(p)
            if b is None or not a.reassigning:
                continue  # new, or the controller's own write at a reassignment's end
            if b.reassigning and b.target == a.target:
                continue
            event = _event(
                "PartitionReassignment", topic=name, partition=p, target_replicas=list(a.target)
            )
            out.append(Emit(event, zxid, ts))
        return out


def bootstrap(nodes: Mapping[str, Node]) -> list[Emit | Note]:
    """What a newly elected controller reads (`KafkaController.initializeControllerContext`),
    as events that load context while the shadow is inactive, then `ControllerFailover`."""
    out: list[Emit | Note] = []
    ts = max((n.mtime for n in nodes.values()), default=0)

    def emit(kind: str, zxid: int = 0, **fields: Any) -> None:
        out.append(Emit(_event(kind, **fields), zxid, ts))

    brokers = sorted(
        (int(name), node.czxid)
        for path, node in nodes.items()
        if (name := z.child_of(z.BROKER_IDS, path)) is not None and name.isdigit()
    )
    for broker, czxid in brokers:
        emit("BrokerStartup", czxid, broker_id=broker, broker_epoch=czxid)
    default = nodes.get(z.BROKER_DEFAULT)
    if default is not None:
        configs = z.decode_configs(z.BROKER_DEFAULT, default)
        picked = {k: configs[k] for k in z.BROKER_DEFAULT_KEYS if k in configs}
        if picked:
            emit("BrokerConfigChange", default.mzxid, configs=picked)
    controller_epoch = 0
    if (node := nodes.get(z.CONTROLLER_EPOCH)) is not None:
        controller_epoch = z.decode_controller_epoch(z.CONTROLLER_EPOCH, node)
    topics = sorted(name for path in nodes if (name := z.child_of(z.TOPICS, path)) is not None)
    for name in topics:
        path = f"{z.TOPICS}/{name}"
        try:
            topic = z.decode_topic(path, nodes[path])
        except z.ZnodeError as exc:
            out.append(Note(f"skipped, not what Kafka 3.9 writes: {exc}", nodes[path].mzxid))
            continue
        configs_node = nodes.get(f"{z.CONFIG_TOPICS}/{name}")
        configs = {} if configs_node is None else z.decode_configs(path, configs_node)
        states = {}
        for p, _ in topic.partitions:
            state = nodes.get(z.state_path(name, p))
            if state is not None:
                states[p] = z.decode_state(z.state_path(name, p), state)
        if not states:
            fields: dict[str, Any] = {"partitions": _assignment(topic.partitions)}
            if configs:
                fields["configs"] = configs
            emit("TopicCreation", nodes[path].czxid, topic=name, **fields)
            continue
        for p, a in topic.partitions:
            s = states.get(p)
            if s is None:
                continue
            snapshot: dict[str, Any] = {
                "topic": name,
                "partition": p,
                "replicas": list(a.replicas),
                "leader": s.leader,
                "leader_epoch": s.leader_epoch,
                "isr": list(s.isr),
                "partition_epoch": s.version,
                "controller_epoch": s.controller_epoch,
            }
            if a.adding:
                snapshot["adding_replicas"] = list(a.adding)
            if a.removing:
                snapshot["removing_replicas"] = list(a.removing)
            if s.leader_recovery_state == 1:
                snapshot["leader_recovery_state"] = "RECOVERING"
            emit("PartitionStateSnapshot", **snapshot)
        if configs:
            emit("TopicConfigChange", topic=name, configs=configs)
    for path in sorted(nodes):
        if (
            name := z.child_of(z.DELETE_TOPICS, path)
        ) is not None and f"{z.TOPICS}/{name}" in nodes:
            emit("TopicDeletion", nodes[path].czxid, topic=name)
    controller = nodes.get(z.CONTROLLER)
    if controller is not None and controller_epoch > 0:
        emit(
            "ControllerFailover",
            controller_id=z.decode_controller(z.CONTROLLER, controller),
            controller_epoch=controller_epoch,
        )
    return out
