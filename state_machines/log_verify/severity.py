"""How bad a difference between the log's decision and the rules' is: benign or safety.

The classes are the shadow's (state_machines/kraft/shadow_rules.py), applied to the
partition as the log leaves it (`log`) against the partition as the rules would have left
it (`predicted`), both from the same state before the event (`before`), with the broker
registry as the event leaves it.

**safety** (data may be lost, or the log broke one of KRaft's invariants):

* the leader is not a replica, or not in its own ISR;
* a new leader outside the ISR and ELR before the change, which the rules did not elect,
  while the topic does not allow unclean election;
* a leader on a broker that is fenced, in controlled shutdown or unregistered, where the
  rules moved leadership away (`generateLeaderAndIsrUpdates` never keeps one);
* an ISR member the rules did not keep that is not eligible (fenced, shutting down,
  unregistered) while the partition has a leader (without one, KRaft keeps the last ISR
  member whatever its state), or such an ELR member: `handleBrokerFenced` and the ISR
  checks of `alterPartition` keep them out;
* a leader epoch or partition epoch below the rules' (an epoch not bumped: a removed replica
  or an old leader is no longer fenced off);
* a leader the rules marked RECOVERING (elected uncleanly) that the log says RECOVERED.

**benign** otherwise: another valid leader or ISR than the one Kafka's algorithm picks, a
partition left leaderless where the rules elected a leader (availability, not safety), a
different directory, ELR order or record version.
"""

from __future__ import annotations

from ..kraft.cluster_control import BrokerRegistry
from ..kraft.partition_registration import PartitionRegistration
from ..model import NO_LEADER
from ..states import LeaderRecoveryState

SAFETY, BENIGN = "safety", "benign"


def _eligible(registry: BrokerRegistry, broker_id: int) -> bool:
    return registry.is_active(broker_id)


def classify(
    before: PartitionRegistration | None,
    log: PartitionRegistration | None,
    predicted: PartitionRegistration | None,
    registry: BrokerRegistry,
    unclean_allowed: bool,
) -> tuple[str, list[str]]:
    """The severity and the reasons (safety reasons first; else what differs)."""
    safety: list[str] = []
    if log is None or predicted is None:
        # a partition the log has and the rules do not, or the reverse: never a decision
        # the rules can stand behind
        return SAFETY, ["the log and the rules disagree on whether the partition exists"]
    leader = log.leader
    if leader != NO_LEADER:
        if leader not in log.replicas:
            safety.append(f"leader {leader} is not a replica of {list(log.replicas)}")
        if leader not in log.isr:
            safety.append(f"leader {leader} is outside its own ISR {list(log.isr)}")
        prev_isr = before.isr if before is not None else ()
        prev_elr = before.elr if before is not None else ()
        prev_leader = before.leader if before is not None else NO_LEADER
        if (
            before is not None
            and leader != prev_leader
            and leader != predicted.leader
            and leader not in prev_isr
            and leader not in prev_elr
            and not unclean_allowed
        ):
            safety.append(
                f"leader {leader} was elected outside the ISR {list(prev_isr)} and the ELR "
                f"{list(prev_elr)} while unclean.leader.election.enable is false"
            )
        if leader != predicted.leader and not _eligible(registry, leader):
            safety.append(
                f"leader {leader} is on a broker that is fenced, shutting down or unregistered "
                f"(the rules: leader {predicted.leader})"
            )
    # without a leader, KRaft keeps the last ISR member even when it is fenced (no empty ISR
    # without ELR): only an ISR that a leader serves from must hold no ineligible member
    kept = [b for b in log.isr if b not in predicted.isr and not _eligible(registry, b)]
    if kept and log.leader != NO_LEADER:
        safety.append(
            f"ISR {list(log.isr)} keeps {kept}, fenced, shutting down or unregistered "
            f"(the rules: ISR {list(predicted.isr)})"
        )
    elr_kept = [
        b
        for b in log.elr
        if b not in predicted.elr and b not in predicted.isr and not _eligible(registry, b)
    ]
    if elr_kept:
        safety.append(f"ELR {list(log.elr)} keeps {elr_kept}, which the rules removed")
    if log.leader_epoch < predicted.leader_epoch:
        safety.append(
            f"leader epoch not bumped: {log.leader_epoch} where the rules have "
            f"{predicted.leader_epoch}"
        )
    if log.partition_epoch < predicted.partition_epoch:
        safety.append(
            f"partition epoch not bumped: {log.partition_epoch} where the rules have "
            f"{predicted.partition_epoch}"
        )
    if (
        predicted.leader_recovery_state is LeaderRecoveryState.RECOVERING
        and log.leader_recovery_state is LeaderRecoveryState.RECOVERED
        and log.leader == predicted.leader
        and log.leader != NO_LEADER
    ):
        safety.append(f"leader {log.leader} was elected uncleanly but the log says RECOVERED")
    if safety:
        return SAFETY, safety
    return BENIGN, differences(log, predicted)


def differences(log: PartitionRegistration, predicted: PartitionRegistration) -> list[str]:
    out = []
    for name in (
        "leader",
        "isr",
        "leader_epoch",
        "partition_epoch",
        "replicas",
        "adding_replicas",
        "removing_replicas",
        "elr",
        "last_known_elr",
        "leader_recovery_state",
        "directories",
    ):
        a, b = getattr(log, name), getattr(predicted, name)
        if a != b:
            show = (
                (lambda v: list(v)) if isinstance(a, tuple) else (lambda v: getattr(v, "value", v))
            )
            out.append(f"{name} {show(a)} (the rules: {show(b)})")
    return out or ["the records differ, the partitions they leave do not"]
