"""KRaft's invariants, checked on one event at a time (the kraft-mode `InvariantChecker`).

`KraftInvariantChecker.check_step(event, before, records, after)` takes
`Engine.state_json()` before and after the event (brokers as registrations: fenced,
in_controlled_shutdown; partitions as `PartitionRegistration`s) and the event's decision
documents (canonical order: by key, then `seq`, so one partition's records come in the
order they were appended). Each rule is named in its assertion message and cites the Kafka
code behind it in its docstring (apache/kafka 3.9.0 unless said; ELR from 4.0 / trunk,
whose `PartitionChangeBuilder` ELR code is the same as 3.9.0's).

The partition records of a step are walked in order from the registration before the
event, each replayed the way `PartitionRegistration.merge` does (`replay_record`), which is
written here from the documents alone. The walk ends where the engine's state is
([replay-matches-state]), and across steps a `DocumentReplayer` keeps the registrations the
documents alone give, from the first step with an active controller on ([documents-replay]):
a standby replays the log without appending, so before that the documents say nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from state_machines.model import ControllerConfig
from tests.property.kraft_replay import (
    CHANGE_FIELDS,
    RECOVERY_STATES,
    DocumentReplayer,
    replay_record,
)
from tests.property.kraft_topic_configs import TopicConfigs

State = dict[str, Any]
Rec = dict[str, Any]

DEAD_LETTER_EVENTS = frozenset({"StopReplicaResponse", "ReplicaDirFailure"})
_NOT_ASSIGNED = re.compile(
    r"partition (\S+): InvariantViolation: Replica (\d+) is not assigned to this partition"
)


def metadata_version_tuple(version: str) -> tuple[int, int, int]:
    """ "3.6-IV0" -> (3, 6, 0), ordered as MetadataVersion is."""
    release, _, iv = version.partition("-IV")
    major, minor = release.split(".")
    return int(major), int(minor), int(iv or 0)


class KraftInvariantChecker:
    """The quorum controller's invariants, after every event."""

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.mv = metadata_version_tuple(config.metadata_version)
        self.elr = config.eligible_leader_replicas_version >= 1
        self.replayer = DocumentReplayer()
        # partitions whose leader was elected while not active, by one of Kafka's exceptions
        # (see check_new_leader), until leadership moves
        self.inactive_leader_allowed: set[str] = set()
        # partitions whose ISR holds a last known leader that is no longer a replica
        self.lkl_outside_replicas: set[str] = set()
        self.topics = TopicConfigs(config)
        self.steps = 0

    # -- the step ------------------------------------------------------------------------

    def check_step(
        self,
        event: dict[str, Any],
        before: State,
        records: list[Rec],
        after: State,
        dead_letters: list[tuple[int, str]] | None = None,
    ) -> None:
        self.steps += 1
        ctx = f"\nevent: {json.dumps(event)}"
        if dead_letters is not None:
            self.check_dead_letters(event, before, after, dead_letters, ctx)
        if not after["active"]:
            assert not records, f"[standby-appends-nothing] a standby wrote {records}{ctx}"
        by_key: dict[str, list[Rec]] = {}
        for r in records:
            if r["type"] in ("PartitionRecord", "PartitionChangeRecord"):
                by_key.setdefault(f"{r['topic']}-{r['partition']}", []).append(r)
        removed = {r["topic"] for r in records if r["type"] == "RemoveTopicRecord"}
        for key in sorted(set(before["partitions"]) | set(after["partitions"]) | set(by_key)):
            self.check_partition(key, event, before, by_key.get(key, []), after, removed, ctx)
        self.check_leaders_active(after, ctx)
        if not self.elr:
            self.check_last_isr_member_fenced(event, before, after, ctx)
        self.replayer.step(before, records)
        if self.replayer.partitions is not None:
            assert self.replayer.partitions == after["partitions"], (
                f"[documents-replay] the decisions' documents replay to a different state than "
                f"the engine's:"
                f"{_diff(self.replayer.partitions, after['partitions'])}{ctx}"
            )

    def check_dead_letters(
        self,
        event: dict[str, Any],
        before: State,
        after: State,
        dead_letters: list[tuple[int, str]],
        ctx: str,
    ) -> None:
        """[dead-letters] StopReplicaResponse and ReplicaDirFailure have no KRaft meaning
        (quorum_controller.py `_NOT_MAPPED`): exactly one dead letter each. Any other dead
        letter is an exception in the controller, a bug here, with one exception Kafka has
        too: with ELR, an ELR member that is no longer a replica (`maybePopulateTargetElr`
        does not filter by the target replicas, so a cancelled or completed reassignment can
        leave one), or a last known leader that is no longer a replica
        (`canElectLastKnownLeader` asks the acceptor too), reaches `LeaderAcceptor.test`,
        whose `PartitionRegistration.directory` throws IllegalArgumentException "Replica N is
        not assigned to this partition" for an acceptable broker (3.9.0 and trunk of October
        2024). The partition is then left as it was."""
        if event["type"] in DEAD_LETTER_EVENTS:
            assert len(dead_letters) == 1, f"[dead-letters] {event['type']}: {dead_letters}{ctx}"
            return
        for _, reason in dead_letters:
            m = _NOT_ASSIGNED.search(reason)
            assert self.elr and m, f"[dead-letters] a controller error: {reason}{ctx}"
            key, replica = m.group(1), int(m.group(2))
            b = before["partitions"].get(key)
            asked = b and (
                replica in b["eligible_leader_replicas"] or b["last_known_elr"] == [replica]
            )
            assert asked and replica not in b["replicas"], (
                f"[dead-letters] {reason}, but {replica} is not an ELR member or last known "
                f"leader outside the "
                f"replicas: {b}{ctx}"
            )
            assert after["partitions"].get(key) == b, (
                f"[dead-letters] {key} changed although its step failed{ctx}"
            )

    def check_partition(
        self,
        key: str,
        event: dict[str, Any],
        before: State,
        rs: list[Rec],
        after: State,
        removed: set[str],
        ctx: str,
    ) -> None:
        b = before["partitions"].get(key)
        a = after["partitions"].get(key)
        topic = key.rpartition("-")[0]
        if a is None or b is None or a["leader"] != b["leader"]:
            self.inactive_leader_allowed.discard(
                key
            )  # leadership moved: check_new_leader decides again
        if a is None:
            self.lkl_outside_replicas.discard(key)
        reg = b
        if topic in removed:
            reg = None  # RemoveTopicRecord: the topic's partitions go with it
        for r in rs:
            where = f"{ctx}\nrecord: {json.dumps(r)}"
            if r["type"] == "PartitionRecord":
                assert reg is None, (
                    f"[partition-record-new] {key}: PartitionRecord for an existing "
                    f"partition{where}"
                )
                self.check_partition_record(key, r, after, where)
                reg = replay_record(None, r)
            else:
                assert reg is not None, (
                    f"[change-known-partition] {key}: no registration to change{where}"
                )
                new = replay_record(reg, r)
                self.check_change_record(key, event, reg, r, new, where)
                self.check_new_leader(key, event, before, after, reg, r, new, where)
                self.check_leader_kept(key, event, before, after, reg, r, new, where)
                reg = new
            self.check_registration(key, reg, before, after, where)
        if after["active"] and before["active"]:
            assert reg == a, (
                f"[replay-matches-state] {key}: records replay to {reg}, state is {a}{ctx}"
            )

    # -- records -------------------------------------------------------------------------

    def check_partition_record(self, key: str, r: Rec, after: State, where: str) -> None:
        """[partition-record] `createPartitions` / `createTopic` with a manual assignment
        (ReplicationControlManager.createPartitions, buildPartitionRegistration): the ISR is
        the assignment's active replicas in order, never empty; the leader its first member;
        both epochs 0; RECOVERED; no reassignment, no ELR."""
        brokers = after["brokers"]
        active = [b for b in r["replicas"] if _active(brokers, b)]
        assert r["isr"] == active and active, (
            f"[partition-record] {key}: ISR {r['isr']}, active replicas {active}{where}"
        )
        assert r["leader"] == r["isr"][0], (
            f"[partition-record] {key}: leader {r['leader']} not the first ISR member{where}"
        )
        assert (r["leader_epoch"], r["partition_epoch"], r["leader_recovery_state"]) == (0, 0, 0), (
            f"[partition-record] {key}: epochs or recovery state not initial{where}"
        )
        assert not r["adding_replicas"] and not r["removing_replicas"], (
            f"[partition-record] {key}{where}"
        )
        assert not r.get("eligible_leader_replicas") and not r.get("last_known_elr"), (
            f"[partition-record] {key}{where}"
        )

    def check_change_record(
        self,
        key: str,
        event: dict[str, Any],
        reg: dict[str, Any],
        r: Rec,
        new: dict[str, Any],
        where: str,
    ) -> None:
        """[no-op-record] PartitionChangeBuilder.build returns empty when
        `changeRecordIsNoOp`: a written record sets at least one field.
        [only-changed-fields] Each field it sets differs from the registration, except
        `leader`: `tryElection` sets it only for a new leader, but
        `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded` (a replica set that loses a
        member) and, before 3.6-IV0, `triggerLeaderEpochBumpForIsrShrinkIfNeeded`
        (KAFKA-15021: an ISR that loses a member) set it to the current leader to bump the
        leader epoch. Those are its only reasons ([same-leader-bump]), and each of them
        bumps it ([epoch-bump-required]). And `isr` when it is [L] for a new leader L:
        `tryElection`'s unclean branch sets the ISR to the leader alone without comparing,
        and with ELR the last known leader may be that ISR's one member already.
        [partition-epoch] / [leader-epoch] Replay (`PartitionRegistration.merge`): +1
        partition epoch per record, +1 leader epoch exactly when `leader` is set.
        [isr-change-alone] An AlterPartition that only changes the ISR (and ELR) keeps the
        leader epoch from 3.6-IV0: the issue's false alarm."""
        present = [f for f in CHANGE_FIELDS if f in r]
        assert present, f"[no-op-record] {key}: a PartitionChangeRecord that changes nothing{where}"
        new_leader = "leader" in r and r["leader"] != reg["leader"]
        for f in present:
            if f == "leader" or (f == "isr" and new_leader and r["isr"] == [r["leader"]]):
                continue
            value = RECOVERY_STATES[r[f]] if f == "leader_recovery_state" else r[f]
            assert value != reg[f], (
                f"[only-changed-fields] {key}: {f} = {value} is not a change{where}"
            )
        loses_replica = "replicas" in r and not _contains(r["replicas"], reg["replicas"])
        shrink_bumps = self.mv < (3, 6, 0)
        loses_isr_member = "isr" in r and not _contains(r["isr"], reg["isr"])
        if r.get("leader") == reg["leader"]:
            assert loses_replica or (shrink_bumps and loses_isr_member), (
                f"[same-leader-bump] {key}: leader set to the current leader {reg['leader']} "
                f"without a replica "
                f"removed{' or an ISR shrink' if shrink_bumps else ''}{where}"
            )
        if loses_replica or (shrink_bumps and loses_isr_member):
            assert "leader" in r, f"[epoch-bump-required] {key}: the leader epoch must move{where}"
        assert new["partition_epoch"] == reg["partition_epoch"] + 1, (
            f"[partition-epoch] {key}{where}"
        )
        assert new["leader_epoch"] == reg["leader_epoch"] + (1 if "leader" in r else 0), (
            f"[leader-epoch] {key}{where}"
        )
        isr_alone = set(present) <= {"isr", "eligible_leader_replicas", "last_known_elr"}
        if (
            event["type"] == "AlterPartition"
            and isr_alone
            and not (shrink_bumps and loses_isr_member)
        ):
            assert new["leader_epoch"] == reg["leader_epoch"], (
                f"[isr-change-alone] {key}: an ISR change alone moved the leader epoch{where}"
            )

    def check_new_leader(
        self,
        key: str,
        event: dict[str, Any],
        before: State,
        after: State,
        reg: dict[str, Any],
        r: Rec,
        new: dict[str, Any],
        where: str,
    ) -> None:
        """A record that elects a new leader L >= 0 (PartitionChangeBuilder.tryElection):

        [leader-acceptable] L is active (unfenced, not in controlled shutdown: the handlers'
        `isAcceptableLeader`) in the state after the event. Two exceptions, both Kafka's:
        the broker a heartbeat unfences is acceptable whatever its registration says
        (`handleBrokerUnfenced`: generateLeaderAndIsrUpdates' acceptor is
        `r == brokerToAdd || isActive(r)`), and the unfence record (FENCE change only)
        leaves a registration's in-controlled-shutdown flag as it was, so a broker fenced
        during its controlled shutdown and unfenced by the same incarnation leads while still
        flagged in controlled shutdown (a real broker would ask to shut down instead); and,
        with ELR, the last known leader (`canElectLastKnownLeader`) is elected without that
        test in 3.9.0 and 4.0 (the test only logs; KAFKA-19522 fixed it on trunk after 4.0).
        [clean-election] L was in the ISR, or in the ELR (`isValidNewLeader`: with an empty
        target ISR, which an unclean shutdown of the last ISR member makes empty), or in the
        ISR an AlterPartition asked for (a completed
        reassignment elects from the target ISR). Otherwise the election is unclean and needs
        `electAnyLeader`'s UNCLEAN type (the topic's unclean.leader.election.enable, cluster
        dynamic or static, or an admin UNCLEAN election), or, with ELR, is the last known
        leader (`canElectLastKnownLeader`: target ISR and ELR empty, the registration's last
        known ELR = [L]; the target ISR or ELR may have just lost an unclean shutdown; 3.9.0 and
        4.0 elect it whatever the unclean setting), or is a cancelled reassignment's revert
        with no original ISR member left (PartitionReassignmentRevert: ISR = first original
        replica; Kafka refuses the cancel unless the topic allows unclean).
        [unclean-isr] An unclean leader is the ISR alone, and RECOVERING from 3.2-IV0
        (KIP-704) unless it came from the revert's clean election over its one-member ISR.
        [elr-election] A leader from the ELR becomes the ISR alone and leaves the ELR.
        [lkl-acceptor-throws] A last known leader that is no longer a replica is elected only
        when not acceptable: `canElectLastKnownLeader` still calls `isAcceptableLeader`
        (to log), and `LeaderAcceptor.test` looks up the directory of an acceptable broker,
        which throws for a non-replica (`PartitionRegistration.directory`).
        """
        leader = r.get("leader", -2)
        if leader < 0 or leader == reg["leader"]:
            return
        topic = key.rpartition("-")[0]
        # the target ISR and ELR are empty, which the registration's need not be: an unclean
        # shutdown (a re-registration) takes its broker out of both in the same build
        last_known = self.elr and reg["last_known_elr"] == [leader]
        if last_known and leader not in reg["replicas"]:
            # LeaderAcceptor.test asks PartitionRegistration.directory only of an acceptable
            # broker, and that throws for a non-replica: Kafka elects it only when it is not
            # acceptable (not active, and not the broker being unfenced)
            unfenced_now = event["type"] == "BrokerStartup" and event["broker_id"] == leader
            assert not _active(after["brokers"], leader) and not unfenced_now, (
                f"[lkl-acceptor-throws] {key}: last known leader {leader} is acceptable and not a "
                f"replica: "
                f"Kafka's LeaderAcceptor throws here{where}"
            )
            self.lkl_outside_replicas.add(key)
        if not _active(after["brokers"], leader):
            unfenced_now = (
                event["type"] == "BrokerStartup"
                and event["broker_id"] == leader
                and not after["brokers"][str(leader)]["fenced"]
            )
            assert last_known or unfenced_now, (
                f"[leader-acceptable] {key}: elected {leader}, not active{where}"
            )
            self.inactive_leader_allowed.add(key)
        # the target ISR, not the registration's, must be empty: an unclean shutdown empties it
        in_elr = leader in reg["eligible_leader_replicas"]
        if leader in reg["isr"] or (event["type"] == "AlterPartition" and leader in event["isr"]):
            return
        if in_elr:
            assert new["isr"] == [leader] and leader not in new["eligible_leader_replicas"], (
                f"[elr-election] {key}: ELR leader {leader}, ISR {new['isr']}, ELR "
                f"{new['eligible_leader_replicas']}{where}"
            )
            return
        admin_unclean = (
            event["type"] == "ReplicaLeaderElection" and event["election_type"] == "UNCLEAN"
        )
        revert = event["type"] == "PartitionReassignment" and event["target_replicas"] is None
        allowed = self.topics.unclean_allowed(after, topic)
        assert allowed or admin_unclean or last_known, (
            f"[clean-election] {key}: {leader} elected from outside ISR {reg['isr']} and ELR "
            f"{reg['eligible_leader_replicas']} without unclean election allowed{where}"
        )
        assert new["isr"] == [leader], (
            f"[unclean-isr] {key}: unclean leader {leader}, ISR {new['isr']}{where}"
        )
        revert_clean = revert and new["replicas"][:1] == [leader]
        if self.mv >= (3, 2, 0) and not revert_clean:
            assert new["leader_recovery_state"] == "RECOVERING", (
                f"[unclean-isr] {key}: unclean leader {leader} is not RECOVERING{where}"
            )

    def check_leader_kept(
        self,
        key: str,
        event: dict[str, Any],
        before: State,
        after: State,
        reg: dict[str, Any],
        r: Rec,
        new: dict[str, Any],
        where: str,
    ) -> None:
        """[leader-kept] Election keeps a current leader that is still valid: `electAnyLeader`
        and `electPreferredLeader` return `partition.leader` when `isValidNewLeader` holds
        (in the target ISR and acceptable), and only PREFERRED tries the first replica
        before it. So a leader P >= 0 is replaced only when it left the ISR (the record's
        ISR, or a completed reassignment's) or is no longer active, or by a PREFERRED
        election of the first replica: an admin's, or `maybeBalancePartitionLeaders`', which
        runs before any event whose `ts` reaches its deadline (kraft/periodic_tasks.py). A
        new incarnation of an unfenced broker is fenced first (`_fenced_before_registering`)."""
        p = reg["leader"]
        if "leader" not in r or r["leader"] == p or p < 0:
            return
        by_admin = (
            event["type"] == "ReplicaLeaderElection" and event["election_type"] == "PREFERRED"
        )
        by_balance = event.get("ts") is not None
        preferred = (by_admin or by_balance) and r["leader"] == new["replicas"][0]
        if _fenced_before_registering(event, before, p):
            return
        assert p not in new["isr"] or not _active(after["brokers"], p) or preferred, (
            f"[leader-kept] {key}: leader {p} is still valid (ISR {new['isr']}, active) but moved "
            f"to {r['leader']}{where}"
        )

    # -- registrations -------------------------------------------------------------------

    def check_registration(
        self, key: str, reg: dict[str, Any], before: State, after: State, where: str
    ) -> None:
        """After each record:
        [leader-in-isr] the leader is -1 or an ISR member (every election picks from the
        target ISR or makes the leader the ISR alone; AlterPartition must keep the leader).
        [isr-within-replicas] ISR within the replicas (`Replicas.validateIsr`, the
        reassignment arithmetic keeps removing replicas in `replicas` until done). Exception,
        ELR only: `canElectLastKnownLeader` elects the last known leader without asking
        whether it is a replica, so after a reassignment away from it, it may lead with
        ISR = [itself] outside the replicas (3.9.0 and 4.0; see check_new_leader).
        [isr-nonempty] Without ELR the ISR is never empty: the builder writes an ISR only
        when it is non-empty ("If ELR is enabled, the ISR is allowed to be empty").
        [no-elr] Without ELR, ELR and last known ELR stay empty (`maybeUpdateRecordElr`).
        With ELR (KIP-966, `maybePopulateTargetElr`, `maybeUpdateRecordElr`):
        [elr-disjoint] ELR and ISR are disjoint; [elr-below-min-isr] the ELR is empty when
        the ISR has at least the topic's effective min ISR members (at the time of the
        record: a later min.insync.replicas change rewrites nothing), except after an
        election from the ELR, which leaves the rest of it (below).
        Not asserted, because Kafka does not guarantee it: ELR members are replicas.
        `maybePopulateTargetElr` (3.9.0, unchanged on trunk of October 2024) builds the ELR
        from the old ISR and ELR without filtering by the target replicas, so a cancelled
        reassignment keeps an adding replica that was in the ISR in the ELR (and a completed
        one a removed replica), after which an election asking about it throws (see
        check_dead_letters).
        """
        isr, leader = reg["isr"], reg["leader"]
        assert leader == -1 or leader in isr, (
            f"[leader-in-isr] {key}: leader {leader} not in ISR {isr}{where}"
        )
        if set(isr) <= set(reg["replicas"]):
            self.lkl_outside_replicas.discard(key)
        assert set(isr) <= set(reg["replicas"]) or key in self.lkl_outside_replicas, (
            f"[isr-within-replicas] {key}: ISR {isr} not within replicas {reg['replicas']}{where}"
        )
        elr = reg["eligible_leader_replicas"]
        if not self.elr:
            assert isr, f"[isr-nonempty] {key}: empty ISR{where}"
            assert not elr and not reg["last_known_elr"], (
                f"[no-elr] {key}: ELR fields set without ELR{where}"
            )
            return
        assert not set(elr) & set(isr), (
            f"[elr-disjoint] {key}: ELR {elr} and ISR {isr} overlap{where}"
        )
        kafka_min_isr = self.topics.effective_min_isr(before, after, key.rpartition("-")[0])
        # Except after an election from the ELR: the ISR was emptied, so the ELR took the old
        # ISR and ELR (`maybePopulateTargetElr`); `tryElection` then makes the new leader the
        # ISR alone and takes it out of the ELR, and `maybeUpdateRecordElr` does not look at
        # the min ISR again, so the rest of the ELR stays though the ISR is back at min ISR
        # (Kafka's PartitionChangeBuilder). The next change clears it.
        prior = before["partitions"].get(key)
        elected_from_elr = (
            prior is not None
            and leader != prior["leader"]
            and isr == [leader]
            and leader in prior["eligible_leader_replicas"]
        )
        assert not elr or len(isr) < kafka_min_isr or elected_from_elr, (
            f"[elr-below-min-isr] {key}: ELR {elr} with ISR {isr} at min ISR {kafka_min_isr}{where}"
        )

    def check_leaders_active(self, after: State, ctx: str) -> None:
        """[leader-active] Between events every leader is an active broker: fencing and
        controlled shutdown run their handlers over every partition with the broker in its
        ISR (`partitionsWithBrokerInIsr`, the leader included), which move leadership away
        (generateLeaderAndIsrUpdates' acceptor excludes the broker). Exception: a last known
        leader elected while not active by one of Kafka's exceptions (see check_new_leader),
        until leadership moves."""
        for key, p in after["partitions"].items():
            if p["leader"] >= 0 and key not in self.inactive_leader_allowed:
                assert _active(after["brokers"], p["leader"]), (
                    f"[leader-active] {key}: leader {p['leader']} is "
                    f"{after['brokers'].get(str(p['leader']))}{ctx}"
                )

    def check_last_isr_member_fenced(
        self, event: dict[str, Any], before: State, after: State, ctx: str
    ) -> None:
        """[last-isr-member-stays] Without ELR, fencing (or a controlled shutdown of) the last
        ISR member leaves it in the ISR with leader -1: `generateLeaderAndIsrUpdates` asks for
        an empty ISR, which the builder does not write, and elects nobody. With unclean
        election allowed the UNCLEAN election may instead elect another active replica, which
        becomes the ISR alone."""
        if event["type"] not in ("BrokerFailure", "ControlledShutdown") or not after["active"]:
            return
        x = event["broker_id"]
        fact = after["brokers"].get(str(x))
        if fact is None or (not fact["fenced"] and not fact["in_controlled_shutdown"]):
            return  # refused (stale epoch) or nothing to do
        if not _active(before["brokers"], x):
            # only the event that fences it or starts its controlled shutdown moves leaderships
            # (a heartbeat already in CONTROLLED_SHUTDOWN writes nothing)
            return
        for key, b in before["partitions"].items():
            a = after["partitions"].get(key)
            if a is None or b["isr"] != [x] or (b["leader"] not in (x, -1)):
                continue
            kept = a["isr"] == [x] and a["leader"] == -1
            unclean = (
                self.topics.unclean_allowed(after, key.rpartition("-")[0])
                and a["leader"] not in (-1, x)
                and a["isr"] == [a["leader"]]
            )
            assert kept or unclean, (
                f"[last-isr-member-stays] {key}: ISR [{x}] became {a['isr']}, leader "
                f"{a['leader']}{ctx}"
            )


