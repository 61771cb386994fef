"""`canElectLastKnownLeader` asks the leader acceptor about the last known leader even in
3.9.0 and 4.0, where it only logs the answer (PartitionChangeBuilder.java, apache/kafka
3.9.0). The question is not pure: ReplicationControlManager's `LeaderAcceptor.test` looks up
`PartitionRegistration.directory` of an acceptable broker, which throws
IllegalArgumentException("Replica N is not assigned to this partition.") for a broker that
is no longer a replica, so Kafka's write event fails there instead of electing it.

Found while writing the kraft-mode property invariants (tests/property/kraft_invariants.py,
[lkl-acceptor-throws]): the builder here skipped the call unless
`reject_unacceptable_last_known_leader` was set, and elected the non-replica.
"""

from __future__ import annotations

import pytest

from state_machines.errors import ShadowControllerError
from state_machines.kraft.broker_isr_updates import handle_broker_unfenced
from state_machines.kraft.cluster_control import BrokerRegistry, unfence_broker_record
from state_machines.kraft.metadata_version import MetadataVersion
from state_machines.kraft.partition_registration import PartitionRegistration
from state_machines.kraft.records import RegisterBrokerRecord
from state_machines.kraft.replication_control import TopicContext

MV = MetadataVersion.from_version_string("4.0-IV1")
TOPIC = TopicContext(
    topic_id="t-id", metadata_version=MV, min_isr=2, eligible_leader_replicas_enabled=True
)


def _registry(*unfenced: int) -> BrokerRegistry:
    registry = BrokerRegistry()
    for b in (1, 2, 4):
        registry = registry.replay(
            RegisterBrokerRecord(b, 100 + b, f"incarnation-{b}", log_dirs=(f"dir-{b}",))
        )
    for b in unfenced:
        registry = registry.replay(unfence_broker_record(b, 100 + b, MV).message)
    return registry


# Leaderless with an empty ISR and ELR; its last known leader 4 left the replicas (a
# cancelled reassignment that was adding it keeps it there).
PARTITION = PartitionRegistration(
    replicas=(1, 2),
    directories=("dir-1", "dir-2"),
    isr=(),
    leader=-1,
    leader_epoch=5,
    partition_epoch=9,
    last_known_elr=(4,),
)


def test_acceptable_last_known_leader_outside_replicas_throws() -> None:
    # handleBrokerUnfenced(4): the acceptor accepts the broker being unfenced, then asks
    # for its directory in this partition
    with pytest.raises(ShadowControllerError, match="Replica 4 is not assigned to this partition"):
        handle_broker_unfenced(PARTITION, TOPIC, 0, _registry(4), 4)


def test_unacceptable_last_known_leader_outside_replicas_is_elected() -> None:
    # handleBrokerUnfenced(1): 4 is fenced, the acceptor says no before any directory
    # lookup, and 3.9.0 / 4.0 elect it anyway (only KAFKA-19522 refuses)
    change = handle_broker_unfenced(PARTITION, TOPIC, 0, _registry(1), 1)
    assert change is not None
    assert (change.registration.leader, change.registration.isr) == (4, (4,))
