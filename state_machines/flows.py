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
from .model import NO_LEADER, LeaderAndIsr
from .outputs import AlterPartitionResultRecord, ElectionResultRecord, StillLeads
from .reassignment import maybe_complete, run_reassignment
from .requests import RequestBatch
from .states import LeaderRecoveryState, PartitionState, ReplicaState

P = PartitionState
R = ReplicaState


def trigger_online(run: Run) -> None:
    """`triggerOnlinePartitionStateChange` restricted to this partition: a New or Offline
    partition of a topic not queued for deletion is elected (offline strategy)."""
    if run.rec.state in (P.NewPartition, P.OfflinePartition) and not run.facts.queued:
        run.partition(P.OnlinePartition, OFFLINE)


def failover(run: Run) -> None:
    # The new controller starts from an empty context (resetContext on resignation) and
    # reads assignments and leader-and-ISR from the store.
    rec = run.rec
    # a new controller starts with no failed log dirs (replicasOnOfflineDirs is empty)
    run.set_offline_dirs(())
    replicas = rec.assignment.replicas
    # ReplicaStateMachine.startup: initializeReplicaState, then Online -> Online
    # (LeaderAndIsr to each) and Ineligible -> Offline.
    run.rec = run.rec.reset_for_failover(rsm.startup(run.rec, run.facts))
    run.replicas([r for r in replicas if run.facts.is_online(r)], R.OnlineReplica)
    run.replicas([r for r in replicas if not run.facts.is_online(r)], R.OfflineReplica)
    # PartitionStateMachine.startup: initializePartitionState, then the online trigger
    run.rec = psm.startup(run.rec, run.facts)
    trigger_online(run)
    # initializePartitionReassignments
    if run.rec.being_reassigned:
        run_reassignment(run, run.rec.assignment)


def create(run: Run, replicas: tuple[int, ...]) -> None:
    run.partition(P.NewPartition)
    run.replicas(replicas, R.NewReplica)
    run.partition(P.OnlinePartition, OFFLINE)
    run.replicas(replicas, R.OnlineReplica)


def brokers_started(run: Run, new_brokers: tuple[int, ...]) -> None:
    # newBrokers.foreach(controllerContext.replicasOnOfflineDirs.remove)
    run.set_offline_dirs(tuple(b for b in run.rec.offline_dirs if b not in new_brokers))
    run.replicas([b for b in new_brokers if b in run.rec.assignment.replicas], R.OnlineReplica)
    trigger_online(run)
    # maybeResumeReassignments: a reassignment whose target includes a new broker
    a = run.rec.assignment
    if run.rec.being_reassigned and any(b in new_brokers for b in a.target_replicas):
        run_reassignment(run, a)


def brokers_failed(run: Run, dead: tuple[int, ...]) -> None:
    # deadBrokers.foreach(controllerContext.replicasOnOfflineDirs.remove)
    run.set_offline_dirs(tuple(b for b in run.rec.offline_dirs if b not in dead))
    _replicas_become_offline(run, [b for b in dead if b in run.rec.assignment.replicas])


def _replicas_become_offline(run: Run, hosted: list[int]) -> None:
    """`onReplicasBecomeOffline` for this partition, whose replicas on `hosted` went offline."""
    la = run.rec.leadership
    # onReplicasBecomeOffline: partitions whose leader is not online go Offline, then every
    # New/Offline partition is elected *before* the dead replicas leave the ISR.
    if la is not None and not run.facts.queued and not run.facts.is_online(la.leader):
        run.partition(P.OfflinePartition)
    trigger_online(run)
    if run.facts.queued:
        # failReplicaDeletion
        run.replicas(hosted, R.ReplicaDeletionIneligible)
    else:
        # handleStateChanges groups by broker: one ISR write (one epoch bump) per broker
        run.replicas(hosted, R.OfflineReplica)


def log_dir_failure(run: Run, op: LogDirFailure) -> None:
    broker = op.broker_id
    # onBrokerLogDirFailure: every replica on the broker is sent LeaderAndIsr (OnlineReplica)
    # to learn which are still online
    hosted = [broker] if broker in run.rec.assignment.replicas else []
    run.replicas(hosted, R.OnlineReplica)
    if not op.offline_step:
        return
    # processLeaderAndIsrResponseReceived: the replica that answered KAFKA_STORAGE_ERROR
    # joins replicasOnOfflineDirs, then onReplicasBecomeOffline(newOfflineReplicas)
    if op.newly_failed:
        run.set_offline_dirs(tuple(sorted({*run.rec.offline_dirs, broker})))
    _replicas_become_offline(run, hosted if op.newly_failed else [])


def auto_rebalance(run: Run) -> None:
    """onReplicaElection(candidates, PREFERRED, AutoTriggered) for one partition that
    `canPreferredReplicaBeLeader`: its preferred replica is online and in the ISR. No
    ElectionResult: no client asked (the outcome is only logged)."""
    la, replicas = run.rec.leadership, run.rec.assignment.replicas
    if la is None or not replicas or la.leader == replicas[0]:
        return
    if run.facts.is_online(replicas[0]) and replicas[0] in la.isr:
        run.partition(P.OnlinePartition, PREFERRED)


