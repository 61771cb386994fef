"""The controller's flows, as far as they touch one partition (KafkaController.scala).

Theory of operation
-------------------
Each function is the slice of one `KafkaController` method that concerns one partition,
calling the state machines in Kafka's order through a `Run` (flow.py):

* `failover`: `onControllerFailover` (reset, replica and partition state machine startup,
  `triggerOnlinePartitionStateChange`, `initializePartitionReassignments`);
* `create`: `onNewPartitionCreation`;
* `brokers_started`: `onBrokerStartup` (and `maybeResumeReassignments`);
* `brokers_failed`: `onBrokerFailure` -> `onReplicasBecomeOffline`;
* `controlled_shutdown`: `doControlledShutdown`;
* `alter_partition`: `tryProcessAlterPartition`'s per-partition checks, then
  `maybeCompleteReassignment`;
* `elect`: `processReplicaLeaderElection` -> `onReplicaElection`;
* `trigger_online`: `triggerOnlinePartitionStateChange`, restricted to this partition;
* `log_dir_failure`: `onBrokerLogDirFailure`, then `processLeaderAndIsrResponseReceived` ->
  `onReplicasBecomeOffline` for replicas on a failed log dir;
* `auto_rebalance`: `checkAndTriggerAutoLeaderRebalance`'s election for one candidate.

Reassignment is in reassignment.py, topic deletion in topic_deletion.py, the shadow's
comparison in shadow.py.
"""

from __future__ import annotations

from . import partition_state_machine as psm
from . import replica_state_machine as rsm
from . import shadow
from .commands import AlterIsr, Elect, LogDirFailure, Observe
from .election import CONTROLLED_SHUTDOWN, OFFLINE, PREFERRED, OfflineElection
from .flow import Run
from .kafka_errors import Errors
from .model import NO_LEADER, LeaderAndIsr
from .outputs import AlterPartitionResultRecord, ElectionResultRecord, StillLeads
from .reassignment import maybe_complete, run_reassignment
from .requests import RequestBatch
from .states import LeaderRecoveryState, PartitionState, ReplicaState

P = PartitionState
R = ReplicaState


def trigger_online(run: Run, site: int = 1) -> None:
    """`triggerOnlinePartitionStateChange` restricted to this partition: a New or Offline
    partition of a topic not queued for deletion is elected (offline strategy)."""
    if run.rec.state in (P.NewPartition, P.OfflinePartition) and not run.facts.queued:
        run.partition(P.OnlinePartition, OFFLINE, site)


def failover(run: Run, order: tuple[int, ...] = ()) -> None:
    """`order`: the order of the startup calls' brokers across the cluster (Failover.order)."""
    # The new controller starts from an empty context (resetContext on resignation) and
    # reads assignments and leader-and-ISR from the store.
    rec = run.rec
    # a new controller starts with no failed log dirs (replicasOnOfflineDirs is empty)
    run.set_offline_dirs(())
    replicas = rec.assignment.replicas
    # ReplicaStateMachine.startup: initializeReplicaState, then Online -> Online
    # (LeaderAndIsr to each) and Ineligible -> Offline.
    # (site 0: the directory's UpdateMetadata to every broker, before the state machines)
    run.rec = run.rec.reset_for_failover(rsm.startup(run.rec, run.facts))
    is_online = run.facts.is_online  # the machine calls change no liveness
    online = [r for r in replicas if is_online(r)]
    run.replicas(online, R.OnlineReplica, site=1, call_order=order)
    run.replicas([r for r in replicas if r not in online], R.OfflineReplica, 2, order)
    # PartitionStateMachine.startup: initializePartitionState, then the online trigger
    run.rec = psm.startup(run.rec, run.facts)
    trigger_online(run, site=3)
    # initializePartitionReassignments
    if run.rec.being_reassigned:
        run_reassignment(run, run.rec.assignment)


def create(run: Run, replicas: tuple[int, ...], order: tuple[int, ...] = ()) -> None:
    """`order`: the order of the calls' brokers over every new partition (CreatePartition)."""
    run.partition(P.NewPartition, site=1)
    run.replicas(replicas, R.NewReplica, site=2, call_order=order)
    run.partition(P.OnlinePartition, OFFLINE, site=3)
    run.replicas(replicas, R.OnlineReplica, site=4, call_order=order)


