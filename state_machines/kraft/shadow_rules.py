"""Shadow mode under KRaft's rules: compare a KRaft cluster's partition with the registration
the quorum controller's rules give, and say how bad a difference is.

KRaft's invariants differ from the ZK controller's, and so do the severities:

* an ISR shrink or expansion moves only the partition epoch (from metadata.version 3.6-IV0,
  KAFKA-15021): a leader epoch that did not move is not a divergence when ours did not
  move either, which is what the rules here compute;
* every leader is elected from the ISR, or, with ELR (KIP-966), from the eligible leader
  replicas; only an unclean election (the topic allows it, or an admin asked for one)
  takes another replica, and then the ISR is the leader alone;
* epochs never go back.

**safety** (data may be lost, or the cluster broke an invariant): the observed leader is
not a replica; it is outside its own ISR; it is a new leader outside our ISR and ELR while
the topic does not allow unclean election; or an epoch went backwards.
**benign** otherwise: another leader or ISR that the rules allow (an observation that
raced a change, a leader on a broker we see fenced), or different epochs that did not go
back.

With `shadow.follow` the partition then adopts the observed leader, epochs and ISR.
"""

from __future__ import annotations

from dataclasses import replace

from ..commands import Observe
from ..model import NO_LEADER
from ..outputs import DivergenceRecord, ObservationOutcome, Output
from .cluster_control import BrokerRegistry
from .partition_registration import PartitionRegistration

_Field = int | list[int] | None


def compare(
    topic: str,
    partition: int,
    current: PartitionRegistration,
    op: Observe,
    registry: BrokerRegistry,
    unclean_allowed: bool,
) -> tuple[list[Output], str]:
    """The outputs and the outcome: match | benign | safety."""
    observed: dict[str, _Field] = {
        "leader": op.leader,
        "leader_epoch": op.leader_epoch,
        "isr": list(op.isr),
    }
    if op.partition_epoch is not None:
        observed["partition_epoch"] = op.partition_epoch
    expected: dict[str, _Field] = {
        "leader": current.leader,
        "leader_epoch": current.leader_epoch,
        "isr": list(current.isr),
        "partition_epoch": current.partition_epoch,
    }
    if (
        op.leader == current.leader
        and op.leader_epoch == current.leader_epoch
        and set(op.isr) == set(current.isr)
        and (op.partition_epoch is None or op.partition_epoch == current.partition_epoch)
    ):
        return [ObservationOutcome("match")], "match"
    safety: list[str] = []
    leader = op.leader
    if leader != NO_LEADER:
        if leader not in current.replicas:
            safety.append(f"leader {leader} is not a replica of {list(current.replicas)}")
        if leader not in op.isr:
            safety.append(f"leader {leader} is outside its own ISR {list(op.isr)}")
        elif (
            leader != current.leader
            and leader not in current.isr
            and leader not in current.elr
            and not unclean_allowed
        ):
            safety.append(
                f"leader {leader} was elected outside the ISR {list(current.isr)} and the ELR "
                f"{list(current.elr)} while unclean.leader.election.enable is false"
            )
    if op.leader_epoch < current.leader_epoch:
        safety.append(f"leader epoch went backwards: {op.leader_epoch} < {current.leader_epoch}")
    if op.partition_epoch is not None and op.partition_epoch < current.partition_epoch:
        safety.append(
            f"partition epoch went backwards: {op.partition_epoch} < {current.partition_epoch}"
        )
    if safety:
        severity, reason = "safety", "; ".join(safety)
    else:
        diffs = [
            f"{k} {observed[k]} (expected {expected[k]})"
            for k in observed
            if k in expected and _norm(observed[k]) != _norm(expected[k])
        ]
        if leader != NO_LEADER and not registry.is_unfenced(leader):
            diffs.append(f"leader {leader} is on a broker the shadow sees fenced")
        severity, reason = "benign", "; ".join(diffs) or "states differ"
    return [
        DivergenceRecord(topic, partition, expected, observed, severity, reason),
        ObservationOutcome(severity),
    ], severity


def _norm(value: _Field) -> _Field:
    return sorted(value) if isinstance(value, list) else value


def adopt(current: PartitionRegistration, op: Observe) -> PartitionRegistration:
    """The observed state as ours (shadow.follow)."""
    return replace(
        current,
        leader=op.leader,
        leader_epoch=op.leader_epoch,
        isr=tuple(op.isr),
        partition_epoch=current.partition_epoch
        if op.partition_epoch is None
        else op.partition_epoch,
    )
