"""Every controller write to a partition state znode, checked against the ZooKeeper rules.

Theory of operation. The checker runs the project's in-process engine
(`state_machines.engine.Engine`, what `simulate` runs) over the events the bridge emits,
in zxid order. Each event's decisions are *predicted writes*: a `LeaderAndIsr` or an
`AlterPartitionResult` whose partition epoch is past the last version seen of that
partition's state znode is a write Kafka's controller makes (`KafkaZkClient.updateLeaderAndIsr`
bumps the znode's version by one per write, and the version is the partition epoch), and
so is a partition state the event left at a newer epoch without a request (a topic being
deleted gets no LeaderAndIsr, `ZkReplicaStateMachine.removeReplicasFromIsr`). Predictions
are kept per partition and version.

A `StateWrite` (the znode as read, its version) is then:

* a **gap** first, when its version is more than one past the last version seen: a watch
  fired after several writes, and the writes between were never seen (reported, never
  filled in);
* compared with the prediction for its version, when there is one;
* otherwise, a request that never appears in ZooKeeper, taken as given where only the
  requester could have asked for it (`zk_inference`): an ISR change keeping leader and
  leader epoch is the leader's AlterPartition; a leader moved off a live broker, or a live
  broker taken out of the ISR, with a new leader epoch, is that broker's
  ControlledShutdown; a leader moved to the preferred replica is an ElectLeaders
  PREFERRED, an out-of-ISR leader of a leaderless partition an ElectLeaders UNCLEAN. The
  request goes to the engine (and out as an event), which answers it by Kafka's checks
  (`processAlterPartition`: the sender leads at that leader epoch and partition epoch, the
  new ISR's brokers are live), and its answer is the prediction;
* with no prediction still, compared with the engine's current state.

A difference is a divergence, classed as the shadow classes it (`shadow.compare`:
safety when the leader is not a live replica, outside its own ISR, an unclean election
while unclean election is off, or an epoch going backwards), plus what only a ZooKeeper
write can show (`zk_verdicts.zk_safety`): a leader epoch that skips, an ISR keeping or taking in a
broker without a registration where the rules have none, an ISR member that is no
replica, a write under another controller epoch than `/controller_epoch`. Then the
engine adopts the written state (shadow.follow) and forgets its other predictions for that
partition, so one divergence is reported once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from state_machines.directory import CONTROLLER_KEY, ControllerRecord, topic_key
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import NO_LEADER, ControllerConfig
from state_machines.partition import PartitionRecord

from .zk_events import ControllerGone, Emit, Item, Note, StateWrite, TopicGone, bootstrap
from .zk_inference import infer_request
from .zk_judge import NO_RULE, judge
from .zk_verdicts import (
    ALTER_PARTITION,
    ELECTION_METHODS,
    REMOVE_FROM_ISR,
    UPDATE_LEADER_EPOCH,
    Predicted,
    Verdict,
)
from .zk_znodes import Node, PartitionStateZnode

TopicPartition = tuple[str, int]


@dataclass
class Checker:
    """The engine, the predictions, and what was last seen of every state znode."""

    config: ControllerConfig = field(default_factory=ControllerConfig)
    engine: Engine = field(init=False)
    offset: int = 0
    # partition -> version -> predicted write
    predicted: dict[TopicPartition, dict[int, Predicted]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    # partition -> the last state znode seen (its version is the partition epoch)
    written: dict[TopicPartition, PartitionStateZnode] = field(default_factory=dict)
    # topic -> (partition, broker) StopReplica(delete) sent and not answered
    pending_deletes: dict[str, set[tuple[int, int]]] = field(
        default_factory=lambda: defaultdict(set)
    )
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # partition -> why the rules refused the request inferred for its last write
    refused: dict[TopicPartition, str] = field(default_factory=dict)
    # /controller is gone: inputs wait for the next controller (see `_failover`)
    no_controller: bool = False

    def __post_init__(self) -> None:
        self.engine = Engine(self.config)

    # -- the engine ----------------------------------------------------------------------

    def _controller(self) -> ControllerRecord:
        rec = self.engine.directory.get(CONTROLLER_KEY)
        return rec if isinstance(rec, ControllerRecord) else ControllerRecord()

    def _broker(self, broker: int) -> Any:
        return self.engine.directory.get(f"broker-{broker}")

    def is_live(self, broker: int) -> bool:
        rec = self._broker(broker)
        return rec is not None and rec.fact.registered

    def process(self, event: dict[str, Any], ts: int) -> dict[str, Any]:
        """Run one event through the engine and keep its predicted writes; the event as
        emitted (with `ts`)."""
        doc = {**event, "ts": ts} if ts else dict(event)
        envelope = parse_event(doc, self.offset)
        self.offset += 1
        decisions = self.engine.process(envelope)
        touched: set[TopicPartition] = set()
        for d in decisions:
            kind = d["type"]
            if "partition" in d and "topic" in d:
                touched.add((d["topic"], d["partition"]))
            if kind == "LeaderAndIsr":
                method = ELECTION_METHODS.get(d["election"] or "") or self._plain_method(d)
                self._predict(d, method)
            elif kind == "AlterPartitionResult" and d["error"] is not None:
                self.refused[(d["topic"], d["partition"])] = (
                    f"{ALTER_PARTITION} refuses it: {d['error']}"
                )
            elif kind == "AlterPartitionResult" and d["error"] is None:
                self._predict(
                    {**d, "controller_epoch": self._controller().controller_epoch}, ALTER_PARTITION
                )
            elif kind == "StopReplica" and d["delete_partition"]:
                self.pending_deletes[d["topic"]].add((d["partition"], d["broker_id"]))
        for tp in touched:
            rec = self.engine.partitions.get(tp)
            la = rec.leadership if isinstance(rec, PartitionRecord) else None
            if la is not None and la.partition_epoch > self._seen(tp):
                self.predicted[tp].setdefault(
                    la.partition_epoch,
                    Predicted(
                        la.leader, la.leader_epoch, la.isr, la.controller_epoch, REMOVE_FROM_ISR
                    ),
                )
        return doc

    def _seen(self, tp: TopicPartition) -> int:
        w = self.written.get(tp)
        return -1 if w is None else w.version

    def _plain_method(self, d: dict[str, Any]) -> str:
        """A write without an election: taking replicas out of the ISR, or a new leader
        epoch alone (a reassignment's), judged against the write before it (the predicted
        one, inside one event's sequence, or the last seen)."""
        tp = (d["topic"], d["partition"])
        prior = self.predicted.get(tp, {}).get(d["partition_epoch"] - 1)
        seen = self.written.get(tp)
        before = (prior.leader, prior.isr) if prior else (seen.leader, seen.isr) if seen else None
        if before is not None and (
            set(d["isr"]) < set(before[1]) or d["leader"] == NO_LEADER != before[0]
        ):
            return REMOVE_FROM_ISR
        return UPDATE_LEADER_EPOCH

    def _predict(self, d: dict[str, Any], method: str) -> None:
        tp = (d["topic"], d["partition"])
        version = d["partition_epoch"]
        if version > self._seen(tp):
            self.predicted[tp].setdefault(
                version,
                Predicted(
                    d["leader"], d["leader_epoch"], tuple(d["isr"]), d["controller_epoch"], method
                ),
            )

    # -- the inputs ----------------------------------------------------------------------

    def prime(
        self, items: list[Emit | Note], states: dict[TopicPartition, PartitionStateZnode]
    ) -> list[dict[str, Any]]:
        """Load what a new controller reads (the bootstrap), and the state znodes as seen."""
        self.written.update(states)
        self.no_controller = not any(
            isinstance(i, Emit) and i.event["type"] == "ControllerFailover" for i in items
        )
        return [self.process(item.event, item.ts) for item in items if isinstance(item, Emit)]

    def handle(
        self, item: Item, nodes: dict[str, Node]
    ) -> tuple[list[dict[str, Any]], list[Verdict]]:
        """One input, in zxid order (`nodes`: the view with it): the events to emit and the
        verdicts."""
        if isinstance(item, ControllerGone):
            self.no_controller = True
            return [], []
        if isinstance(item, Emit):
            if item.event["type"] == "ControllerFailover":
                return [self._failover(item, nodes)], []
            if self.no_controller:
                # no controller acts on it; the next one reads it with everything else
                return [{**item.event, "ts": item.ts} if item.ts else dict(item.event)], []
            return [self.process(item.event, item.ts)], []
        if isinstance(item, Note):
            return [], [Verdict("note", item.zxid, item.text)]
        if isinstance(item, TopicGone):
            return self._topic_gone(item), []
        return self._write(item)

    def _failover(self, item: Emit, nodes: dict[str, Node]) -> dict[str, Any]:
        """A new controller (`onControllerFailover`): it reads everything from ZooKeeper
        (`initializeControllerContext`), so the checker's engine starts again from the view,
        as that controller does, and the failover's own writes are predicted from there."""
        self.engine = Engine(self.config)
        self.predicted.clear()
        self.pending_deletes.clear()
        self.no_controller = False
        self.prime(bootstrap(nodes), {})
        return {**item.event, "ts": item.ts} if item.ts else dict(item.event)

    def missing(self) -> tuple[list[dict[str, Any]], list[Verdict]]:
        """The writes the rules predict next that ZooKeeper never showed (the bridge asks
        after a quiet while): one verdict each, then the engine adopts the znode as it is,
        so the rules go on from what the cluster holds."""
        events: list[dict[str, Any]] = []
        verdicts: list[Verdict] = []
        for tp in sorted(tp for tp, pending in self.predicted.items() if pending):
            pending = self.predicted.pop(tp)
            s = self.written.get(tp)
            if s is None:
                continue
            version = min(pending)
            pred = pending[version]
            path = f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"
            fenced = [b for b in s.isr if not self.is_live(b) and b not in pred.isr]
            dead_leader = s.leader != NO_LEADER and not self.is_live(s.leader)
            reasons = [f"the rules predict a write at version {version}; ZooKeeper shows none"]
            if fenced:
                reasons.append(f"its ISR keeps broker {fenced} without a registration (fenced)")
            if dead_leader:
                reasons.append(f"its leader {s.leader} has no registration")
            verdicts.append(
                Verdict(
                    "safety" if fenced else "benign",
                    0,
                    "; ".join(reasons),
                    path,
                    version,
                    None,
                    pred.fields(version),
                    pred.method,
                )
            )
            self.counts["safety" if fenced else "benign"] += 1
            rec = self.engine.partitions.get(tp)
            observed = {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": tp[0],
                "partition": tp[1],
                **s.fields(),
            }
            if isinstance(rec, PartitionRecord):
                observed["replicas"] = list(rec.assignment.replicas)
            events.append(self.process(observed, 0))
        return events, verdicts

    def _topic_gone(self, item: TopicGone) -> list[dict[str, Any]]:
        """The topic znode deleted: `TopicDeletionManager.completeDeleteTopic` ran, so every
        StopReplica(delete) it sent was answered without error."""
        events = []
        for partition, broker in sorted(self.pending_deletes.pop(item.topic, set())):
            events.append(
                self.process(
                    {
                        "v": 1,
                        "type": "StopReplicaResponse",
                        "topic": item.topic,
                        "partition": partition,
                        "broker_id": broker,
                        "error": None,
                    },
                    item.ts,
                )
            )
        for tp in [tp for tp in self.written if tp[0] == item.topic]:
            del self.written[tp]
            self.predicted.pop(tp, None)
        return events

    def _write(self, w: StateWrite) -> tuple[list[dict[str, Any]], list[Verdict]]:
        tp = (w.topic, w.partition)
        s = w.state
        before = self.written.get(tp)
        if before is not None and s.version <= before.version:
            return [], []  # read again, nothing new
        events: list[dict[str, Any]] = []
        verdicts: list[Verdict] = []
        contiguous = before is None or s.version == before.version + 1
        if not contiguous:
            assert before is not None
            verdicts.append(
                Verdict(
                    "gap",
                    w.zxid,
                    f"versions {before.version + 1}..{s.version - 1} were written and never "
                    "seen (a watch fired after several writes); not checked",
                    w.path,
                    s.version,
                )
            )
        pred = self.predicted.get(tp, {}).pop(s.version, None)
        later = sorted(v for v in self.predicted.get(tp, {}) if v > s.version)
        if pred is None and contiguous and before is not None and later:
            # a step the engine took inside one event without a record of its own (a topic
            # deletion's removeReplicasFromIsr, broker by broker): between the last write
            # and the next predicted one
            target = self.predicted[tp][later[0]]
            if (
                before.leader_epoch < s.leader_epoch < target.leader_epoch
                and set(target.isr) <= set(s.isr) <= set(before.isr)
                and s.leader in (before.leader, target.leader)
            ):
                pred = Predicted(
                    s.leader, s.leader_epoch, s.isr, target.controller_epoch, target.method
                )
            else:
                pred = target
        if pred is None and contiguous and before is not None:
            request = infer_request(w, before, self)
            if request is not None:
                event, why = request
                events.append(self.process(event, w.ts))
                verdicts.append(Verdict("inferred", w.zxid, why, w.path, s.version))
                pred = self.predicted.get(tp, {}).pop(s.version, None)
        rec = self.engine.partitions.get(tp)
        verdict = judge(
            w,
            before if contiguous else None,
            pred,
            rec if isinstance(rec, PartitionRecord) else None,
            # why the rules refused the request inferred for this write, if they did
            self.refused.pop(tp, NO_RULE) if pred is None else NO_RULE,
            self.is_live,
            self._unclean_allowed(w.topic),
            self._controller().controller_epoch,
        )
        verdicts.append(verdict)
        self.counts[verdict.verdict] += 1
        self.written[tp] = s
        la = rec.leadership if isinstance(rec, PartitionRecord) else None
        if verdict.verdict != "match":
            self.predicted.pop(tp, None)
        if verdict.verdict != "match" or (la is not None and la.partition_epoch == s.version):
            observed = {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": w.topic,
                "partition": w.partition,
                **s.fields(),
            }
            if isinstance(rec, PartitionRecord):
                observed["replicas"] = list(rec.assignment.replicas)
            events.append(self.process(observed, w.ts))
        return events, verdicts

    def _unclean_allowed(self, topic: str) -> bool:
        rec = self.engine.directory.get(topic_key(topic))
        configs = rec.configs if rec is not None else ()
        return self.config.unclean_enabled_for(configs, self._controller().dynamic_configs)

    def broker_epoch(self, broker: int) -> int | None:
        rec = self._broker(broker)
        return None if rec is None else rec.fact.broker_epoch

    def replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        rec = self.engine.partitions.get((topic, partition))
        return rec.assignment.replicas if isinstance(rec, PartitionRecord) else ()

    def shutting_down(self, broker: int) -> bool:
        rec = self._broker(broker)
        return rec is not None and rec.fact.shutting_down
