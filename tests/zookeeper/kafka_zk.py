"""A test cluster that writes znodes as Kafka 3.9's brokers, admin client and controller
write them (core/src/main/scala/kafka/zk/ZkData.scala, KafkaZkClient.scala).

JSON bytes. Kafka encodes with Jackson over Scala maps (`Json.encodeAsBytes(map.asJava)`),
so a znode's key order is the Scala map's iteration order:

* an immutable `Map(...)` of up to four entries keeps insertion order (`Map1`..`Map4`:
  `ControllerZNode`, `ConfigEntityZNode`, the notifications); of five or more it is a hash
  trie (`TopicPartitionStateZNode`: `{"controller_epoch":..,"leader":..,"version":1,
  "leader_epoch":..,"isr":[..]}`), ordered by `Hashing.improve(key.hashCode)` five bits at
  a time (`immutable_order`);
* a `mutable.Map` (`TopicZNode`, `BrokerIdZNode`, the partitions map inside `TopicZNode`)
  iterates its hash table from the last bucket down, each bucket newest first, the index
  being the high bits of a byte-swapped, rotated `hashCode` (`mutable_order`). This is the
  order real clusters' znodes show (`{"removing_replicas":{},"partitions":{"2":[..],"1":..,
  "0":..,"3":..},"topic_id":..,"adding_replicas":{},"version":3}`; a v4 registration's
  `{"listener_security_protocol_map":..,"endpoints":..,"jmx_port":..,"host":..,
  "timestamp":..,"port":..,"version":4}`).

The bridge parses JSON and never depends on the order; the writer keeps it so the tests
read what a cluster holds.

Broker registrations are ephemeral znodes of each broker's own session: a broker fails
when its session closes, and its registration's czxid (the broker epoch) is new at every
start. `/controller` is the controller broker's ephemeral znode, created with
`/controller_epoch` + 1 in one multi-op (`registerControllerAndIncrementControllerEpoch`).
Every state znode write checks the version it read (`updateLeaderAndIsr`'s zkVersion).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

# -- Scala's iteration orders ----------------------------------------------------------


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def java_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return _s32(h)


def _improve(h: int) -> int:  # scala.collection.Hashing.improve
    h = _s32(h + ~_s32(h << 9))
    h = _s32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _s32(h + _s32(h << 4))
    return (h ^ ((h & 0xFFFFFFFF) >> 10)) & 0xFFFFFFFF


def immutable_order(keys: Sequence[str]) -> list[str]:
    if len(keys) <= 4:
        return list(keys)

    def node(items: list[str], shift: int) -> list[str]:
        frags: dict[int, list[str]] = {}
        for k in items:
            frags.setdefault((_improve(java_hash(k)) >> shift) & 31, []).append(k)
        inline = [ks[0] for _, ks in sorted(frags.items()) if len(ks) == 1]
        subs = [node(ks, shift + 5) for _, ks in sorted(frags.items()) if len(ks) > 1]
        return inline + [k for s in subs for k in s]

    return node(list(keys), 0)


def _byteswap32(v: int) -> int:  # scala.util.hashing.byteswap32
    hc = _s32(v * 0x9E3775CD)
    hc = int.from_bytes((hc & 0xFFFFFFFF).to_bytes(4, "big"), "little")
    return _s32(hc * 0x9E3775CD)


def mutable_order(keys: Sequence[str]) -> list[str]:
    size = 16
    while len(keys) > int(size * 0.75):
        size *= 2
    ones = size - 1
    seed = bin(ones).count("1")
    exponent = 32 - ones.bit_length()

    def index(k: str) -> int:
        i = _byteswap32(java_hash(k)) & 0xFFFFFFFF
        rotated = ((i >> seed) | (i << (32 - seed))) & 0xFFFFFFFF
        return (rotated >> exponent) & ones

    buckets: dict[int, list[str]] = {}
    for k in keys:
        buckets.setdefault(index(k), []).insert(0, k)
    return [k for i in sorted(buckets, reverse=True) for k in buckets[i]]


def encode(doc: dict[str, Any], order: Any) -> bytes:
    return _dumps(doc, order).encode()


def _dumps(value: Any, order: Any) -> str:
    if isinstance(value, dict):
        keys = order(list(value))
        return "{" + ",".join(json.dumps(k) + ":" + _dumps(value[k], order) for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps(v, order) for v in value) + "]"
    return json.dumps(value)


# -- ZkData's encoders -----------------------------------------------------------------


def broker_znode(broker: int, port: int, timestamp_ms: int) -> bytes:
    """`BrokerIdZNode.encode`, JSON version 5 (metadata.version >= 2.7)."""
    doc = {
        "version": 5,
        "host": "localhost",
        "port": port,
        "endpoints": [f"PLAINTEXT://localhost:{port}"],
        "jmx_port": -1,
        "timestamp": str(timestamp_ms),
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "features": {},
    }
    return encode(doc, mutable_order)


def topic_znode(
    topic_id: str, assignment: dict[int, tuple[list[int], list[int], list[int]]]
) -> bytes:
    """`TopicZNode.encode`: version 3 with the KIP-455 maps and the topic id."""
    keys = [str(p) for p in assignment]  # inserted in partition order
    parts = {k: assignment[int(k)][0] for k in mutable_order(keys)}
    adding = {str(p): a for p, (_, a, _) in assignment.items() if a}
    removing = {str(p): r for p, (_, _, r) in assignment.items() if r}
    body = {
        "version": 3,
        "partitions": parts,
        "adding_replicas": adding,
        "removing_replicas": removing,
        "topic_id": topic_id,
    }
    top = mutable_order(list(body))
    return (
        "{"
        + ",".join(
            json.dumps(k)
            + ":"
            + (
                "{"
                + ",".join(
                    json.dumps(p) + ":" + json.dumps(v, separators=(",", ":"))
                    for p, v in (
                        body[k].items()
                        if k == "partitions"
                        else ((q, body[k][q]) for q in mutable_order(list(body[k])))
                    )
                )
                + "}"
                if isinstance(body[k], dict)
                else json.dumps(body[k])
            )
            for k in top
        )
        + "}"
    ).encode()


def state_znode(leader: int, leader_epoch: int, isr: Iterable[int], controller_epoch: int) -> bytes:
    """`TopicPartitionStateZNode.encode` (RECOVERED: no leader_recovery_state)."""
    doc = {
        "version": 1,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "controller_epoch": controller_epoch,
        "isr": list(isr),
    }
    return encode(doc, immutable_order)


def controller_znode(broker: int, timestamp_ms: int) -> bytes:
    """`ControllerZNode.encode` (version 2, kraftControllerEpoch -1)."""
    doc = {
        "version": 2,
        "brokerid": broker,
        "timestamp": str(timestamp_ms),
        "kraftControllerEpoch": -1,
    }
    return encode(doc, immutable_order)


def config_znode(config: dict[str, str]) -> bytes:
    """`ConfigEntityZNode.encode`."""
    return encode({"version": 1, "config": config}, immutable_order)


# -- the cluster -----------------------------------------------------------------------


@dataclass
class State:
    leader: int
    leader_epoch: int
    isr: list[int]
    version: int


# how many connect attempts fit in one session timeout (see KafkaZkCluster._session)
CONNECT_ATTEMPTS_PER_SESSION_TIMEOUT = 6


class KafkaZkCluster:
    """Brokers (one ZooKeeper session each), the admin client and the controller, writing
    as Kafka 3.9 does. `states` is what the controller last wrote."""

    def __init__(self, connect: str, session_timeout_s: float = 60.0) -> None:
        self.connect = connect
        self.session_timeout_s = session_timeout_s
        self.admin = self._session()
        self.brokers: dict[int, KazooClient] = {}
        self.controller_id: int | None = None
        self.controller_epoch = 0
        self.epoch_zk_version = -1  # /controller_epoch's version once a controller is elected
        self.states: dict[tuple[str, int], State] = {}
        self.assignments: dict[str, dict[int, tuple[list[int], list[int], list[int]]]] = {}
        self.topic_ids: dict[str, str] = {}
        for path in (
            "/brokers/ids",
            "/brokers/topics",
            "/admin/delete_topics",
            "/config/topics",
            "/config/changes",
            "/isr_change_notification",
            "/log_dir_event_notification",
        ):
            self.admin.ensure_path(path)

    def _session(self) -> KazooClient:
        # kazoo's default connection back-off doubles up to 60 s, so after a 30 s outage a
        # session may sleep most of a minute before it tries again; the bridge caps it at 5 s
        # (zk_reader), the test cluster at 1 s so that it is never the slow side
        #
        # kazoo waits session timeout / number of hosts for the server's answer to a connect
        # request (connection.py, ConnectionHandler._connect): with one host, 60 s. A server
        # just restarted under load once left one session's request unanswered, and the
        # session hung for the whole minute (CI, 2026-11-28). The same server named six
        # times makes one unanswered attempt cost 10 s before the next; the session, its
        # timeout and its ephemeral znodes are unchanged.
        hosts, slash, chroot = self.connect.partition("/")
        client = KazooClient(
            hosts=",".join([hosts] * CONNECT_ATTEMPTS_PER_SESSION_TIMEOUT) + slash + chroot,
            timeout=self.session_timeout_s,
            connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
        )
        client.start(timeout=30)
        return client

    def wait_connected(self, deadline_s: float = 60.0) -> None:
        """Until every session of the cluster is connected again (after an outage)."""
        deadline = time.monotonic() + deadline_s
        sessions = {"admin": self.admin, **{f"broker {b}": c for b, c in self.brokers.items()}}
        while not all(c.connected for c in sessions.values()):
            if time.monotonic() > deadline:
                down = [name for name, c in sessions.items() if not c.connected]
                raise AssertionError(f"sessions not reconnected after {deadline_s} s: {down}")
            time.sleep(0.05)

    def close(self) -> None:
        for c in [*self.brokers.values(), self.admin]:
            c.stop()
            c.close()
        self.brokers.clear()

    # brokers (KafkaZkClient.registerBroker)
    def start_broker(self, broker: int) -> int:
        session = self._session()
        self.brokers[broker] = session
        path = session.create(
            f"/brokers/ids/{broker}", broker_znode(broker, 9090 + broker, _now()), ephemeral=True
        )
        return int(session.exists(path).czxid)

    def fail_broker(self, broker: int) -> None:
        """The broker's session ends: its registration (and /controller, if it was the
        controller) go with it."""
        session = self.brokers.pop(broker)
        session.stop()
        session.close()
        if self.controller_id == broker:
            self.controller_id = None

    # the controller's election (KafkaZkClient.registerControllerAndIncrementControllerEpoch)
    def elect_controller(self, broker: int) -> None:
        if not self.admin.exists("/controller_epoch"):
            self.admin.create("/controller_epoch", b"0")  # InitialControllerEpoch
        data, stat = self.admin.get("/controller_epoch")
        epoch = int(data) + 1
        tx = self.brokers[broker].transaction()
        tx.create("/controller", controller_znode(broker, _now()), ephemeral=True)
        tx.set_data("/controller_epoch", str(epoch).encode(), version=stat.version)
        _committed(tx)
        self.controller_id, self.controller_epoch = broker, epoch
        self.epoch_zk_version = self.admin.exists("/controller_epoch").version

    def _fenced(self, op: str, path: str, *args: Any, **kwargs: Any) -> Any:
        """One controller write, fenced by the controller epoch's zkVersion
        (`KafkaZkClient.wrapRequestWithControllerEpochCheck`: a multi-op of a CheckOp on
        /controller_epoch and the write); the write's result."""
        tx = self.admin.transaction()
        tx.check("/controller_epoch", self.epoch_zk_version)
        getattr(tx, op)(path, *args, **kwargs)
        return _committed(tx)[1]

    # admin (AdminZkClient.createTopicWithAssignment)
    def create_topic(
        self, topic: str, assignment: dict[int, list[int]], configs: dict[str, str] | None = None
    ) -> None:
        self.admin.create(f"/config/topics/{topic}", config_znode(configs or {}))
        self.topic_ids[topic] = _topic_id()
        self.assignments[topic] = {p: (list(r), [], []) for p, r in sorted(assignment.items())}
        self.admin.create(
            f"/brokers/topics/{topic}", topic_znode(self.topic_ids[topic], self.assignments[topic])
        )

    def add_partitions(self, topic: str, assignment: dict[int, list[int]]) -> None:
        """`AdminZkClient.addPartitions`: the topic znode with the new partitions too."""
        for p, replicas in sorted(assignment.items()):
            self.assignments[topic][p] = (list(replicas), [], [])
        self.admin.set(
            f"/brokers/topics/{topic}", topic_znode(self.topic_ids[topic], self.assignments[topic])
        )

    def request_deletion(self, topic: str) -> None:
        """`AdminZkClient.deleteTopic` -> `createDeleteTopicPath`: no data."""
        self.admin.create(f"/admin/delete_topics/{topic}")

    # the controller's writes
    def write_initial(self, topic: str, partition: int, leader: int, isr: list[int]) -> None:
        """`createTopicPartitionStatesRaw`: `partitions`, `partitions/<p>` (no data) and the
        state znode created, each fenced, version 0."""
        base = f"/brokers/topics/{topic}/partitions"
        for path in (base, f"{base}/{partition}"):
            if not self.admin.exists(path):
                self._fenced("create", path, b"")
        self._fenced(
            "create",
            f"{base}/{partition}/state",
            state_znode(leader, 0, isr, self.controller_epoch),
        )
        self.states[topic, partition] = State(leader, 0, list(isr), 0)

    def write_state(
        self,
        topic: str,
        partition: int,
        leader: int,
        leader_epoch: int,
        isr: list[int],
        controller_epoch: int | None = None,
    ) -> None:
        """`updateLeaderAndIsr`: setData with the version last read."""
        s = self.states[topic, partition]
        stat = self._fenced(
            "set_data",
            f"/brokers/topics/{topic}/partitions/{partition}/state",
            state_znode(
                leader,
                leader_epoch,
                isr,
                self.controller_epoch if controller_epoch is None else controller_epoch,
            ),
            version=s.version,
        )
        self.states[topic, partition] = State(leader, leader_epoch, list(isr), stat.version)

    def write_assignment(
        self,
        topic: str,
        partition: int,
        replicas: list[int],
        adding: list[int],
        removing: list[int],
    ) -> None:
        """`setTopicAssignment` (KafkaController.updateReplicaAssignmentForPartition)."""
        self.assignments[topic][partition] = (replicas, adding, removing)
        self._fenced(
            "set_data",
            f"/brokers/topics/{topic}",
            topic_znode(self.topic_ids[topic], self.assignments[topic]),
        )

    def delete_topic_znodes(self, topic: str) -> None:
        """`TopicDeletionManager.completeDeleteTopic`: the topic (`deleteRecursive`, children
        first), its configs, the request; each delete fenced."""

        def delete_recursive(path: str) -> None:
            for child in self.admin.get_children(path):
                delete_recursive(f"{path}/{child}")
            self._fenced("delete", path)

        delete_recursive(f"/brokers/topics/{topic}")
        self._fenced("delete", f"/config/topics/{topic}")
        self._fenced("delete", f"/admin/delete_topics/{topic}")
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]


def _committed(tx: Any) -> list[Any]:
    results = tx.commit()
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        raise failed[0]
    return list(results)


def _now() -> int:
    return int(time.time() * 1000)


def _topic_id() -> str:
    """`Uuid.toString`: URL-safe base64 of 16 bytes, unpadded."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