def brokers_started(run: Run, new_brokers: tuple[int, ...]) -> None:
    # newBrokers.foreach(controllerContext.replicasOnOfflineDirs.remove)
    run.set_offline_dirs(tuple(b for b in run.rec.offline_dirs if b not in new_brokers))
    # sendUpdateMetadataRequest(newBrokers, partitionsWithLeaders): the directory sends
    # every partition with leadership of a topic not queued for deletion (site 1; site 0 is
    # the existing brokers' send, with no partitions)
    if run.rec.leadership is not None and not run.facts.queued:
        run.update_metadata(site=1)
    run.replicas(
        [b for b in new_brokers if b in run.rec.assignment.replicas], R.OnlineReplica, site=2
    )
    trigger_online(run, site=3)
    # maybeResumeReassignments: a reassignment whose target includes a new broker
    a = run.rec.assignment
    if run.rec.being_reassigned and any(b in new_brokers for b in a.target_replicas):
        run_reassignment(run, a)


def brokers_failed(run: Run, dead: tuple[int, ...]) -> None:
    # deadBrokers.foreach(controllerContext.replicasOnOfflineDirs.remove)
    run.set_offline_dirs(tuple(b for b in run.rec.offline_dirs if b not in dead))
    _replicas_become_offline(run, [b for b in dead if b in run.rec.assignment.replicas])


def _replicas_become_offline(run: Run, hosted: list[int], site: int = 1) -> None:
    """`onReplicasBecomeOffline` for this partition, whose replicas on `hosted` went offline;
    its batches are at `site` and after."""
    la = run.rec.leadership
    # onReplicasBecomeOffline: partitions whose leader is not online go Offline, then every
    # New/Offline partition is elected *before* the dead replicas leave the ISR.
    if la is not None and not run.facts.queued and not run.facts.is_online(la.leader):
        run.partition(P.OfflinePartition, site=site)
    trigger_online(run, site=site + 1)
    if run.facts.queued:
        # failReplicaDeletion
        run.replicas(hosted, R.ReplicaDeletionIneligible, site=site + 3)
    elif hosted:
        # handleStateChanges groups by broker: one ISR write (one epoch bump) per broker
        run.replicas(hosted, R.OfflineReplica, site=site + 2)
        # newOfflineReplicasNotForDeletion is not empty: no UpdateMetadata of its own
        # (the directory's send at site + 4 unless site + 1 or site + 2 ran)
        run.update_metadata(site=site + 2, mark=True)


def log_dir_failure(run: Run, op: LogDirFailure) -> None:
    broker = op.broker_id
    # onBrokerLogDirFailure: every replica on the broker is sent LeaderAndIsr (OnlineReplica)
    # to learn which are still online
    hosted = [broker] if broker in run.rec.assignment.replicas else []
    run.replicas(hosted, R.OnlineReplica, site=1)
    if not op.offline_step:
        return
    # processLeaderAndIsrResponseReceived: the replica that answered KAFKA_STORAGE_ERROR
    # joins replicasOnOfflineDirs, then onReplicasBecomeOffline(newOfflineReplicas)
    if op.newly_failed:
        run.set_offline_dirs(tuple(sorted({*run.rec.offline_dirs, broker})))
    _replicas_become_offline(run, hosted if op.newly_failed else [], site=2)


def auto_rebalance(run: Run) -> None:
    """onReplicaElection(candidates, PREFERRED, AutoTriggered) for one partition that
    `canPreferredReplicaBeLeader`: its preferred replica is online and in the ISR. No
    ElectionResult: no client asked (the outcome is only logged)."""
    la, replicas = run.rec.leadership, run.rec.assignment.replicas
    if la is None or not replicas or la.leader == replicas[0]:
        return
    if run.facts.is_online(replicas[0]) and replicas[0] in la.isr:
        # onReplicaElection runs once per preferred broker: one batch each
        run.scope = f"broker-{replicas[0]}"
        run.partition(P.OnlinePartition, PREFERRED, site=1)
        run.scope = ""


def controlled_shutdown(run: Run, broker: int) -> None:
    rec = run.rec
    replicas = rec.assignment.replicas
    queued = run.facts.queued  # the topic's context: no machine call changes it
    if broker in replicas and len(replicas) > 1 and rec.leadership is not None and not queued:
        if rec.leadership.leader == broker:
            run.partition(P.OnlinePartition, CONTROLLED_SHUTDOWN, site=1)
        else:
            # the follower is told to stop first, then leaves the ISR
            batch = RequestBatch()
            batch.add_stop_replica(broker, False, run.facts.stop_replica_epoch(rec.leadership))
            run.send(batch, site=2)
            run.replicas((broker,), R.OfflineReplica, site=3)
    # partitionLeadersOnBroker: the broker's reply lists what it still leads
    la = run.rec.leadership
    if (
        la is not None
        and la.leader == broker
        and len(run.rec.assignment.replicas) > 1
        and not queued
    ):
        run.out.append(StillLeads(broker, rec.topic, rec.partition))


