"""`health` and `what-if` on the in-process engine's state: Kafka's rules for offline
partitions (with where the unclean setting comes from), min ISR, reassignments, leader
imbalance and shutting-down brokers; the exit codes; and what-if's decisions against the
engine run on with the same events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from shadow_controller import health, health_render
from shadow_controller.what_if import (
    Hypothesis,
    WhatIfError,
    check_events,
    hypotheses,
    what_if,
)
from shadow_controller.what_if_render import render
from shadow_controller.what_if_restart import render_restart, restart_broker
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from streaming import exits
from tests.tools.health_scenario import EVENTS, HYPOTHETICAL, REASSIGNMENT_OFFSET, T0, engine_state


def names(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [r["partition"] for r in rows]


def test_the_scenario_has_one_offline_one_under_min_isr_one_stuck_reassignment() -> None:
    _, state = engine_state()
    result = health.report(state)
    assert names(result["offline"]) == ["logs-0"]
    assert names(result["under_min_isr"]) == ["orders-0"]
    assert names(result["at_min_isr"]) == ["metrics-0"]
    assert names(result["reassignments"]) == ["events-0"]
    assert health.exit_code(result) == exits.OFFLINE

    [offline] = result["offline"]
    assert (
        offline["dead_replicas"] == {"5": "broker down"}
        and offline["isr"] == [5]
        and offline["leader"] == -1
    )
    assert offline["unclean_election"] == {"allowed": False, "source": "cluster setting"}
    assert offline["why"].startswith("no replica is live")
    [under] = result["under_min_isr"]
    assert (under["isr"], under["min_insync_replicas"], under["min_insync_replicas_source"]) == (
        [1],
        2,
        "topic config",
    )
    [moving] = result["reassignments"]
    assert moving["adding"] == [3, 4] and moving["target_not_in_isr"] == [3, 4] and moving["stuck"]
    assert moving["started_offset"] == REASSIGNMENT_OFFSET
    # asked at second 7; the last event (the tick) is at second 10, offset len(EVENTS) - 1
    assert (moving["events_since"], moving["age_ms"]) == (
        len(EVENTS) - 1 - REASSIGNMENT_OFFSET,
        3_000,
    )
    assert result["shutting_down"] == [
        {"broker": 6, "leads": ["metrics-0"], "leads_replicated": []}
    ]


def test_leader_imbalance_is_the_rebalance_checks_computation() -> None:
    _, state = engine_state()
    brokers = {b["broker"]: b for b in health.report(state)["leader_imbalance"]["brokers"]}
    # events-0's preferred replica is now 3 (the head of [3,4,1,2]), led by 1; logs-0 has no leader
    assert (
        brokers[3]["led_by_another"],
        brokers[3]["preferred_partitions"],
        brokers[3]["over_threshold"],
    ) == (1, 1, True)
    assert (
        brokers[5]["over_threshold"]
        and not brokers[1]["over_threshold"]
        and not brokers[2]["over_threshold"]
    )


def _offline_t0(
    config: ControllerConfig,
    before_failure: list[dict[str, Any]],
    topic_configs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """t-0 [1,2] with the ISR shrunk to [1], then broker 1 fails."""
    events = [
        {"v": 1, "type": "BrokerStartup", "broker_id": 1},
        {"v": 1, "type": "BrokerStartup", "broker_id": 2},
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "t",
            "partitions": {"0": [1, 2]},
            "configs": topic_configs or {},
        },
        {
            "v": 1,
            "type": "AlterPartition",
            "topic": "t",
            "partition": 0,
            "broker_id": 1,
            "leader_epoch": 0,
            "partition_epoch": 0,
            "isr": [1],
        },
        *before_failure,
        {"v": 1, "type": "BrokerFailure", "broker_id": 1},
    ]
    _, state = engine_state(events, config)
    return health.report(state)


@pytest.mark.parametrize(
    "static, dynamic, topic, source",
    [
        (False, None, None, "cluster setting"),
        (True, "false", None, "cluster dynamic config (BrokerConfigChange)"),
        (True, "true", "false", "topic config"),
    ],
)
def test_an_offline_partition_says_where_its_unclean_setting_comes_from(
    static: bool, dynamic: str | None, topic: str | None, source: str
) -> None:
    change = (
        [
            {
                "v": 1,
                "type": "BrokerConfigChange",
                "configs": {"unclean.leader.election.enable": dynamic},
            }
        ]
        if dynamic
        else []
    )
    result = _offline_t0(
        ControllerConfig(unclean_leader_election_enable=static),
        change,
        {"unclean.leader.election.enable": topic} if topic else None,
    )
    [row] = result["offline"]
    assert row["dead_replicas"] == {"1": "broker down"} and row["isr"] == [1]
    assert row["unclean_election"] == {"allowed": False, "source": source}
    assert (
        row["why"]
        == f"no ISR replica is live, and unclean election is disabled ({source}) for the live "
        "out-of-sync replica [2]"
    )


def test_with_unclean_election_allowed_the_partition_is_not_offline() -> None:
    result = _offline_t0(ControllerConfig(), [], {"unclean.leader.election.enable": "true"})
    # broker 2, out of sync, is elected uncleanly: ISR [2] of [1,2]
    assert result["offline"] == [] and result["status"] == "under_replicated"


def test_min_isr_from_the_cluster_dynamic_default_and_the_exit_codes() -> None:
    change = {"v": 1, "type": "BrokerConfigChange", "configs": {"min.insync.replicas": "2"}}
    result = _offline_t0(ControllerConfig(), [change], {"unclean.leader.election.enable": "true"})
    [row] = result["under_min_isr"]
    assert (row["partition"], row["isr"], row["min_insync_replicas_source"]) == (
        "t-0",
        [2],
        "cluster dynamic config (BrokerConfigChange)",
    )
    assert health.exit_code(result) == exits.UNDER_MIN_ISR
    assert (
        health_render.render(result)
        .splitlines()[-1]
        .startswith("status: partitions UNDER MIN ISR;")
    )


@pytest.mark.parametrize(
    "static, dynamic, topic, expected",
    [
        (1, None, None, None),  # Kafka's default: t-0's ISR [2] is at it, not under
        (2, None, None, (2, "cluster setting")),
        (3, "2", None, (2, "cluster dynamic config (BrokerConfigChange)")),
        (3, "2", "2", (2, "topic config")),
        (2, "0", None, (2, "cluster setting")),  # a value Kafka refuses (atLeast(1)) does not apply
    ],
)
def test_min_isr_is_the_topic_config_over_the_dynamic_default_over_the_static_setting(
    static: int, dynamic: str | None, topic: str | None, expected: tuple[int, str] | None
) -> None:
    change = (
        [{"v": 1, "type": "BrokerConfigChange", "configs": {"min.insync.replicas": dynamic}}]
        if dynamic
        else []
    )
    configs = {
        "unclean.leader.election.enable": "true",
        **({"min.insync.replicas": topic} if topic else {}),
    }
    result = _offline_t0(ControllerConfig(min_insync_replicas=static), change, configs)
    rows = [
        (r["partition"], r["min_insync_replicas"], r["min_insync_replicas_source"])
        for r in result["under_min_isr"]
    ]
    assert rows == ([] if expected is None else [("t-0", *expected)])
    # the one resolution, the metrics' too
    config = ControllerConfig(min_insync_replicas=static)
    dyn = (("min.insync.replicas", dynamic),) if dynamic else ()
    level = config.min_isr_for({"min.insync.replicas": topic} if topic else {}, dyn)
    assert level[0] == (1 if expected is None else expected[0])


def test_what_if_decides_what_the_engine_decides_and_names_the_impact() -> None:
    engine, state = engine_state()
    events = [
        Hypothesis(f"--event {i + 1}", json.dumps(e).encode()) for i, e in enumerate(HYPOTHETICAL)
    ]
    result = what_if(state, events)
    expected = [
        r
        for i, e in enumerate(HYPOTHETICAL)
        for r in engine.process(parse_event(e, len(EVENTS) + i))
    ]
    # both in the contract's order: (cause_offset, key, seq)
    assert result["decisions"] == expected
    assert state.partitions == engine.partitions  # the fold left the same state as the engine

    imp = result["impact"]
    # both lose their last ISR replica (broker 1) with out-of-sync replicas live
    assert [u["partition"] for u in imp["unclean_elections"]] == ["events-0", "orders-0"]
    assert [(s["broker"], s["error"]) for s in imp["controlled_shutdown"]] == [(3, None)]
    assert "metrics-0" in names(
        imp["newly_offline"]
    )  # broker 6 shutting down counts as offline on a failure
    moved = {b["broker"]: b for b in imp["leaders_moved"]["brokers"]}
    assert moved[1]["led_after"] == 0 and moved[1]["lost"] == moved[1]["led_before"]
    assert result["dead_letters"] == [] and result["owed_decisions"] == 0


def test_events_the_job_would_dead_letter_are_refused_with_their_reason() -> None:
    with pytest.raises(WhatIfError, match=r"^--event 1: the job would dead-letter this event: "):
        check_events(hypotheses(['{"type": "BrokerFailure", broker_id: 2}'], None))
    with pytest.raises(WhatIfError, match=r"--event 2: .*BrokerExplosion"):
        check_events(
            hypotheses(
                ['{"type":"BrokerFailure","broker_id":2}', '{"type":"BrokerExplosion"}'], None
            )
        )
    # `v` is filled, nothing else
    [h] = hypotheses([f'{{"type":"ControllerTick","ts":{T0}}}'], None)
    assert json.loads(h.value) == {"v": 1, "type": "ControllerTick", "ts": T0}


def test_what_if_first_applies_what_the_job_read_but_did_not_apply() -> None:
    """Between two batches the job may hold a cause (a topic deletion waiting for its
    partitions' reports, which travel in the feedback) and events behind it: what-if
    settles them first, and the hypothetical events then get the engine's decisions."""
    from shadow_controller.what_if import _fold_partitions
    from state_machines.fold import Replies
    from state_machines.loop import DIRECT, RawEvent, Sequencer

    read = [
        {"v": 1, "type": "TopicDeletion", "topic": "orders"},
        {"v": 1, "type": "BrokerStartup", "broker_id": 5, "broker_epoch": 205},
    ]
    engine, _ = engine_state(EVENTS + read)
    first = len(EVENTS) + len(read)
    expected = [
        r for i, e in enumerate(HYPOTHETICAL) for r in engine.process(parse_event(e, first + i))
    ]

    _, state = engine_state()
    # one batch of the job: the deletion waits for reports, the startup is held behind it
    seq = Sequencer(state.directory, state.config)
    raws = [
        RawEvent(len(EVENTS) + i, json.dumps(e).encode(), f"line:{i}") for i, e in enumerate(read)
    ]
    pending, rest = seq.run(None, [], raws, [], [])
    assert pending is not None and [r.offset for r in rest] == [len(EVENTS) + 1]
    replies = Replies()
    _fold_partitions(state, {}, [w for w in seq.work if w.target != DIRECT], replies)
    state.pending, state.buffered, state.next_offset = pending, rest, first
    state.reports, state.summaries = [r for _, r in replies.reports], list(replies.summaries)
    assert state.reports and not state.settled

    result = what_if(
        state,
        [
            Hypothesis(f"--event {i + 1}", json.dumps(e).encode())
            for i, e in enumerate(HYPOTHETICAL)
        ],
    )
    assert result["owed_decisions"] > 0
    assert result["decisions"] == expected
    assert state.partitions == engine.partitions and state.settled


def _three_brokers() -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parents[2] / "examples" / "three-brokers.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_under_replicated_partitions_have_their_section_and_count_on_the_status_line() -> None:
    """examples/three-brokers.jsonl ends with 3 of its 4 partitions' ISR smaller than their
    replication factor: `kafka-topics --describe --under-replicated-partitions` lists them
    (TopicCommand.PartitionDescription.isUnderReplicated), and so does health."""
    _, state = engine_state(_three_brokers())
    result = health.report(state)
    assert [
        (r["partition"], r["isr"], r["replication_factor"]) for r in result["under_replicated"]
    ] == [("audit-0", [2], 2), ("orders-1", [3], 3), ("orders-2", [3], 3)]
    assert result["status"] == "under_replicated" and health.exit_code(result) == exits.OK
    text = health_render.render(result)
    assert (
        "under-replicated partitions: 3\n"
        "  Topic: audit  Partition: 0  Leader: 2  Replicas: 1,2  Isr: 2\n"
        "  Topic: orders  Partition: 1  Leader: 3  Replicas: 3,1,2  Isr: 3\n"
        "  Topic: orders  Partition: 2  Leader: 3  Replicas: 3,1,2  Isr: 3\n"
    ) in text
    assert text.splitlines()[-1] == (
        "status: partitions UNDER-REPLICATED; 0 offline, 0 under min ISR, 3 of 4 under-replicated"
    )


def test_a_reassignment_waits_for_every_target_replica_and_prints_no_unknown_age() -> None:
    """orders-1 [2,3,1] -> [3,1] with ISR [3]: nothing is added, but the reassignment
    completes only when every target replica is in the ISR
    (KafkaController.isReassignmentComplete), so it is stuck on 1. The events carry no
    ts: the age is given in events, without a `?` for the event time."""
    _, state = engine_state(_three_brokers())
    result = health.report(state)
    [moving] = result["reassignments"]
    assert (moving["partition"], moving["target"], moving["isr"]) == ("orders-1", [3, 1], [3])
    assert moving["stuck"] and moving["target_not_in_isr"] == [1]
    text = health_render.render(result)
    [line] = [x for x in text.splitlines() if x.startswith("  orders-1  [3,1,2] -> [3,1]")]
    assert line.endswith(
        "asked at offset 13, 0 events ago (no event time: the events carry no ts); "
        "stuck: target [1] not in the ISR"
    ), line
    assert "?" not in text


# -- is it safe to restart broker X now? -----------------------------------------------------


def test_restarting_the_only_isr_member_is_not_safe_and_exits_as_health_does() -> None:
    """At the end of examples/three-brokers.jsonl broker 3 is the only ISR member of
    orders-1 and orders-2. Its controlled shutdown leaves them where they are (Kafka's
    ControlledShutdown reports them as partitionsRemaining); when it goes away they go
    offline (no live ISR replica, unclean election disabled), and come back when it
    returns."""
    _, state = engine_state(_three_brokers())
    result = restart_broker(state, 3)
    down = {p["phase"]: p for p in result["phases"]}
    assert [p["phase"] for p in result["phases"]] == ["controlled shutdown", "down", "back"]
    assert down["controlled shutdown"]["newly_offline"] == []
    assert names(down["down"]["newly_offline"]) == ["orders-1", "orders-2"]
    assert down["back"]["newly_offline"] == []
    assert result["verdict"] == (
        "verdict: NOT SAFE to restart broker 3: orders-1, orders-2 offline while it is down "
        "(offset 15) until it returns"
    )
    assert result["exit_code"] == exits.OFFLINE
    assert render_restart(result, 5).splitlines()[-1] == result["verdict"]


def _cluster(min_isr: str | None = None) -> list[dict[str, Any]]:
    configs = {"min.insync.replicas": min_isr} if min_isr else {}
    return [
        *(
            {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b}
            for b in (1, 2, 3)
        ),
        {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "t",
            "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
            "configs": configs,
        },
    ]


def test_restarting_a_broker_of_a_healthy_cluster_is_safe() -> None:
    _, state = engine_state(_cluster())
    result = restart_broker(state, 1)
    assert result["exit_code"] == exits.OK
    assert result["verdict"] == (
        "verdict: safe to restart broker 1: no partition goes offline or under its min ISR "
        "during its controlled shutdown, while it is down, or after it returns"
    )
    # it came back under a new broker epoch, above every epoch the controller knew
    assert result["phases"][2]["event"] == {
        "type": "BrokerStartup",
        "broker_id": 1,
        "broker_epoch": 104,
    }


def test_restarting_a_broker_of_a_topic_at_its_min_isr_takes_it_under() -> None:
    """min.insync.replicas=3 with three replicas: the controlled shutdown shrinks the ISR
    (Strimzi's roller refuses exactly this)."""
    _, state = engine_state(_cluster(min_isr="3"))
    result = restart_broker(state, 2)
    [shutdown, down, back] = result["phases"]
    assert names(shutdown["newly_under_min_isr"]) == ["t-0", "t-1"]
    assert result["exit_code"] == exits.UNDER_MIN_ISR
    assert result["verdict"].startswith(
        "verdict: NOT SAFE to restart broker 2: t-0, t-1 under min ISR during its controlled "
        "shutdown (offset 5)"
    ), result["verdict"]


def test_restart_of_a_broker_that_is_not_live_is_refused() -> None:
    _, state = engine_state(_cluster())
    with pytest.raises(WhatIfError, match=r"^--restart-broker 9: broker 9 is not known"):
        restart_broker(state, 9)


def test_a_controlled_shutdown_says_what_goes_offline_when_the_broker_stops() -> None:
    """The hypothetical ControlledShutdown of broker 3 said 'would go offline: 0' and
    'status: ok -> ok': true of the instant, but broker 3 is the only ISR member of
    orders-1 and orders-2, which go offline when it stops. The answer says so and exits 7."""
    _, state = engine_state(_three_brokers())
    event = {"v": 1, "type": "ControlledShutdown", "broker_id": 3, "broker_epoch": 103}
    result = what_if(state, [Hypothesis("--event 1", json.dumps(event).encode())])
    [stopped] = result["when_stopped"]
    assert stopped["broker"] == 3 and names(stopped["newly_offline"]) == ["orders-1", "orders-2"]
    assert result["exit_code"] == exits.OFFLINE
    assert (
        "  controlled shutdown of broker 3: accepted; still leads 2: orders-1, orders-2\n"
        "    when broker 3 stops: would go offline: 2 (orders-1, orders-2); under min ISR: 0\n"
    ) in render(result, 3)


def test_a_controlled_shutdown_followed_by_the_broker_stopping_is_not_stopped_twice() -> None:
    _, state = engine_state(_three_brokers())
    events = [
        {"v": 1, "type": "ControlledShutdown", "broker_id": 3, "broker_epoch": 103},
        {"v": 1, "type": "BrokerFailure", "broker_id": 3},
    ]
    result = what_if(
        state, [Hypothesis(f"--event {i}", json.dumps(e).encode()) for i, e in enumerate(events)]
    )
    assert result["when_stopped"] == []
    assert names(result["impact"]["newly_offline"]) == ["orders-1", "orders-2"]
    assert result["exit_code"] == exits.OFFLINE