def controlled_shutdown(run: Run, broker: int) -> None:
    rec = run.rec
    replicas = rec.assignment.replicas
    queued = run.facts.queued  # the topic's context: no machine call changes it
    if broker in replicas and len(replicas) > 1 and rec.leadership is not None and not queued:
        if rec.leadership.leader == broker:
            run.partition(P.OnlinePartition, CONTROLLED_SHUTDOWN)
        else:
            # the follower is told to stop first, then leaves the ISR
            batch = RequestBatch()
            batch.add_stop_replica(broker, False, run.facts.stop_replica_epoch(rec.leadership))
            run.send(batch)
            run.replicas((broker,), R.OfflineReplica)
    # partitionLeadersOnBroker: the broker's reply lists what it still leads
    la = run.rec.leadership
    if la is not None and la.leader == broker and len(run.rec.assignment.replicas) > 1 and not queued:
        run.out.append(StillLeads(broker, rec.topic, rec.partition))


def alter_partition(run: Run, op: AlterIsr) -> None:
    """tryProcessAlterPartition's per-partition checks (the broker-epoch check ran in the
    directory), then maybeCompleteReassignment for partitions being reassigned."""
    rec = run.rec
    la = rec.leadership

    def result(error: str | None, state: LeaderAndIsr | None = None) -> None:
        run.out.append(AlterPartitionResultRecord(
            rec.topic, rec.partition, op.broker_id, error,
            state.leader if state else None, state.leader_epoch if state else None,
            state.isr if state else None, state.partition_epoch if state else None,
        ))

    if la is None:
        result("UNKNOWN_TOPIC_OR_PARTITION")
        return
    requested = LeaderRecoveryState(op.leader_recovery_state)
    if op.partition_epoch > la.partition_epoch or op.leader_epoch > la.leader_epoch:
        result("NOT_CONTROLLER")
        return
    if op.leader_epoch < la.leader_epoch:
        result("FENCED_LEADER_EPOCH")
        return
    success = True
    if (op.broker_id == la.leader and op.isr == la.isr and requested == la.leader_recovery_state
            and op.partition_epoch <= la.partition_epoch):
        # equalsAllowStalePartitionEpoch: an idempotent retry gets the current state
        result(None, la)
    elif op.partition_epoch < la.partition_epoch:
        result("INVALID_UPDATE_VERSION")
        success = False
    elif requested is LeaderRecoveryState.RECOVERING and len(op.isr) > 1:
        result("INVALID_REQUEST")
        success = False
    elif la.leader_recovery_state is LeaderRecoveryState.RECOVERED and requested is LeaderRecoveryState.RECOVERING:
        result("INVALID_REQUEST")
        success = False
    elif any(not run.facts.is_live_broker(r) for r in op.isr):
        # `newLeaderAndIsr.isr.toSet -- controllerContext.liveBrokerIds`: AlterPartition v2+
        # answers INELIGIBLE_REPLICA (v0-1: OPERATION_NOT_ATTEMPTED).
        result("INELIGIBLE_REPLICA")
        success = False
    else:
        # The stored state takes the sender as leader and keeps the leader epoch: only
        # controller writes bump it. Kafka does not check that the sender is the leader.
        written = LeaderAndIsr(op.broker_id, op.leader_epoch, op.isr, la.partition_epoch, requested,
                               la.controller_epoch).written(run.facts.controller_epoch)
        run.rec = rec.with_leadership(written)
        result(None, written)
    if success and run.rec.being_reassigned:
        maybe_complete(run)


def elect(run: Run, op: Elect) -> None:
    """processReplicaLeaderElection for one known partition of a topic not being deleted."""
    rec = run.rec

    def result(error: str | None, leader: int | None = None) -> None:
        run.out.append(ElectionResultRecord(rec.topic, rec.partition, op.election_type, error, leader))

    la = rec.leadership
    if la is None:
        result("UNKNOWN_SERVER_ERROR")
        return
    preferred = op.election_type == "PREFERRED"
    if preferred:
        needed = not rec.assignment.replicas or la.leader != rec.assignment.replicas[0]
    else:
        # processReplicaLeaderElection: `!controllerContext.isLiveBroker(currentLeader)`
        needed = la.leader == NO_LEADER or not run.facts.is_live_broker(la.leader)
    if not needed:
        result("ELECTION_NOT_NEEDED")
        return
    refusal = run.partition(P.OnlinePartition, PREFERRED if preferred else OfflineElection(op.allow_unclean))
    if refusal is None:
        assert run.rec.leadership is not None
        result(None, run.rec.leadership.leader)
    elif refusal.invalid_transition:
        result("UNKNOWN_SERVER_ERROR")
    else:
        result("PREFERRED_LEADER_NOT_AVAILABLE" if preferred else "ELIGIBLE_LEADERS_NOT_AVAILABLE")


def observe(run: Run, op: Observe) -> None:
    """Shadow mode: compare the cluster's state with ours; with `shadow_follow`, adopt it."""
    rec = run.rec
    outputs, outcome = shadow.compare(
        rec.topic, rec.partition, rec.leadership, rec.assignment.replicas, op, run.facts.is_online_or_shutting_down,
        run.facts.ctx.unclean_leader_election_enable,
    )
    run.out.extend(outputs)
    if outcome != "match" and run.facts.config.shadow_follow and rec.leadership is not None:
        run.rec = rec.with_leadership(shadow.adopt(rec.leadership, op)).with_state(shadow.followed_state(rec.state, op.leader))
