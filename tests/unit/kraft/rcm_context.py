"""Kafka's `ReplicationControlTestContext` (apache/kafka 3.9.0,
metadata/src/test/java/org/apache/kafka/controller/ReplicationControlManagerTest.java) for
the ports of ReplicationControlManagerTest: `Ctx` is a broker registry and the partitions,
changed only by replaying the records the handlers return. It folds the per-partition
handlers over partitions as Kafka's handlers do (the partitions with the broker in their
ISR, the leaderless ones, the requested ones), with what Kafka's test context does around
them:

* `register_brokers`: a RegisterBrokerRecord at epoch 100 + id with one directory
  TESTBROKER<5-digit id>DIRAAAA;
* `unfence_brokers`: a heartbeat; a fenced broker is unfenced (`handleBrokerUnfenced`), an
  unfenced one only counts as seen;
* `fence_brokers`: sees every other broker (unfencing the fenced ones), then fences the
  given unfenced brokers, least recently seen first, as `maybeFenceOneStaleBroker` does;
* `in_controlled_shutdown_brokers`: replays the BrokerRegistrationChangeRecord alone.

Topic ids are the topic's name with "-id"; `MetadataVersion.latestTesting()` is 4.0-IV1,
3.9.0's latest. Topic-level requests (ElectLeaders, AlterPartition,
AlterPartitionReassignments) are assembled here from the per-partition answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from state_machines.kraft.alter_partition import (
    alter_partition,
    alter_partition_request_error,
    unknown_topic_error,
)
from state_machines.kraft.alter_partition_reassignments import alter_partition_reassignment
from state_machines.kraft.broker_isr_updates import (
    handle_broker_fenced,
    handle_broker_in_controlled_shutdown,
    handle_broker_unclean_shutdown,
    handle_broker_unfenced,
)
from state_machines.kraft.cluster_control import (
    BrokerRegistry,
    controlled_shutdown_record,
    fence_broker_record,
    unfence_broker_record,
)
from state_machines.kraft.elect_leaders import (
    ElectionType,
    balance_partition_leader,
    elect_leader,
    is_imbalanced,
    maybe_elect_unclean_leader,
)
from state_machines.kraft.messages import (
    ELECTION_NOT_NEEDED,
    AlterPartitionPartitionData,
    AlterPartitionPartitionResponse,
    ApiError,
    BrokerState,
)
from state_machines.kraft.metadata_version import MetadataVersion as MV
from state_machines.kraft.partition_registration import PartitionRegistration
from state_machines.kraft.records import (
    IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
    ApiMessageAndVersion,
    BrokerRegistrationChangeRecord,
    MetadataPartitionRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from state_machines.kraft.replication_control import (
    TopicContext,
    create_partition,
    effective_min_isr,
)
from state_machines.model import NO_LEADER
from state_machines.states import LeaderRecoveryState

LATEST_TESTING = MV.IBP_4_0_IV1
RECOVERED = LeaderRecoveryState.RECOVERED
RECOVERING = LeaderRecoveryState.RECOVERING
ALTER_PARTITION_VERSIONS = [0, 1, 2, 3]  # @ApiKeyVersionsSource(apiKey = ALTER_PARTITION)


def dir_of(broker_id: int) -> str:
    return "TESTBROKER" + str(100000 + broker_id)[1:] + "DIRAAAA"


def default_broker_epoch(broker_id: int) -> int:
    return broker_id + 100


def isr_with_default_epoch(*isr: int) -> tuple[BrokerState, ...]:
    return tuple(BrokerState(b, default_broker_epoch(b)) for b in isr)


def registration(
    replicas: Sequence[int],
    isr: Sequence[int],
    leader: int,
    leader_epoch: int,
    partition_epoch: int,
    adding: Sequence[int] = (),
) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(replicas),
        directories=tuple(dir_of(r) for r in replicas),
        isr=tuple(isr),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        adding_replicas=tuple(adding),
    )


class Ctx:
    """`ReplicationControlTestContext`."""

    def __init__(self, mv: MV = LATEST_TESTING, elr: bool = False, unclean: bool = False) -> None:
        self.mv = mv
        self.elr = elr
        self.static_unclean = unclean
        self.registry = BrokerRegistry()
        self.parts: dict[tuple[str, int], PartitionRegistration] = {}
        self.min_isr: dict[str, int] = {}
        self.unclean: dict[str, bool] = {}
        self._clock = itertools.count()
        self.seen: dict[int, int] = {}

    # -- topics ----------------------------------------------------------------------

    def topic(self, name: str) -> TopicContext:
        rf = len(self.parts[(name, 0)].replicas)
        return TopicContext(
            topic_id=f"{name}-id",
            name=name,
            metadata_version=self.mv,
            min_isr=effective_min_isr(self.min_isr.get(name, 1), rf),
            unclean_leader_election=self.unclean.get(name, self.static_unclean),
            eligible_leader_replicas_enabled=self.elr,
        )

    def partitions(self) -> list[tuple[str, int]]:
        return list(self.parts)

    def get(self, name: str, pid: int = 0) -> PartitionRegistration:
        return self.parts[(name, pid)]

    def replay(self, records: Sequence[ApiMessageAndVersion]) -> None:
        for r in records:
            m = r.message
            if isinstance(m, MetadataPartitionRecord):
                self.parts[(m.topic_id.removesuffix("-id"), m.partition_id)] = (
                    PartitionRegistration.from_record(m)
                )
            elif isinstance(m, PartitionChangeRecord):
                key = (m.topic_id.removesuffix("-id"), m.partition_id)
                self.parts[key] = self.parts[key].merge(m)
            else:
                self.registry = self.registry.replay(m)

    def create_test_topic(
        self,
        name: str,
        replicas: Sequence[Sequence[int]],
        expected: str = "NONE",
        manual: bool = True,
    ) -> list[ApiMessageAndVersion]:
        records: list[ApiMessageAndVersion] = []
        rf: int | None = None
        for pid, assignment in enumerate(replicas):
            out, _, error = create_partition(
                assignment,
                f"{name}-id",
                pid,
                self.registry,
                self.mv,
                manual=manual,
                replication_factor=rf,
            )
            rf = len(assignment)
            if not error.is_success:
                assert error.error == expected, error
                return []
            records.extend(out)
        assert expected == "NONE"
        self.replay(records)
        return records

    # -- brokers ---------------------------------------------------------------------

    def register_brokers(self, *ids: int) -> None:
        self.register_brokers_with_dirs({b: [dir_of(b)] for b in ids})

    def register_brokers_with_dirs(self, dirs: dict[int, list[str]]) -> None:
        for b, log_dirs in dirs.items():
            self.replay(
                [
                    ApiMessageAndVersion(
                        RegisterBrokerRecord(
                            b, default_broker_epoch(b), f"incarnation-{b}", log_dirs=tuple(log_dirs)
                        ),
                        3,
                    )
                ]
            )

    def unfence_brokers(self, *ids: int) -> None:
        for b in sorted(ids):
            self.seen[b] = next(self._clock)
            reg = self.registry.registration(b)
            assert reg is not None
            if reg.fenced:
                self.replay(self.handle_broker_unfenced(b, reg.epoch))

    def fence_brokers(self, *ids: int) -> None:
        self.unfence_brokers(*(b for b in self.registry.brokers if b not in ids))
        stale = sorted(
            (b for b in ids if self.registry.is_unfenced(b)), key=lambda b: self.seen.get(b, -1)
        )
        for b in stale:
            self.replay(self.handle_broker_fenced(b))
        assert self.registry.fenced_broker_ids() == frozenset(ids)

    def in_controlled_shutdown_brokers(self, *ids: int) -> None:
        for b in ids:
            self.replay(
                [
                    ApiMessageAndVersion(
                        BrokerRegistrationChangeRecord(
                            b,
                            default_broker_epoch(b),
                            in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN_CHANGE_IN_CONTROLLED_SHUTDOWN,
                        ),
                        1,
                    )
                ]
            )

    def alter_topic_config(
        self, name: str, min_isr: int | None = None, unclean: bool | None = None
    ) -> None:
        if min_isr is not None:
            self.min_isr[name] = min_isr
        if unclean is not None:
            self.unclean[name] = unclean

    # -- the handlers, over partitions as Kafka iterates them --------------------------

    def _with_broker_in_isr(self, broker_id: int) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if broker_id in p.isr]

    def _with_broker_in_elr(self, broker_id: int) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if broker_id in p.elr]

    def _leaderless(self) -> list[tuple[str, int]]:
        return [k for k, p in self.parts.items() if p.leader == NO_LEADER]

    def handle_broker_fenced(self, broker_id: int) -> list[ApiMessageAndVersion]:
        records = []
        for name, pid in self._with_broker_in_isr(broker_id):
            change = handle_broker_fenced(
                self.get(name, pid), self.topic(name), pid, self.registry, broker_id
            )
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        records.append(fence_broker_record(self.registry, broker_id, self.mv))
        return records

    def handle_broker_unfenced(self, broker_id: int, epoch: int) -> list[ApiMessageAndVersion]:
        records = [unfence_broker_record(broker_id, epoch, self.mv)]
        for name, pid in self._leaderless():
            change = handle_broker_unfenced(
                self.get(name, pid), self.topic(name), pid, self.registry, broker_id
            )
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def handle_broker_in_controlled_shutdown(
        self, broker_id: int, epoch: int
    ) -> list[ApiMessageAndVersion]:
        records = []
        first = controlled_shutdown_record(self.registry, broker_id, epoch, self.mv)
        if first is not None:
            records.append(first)
        for name, pid in self._with_broker_in_isr(broker_id):
            change = handle_broker_in_controlled_shutdown(
                self.get(name, pid), self.topic(name), pid, self.registry, broker_id
            )
            if change is not None:
                records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def handle_brokers_unclean_shutdown(self, *ids: int) -> None:
        records = []
        for b in ids:
            for keys in (self._with_broker_in_isr(b), self._with_broker_in_elr(b)):
                for name, pid in keys:
                    change = handle_broker_unclean_shutdown(
                        self.get(name, pid), self.topic(name), pid, self.registry, b
                    )
                    if change is not None:
                        records.append(ApiMessageAndVersion(change.record, change.version))
        self.replay(records)

    def elect_leaders(
        self,
        election_type: ElectionType,
        request: dict[str, list[int]] | None,
    ) -> tuple[list[ApiMessageAndVersion], dict[tuple[str, int], ApiError]]:
        """`electLeaders`: None asks for every partition and leaves ELECTION_NOT_NEEDED out."""
        records: list[ApiMessageAndVersion] = []
        answers: dict[tuple[str, int], ApiError] = {}
        wanted = request if request is not None else {}
        if request is None:
            for name, pid in self.parts:
                wanted.setdefault(name, []).append(pid)
        for name, pids in wanted.items():
            for pid in pids:
                if (name, 0) not in self.parts:
                    answers[(name, pid)] = ApiError(
                        "UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {name}"
                    )
                    continue
                if (name, pid) not in self.parts:
                    answers[(name, pid)] = ApiError(
                        "UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {name}-{pid}"
                    )
                    continue
                out, _, answer = elect_leader(
                    self.get(name, pid), self.topic(name), pid, self.registry, election_type
                )
                records.extend(out)
                if request is not None or answer != ELECTION_NOT_NEEDED:
                    answers[(name, pid)] = answer
        return records, answers

    def send_alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        name: str,
        data: Sequence[AlterPartitionPartitionData],
        version: int = 3,
    ) -> tuple[list[ApiMessageAndVersion], list[AlterPartitionPartitionResponse]]:
        error = alter_partition_request_error(self.registry, broker_id, broker_epoch)
        assert error is None, error
        if (name, 0) not in self.parts:
            return [], [
                AlterPartitionPartitionResponse(d.partition_index, unknown_topic_error(version))
                for d in data
            ]
        records: list[ApiMessageAndVersion] = []
        answers = []
        for d in data:
            if version < 3:  # `newIsrToSimpleNewIsrWithBrokerEpochs`
                d = AlterPartitionPartitionData(
                    d.partition_index,
                    d.leader_epoch,
                    d.partition_epoch,
                    tuple(BrokerState(s.broker_id) for s in d.new_isr_with_epochs),
                    d.leader_recovery_state,
                )
            out, _, answer = alter_partition(
                self.parts.get((name, d.partition_index)),
                self.topic(name),
                self.registry,
                broker_id,
                version,
                d,
            )
            records.extend(out)
            answers.append(answer)
        return records, answers

    def new_alter_partition(
        self, name: str, isr: tuple[BrokerState, ...], state: LeaderRecoveryState = RECOVERED
    ) -> AlterPartitionPartitionData:
        p = self.get(name)
        return AlterPartitionPartitionData(0, p.leader_epoch, p.partition_epoch, isr, state)

    def alter_partition(
        self, name: str, pid: int, leader_id: int, isr: tuple[BrokerState, ...]
    ) -> None:
        """The context's `alterPartition`: the leader sends the current epochs; replay."""
        reg = self.registry.registration(leader_id)
        assert reg is not None and not reg.fenced
        p = self.get(name, pid)
        assert p.leader == leader_id
        records, _ = self.send_alter_partition(
            leader_id,
            reg.epoch,
            name,
            [AlterPartitionPartitionData(pid, p.leader_epoch, p.partition_epoch, isr)],
        )
        self.replay(records)

    def alter_partition_reassignments(
        self,
        request: dict[str, list[tuple[int, list[int] | None]]],
    ) -> tuple[list[ApiMessageAndVersion], dict[tuple[str, int], ApiError]]:
        records: list[ApiMessageAndVersion] = []
        answers: dict[tuple[str, int], ApiError] = {}
        for name, targets in request.items():
            for pid, target in targets:
                if (name, pid) not in self.parts:
                    answers[(name, pid)] = ApiError(
                        "UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find partition {name}:{pid}."
                    )
                    continue
                out, _, answer = alter_partition_reassignment(
                    self.get(name, pid), self.topic(name), pid, self.registry, target
                )
                records.extend(out)
                answers[(name, pid)] = answer
        return records, answers

    def reassigning(
        self,
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """`listPartitionReassignments(null)`: (removing, adding, replicas) per partition."""
        return {
            k: (p.removing_replicas, p.adding_replicas, p.replicas)
            for k, p in self.parts.items()
            if p.removing_replicas or p.adding_replicas
        }

    def balance_partition_leaders(self) -> list[ApiMessageAndVersion]:
        records = []
        for name, pid in self.parts:
            p = self.get(name, pid)
            if is_imbalanced(p):
                change = balance_partition_leader(p, self.topic(name), pid, self.registry)
                if change is not None:
                    records.append(ApiMessageAndVersion(change.record, change.version))
        return records

    def maybe_elect_unclean_leaders(self) -> list[ApiMessageAndVersion]:
        records: list[ApiMessageAndVersion] = []
        for name, pid in self._leaderless():
            out, _, _ = maybe_elect_unclean_leader(
                self.get(name, pid), self.topic(name), pid, self.registry
            )
            records.extend(out)
        return records

    def imbalanced(self) -> bool:
        return any(is_imbalanced(p) for p in self.parts.values())


def pcr(pid: int, topic: str = "foo", **fields: Any) -> ApiMessageAndVersion:
    return ApiMessageAndVersion(
        PartitionChangeRecord(f"{topic}-id", pid, **fields),
        LATEST_TESTING.partition_change_record_version,
    )


def assert_consistent(ctx: Ctx, answer: AlterPartitionPartitionResponse, name: str = "foo") -> None:
    """`assertConsistentAlterPartitionResponse`."""
    p = ctx.get(name, answer.partition_index)
    assert answer.error == "NONE"
    assert (answer.leader_id, answer.leader_epoch, answer.partition_epoch, answer.isr) == (
        p.leader,
        p.leader_epoch,
        p.partition_epoch,
        p.isr,
    )
