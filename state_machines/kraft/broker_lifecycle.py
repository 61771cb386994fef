"""The broker lifecycle under KRaft's rules: the contract's broker events as the quorum
controller handles them (QuorumController.java, ClusterControlManager.registerBroker,
ReplicationControlManager.processBrokerHeartbeat and the session timeout,
`maybeFenceOneStaleBroker`; apache/kafka 3.9.0).

* `BrokerStartup`: `registerBroker` (a new incarnation, unless `broker_epoch` is the
  registration's, writes a fenced RegisterBrokerRecord; an unfenced broker's old session
  must expire first, so it is fenced before; with ELR its previous incarnation's unclean
  shutdown comes first), then the heartbeat that finds it caught up and unfences it:
  `handleBrokerUnfenced` over `partitionsWithNoLeader`.
* `BrokerFailure`: the session timeout fences it: `handleBrokerFenced` over the partitions
  with the broker in their ISR, then its fence record.
* `ControlledShutdown`: a heartbeat asking to shut down, through
  `BrokerHeartbeatManager.calculateNextBrokerState`.

The partitions each apply their share (partition_step.py); which partitions Kafka's index
hands a handler is decided there, the directory reaches a superset.
"""

from __future__ import annotations

from .. import event_types as ev
from ..kafka_errors import Errors
from ..outputs import ControlledShutdownResultRecord
from ..partition_summaries import offline_partitions
from . import broker_heartbeat_manager as hb
from . import cluster_control as cc
from .commands import BrokerLifecycle
from .kraft_view import KraftView, directory_id
from .kraft_view import fan_out as _fan_out
from .outputs import broker_record
from .schedule import HEARTBEATS_KEY, HeartbeatStates


def broker_startup(d: KraftView, e: ev.BrokerStartup) -> None:
    """A broker process starting (docs/contract.md, *What BrokerStartup means*): a new
    incarnation unless `broker_epoch` is the current registration's."""
    b = e.broker_id
    reg = d.registration(b)
    if reg is not None and e.broker_epoch is not None and e.broker_epoch < reg.epoch:
        return  # an older incarnation's registration
    unclean: list[tuple[str, int]] = []
    fenced: list[tuple[str, int]] = []
    if reg is None or e.broker_epoch != reg.epoch:
        epoch = d.offset if e.broker_epoch is None else e.broker_epoch
        if reg is not None and not reg.fenced:
            # registerBroker refuses a new incarnation while the old one holds a valid
            # session (BrokerHeartbeatManager.hasValidSession: unfenced): the broker retries
            # until the session expires and maybeFenceOneStaleBroker fences it; the
            # partitions that fence leaves leaderless are the unfencing's to elect
            fenced = d.hosted(b)
            _fence(d, reg)
            reg = d.registration(b)
        if reg is not None and d.mv.is_elr_supported:
            # registerBroker: a new incarnation's previous one shut down uncleanly (KIP-966)
            unclean = d.hosted(b)
            _fan_out(d, unclean, BrokerLifecycle("handleBrokerUncleanShutdown", b))
        records, reply = cc.register_broker(
            d.registry(), b, f"incarnation-{b}-{epoch}", epoch, d.mv, log_dirs=(directory_id(b),)
        )
        if reply.error is not None:
            d.rejected = f"BrokerStartup: {reply.error}: {reply.message}"
            return
        d.replay(records)
        _set_shutting_down(d, b, False)  # a new incarnation registers fenced (touch(fenced))
        reg = d.registration(b)
        assert reg is not None
    if not reg.fenced:
        return  # registered and unfenced: a repeated startup
    # the heartbeat that finds it caught up: FENCED -> UNFENCED, handleBrokerUnfenced
    d.replay([cc.unfence_broker_record(b, reg.epoch, d.mv)])
    # Kafka's unfencing heartbeat comes after registerBroker's records are replayed, so the
    # partitions its unclean shutdown just left leaderless are in `partitionsWithNoLeader`
    # (with an empty ISR and ELR, `canElectLastKnownLeader` elects the broker again; found
    # running testEligibleLeaderReplicas_UncleanShutdown through here). Each partition checks
    # that it is leaderless itself (partition_step._reached).
    _fan_out(
        d,
        sorted({*_leaderless(d), *unclean, *fenced}),
        BrokerLifecycle("handleBrokerUnfenced", b),
    )