def _fenced_before_registering(event: dict[str, Any], before: State, broker: int) -> bool:
    """A new incarnation of an unfenced broker (a BrokerStartup with another broker_epoch, or
    none): `registerBroker` refuses it while the old session is valid, so the session's
    expiry fences the broker (`handleBrokerFenced`) before it registers again."""
    if event["type"] != "BrokerStartup" or event["broker_id"] != broker:
        return False
    fact = before["brokers"].get(str(broker))
    return (
        fact is not None
        and not fact["fenced"]
        and event.get("broker_epoch") != fact["broker_epoch"]
    )


def _active(brokers: dict[str, Any], broker: int) -> bool:
    fact = brokers.get(str(broker))
    return fact is not None and not fact["fenced"] and not fact["in_controlled_shutdown"]


def _contains(a: list[int], b: list[int]) -> bool:
    """`Replicas.contains(a, b)`: every member of b is in a."""
    return set(b) <= set(a)


def _diff(replayed: dict[str, Any], state: dict[str, Any]) -> str:
    lines = []
    for key in sorted(set(replayed) | set(state)):
        if replayed.get(key) != state.get(key):
            lines.append(
                f"\n  {key}: documents {replayed.get(key)}\n  {' ' * len(key)}  state     "
                f"{state.get(key)}"
            )
    return "".join(lines)
