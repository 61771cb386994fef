"""The znodes Kafka 3.9's ZooKeeper controller reads and writes, as values (pure, no I/O).

Paths and JSON layouts are Kafka's `core/src/main/scala/kafka/zk/ZkData.scala` (3.9):

* `/brokers/ids/<id>` (`BrokerIdZNode`, JSON versions 1 to 5): an ephemeral registration;
  its creation zxid (`czxid`) is the broker epoch (`KafkaZkClient.registerBroker` returns
  `stat.getCzxid`, and the controller reads it in `getAllBrokerAndEpochsInCluster`).
* `/brokers/topics/<topic>` (`TopicZNode`, version 3): `partitions` (the assignment),
  `adding_replicas` and `removing_replicas` (KIP-455) and `topic_id`.
* `/brokers/topics/<topic>/partitions/<p>/state` (`TopicPartitionStateZNode`): `leader`,
  `leader_epoch`, `isr`, `controller_epoch`, `leader_recovery_state?`; the znode's
  version is the partition epoch (`LeaderAndIsr.partitionEpoch` = `stat.getVersion`).
* `/admin/delete_topics/<topic>`, `/admin/reassign_partitions`,
  `/admin/preferred_replica_election`, `/isr_change_notification/isr_change_<n>`,
  `/log_dir_event_notification/log_dir_event_<n>`, `/controller`, `/controller_epoch`,
  `/config/topics/<topic>`, `/config/brokers/<default>`, `/config/changes`, `/feature`.

`Node` is one znode as read: its data and the parts of its `Stat` the bridge uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from state_machines.errors import ShadowControllerError

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
# ZooKeeper's name of the cluster-wide broker defaults (ConfigEntityName.DEFAULT)
BROKER_DEFAULT = "/config/brokers/<default>"
CONFIG_CHANGES = "/config/changes"
FEATURE = "/feature"

# parents whose every child the bridge reads
PARENTS = (
    BROKER_IDS,
    TOPICS,
    DELETE_TOPICS,
    CONFIG_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    LOG_DIR_EVENT_NOTIFICATION,
)
# single znodes the bridge reads, present or not
SINGLES = (
    CONTROLLER,
    CONTROLLER_EPOCH,
    REASSIGN_PARTITIONS,
    PREFERRED_REPLICA_ELECTION,
    BROKER_DEFAULT,
    FEATURE,
)
# what a controller decision reads from the broker defaults (contract: BrokerConfigChange)
BROKER_DEFAULT_KEYS = ("unclean.leader.election.enable", "min.insync.replicas")


@dataclass(frozen=True, slots=True)
class Node:
    """One znode as read: data (UTF-8 text; "" for none) and its Stat's zxids and version."""

    data: str
    czxid: int
    mzxid: int
    version: int
    mtime: int  # ms

    def to_json(self) -> list[Any]:
        return [self.data, self.czxid, self.mzxid, self.version, self.mtime]

    @staticmethod
    def from_json(doc: list[Any]) -> Node:
        data, czxid, mzxid, version, mtime = doc
        return Node(str(data), int(czxid), int(mzxid), int(version), int(mtime))


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def parse_state_path(path: str) -> tuple[str, int] | None:
    """(topic, partition) of a state znode's path, else None."""
    parts = path.split("/")
    # ["", "brokers", "topics", T, "partitions", P, "state"]
    if (
        len(parts) == 7
        and parts[1:3] == ["brokers", "topics"]
        and parts[4] == "partitions"
        and parts[6] == "state"
        and parts[5].isascii()
        and parts[5].isdigit()
    ):
        return parts[3], int(parts[5])
    return None


def child_of(parent: str, path: str) -> str | None:
    """The child's name when `path` is a direct child of `parent`."""
    if path.startswith(parent + "/"):
        name = path[len(parent) + 1 :]
        if name and "/" not in name:
            return name
    return None


class ZnodeError(ShadowControllerError, ValueError):
    """A znode whose data is not what Kafka 3.9 writes there."""