def _leaderless(d: KraftView) -> list[tuple[str, int]]:
    """`partitionsWithNoLeader`, as the summaries say, with the partitions this cause reached."""
    return sorted({*offline_partitions(d), *d.touched})


def broker_failure(d: KraftView, e: ev.BrokerFailure) -> None:
    reg = d.registration(e.broker_id)
    if reg is None or reg.fenced:
        return  # only an unfenced broker holds a session that can expire
    _fence(d, reg)


def _fence(d: KraftView, reg: cc.BrokerRegistration) -> None:
    """`handleBrokerFenced`: the partitions first (the registry still shows the broker
    unfenced: `generateLeaderAndIsrUpdates` excludes it), then the broker's record."""
    _fan_out(d, d.hosted(reg.id), BrokerLifecycle("handleBrokerFenced", reg.id))
    d.replay([cc.fence_broker_record(d.registry(), reg.id, d.mv)])
    # touch(fenced): "If a broker is fenced, it leaves controlled shutdown"
    _set_shutting_down(d, reg.id, False)


def controlled_shutdown(d: KraftView, e: ev.ControlledShutdown) -> None:
    if not d.controller.active:
        return
    b = e.broker_id
    reg = d.registration(b)
    epoch = e.broker_epoch if e.broker_epoch is not None else (reg.epoch if reg is not None else -1)
    if d.registry([b]).check_broker_epoch(b, epoch) is not None:
        d.emit(ControlledShutdownResultRecord(b, (), Errors.STALE_BROKER_EPOCH))
        return
    assert reg is not None
    current = hb.current_broker_state(reg.fenced, b in _heartbeats(d).shutting_down)
    # The broker is caught up (its metadata offset is past its registration) and so is every
    # active broker past its controlled shutdown offset: the contract carries no offsets.
    nxt = hb.calculate_next_broker_state(
        current,
        want_fence=False,
        want_shut_down=True,
        current_metadata_offset=reg.epoch,
        register_broker_record_offset=reg.epoch,
        has_leaderships=_has_leaderships(d, b),
    )
    handler = hb.heartbeat_handler(current, nxt)
    if nxt.in_controlled_shutdown:
        # processBatchEndOffset: maybeUpdateControlledShutdownOffset
        _set_shutting_down(d, b, True)
    # the reply: the partitions it still leads come from the partitions (StillLeads)
    d.emit(ControlledShutdownResultRecord(b, (), None))
    if handler == "handleBrokerFenced":
        _fence(d, reg)
    elif handler == "handleBrokerInControlledShutdown":
        # the broker's record first, then its partitions (Kafka appends them in that order
        # and replays them after: the partitions see the registration from before it)
        record = cc.controlled_shutdown_record(d.registry(), b, reg.epoch, d.mv)
        if record is not None:
            d.emit(broker_record(record))
        _fan_out(d, d.hosted(b), BrokerLifecycle("handleBrokerInControlledShutdown", b))
        if record is not None:
            d.replay([record], emit=False)


def _heartbeats(d: KraftView) -> HeartbeatStates:
    rec = d.get(HEARTBEATS_KEY)
    return rec if isinstance(rec, HeartbeatStates) else HeartbeatStates()


def _set_shutting_down(d: KraftView, broker_id: int, shutting_down: bool) -> None:
    states = _heartbeats(d).shutting_down
    after = states | {broker_id} if shutting_down else states - {broker_id}
    if after != states:
        d.put(HEARTBEATS_KEY, HeartbeatStates(after))


def forget_heartbeats(d: KraftView) -> None:
    """A new active controller starts a new heartbeat manager: no broker in it is shutting
    down (`ClusterControlManager.activate` registers every broker afresh)."""
    if _heartbeats(d).shutting_down:
        d.put(HEARTBEATS_KEY, HeartbeatStates())


def _has_leaderships(d: KraftView, broker_id: int) -> bool:
    """`BrokersToIsrs.hasLeaderships`, as the summaries say."""
    for topic in sorted(d.controller.topics):
        rec = d.topic(topic)
        if rec is not None and any(s.leader == broker_id for _, s in rec.summaries):
            return True
    return False
