"""KRaft's reassignment arithmetic: `PartitionReassignmentReplicas` and
`PartitionReassignmentRevert`.

Source: metadata/src/main/java/org/apache/kafka/controller/PartitionReassignmentReplicas.java
and PartitionReassignmentRevert.java (apache/kafka 3.9.0).

A reassignment in progress is the registration's `(removing, adding, replicas)`, where
`replicas` is the target followed by the replicas being removed. Starting one from a
current and a target assignment: removing is current minus target and adding is target
minus current, each in ascending order (Kafka builds them through a TreeSet, unlike the ZK
controller, which keeps assignment order). It completes (`maybe_complete_reassignment`) as
soon as the ISR without the removing replicas still holds every remaining replica and
neither list is left empty. Reverting drops the adding replicas from replicas and ISR;
if that empties the ISR, the first remaining replica becomes the ISR, which is unclean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ShadowControllerError
from .partition_registration import PartitionRegistration


class InvalidReplicaAssignmentError(ShadowControllerError):
    """Kafka's `InvalidReplicaAssignmentException` where it marks an unreachable state."""


@dataclass(frozen=True, slots=True)
class CompletedReassignment:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PartitionReassignmentReplicas:
    removing: tuple[int, ...]
    adding: tuple[int, ...]
    replicas: tuple[int, ...]

    @staticmethod
    def from_assignments(
        current: Sequence[int], target: Sequence[int]
    ) -> PartitionReassignmentReplicas:
        """`PartitionReassignmentReplicas(PartitionAssignment, PartitionAssignment)`."""
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        return PartitionReassignmentReplicas(removing, adding, tuple(target) + removing)

    @property
    def is_reassignment_in_progress(self) -> bool:
        return bool(self.removing) or bool(self.adding)

    def maybe_complete_reassignment(
        self, target_isr: Sequence[int]
    ) -> CompletedReassignment | None:
        if not self.is_reassignment_in_progress:
            return None
        new_isr = tuple(target_isr)
        new_replicas = self.replicas
        if self.removing:
            new_isr = tuple(r for r in target_isr if r not in self.removing)
            if not new_isr:
                return None
            new_replicas = tuple(r for r in self.replicas if r not in self.removing)
            if not new_replicas:
                return None
        if not set(new_replicas) <= set(new_isr):
            return None
        return CompletedReassignment(new_replicas, new_isr)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(frozen=True, slots=True)
class PartitionReassignmentRevert:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    unclean: bool

    @staticmethod
    def of(registration: PartitionRegistration) -> PartitionReassignmentRevert:
        ongoing = PartitionReassignmentReplicas(
            registration.removing_replicas, registration.adding_replicas, registration.replicas
        )
        replicas = ongoing.original_replicas
        isr = tuple(r for r in registration.isr if r not in ongoing.adding)
        if isr:
            return PartitionReassignmentRevert(replicas, isr, False)
        if not replicas:
            raise InvalidReplicaAssignmentError(
                "Invalid replica assignment: addingReplicas contains all replicas."
            )
        return PartitionReassignmentRevert(replicas, (replicas[0],), True)