def _json(node: Node, path: str) -> dict[str, Any]:
    try:
        doc = json.loads(node.data)
    except ValueError as exc:
        raise ZnodeError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ZnodeError(f"{path}: not a JSON object")
    return doc


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise ZnodeError(f"{what}: not a list of broker ids: {value!r}")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class PartitionStateZnode:
    """`TopicPartitionStateZNode.decode`: LeaderIsrAndControllerEpoch, the version being the
    partition epoch (zkVersion)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int  # 0 RECOVERED, 1 RECOVERING
    version: int

    def fields(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "partition_epoch": self.version,
            "controller_epoch": self.controller_epoch,
        }


def decode_state(path: str, node: Node) -> PartitionStateZnode:
    doc = _json(node, path)
    try:
        leader, epoch, ce = doc["leader"], doc["leader_epoch"], doc["controller_epoch"]
    except KeyError as exc:
        raise ZnodeError(f"{path}: no {exc.args[0]!r}") from None
    if not all(type(v) is int for v in (leader, epoch, ce)):
        raise ZnodeError(f"{path}: leader, leader_epoch and controller_epoch must be integers")
    recovery = doc.get("leader_recovery_state", 0)
    if recovery not in (0, 1):
        raise ZnodeError(f"{path}: leader_recovery_state {recovery!r}")
    return PartitionStateZnode(
        leader, epoch, _ints(doc.get("isr"), f"{path} isr"), ce, recovery, node.version
    )


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    """One partition of `TopicZNode`: ReplicaAssignment(replicas, adding, removing)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def target(self) -> tuple[int, ...]:
        """The reassignment's target (ReplicaAssignment.targetReplicas): replicas less the
        removing ones, in order (`fromOldAndNewReplicas` puts the new replicas first)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)


@dataclass(frozen=True, slots=True)
class TopicZnode:
    topic_id: str | None
    partitions: tuple[tuple[int, PartitionAssignment], ...]  # sorted by partition

    def partition_map(self) -> dict[int, PartitionAssignment]:
        return dict(self.partitions)


def decode_topic(path: str, node: Node) -> TopicZnode:
    """`TopicZNode.decode`."""
    doc = _json(node, path)
    parts = doc.get("partitions") or {}
    adding = doc.get("adding_replicas") or {}
    removing = doc.get("removing_replicas") or {}
    if (
        not isinstance(parts, dict)
        or not isinstance(adding, dict)
        or not isinstance(removing, dict)
    ):
        raise ZnodeError(f"{path}: partitions, adding_replicas, removing_replicas must be objects")
    out = []
    for key, replicas in parts.items():
        if not (key.isascii() and key.isdigit()):
            raise ZnodeError(f"{path}: partition {key!r}")
        out.append(
            (
                int(key),
                PartitionAssignment(
                    _ints(replicas, f"{path} partition {key}"),
                    _ints(adding.get(key, []), f"{path} adding_replicas {key}"),
                    _ints(removing.get(key, []), f"{path} removing_replicas {key}"),
                ),
            )
        )
    topic_id = doc.get("topic_id")
    return TopicZnode(topic_id if isinstance(topic_id, str) else None, tuple(sorted(out)))


def decode_controller(path: str, node: Node) -> int:
    """`ControllerZNode.decode`: the controller's broker id."""
    doc = _json(node, path)
    broker = doc.get("brokerid")
    if type(broker) is not int:
        raise ZnodeError(f"{path}: brokerid {broker!r}")
    return broker


def decode_controller_epoch(path: str, node: Node) -> int:
    """`ControllerEpochZNode.decode`: the epoch as decimal text."""
    try:
        return int(node.data.strip())
    except ValueError:
        raise ZnodeError(f"{path}: not an epoch: {node.data[:40]!r}") from None


def decode_configs(path: str, node: Node) -> dict[str, str]:
    """`ConfigEntityZNode`: {"version":1,"config":{...}}."""
    doc = _json(node, path)
    config = doc.get("config") or {}
    if not isinstance(config, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in config.items()
    ):
        raise ZnodeError(f"{path}: config must map strings to strings")
    return dict(config)


def decode_partition_list(path: str, node: Node) -> list[tuple[str, int]]:
    """`PreferredReplicaElectionZNode.decode` (and the ISR change notification's list)."""
    doc = _json(node, path)
    out = []
    for item in doc.get("partitions") or []:
        if not isinstance(item, dict):
            raise ZnodeError(f"{path}: partitions must be objects")
        topic, partition = item.get("topic"), item.get("partition")
        if not isinstance(topic, str) or type(partition) is not int:
            raise ZnodeError(f"{path}: partition entry {item!r}")
        out.append((topic, partition))
    return out


def decode_log_dir_event(path: str, node: Node) -> int:
    """`LogDirEventNotificationSequenceZNode.decode`: the broker whose log dir failed."""
    doc = _json(node, path)
    broker = doc.get("broker")
    if type(broker) is not int:
        raise ZnodeError(f"{path}: broker {broker!r}")
    return broker
