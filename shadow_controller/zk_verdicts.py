"""The ZooKeeper bridge's findings (`Verdict`), the writes the rules predict (`Predicted`),
the Kafka method behind each, and the checks only a ZooKeeper write shows (`zk_safety`).
Pure: no I/O, no engine; `zk_checks.Checker` makes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .zk_znodes import PartitionStateZnode

# the Kafka method behind a LeaderAndIsr's `election` (KafkaController.scala,
# PartitionStateMachine.scala, 3.9)
ELECTION_METHODS = {
    "initial": "ZkPartitionStateMachine.initializeLeaderAndIsrForPartitions",
    "offline": "ZkPartitionStateMachine.electLeaderForPartitions "
    "(OfflinePartitionLeaderElectionStrategy)",
    "unclean": "ZkPartitionStateMachine.electLeaderForPartitions "
    "(OfflinePartitionLeaderElectionStrategy, unclean)",
    "reassign": "KafkaController.moveReassignedPartitionLeaderIfRequired "
    "(ReassignPartitionLeaderElectionStrategy)",
    "preferred": "ZkPartitionStateMachine.electLeaderForPartitions "
    "(PreferredReplicaPartitionLeaderElectionStrategy)",
    "controlled_shutdown": "ZkPartitionStateMachine.electLeaderForPartitions "
    "(ControlledShutdownPartitionLeaderElectionStrategy)",
}
REMOVE_FROM_ISR = "ZkReplicaStateMachine.removeReplicasFromIsr"
UPDATE_LEADER_EPOCH = "KafkaController.updateLeaderEpochAndSendRequest"
ALTER_PARTITION = "KafkaController.processAlterPartition"


@dataclass(frozen=True, slots=True)
class Predicted:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    method: str

    def fields(self, version: int) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "partition_epoch": version,
            "controller_epoch": self.controller_epoch,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """One finding: `match`, `benign`, `safety`, `gap`, `inferred` (a request taken as
    given) or `note`."""

    verdict: str
    zxid: int
    reason: str
    znode: str | None = None
    version: int | None = None
    written: dict[str, Any] | None = None
    predicted: dict[str, Any] | None = None
    kafka_method: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def line(self) -> str:
        where = f"{self.znode} v{self.version}" if self.znode else f"zxid {self.zxid:#x}"
        if self.verdict in ("benign", "safety"):
            return (
                f"{self.verdict.upper()} {where}: {self.reason}; written {_short(self.written)}, "
                f"rules predict {_short(self.predicted)} ({self.kafka_method})"
            )
        return f"{self.verdict.upper()} {where}: {self.reason}"


def _short(fields: dict[str, Any] | None) -> str:
    if fields is None:
        return "no write"
    return (
        f"leader {fields['leader']} epoch {fields['leader_epoch']} isr {fields['isr']} "
        f"controller_epoch {fields['controller_epoch']}"
    )


def zk_safety(
    s: PartitionStateZnode,
    before: PartitionStateZnode | None,
    expected_isr: tuple[int, ...],
    replicas: tuple[int, ...],
    is_live: Callable[[int], bool],
    controller_epoch: int,
) -> list[str]:
    """What only a ZooKeeper write shows, beyond `shadow.compare`'s safety rules.
    `expected_isr`: the predicted write's ISR, or the rules' current one."""
    out = []
    if before is not None and s.leader_epoch > before.leader_epoch + 1:
        out.append(
            f"leader epoch skipped from {before.leader_epoch} to {s.leader_epoch} "
            "(a write moves it by at most one)"
        )
    # a broker without a registration in the ISR where the rules have none: kept there
    # (removeReplicasFromIsr skipped) or let in (processAlterPartition's INELIGIBLE_REPLICA)
    fenced = [b for b in s.isr if not is_live(b) and b not in expected_isr]
    if fenced:
        how = "keeps" if before is not None and set(fenced) <= set(before.isr) else "takes in"
        out.append(
            f"ISR {how} broker {fenced} without a registration (fenced), which the rules do not"
        )
    strangers = [b for b in s.isr if replicas and b not in replicas]
    if strangers:
        out.append(f"ISR member {strangers} is not a replica of {list(replicas)}")
    if controller_epoch and s.controller_epoch != controller_epoch:
        out.append(
            f"written under controller epoch {s.controller_epoch} while /controller_epoch is "
            f"{controller_epoch}"
        )
    return out