def alter_partition(run: Run, op: AlterIsr) -> None:
    """tryProcessAlterPartition's per-partition checks (the broker-epoch check ran in the
    directory) and its UpdateMetadata for every partition of the request (`partitionsToAlter`,
    whatever the outcome), then maybeCompleteReassignment for partitions being reassigned."""
    success = _try_alter_partition(run, op)
    run.update_metadata(site=1)
    if success and run.rec.being_reassigned:
        maybe_complete(run)


def _try_alter_partition(run: Run, op: AlterIsr) -> bool:
    """Whether the partition's new state was accepted (or already held)."""
    rec = run.rec
    la = rec.leadership

    def result(error: Errors | None, state: LeaderAndIsr | None = None) -> None:
        run.out.append(
            AlterPartitionResultRecord(
                rec.topic,
                rec.partition,
                op.broker_id,
                error,
                state.leader if state else None,
                state.leader_epoch if state else None,
                state.isr if state else None,
                state.partition_epoch if state else None,
            )
        )

    if la is None:
        result(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return False
    requested = LeaderRecoveryState(op.leader_recovery_state)
    if op.partition_epoch > la.partition_epoch or op.leader_epoch > la.leader_epoch:
        result(Errors.NOT_CONTROLLER)
        return False
    if op.leader_epoch < la.leader_epoch:
        result(Errors.FENCED_LEADER_EPOCH)
        return False
    success = True
    if (
        op.broker_id == la.leader
        and op.isr == la.isr
        and requested == la.leader_recovery_state
        and op.partition_epoch <= la.partition_epoch
    ):
        # equalsAllowStalePartitionEpoch: an idempotent retry gets the current state
        result(None, la)
    elif op.partition_epoch < la.partition_epoch:
        result(Errors.INVALID_UPDATE_VERSION)
        success = False
    elif (
        requested is LeaderRecoveryState.RECOVERING
        and len(op.isr) > 1
        or (
            la.leader_recovery_state is LeaderRecoveryState.RECOVERED
            and requested is LeaderRecoveryState.RECOVERING
        )
    ):
        result(Errors.INVALID_REQUEST)
        success = False
    elif any(not run.facts.is_live_broker(r) for r in op.isr):
        # `newLeaderAndIsr.isr.toSet -- controllerContext.liveBrokerIds`: AlterPartition v2+
        # answers INELIGIBLE_REPLICA (v0-1: OPERATION_NOT_ATTEMPTED).
        result(Errors.INELIGIBLE_REPLICA)
        success = False
    else:
        # The stored state takes the sender as leader and keeps the leader epoch: only
        # controller writes bump it. Kafka does not check that the sender is the leader.
        written = LeaderAndIsr(
            op.broker_id,
            op.leader_epoch,
            op.isr,
            la.partition_epoch,
            requested,
            la.controller_epoch,
        ).written(run.facts.controller_epoch)
        run.rec = rec.with_leadership(written)
        result(None, written)
    return success


def elect(run: Run, op: Elect) -> None:
    """processReplicaLeaderElection for one known partition of a topic not being deleted."""
    rec = run.rec

    def result(error: Errors | None, leader: int | None = None) -> None:
        run.out.append(
            ElectionResultRecord(rec.topic, rec.partition, op.election_type, error, leader)
        )

    la = rec.leadership
    if la is None:
        result(Errors.UNKNOWN_SERVER_ERROR)
        return
    preferred = op.election_type == "PREFERRED"
    if preferred:
        needed = not rec.assignment.replicas or la.leader != rec.assignment.replicas[0]
    else:
        # processReplicaLeaderElection: `!controllerContext.isLiveBroker(currentLeader)`
        needed = la.leader == NO_LEADER or not run.facts.is_live_broker(la.leader)
    if not needed:
        result(Errors.ELECTION_NOT_NEEDED)
        return
    refusal = run.partition(
        P.OnlinePartition, PREFERRED if preferred else OfflineElection(op.allow_unclean), site=1
    )
    if refusal is None:
        assert run.rec.leadership is not None
        result(None, run.rec.leadership.leader)
    elif refusal.invalid_transition:
        result(Errors.UNKNOWN_SERVER_ERROR)
    else:
        result(
            Errors.PREFERRED_LEADER_NOT_AVAILABLE
            if preferred
            else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )


def observe(run: Run, op: Observe) -> None:
    """Shadow mode: compare the cluster's state with ours; with `shadow_follow`, adopt it."""
    rec = run.rec
    outputs, outcome = shadow.compare(
        rec.topic,
        rec.partition,
        rec.leadership,
        rec.assignment.replicas,
        op,
        run.facts.is_online_or_shutting_down,
        run.facts.ctx.unclean_leader_election_enable,
    )
    run.out.extend(outputs)
    if outcome != "match" and run.facts.config.shadow_follow and rec.leadership is not None:
        run.rec = rec.with_leadership(shadow.adopt(rec.leadership, op)).with_state(
            shadow.followed_state(rec.state, op.leader)
        )
