"""Property tests: random cluster histories through the engine, Kafka's invariants after every
event.

A Hypothesis `RuleBasedStateMachine` starts five brokers and a controller, then applies
random contract events (failures, restarts and bounces, controlled shutdowns, topic
creation and deletion with StopReplica responses, reassignments and cancels, preferred and
unclean elections, AlterPartition from the leaders, unclean-election config flips, the odd
controller move, and the controller-wide events: ticks of event time that run the
automatic rebalance, cluster-wide config changes, log-dir failures, and reassignments of
offline partitions). The events come from `generator.LogBuilder`, which the seeded tests (and
the Spark equivalence tests) reuse through `generate_log(seed)`.

After each event `InvariantChecker.check_step` compares `Engine.state_json()` before and
after it and the decision records it returned. Each rule is named in its assertion
message; the Kafka rule behind each one is in its docstring below.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from tests.property.generator import DrawChooser, LogBuilder, generate_log

# Kafka 3.9.0 ReplicaStateMachine.scala / PartitionStateMachine.scala (bottom of each file):
# target state -> its valid previous states. Written out here, not imported, so that a
# change to the core's tables cannot silently change what this test accepts.
VALID_PREVIOUS_REPLICA_STATES: dict[str, frozenset[str]] = {
    "NewReplica": frozenset({"NonExistentReplica"}),
    "OnlineReplica": frozenset(
        {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"}
    ),
    "OfflineReplica": frozenset(
        {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"}
    ),
    "ReplicaDeletionStarted": frozenset({"OfflineReplica"}),
    "ReplicaDeletionSuccessful": frozenset({"ReplicaDeletionStarted"}),
    "ReplicaDeletionIneligible": frozenset({"OfflineReplica", "ReplicaDeletionStarted"}),
    "NonExistentReplica": frozenset({"ReplicaDeletionSuccessful"}),
}
VALID_PREVIOUS_PARTITION_STATES: dict[str, frozenset[str]] = {
    "NewPartition": frozenset({"NonExistentPartition"}),
    "OnlinePartition": frozenset({"NewPartition", "OnlinePartition", "OfflinePartition"}),
    "OfflinePartition": frozenset({"NewPartition", "OnlinePartition", "OfflinePartition"}),
    "NonExistentPartition": frozenset({"OfflinePartition"}),
}

State = dict[str, Any]
Rec = dict[str, Any]


def _registered(state: State, broker: int) -> bool:
    fact = state["brokers"].get(str(broker))
    return bool(fact and (fact["live"] or fact["shutting_down"]))


def _topic_of(key: str) -> str:
    return key.rpartition("-")[0]


def _has_leadership(p: dict[str, Any] | None) -> bool:
    return p is not None and p["leader_epoch"] >= 0


class InvariantChecker:
    """Kafka's controller invariants, checked on one event at a time.

    `check_step(event, before, records, after)` takes `Engine.state_json()` before and
    after the event and the event's decision records (canonical order: by record key, then
    `seq`, so one partition's records appear in the order they were produced).

    One partition's *observed states* in a step are the stored state before the event, the
    state each LeaderAndIsr record carries, the state each AlterPartitionResult with error
    null returns, and the stored state after the event. Their chronological order is the
    partition epoch order, not record order: the partition epoch is the znode version, +1
    per store write, and a request batch (`ControllerBrokerRequestBatch`) keeps the *last*
    LeaderAndIsr per (broker, partition), so one batch of an OfflineReplica transition over
    several brokers sends some brokers an earlier state than others
    (ReplicaStateMachine.doHandleStateChanges, OfflineReplica; addLeaderAndIsrRequestForBrokers
    `result.put`), and the flushed records need not be in write order.
    """

    def __init__(self, config: ControllerConfig | None = None) -> None:
        self.config = config or ControllerConfig()
        # Per partition, dropped when the partition disappears (topic deletion completed) so a
        # re-created topic starts a new history: stored leader epoch, leader epoch -> leader,
        # and the last leader epoch each broker received in a LeaderAndIsr.
        self.stored_leader_epoch: dict[str, int] = {}
        self.epoch_leaders: dict[str, dict[int, int]] = {}
        self.received_epoch: dict[str, dict[int, int]] = {}
        # brokers whose OfflineReplica transition was refused from NonExistentReplica
        self.refused_offline: dict[str, set[int]] = {}
        # brokers an accepted AlterPartition put in the ISR while outside the replica set
        self.altered_in: dict[str, set[int]] = {}
        self.steps = 0

    def check_step(
        self, event: dict[str, Any], before: State, records: list[Rec], after: State
    ) -> None:
        self.steps += 1
        ctx = f"\nevent: {json.dumps(event)}"
        by_key: dict[str, list[Rec]] = {}
        for r in records:
            if "topic" in r and "partition" in r:
                by_key.setdefault(f"{r['topic']}-{r['partition']}", []).append(r)
        failover = event["type"] == "ControllerFailover"
        for key in sorted(set(before["partitions"]) | set(after["partitions"]) | set(by_key)):
            b = before["partitions"].get(key)
            a = after["partitions"].get(key)
            rs = by_key.get(key, [])
            for r in rs:
                if (
                    r["type"] == "StateChangeFailed"
                    and r["target_state"] == "OfflineReplica"
                    and r["broker_id"] is not None
                    and "NonExistentReplica" in r["reason"]
                ):
                    self.refused_offline.setdefault(key, set()).add(r["broker_id"])
                if r["type"] == "AlterPartitionResult" and r["error"] is None and a is not None:
                    outside = set(r["isr"]) - set(a["replicas"])
                    self.altered_in.setdefault(key, set()).update(outside)
            self.check_leader_epoch_monotone(key, rs, a, ctx)
            self.check_one_leader_per_epoch(key, rs, a, ctx)
            states = self.check_epoch_accounting(key, b, rs, a, ctx)
            self.check_unclean_only_outside_isr(key, states, ctx)
            self.check_state_transitions(key, b, rs, a, failover, ctx)
            if a is not None:
                self.check_leader_in_isr_and_registered(key, a, after, ctx)
                self.check_isr_nonempty_within_replicas(key, a, ctx)
            for r in rs:
                if r["type"] == "LeaderAndIsr":
                    # ISR within replicas is a property of the stored state between events, not of
                    # every LeaderAndIsr: onPartitionReassignment step B3 sends the completed
                    # replica set (RS = TRS) "and same isr", removing replicas still in it, and
                    # each B4 OfflineReplica write drops one of them at a time.
                    assert r["isr"], (
                        f"[isr-nonempty] {key}: LeaderAndIsr with an empty "
                        f"ISR{ctx}\nrecord: {json.dumps(r)}"
                    )
                    if r["leader"] >= 0:
                        assert r["leader"] in r["isr"], (
                            f"[leader-in-isr] {key}: LeaderAndIsr leader {r['leader']} not "
                            f"in ISR {r['isr']}{ctx}"
                        )
            if a is None:
                self.stored_leader_epoch.pop(key, None)
                self.epoch_leaders.pop(key, None)
                self.received_epoch.pop(key, None)
                self.refused_offline.pop(key, None)
                self.altered_in.pop(key, None)

        if self.retries_offline(event, before, after):
            self.check_offline_partitions_retried(after, ctx)
        for r in records:
            assert not (r["type"] == "ElectionResult" and event["type"] == "ControllerTick"), (
                f"[no-auto-election-result] an automatic rebalance wrote an ElectionResult{ctx}"
            )
        self.check_update_metadata(records, after, ctx)

    # -- controller-wide rules -----------------------------------------------------------

    def check_update_metadata(self, records: list[Rec], after: State, ctx: str) -> None:
        """[update-metadata] Every UpdateMetadata send goes to brokers it lists as live
        (sendUpdateMetadataRequests intersects its broker set with liveOrShuttingDownBrokerIds),
        names each partition once, in order, each with leadership (leader -2 only for a topic
        queued for deletion), and lists as offline replicas only replicas of the partition."""
        for r in records:
            if r["type"] != "UpdateMetadata":
                continue
            assert r["recipients"] and set(r["recipients"]) <= set(r["live_brokers"]), (
                f"[update-metadata] recipients {r['recipients']} not all live "
                f"({r['live_brokers']}){ctx}"
            )
            keys = [(p["topic"], p["partition"]) for p in r["partitions"]]
            assert keys == sorted(set(keys)), (
                f"[update-metadata] partitions out of order or repeated: {keys}{ctx}"
            )
            for p in r["partitions"]:
                assert set(p["offline_replicas"]) <= set(p["replicas"]) and p["isr"], (
                    f"[update-metadata] {p}{ctx}"
                )
                assert p["leader"] != -2 or (p["leader_epoch"], p["zk_version"]) == (0, 0), (
                    "[update-metadata] a deleted partition's state is "
                    f"LeaderAndIsr.duringDelete: {p}{ctx}"
                )

    def retries_offline(self, event: dict[str, Any], before: State, after: State) -> bool:
        """Whether Kafka ran `triggerOnlinePartitionStateChange()` over the whole cluster for
        this event: a broker change (processBrokerChange -> onBrokerStartup/onBrokerFailure),
        the cluster-wide unclean default turning true (processUncleanLeaderElectionEnable), or
        replicas newly on failed log dirs (onReplicasBecomeOffline)."""
        if not after["active"]:
            return False
        kind = event["type"]
        if kind in ("BrokerStartup", "BrokerFailure"):
            return before["brokers"] != after["brokers"]
        if kind == "BrokerConfigChange":
            return not self.cluster_unclean(before) and self.cluster_unclean(after)
        if kind == "ReplicaDirFailure":
            dirs = lambda st: {k: p.get("offline_dirs") for k, p in st["partitions"].items()}  # noqa: E731
            return dirs(before) != dirs(after)
        return False

    def cluster_unclean(self, state: State) -> bool:
        value = state.get("dynamic_configs", {}).get("unclean.leader.election.enable")
        return (
            self.config.unclean_leader_election_enable if value is None else value.lower() == "true"
        )

    def check_offline_partitions_retried(self, after: State, ctx: str) -> None:
        """[offline-retried] After a cluster-wide retry, no New or Offline partition of a topic
        not queued for deletion is left that its election would have made online: a New one
        (without a stored state) has no live replica; an Offline one has no live ISR member
        and, where unclean election is allowed, no live replica (PartitionStateMachine
        .initializeLeaderAndIsrForPartitions and Election.leaderForOffline; `isReplicaOnline`
        excludes shutting-down brokers and replicas on failed log dirs)."""
        brokers = after["brokers"]
        for key, p in after["partitions"].items():
            topic = after["topics"].get(_topic_of(key))
            if (
                topic is None
                or topic["deletion"] != "none"
                or p["state"] not in ("NewPartition", "OfflinePartition")
            ):
                continue
            dirs = set(p.get("offline_dirs", []))
            live = [
                r
                for r in p["replicas"]
                if str(r) in brokers and brokers[str(r)]["live"] and r not in dirs
            ]
            if p["state"] == "NewPartition":
                # no stored state yet: initialization picks a live replica
                if p["leader_epoch"] < 0:
                    assert not live, (
                        f"[offline-retried] {key}: New with live replicas {live} after a retry{ctx}"
                    )
                continue
            online = lambda r: str(r) in brokers and brokers[str(r)]["live"] and r not in dirs  # noqa: E731, B023  used in this iteration only
            clean = [r for r in p["replicas"] if r in p["isr"] and online(r)]
            assert not clean, (
                f"[offline-retried] {key}: Offline with electable ISR members {clean} "
                f"after a retry{ctx}"
            )
            # collectUncleanLeaderElectionState: unclean is considered only when no ISR member
            # is online, even one outside the assignment (a cancelled reassignment leaves one)
            configured = topic["configs"].get("unclean.leader.election.enable")
            unclean = (
                self.cluster_unclean(after) if configured is None else configured.lower() == "true"
            )
            if unclean and not [r for r in p["isr"] if online(r)]:
                assert not live, (
                    f"[offline-retried] {key}: Offline, unclean allowed, live replicas {live}{ctx}"
                )

    # -- leader epochs -------------------------------------------------------------------

    def check_leader_epoch_monotone(self, key: str, rs: list[Rec], a: Any, ctx: str) -> None:
        """[leader-epoch-monotone] Over a partition's whole history (deletion and re-creation
        starts a new one) the stored leader epoch never decreases, no record carries a leader
        epoch above the stored one, and the leader epochs each broker receives in
        LeaderAndIsr requests never decrease. (LeaderAndIsr.scala: every controller write is
        newLeader/newEpoch/newLeaderAndIsr, LE+1; an AlterPartition write keeps it.) Records
        of one step are not compared with each other across brokers: one batch may send an
        earlier state to one broker than to another (see the class docstring)."""
        stored = self.stored_leader_epoch.get(key, -1)
        if a is not None:
            assert a["leader_epoch"] >= stored, (
                f"[leader-epoch-monotone] {key}: stored leader epoch went {stored} -> "
                f"{a['leader_epoch']}{ctx}"
            )
            self.stored_leader_epoch[key] = a["leader_epoch"]
        received = self.received_epoch.setdefault(key, {})
        for r in rs:
            if (
                r["type"] not in ("LeaderAndIsr", "AlterPartitionResult")
                or r.get("leader_epoch") is None
            ):
                continue
            if a is not None:
                assert r["leader_epoch"] <= a["leader_epoch"], (
                    f"[leader-epoch-monotone] {key}: {r['type']} carries leader epoch "
                    f"{r['leader_epoch']} above the "
                    f"stored {a['leader_epoch']}{ctx}\nrecord: {json.dumps(r)}"
                )
            if r["type"] == "LeaderAndIsr":
                for broker in r["recipients"]:
                    last = received.get(broker, -1)
                    assert r["leader_epoch"] >= last, (
                        f"[leader-epoch-monotone] {key}: broker {broker} receives leader "
                        f"epoch {r['leader_epoch']} "
                        f"after {last}{ctx}\nrecord: {json.dumps(r)}"
                    )
                    received[broker] = r["leader_epoch"]

    def check_one_leader_per_epoch(self, key: str, rs: list[Rec], a: Any, ctx: str) -> None:
        """[one-leader-per-epoch] A leader epoch names one leader for the partition's history:
        every leader change is a controller write that bumps the epoch."""
        leaders = self.epoch_leaders.setdefault(key, {})
        seen = [
            (r["leader_epoch"], r["leader"], r["type"])
            for r in rs
            if r["type"] in ("LeaderAndIsr", "AlterPartitionResult") and r.get("leader") is not None
        ]
        if _has_leadership(a):
            seen.append((a["leader_epoch"], a["leader"], "stored state"))
        for epoch, leader, where in seen:
            known = leaders.setdefault(epoch, leader)
            assert known == leader, (
                f"[one-leader-per-epoch] {key}: leader epoch {epoch} had leader {known}, "
                f"now {leader} ({where}){ctx}"
            )

    def check_epoch_accounting(
        self, key: str, b: Any, rs: list[Rec], a: Any, ctx: str
    ) -> list[dict[str, Any]]:
        """[partition-epoch-accounting] The partition epoch is the znode version: +1 per store
        write (KafkaZkClient.updateLeaderAndIsr). Every controller write also moves the leader
        epoch by exactly one (newLeader/newEpoch/newLeaderAndIsr/newRecoveringLeaderAndIsr);
        an accepted AlterPartition write keeps the leader epoch (tryProcessAlterPartition).
        So between two consecutive observed states s1 -> s2 (by partition epoch)

            PE(s2) - PE(s1) == LE(s2) - LE(s1) + (1 if s2 is an AlterPartition write else 0)

        because every AlterPartition write is observed (its result record) and any write in
        between is a controller write that may be hidden (an ISR shrink of a topic queued for
        deletion sends no LeaderAndIsr; one of an RF-1 partition has no recipient). Also:
        - states with the same partition epoch are the same state (leader, LE, ISR);
        - the records carry states written during this event: none older than the stored
          state before it, none newer than the stored state after it;
        - an AlterPartitionResult with error null has the leader epoch of the state before it;
          without a write (the idempotent retry: kafka-semantics 2.4, row 4) it is
          exactly the stored state;
        - a partition's first state is the created znode: leader epoch 0, partition epoch 0.

        Returns the step's distinct observed states in partition-epoch order, each as a dict
        with `leader`, `le`, `isr`, `pe`, `source` and the `elections` of its records.
        """
        by_pe: dict[int, dict[str, Any]] = {}

        def observe(
            leader: int, le: int, isr: list[int], pe: int, source: str, election: str | None
        ) -> None:
            s = by_pe.setdefault(
                pe,
                {
                    "leader": leader,
                    "le": le,
                    "isr": list(isr),
                    "pe": pe,
                    "source": source,
                    "elections": set(),
                    "alter": False,
                },
            )
            assert (s["leader"], s["le"], s["isr"]) == (leader, le, list(isr)), (
                f"[partition-epoch-accounting] {key}: two states with partition epoch {pe}: "
                f"{(s['leader'], s['le'], s['isr'])} ({s['source']}) and "
                f"{(leader, le, isr)} ({source}){ctx}"
            )
            if election is not None:
                s["elections"].add(election)
            if source == "AlterPartitionResult":
                s["alter"] = True

        if _has_leadership(b):
            observe(
                b["leader"],
                b["leader_epoch"],
                b["isr"],
                b["partition_epoch"],
                "stored state before",
                None,
            )
        for r in rs:
            if r["type"] == "LeaderAndIsr":
                observe(
                    r["leader"],
                    r["leader_epoch"],
                    r["isr"],
                    r["partition_epoch"],
                    "LeaderAndIsr",
                    r["election"],
                )
            elif (
                r["type"] == "AlterPartitionResult"
                and r["error"] is None
                and r["leader"] is not None
            ):
                assert _has_leadership(b), (
                    f"[partition-epoch-accounting] {key}: AlterPartition accepted without "
                    f"a stored state{ctx}"
                )
                observe(
                    r["leader"],
                    r["leader_epoch"],
                    r["isr"],
                    r["partition_epoch"],
                    "AlterPartitionResult",
                    None,
                )
        if _has_leadership(a):
            observe(
                a["leader"],
                a["leader_epoch"],
                a["isr"],
                a["partition_epoch"],
                "stored state after",
                None,
            )
        elif a is not None and by_pe:
            raise AssertionError(
                f"[partition-epoch-accounting] {key}: the stored leader and ISR vanished{ctx}"
            )
        states = [by_pe[pe] for pe in sorted(by_pe)]
        if not states:
            return states
        if _has_leadership(b):
            assert states[0]["pe"] == b["partition_epoch"], (
                f"[partition-epoch-accounting] {key}: a record carries partition epoch "
                f"{states[0]['pe']}, older than "
                f"the stored {b['partition_epoch']}{ctx}"
            )
        else:
            assert (states[0]["le"], states[0]["pe"]) == (0, 0), (
                f"[partition-epoch-accounting] {key}: first stored state has leader epoch "
                f"{states[0]['le']}, "
                f"partition epoch {states[0]['pe']} (expected 0, 0){ctx}"
            )
        if _has_leadership(a):
            assert states[-1]["pe"] == a["partition_epoch"], (
                f"[partition-epoch-accounting] {key}: a record carries partition epoch "
                f"{states[-1]['pe']}, newer "
                f"than the stored {a['partition_epoch']}{ctx}"
            )
        for s1, s2 in zip(states, states[1:], strict=False):  # consecutive pairs
            alter = 1 if s2.get("alter") else 0
            assert s2["pe"] - s1["pe"] == s2["le"] - s1["le"] + alter, (
                f"[partition-epoch-accounting] {key}: {s1['source']} (LE {s1['le']}, PE "
                f"{s1['pe']}) -> "
                f"{s2['source']} (LE {s2['le']}, PE "
                f"{s2['pe']}){' by AlterPartition' if alter else ''}: "
                "every controller write moves both epochs by one, an AlterPartition write "
                f"only the partition epoch{ctx}"
            )
        return states

    # -- leader and ISR ------------------------------------------------------------------

    def check_unclean_only_outside_isr(
        self, key: str, states: list[dict[str, Any]], ctx: str
    ) -> None:
        """[unclean-only-outside-isr] A LeaderAndIsr whose new leader is outside the previous
        ISR is an unclean election (Election.leaderForOffline: isUnclean =
        !isr.contains(leader); every other strategy elects ISR members only), and an
        `unclean` record has a new leader from outside the previous ISR. 'Previous' is the
        observed state just before it in partition-epoch order; writes that are not observed
        never add to the ISR (they are OfflineReplica shrinks), so they cannot hide a leader's
        ISR membership."""
        for s1, s2 in zip(states, states[1:], strict=False):  # consecutive pairs
            unclean = "unclean" in s2["elections"]
            new_leader = s2["leader"] >= 0 and s2["leader"] != s1["leader"]
            outside = new_leader and s2["leader"] not in s1["isr"]
            assert outside == unclean, (
                f"[unclean-only-outside-isr] {key}: leader {s1['leader']} ISR {s1['isr']} "
                "-> leader "
                f"{s2['leader']} ISR {s2['isr']} (LE {s2['le']}, {s2['source']}) with elections "
                f"{sorted(s2['elections'])}{ctx}"
            )

    def check_leader_in_isr_and_registered(
        self, key: str, a: dict[str, Any], after: State, ctx: str
    ) -> None:
        """[leader-in-isr] A leader (not -1) is an ISR member. [leader-registered] It is a
        registered broker: live, or shutting down (doControlledShutdown keeps leadership where
        the ControlledShutdown election finds no successor). Exception, Kafka's: a topic
        queued for deletion keeps its stored state, so a leader that dies meanwhile stays in
        it (onReplicasBecomeOffline skips partitionsWithOfflineLeader of such topics and hands
        their replicas to failReplicaDeletion, which writes nothing). Second exception, also
        Kafka's: a leader whose replica has no recorded replica state (NonExistentReplica).
        Its broker's failure moves it to OfflineReplica, an invalid transition from
        NonExistentReplica, so removeReplicasFromIsr never runs and the dead leader stays
        stored (ReplicaStateMachine.handleStateChanges validates before doHandleStateChanges).
        It happens when a reassignment aborts in step A1 (updateLeaderEpoch throws
        IllegalStateException for a partition without a stored state) after U1/U2 added the
        target replicas to the assignment but before A2 made them NewReplica, and a later
        initial election (New -> Online) picks one of them; or when A2's NewReplica
        transition fails for an adding replica that already leads ("replica is being
        requested to become leader")."""
        leader = a["leader"]
        if leader < 0:
            return
        assert leader in a["isr"], (
            f"[leader-in-isr] {key}: leader {leader} not in ISR {a['isr']}{ctx}"
        )
        if after["topics"].get(_topic_of(key), {}).get("deletion", "none") != "none":
            return
        if a["replica_states"].get(str(leader), "NonExistentReplica") == "NonExistentReplica":
            return
        assert _registered(after, leader), (
            f"[leader-registered] {key}: leader {leader} is not a registered broker "
            f"(brokers: {after['brokers']}){ctx}"
        )

    def check_isr_nonempty_within_replicas(self, key: str, a: dict[str, Any], ctx: str) -> None:
        """[isr-nonempty] Once a partition has a stored state its ISR is never empty
        (removeReplicasFromIsr keeps the last member; elections never produce an empty ISR).

        [isr-within-replicas] ISR ⊆ replicas (the full assignment, adding and removing
        included), except for *orphans*: brokers that left the assignment without leaving
        the ISR. Every orphan has no replica state (NonExistentReplica) and is one of:

        1. the orphaned last ISR member: a reassignment (step B4/B5, or U3 for a superseded
           one) removes the partition's last ISR member; its OfflineReplica transition
           cannot take it out of the ISR (Kafka never empties an ISR) and NonExistentReplica
           then drops it from the assignment. ISR = [orphan], leader -1 (or the orphan).
        2. a stateless ISR member: a replica that joined the ISR without ever entering the
           replica state machine, so its removal's OfflineReplica transition was refused
           (invalid from NonExistentReplica: seen as a StateChangeFailed record) and
           removeReplicasFromIsr never ran for it. Kafka gets there when a reassignment
           aborts in step A1 (updateLeaderEpoch throws IllegalStateException for a
           partition without a stored state) after U1/U2 put the adding replicas in the
           assignment but before A2 made them NewReplica; the initial election (New ->
           Online) then puts every live replica of the assignment in the ISR, B1's
           OnlineReplica is refused for them too, and a later reassignment or cancel drops
           them from the assignment only. Such an orphan may keep leading, and its
           AlterPartition requests are accepted without comparing the ISR with the replica
           set (tryProcessAlterPartition checks epochs, recovery state and liveness only).
        3. a member named by an accepted AlterPartition: KafkaController.scala
           tryProcessAlterPartition (3.9.0) rejects only `newLeaderAndIsr.isr.toSet --
           controllerContext.liveBrokerIds`, so a leader may put any live broker in the ISR,
           a replica the assignment dropped included, and no controller path removes it
           (removeReplicasFromIsr runs only for the assignment's replicas).
        """
        if not _has_leadership(a):
            return
        isr, replicas, leader = a["isr"], a["replicas"], a["leader"]
        assert isr, f"[isr-nonempty] {key}: empty ISR{ctx}"
        refused = self.refused_offline.get(key, set())
        altered = self.altered_in.get(key, set())
        for m in isr:
            if m in replicas:
                continue
            no_state = a["replica_states"].get(str(m), "NonExistentReplica") == "NonExistentReplica"
            last_member = isr == [m] and leader in (-1, m)
            assert no_state and (last_member or m in refused or m in altered), (
                f"[isr-within-replicas] {key}: ISR {isr} has {m} outside replicas "
                f"{replicas} (leader {leader}, "
                f"replica states {a['replica_states']}), neither an orphaned last ISR "
                "member, a stateless "
                "ISR member whose OfflineReplica transition was refused, nor one an "
                f"AlterPartition named{ctx}"
            )

    # -- state machines ------------------------------------------------------------------

    def check_state_transitions(
        self, key: str, b: Any, rs: list[Rec], a: Any, failover: bool, ctx: str
    ) -> None:
        """[valid-partition-transition] / [valid-replica-transition] Each state-change record
        moves along Kafka's valid-previous tables, starts from the state the partition or
        replica is in, and the last one ends where the stored state is. ControllerFailover
        re-initialises both machines without records (initializeReplicaState /
        initializePartitionState), so in a failover step the first record of each entity
        sets the baseline."""
        p_state = None if failover else (b["state"] if b else "NonExistentPartition")
        r_states: dict[int, str | None] = {}
        b_replicas = (b or {}).get("replica_states", {})
        for r in rs:
            if r["type"] == "PartitionStateChange":
                frm, to = r["from_state"], r["to_state"]
                assert frm in VALID_PREVIOUS_PARTITION_STATES[to], (
                    f"[valid-partition-transition] {key}: {frm} -> {to} is not a valid "
                    f"transition{ctx}"
                )
                assert p_state is None or p_state == frm, (
                    f"[valid-partition-transition] {key}: record says {frm} -> {to}, "
                    f"partition was {p_state}{ctx}"
                )
                p_state = to
            elif r["type"] == "ReplicaStateChange":
                broker, frm, to = r["broker_id"], r["from_state"], r["to_state"]
                assert frm in VALID_PREVIOUS_REPLICA_STATES[to], (
                    f"[valid-replica-transition] {key} replica {broker}: {frm} -> {to} is "
                    f"not a valid transition{ctx}"
                )
                if broker not in r_states:
                    r_states[broker] = (
                        None if failover else b_replicas.get(str(broker), "NonExistentReplica")
                    )
                cur = r_states[broker]
                assert cur is None or cur == frm, (
                    f"[valid-replica-transition] {key} replica {broker}: record says {frm} "
                    f"-> {to}, "
                    f"replica was {cur}{ctx}"
                )
                r_states[broker] = to
        if a is not None:
            if p_state is not None and (rs or not failover):
                assert a["state"] == p_state, (
                    f"[valid-partition-transition] {key}: stored state {a['state']}, "
                    f"records end at {p_state}{ctx}"
                )
            for broker, st_ in r_states.items():
                stored = a["replica_states"].get(str(broker), "NonExistentReplica")
                assert st_ is None or stored == st_, (
                    f"[valid-replica-transition] {key} replica {broker}: stored {stored}, "
                    f"records end at {st_}{ctx}"
                )


def replay(events: list[dict[str, Any]], config: ControllerConfig | None = None) -> tuple[str, str]:
    """Run a log through a fresh engine: (decision records as JSON lines, final state JSON)."""
    engine = Engine(config or ControllerConfig())
    lines = []
    for offset, event in enumerate(events):
        for rec in engine.process(parse_event(event, offset)):
            lines.append(json.dumps(rec))
    return "\n".join(lines), json.dumps(engine.state_json())


def check_log(events: list[dict[str, Any]], config: ControllerConfig | None = None) -> None:
    """Every invariant over a whole log, one event at a time, plus determinism."""
    engine = Engine(config or ControllerConfig())
    checker = InvariantChecker(config)
    for offset, event in enumerate(events):
        before = engine.state_json()
        records = engine.process(parse_event(event, offset))
        assert not engine.errors, f"[no-controller-error] {engine.errors}"
        checker.check_step(event, before, records, engine.state_json())
    first, second = replay(events, config), replay(events, config)
    assert first == second, (
        "[determinism] the same log gave different output through two fresh engines"
    )


class ControllerMachine(RuleBasedStateMachine):
    """Random cluster histories; invariants after every event (the builder's observer)."""

    def __init__(self) -> None:
        super().__init__()
        self.builder = LogBuilder(ControllerConfig())
        self.checker = InvariantChecker()
        self.builder.observers.append(self._check)

    def _check(
        self, event: dict[str, Any], before: State, records: list[Rec], after: State
    ) -> None:
        try:
            self.checker.check_step(event, before, records, after)
        except AssertionError as exc:
            log = "\n".join(json.dumps(e) for e in self.builder.events)
            raise AssertionError(f"{exc}\nevent log (JSONL, last line failed):\n{log}") from None

    def _apply(self, event: dict[str, Any] | None) -> None:
        if event is not None:
            self.builder.emit(event)

    @initialize(data=st.data())
    def start_cluster(self, data: st.DataObject) -> None:
        c = DrawChooser(data.draw)
        self.builder.start_cluster(c, initial_topics=c.integer(0, 2))

    @rule(data=st.data())
    def broker_fails(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_broker_failure(DrawChooser(data.draw)))

    @rule(data=st.data())
    def broker_starts_or_bounces(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_broker_startup(DrawChooser(data.draw)))

    @rule(data=st.data())
    def controlled_shutdown(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_controlled_shutdown(DrawChooser(data.draw)))

    @rule(data=st.data())
    def create_topic(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_topic_creation(DrawChooser(data.draw)))

    @rule(data=st.data())
    def expand_topic(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_partition_expansion(DrawChooser(data.draw)))

    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_topic_deletion(DrawChooser(data.draw)))

    @rule(data=st.data())
    def stop_replica_responses(self, data: st.DataObject) -> None:
        # a broker answers its StopReplica requests of a deletion round together
        c = DrawChooser(data.draw)
        for _ in range(c.integer(1, 4)):
            self._apply(self.builder.build_stop_replica_response(c))

    @rule(data=st.data())
    def reassign_or_cancel(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_reassignment(DrawChooser(data.draw)))

    @rule(data=st.data())
    def elect_leaders(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_election(DrawChooser(data.draw)))

    @rule(data=st.data())
    def flip_unclean_config(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_config_change(DrawChooser(data.draw)))

    @rule(data=st.data())
    def alter_partition(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_alter_partition(DrawChooser(data.draw)))

    @rule(data=st.data())
    def alter_partition_twice(self, data: st.DataObject) -> None:
        # AlterPartition is the busiest request of a real cluster: give it a second rule
        c = DrawChooser(data.draw)
        self._apply(self.builder.build_alter_partition(c))
        self._apply(self.builder.build_alter_partition(c))

    @rule(data=st.data())
    def time_passes(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_tick(DrawChooser(data.draw)))

    @rule(data=st.data())
    def cluster_config_changes(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_broker_config_change(DrawChooser(data.draw)))

    @rule(data=st.data())
    def log_dir_fails(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_dir_failure(DrawChooser(data.draw)))

    @rule(data=st.data())
    def controller_moves(self, data: st.DataObject) -> None:
        self._apply(self.builder.build_controller_move(DrawChooser(data.draw)))

    def teardown(self) -> None:
        """[determinism] The log so far, through two fresh engines, gives byte-identical
        records and state, equal to what the live engine produced."""
        events = self.builder.events
        if not events:
            return
        first, second = replay(events), replay(events)
        assert first == second, "[determinism] two fresh engines disagree on the same log"
        live = "\n".join(json.dumps(r) for recs in self.builder.outputs for r in recs)
        assert first == (live, json.dumps(self.builder.state())), (
            "[determinism] a fresh engine disagrees with the engine that ran the log step by step"
        )


ControllerMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestControllerMachine = ControllerMachine.TestCase


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_seeded_logs_keep_invariants(seed: int) -> None:
    """The seeded generator the Spark equivalence tests use: same seed, same log; and every
    invariant holds over it."""
    log = generate_log(seed, n_events=60)
    assert log == generate_log(seed, n_events=60), (
        "[determinism] generate_log(seed) is not reproducible"
    )
    check_log(log)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_seeded_logs_with_unclean_cluster_default(seed: int) -> None:
    """The same invariants with `unclean.leader.election.enable=true` cluster-wide."""
    config = ControllerConfig(unclean_leader_election_enable=True)
    check_log(generate_log(seed, n_events=60, config=config), config)


# Minimal logs found by these properties where Kafka itself leaves the state an invariant
# first rejected; each is now a named exception in the invariant's docstring. Replayed so the
# exceptions stay exercised.
KAFKA_EXCEPTION_LOGS: dict[str, list[dict[str, Any]]] = {
    "aborted_reassignment_leader_dies": [
        {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
        {"v": 1, "type": "BrokerStartup", "broker_id": 5, "broker_epoch": 105},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "t1",
            "partitions": {"0": [3], "1": [3], "2": [2]},
        },
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "t1",
            "partition": 0,
            "target_replicas": [1, 5],
        },
        {"v": 1, "type": "BrokerFailure", "broker_id": 1},
        {"v": 1, "type": "BrokerFailure", "broker_id": 5},
    ],
    "stateless_orphaned_leader_expands_isr": [
        {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 106},
        {"v": 1, "type": "ControllerFailover", "controller_id": 2, "controller_epoch": 2},
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "t1",
            "partitions": {"0": [4, 5], "1": [4, 5], "2": [2, 1]},
            "configs": {"unclean.leader.election.enable": "false"},
        },
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "t1",
            "partition": 1,
            "target_replicas": [1, 5],
        },
        {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 110},
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "t1",
            "partition": 1,
            "target_replicas": None,
        },
        {"v": 1, "type": "BrokerStartup", "broker_id": 5, "broker_epoch": 111},
        {
            "v": 1,
            "type": "AlterPartition",
            "topic": "t1",
            "partition": 1,
            "broker_id": 1,
            "leader_epoch": 1,
            "partition_epoch": 1,
            "isr": [1, 5],
            "leader_recovery_state": "RECOVERED",
            "broker_epoch": 110,
        },
    ],
    "stateless_isr_member_outlives_reassignment": [
        {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
        {"v": 1, "type": "BrokerStartup", "broker_id": 5, "broker_epoch": 105},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "t0",
            "partitions": {"0": [4], "1": [5], "2": [2]},
        },
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "t0",
            "partition": 0,
            "target_replicas": [3, 4, 5],
        },
        {"v": 1, "type": "BrokerStartup", "broker_id": 4, "broker_epoch": 109},
        {
            "v": 1,
            "type": "PartitionReassignment",
            "topic": "t0",
            "partition": 0,
            "target_replicas": [3],
        },
    ],
    # tryProcessAlterPartition checks liveness only: a live broker outside the replica set
    # joins the ISR (found by seed 102 of the generated logs, after a reassignment away)
    "alter_partition_names_live_non_replica": [
        {"v": 1, "type": "BrokerStartup", "broker_id": 1, "broker_epoch": 101},
        {"v": 1, "type": "BrokerStartup", "broker_id": 2, "broker_epoch": 102},
        {"v": 1, "type": "BrokerStartup", "broker_id": 3, "broker_epoch": 103},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {"v": 1, "type": "TopicCreation", "topic": "t0", "partitions": {"0": [1, 2]}},
        {
            "v": 1,
            "type": "AlterPartition",
            "topic": "t0",
            "partition": 0,
            "broker_id": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "isr": [1, 2, 3],
            "leader_recovery_state": "RECOVERED",
            "broker_epoch": 101,
        },
    ],
}


@pytest.mark.parametrize("name", sorted(KAFKA_EXCEPTION_LOGS))
def test_kafka_exception_logs_keep_invariants(name: str) -> None:
    check_log(KAFKA_EXCEPTION_LOGS[name])
