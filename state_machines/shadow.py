"""Shadow mode: compare what a real cluster's controller decided with what Kafka's
algorithm says it should have, one partition at a time.

An `ObservedPartitionState` is compared with this partition's own state. A difference is a
`Divergence`:

* **safety** when the observed leader is not a live replica (a broker that is registered,
  shutting down included: Kafka keeps a leader there when a controlled shutdown finds no
  successor), when it is outside our ISR while unclean election is not allowed for the
  topic, or when an epoch went backwards;
* **benign** otherwise, e.g. the same leader at another epoch because the observation
  raced a change.

With `shadow.follow` (the default, and not Kafka behaviour) the partition then adopts the
observed leader, epochs and ISR, so one divergence does not snowball into thousands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .commands import Observe
from .model import NO_LEADER, LeaderAndIsr
from .outputs import DivergenceRecord, ObservationOutcome, Output
from .states import PartitionState

# a field of the expected or observed side of a `Divergence`
_Field = int | list[int] | None


def compare(
    topic: str,
    partition: int,
    current: LeaderAndIsr | None,
    replicas: tuple[int, ...],
    op: Observe,
    is_registered: Callable[[int], bool],
    unclean_allowed: bool,
) -> tuple[list[Output], str]:
    """Returns the outputs and the outcome: match | benign | safety."""
    observed: dict[str, _Field] = {
        "leader": op.leader,
        "leader_epoch": op.leader_epoch,
        "isr": list(op.isr),
    }
    if op.partition_epoch is not None:
        observed["partition_epoch"] = op.partition_epoch
    if current is None:
        expected: dict[str, _Field] = {"leader": NO_LEADER, "leader_epoch": None, "isr": []}
        reason = "the shadow has no leader-and-ISR state for this partition"
        return [
            DivergenceRecord(topic, partition, expected, observed, "benign", reason),
            ObservationOutcome("benign"),
        ], "benign"
    expected = {
        "leader": current.leader,
        "leader_epoch": current.leader_epoch,
        "isr": list(current.isr),
        "partition_epoch": current.partition_epoch,
    }
    same = (
        op.leader == current.leader
        and op.leader_epoch == current.leader_epoch
        and set(op.isr) == set(current.isr)
        and (op.partition_epoch is None or op.partition_epoch == current.partition_epoch)
    )
    if same:
        return [ObservationOutcome("match")], "match"
    safety: list[str] = []
    if op.leader != NO_LEADER and (op.leader not in replicas or not is_registered(op.leader)):
        safety.append(f"leader {op.leader} is not a live replica of {list(replicas)}")
    if op.leader != NO_LEADER and op.leader not in op.isr:
        safety.append(f"leader {op.leader} is outside its own ISR {list(op.isr)}")
    elif op.leader != NO_LEADER and op.leader not in current.isr and not unclean_allowed:
        if tuple(op.isr) == (op.leader,):
            safety.append(
                f"unclean election of {op.leader} (outside the ISR {list(current.isr)}) "
                "while unclean.leader.election.enable is false"
            )
        else:
            safety.append(
                f"leader {op.leader} is outside the ISR {list(current.isr)} and unclean election "
                "is not allowed"
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
        severity, reason = "benign", "; ".join(diffs) or "states differ"
    return [
        DivergenceRecord(topic, partition, expected, observed, severity, reason),
        ObservationOutcome(severity),
    ], severity


def _norm(value: _Field) -> _Field:
    return sorted(value) if isinstance(value, list) else value


def adopt(current: LeaderAndIsr | None, op: Observe) -> LeaderAndIsr:
    """The observed state as ours (shadow.follow)."""
    base = current or LeaderAndIsr(NO_LEADER, 0, (), 0)
    return replace(
        base,
        leader=op.leader,
        leader_epoch=op.leader_epoch,
        isr=tuple(op.isr),
        partition_epoch=op.partition_epoch
        if op.partition_epoch is not None
        else base.partition_epoch,
        controller_epoch=op.controller_epoch
        if op.controller_epoch is not None
        else base.controller_epoch,
    )


def followed_state(state: PartitionState | None, leader: int) -> PartitionState | None:
    if state not in (PartitionState.OnlinePartition, PartitionState.OfflinePartition):
        return state
    return (
        PartitionState.OfflinePartition if leader == NO_LEADER else PartitionState.OnlinePartition
    )
