"""The verdict on one controller write to a partition state znode: does it match the write
the rules predict, and if not, is the difference benign or a safety divergence. Pure: the
checker (`zk_checks.Checker`) hands it what its engine knows of the partition and the
cluster.

A write with a prediction matches when its leader, leader epoch, ISR (as a set) and
controller epoch are the predicted ones. Any other write is classed by `shadow.compare`
against the prediction, or against the rules' current state when there is none, plus what
only a ZooKeeper write shows (`zk_verdicts.zk_safety`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from state_machines.commands import Observe
from state_machines.model import LeaderAndIsr
from state_machines.outputs import DivergenceRecord
from state_machines.partition import PartitionRecord
from state_machines.shadow import compare

from .zk_events import StateWrite
from .zk_verdicts import Predicted, Verdict, zk_safety
from .zk_znodes import PartitionStateZnode

# the method a write is held to when no rule predicts it and no inferred request was refused
NO_RULE = "no rule decides a write here from the inputs seen"


def judge(
    w: StateWrite,
    before: PartitionStateZnode | None,
    pred: Predicted | None,
    rec: PartitionRecord | None,
    unpredicted: str,
    is_live: Callable[[int], bool],
    unclean_allowed: bool,
    controller_epoch: int,
) -> Verdict:
    """`before`: the last version seen, when this write follows it directly; `rec`: the
    rules' record of the partition; `unpredicted`: the method named when `pred` is None."""
    s = w.state
    written = s.fields()
    if pred is not None and (
        pred.leader == s.leader
        and pred.leader_epoch == s.leader_epoch
        and set(pred.isr) == set(s.isr)
        and pred.controller_epoch == s.controller_epoch
    ):
        return Verdict(
            "match",
            w.zxid,
            "as the rules predict",
            w.path,
            s.version,
            written,
            pred.fields(s.version),
            pred.method,
        )
    replicas = rec.assignment.replicas if rec is not None else ()
    if pred is not None:
        current: LeaderAndIsr | None = LeaderAndIsr(
            pred.leader,
            pred.leader_epoch,
            pred.isr,
            s.version,
            controller_epoch=pred.controller_epoch,
        )
        predicted: dict[str, Any] | None = pred.fields(s.version)
        method = pred.method
    else:
        current = rec.leadership if rec is not None else None
        predicted = None
        method = unpredicted
    outputs, severity = compare(
        w.topic,
        w.partition,
        current,
        replicas,
        Observe(s.leader, s.leader_epoch, s.isr, None, s.controller_epoch),
        is_live,
        unclean_allowed,
    )
    reasons = [o.reason for o in outputs if isinstance(o, DivergenceRecord)]
    if pred is None:
        reasons.insert(0, "the rules predict no write at this version")
    expected_isr = pred.isr if pred is not None else current.isr if current else ()
    extra = zk_safety(s, before, expected_isr, replicas, is_live, controller_epoch)
    if extra:
        severity = "safety"
        reasons.extend(extra)
    elif severity == "match":
        severity = "benign"
    return Verdict(
        severity,
        w.zxid,
        "; ".join(reasons) or "states differ",
        w.path,
        s.version,
        written,
        predicted,
        method,
    )
