"""The bridge's pure part: `settle` (stand-ins for what the cluster does not show) and
`diff` (last emitted view, current view -> contract events)."""

from __future__ import annotations

import pytest

from shadow_controller.bridge import backoff_delay
from shadow_controller.bridge_io import topics_from_metadata
from shadow_controller.cluster_view import (
    ClusterView,
    PartitionView,
    TopicView,
    bootstrap,
    diff,
    event_key,
    settle,
)
from state_machines.engine import Engine
from state_machines.events import parse_event


def pv(leader: int, epoch: int | None, isr=None, replicas=(1, 2, 3)) -> PartitionView:
    return PartitionView(
        tuple(replicas), leader, tuple(isr if isr is not None else replicas), epoch
    )


def view(
    brokers=(1, 2, 3), controller=1, topics=None, *, controller_epoch=None, cluster_id="c1"
) -> ClusterView:
    return ClusterView.of(
        brokers,
        controller,
        topics if topics is not None else {"orders": {0: pv(1, 0), 1: pv(2, 0)}},
        cluster_id=cluster_id,
        controller_epoch=controller_epoch,
    )


BASE = settle(None, view())


def step(current: ClusterView, previous: ClusterView = BASE) -> list[dict]:
    return diff(previous, settle(previous, current))


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def test_bootstrap_is_brokers_then_snapshots_then_failover():
    events = diff(None, BASE)
    assert types(events) == ["BrokerStartup"] * 3 + ["PartitionStateSnapshot"] * 2 + [
        "ControllerFailover"
    ]
    assert [e["broker_id"] for e in events[:3]] == [1, 2, 3]
    assert "broker_epoch" not in events[0]  # not observable
    assert events[3] == {
        "v": 1,
        "type": "PartitionStateSnapshot",
        "topic": "orders",
        "partition": 0,
        "replicas": [1, 2, 3],
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1, 2, 3],
        "partition_epoch": 0,
        "controller_epoch": 1,
    }
    assert events[-1] == {
        "v": 1,
        "type": "ControllerFailover",
        "controller_id": 1,
        "controller_epoch": 1,
    }
    assert bootstrap(BASE) == events


def test_bootstrap_without_a_controller_leaves_the_shadow_inactive():
    events = diff(None, settle(None, view(controller=None)))
    assert "ControllerFailover" not in types(events)


def test_nothing_changed_emits_nothing():
    assert step(view()) == []


def test_isr_order_alone_is_not_a_change():
    assert step(view(topics={"orders": {0: pv(1, 0, isr=(3, 2, 1)), 1: pv(2, 0)}})) == []


# (name, current view, expected events) against BASE
CHANGES = [
    (
        "broker_joins",
        view(brokers=(1, 2, 3, 4)),
        [{"v": 1, "type": "BrokerStartup", "broker_id": 4}],
    ),
    ("broker_leaves", view(brokers=(1, 3)), [{"v": 1, "type": "BrokerFailure", "broker_id": 2}]),
    (
        "topic_created",
        view(topics={"orders": {0: pv(1, 0), 1: pv(2, 0)}, "pay": {0: pv(3, 0, replicas=(3, 1))}}),
        [
            {"v": 1, "type": "TopicCreation", "topic": "pay", "partitions": {"0": [3, 1]}},
            {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": "pay",
                "partition": 0,
                "leader": 3,
                "leader_epoch": 0,
                "isr": [3, 1],
                "replicas": [3, 1],
            },
        ],
    ),
    ("topic_deleted", view(topics={}), [{"v": 1, "type": "TopicDeletion", "topic": "orders"}]),
    (
        "partitions_added",
        view(topics={"orders": {0: pv(1, 0), 1: pv(2, 0), 2: pv(3, 0, replicas=(3, 1, 2))}}),
        [
            {
                "v": 1,
                "type": "PartitionExpansion",
                "topic": "orders",
                "partitions": {"2": [3, 1, 2]},
            },
            {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": "orders",
                "partition": 2,
                "leader": 3,
                "leader_epoch": 0,
                "isr": [3, 1, 2],
                "replicas": [3, 1, 2],
            },
        ],
    ),
    (
        "leader_changed",
        view(topics={"orders": {0: pv(2, 1, isr=(2, 3)), 1: pv(2, 0)}}),
        [
            {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": "orders",
                "partition": 0,
                "leader": 2,
                "leader_epoch": 1,
                "isr": [2, 3],
                "replicas": [1, 2, 3],
            }
        ],
    ),
    (
        "isr_shrunk",
        view(topics={"orders": {0: pv(1, 0), 1: pv(2, 0, isr=(2,))}}),
        [
            {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": "orders",
                "partition": 1,
                "leader": 2,
                "leader_epoch": 0,
                "isr": [2],
                "replicas": [1, 2, 3],
            }
        ],
    ),
    (
        "leader_epoch_bumped_same_leader",
        view(topics={"orders": {0: pv(1, 5), 1: pv(2, 0)}}),
        [
            {
                "v": 1,
                "type": "ObservedPartitionState",
                "topic": "orders",
                "partition": 0,
                "leader": 1,
                "leader_epoch": 5,
                "isr": [1, 2, 3],
                "replicas": [1, 2, 3],
            }
        ],
    ),
    (
        "controller_moved",
        view(controller=3),
        [{"v": 1, "type": "ControllerFailover", "controller_id": 3, "controller_epoch": 2}],
    ),
    ("controller_lost", view(controller=None), []),
]


@pytest.mark.parametrize(("name", "current", "expected"), CHANGES, ids=[c[0] for c in CHANGES])
def test_each_change_kind(name, current, expected):
    assert step(current) == expected


def test_recreated_topic_is_a_deletion_then_a_creation():
    before = settle(None, view(topics={"orders": TopicView(((0, pv(1, 4)),), "id-a")}))
    after = view(topics={"orders": TopicView(((0, pv(2, None)),), "id-b")})
    events = step(after, before)
    assert types(events) == ["TopicDeletion", "TopicCreation", "ObservedPartitionState"]
    assert events[2]["leader_epoch"] == 0  # a new topic's stand-in epoch starts again


def test_order_within_a_poll_follows_processBrokerChange_then_topics_then_observations():
    current = view(
        brokers=(2, 3, 4),
        controller=2,
        topics={
            "orders": {0: pv(2, 1, isr=(2, 3)), 1: pv(2, 0), 2: pv(3, 0)},
            "pay": {0: pv(4, 0)},
        },
    )
    previous = settle(
        None, view(topics={"orders": {0: pv(1, 0), 1: pv(2, 0)}, "old": {0: pv(1, 0)}})
    )
    assert types(step(current, previous)) == [
        "BrokerStartup",
        "BrokerFailure",
        "ControllerFailover",
        "TopicDeletion",
        "TopicCreation",
        "PartitionExpansion",
        "ObservedPartitionState",
        "ObservedPartitionState",
        "ObservedPartitionState",
    ]


# settle: the stand-ins


def test_controller_epoch_starts_at_one_and_counts_controller_moves():
    v1 = settle(None, view())
    v2 = settle(v1, view(controller=2))
    v3 = settle(v2, view(controller=2))
    v4 = settle(v3, view(controller=None))
    v5 = settle(v4, view(controller=1))
    assert [v.controller_epoch for v in (v1, v2, v3, v4, v5)] == [1, 2, 2, 2, 3]


def test_unobserved_leader_epoch_stand_in_counts_leader_changes():
    v1 = settle(None, view(topics={"t": {0: pv(1, None)}}))
    v2 = settle(v1, view(topics={"t": {0: pv(1, None, isr=(1,))}}))
    v3 = settle(v2, view(topics={"t": {0: pv(2, None)}}))
    epochs = [v.topic_map()["t"].partition_map()[0].leader_epoch for v in (v1, v2, v3)]
    assert epochs == [0, 0, 1]
    assert types(diff(v2, v3)) == ["ObservedPartitionState"]


def test_observed_leader_epoch_is_kept():
    assert (
        settle(None, view(topics={"t": {0: pv(1, 7)}}))
        .topic_map()["t"]
        .partition_map()[0]
        .leader_epoch
        == 7
    )


def test_diff_refuses_an_unsettled_view():
    with pytest.raises(ValueError):
        diff(BASE, view())


# everything emitted is contract v1, and a log of it runs through the engine


def _all_emitted() -> list[dict]:
    events = diff(None, BASE)
    for _, current, _ in CHANGES:
        events += step(current)
    return events


def test_every_emitted_event_parses_as_contract_v1():
    events = _all_emitted()
    assert set(types(events)) == {
        "BrokerStartup",
        "BrokerFailure",
        "ControllerFailover",
        "TopicCreation",
        "TopicDeletion",
        "PartitionExpansion",
        "PartitionStateSnapshot",
        "ObservedPartitionState",
    }
    for offset, event in enumerate(events):
        parse_event(event, offset)


def test_a_bootstrap_then_matching_observations_give_no_divergence():
    # The shadow elects the first live replica in the ISR for a new topic, as the cluster did here.
    later = view(
        topics={"orders": {0: pv(1, 0), 1: pv(2, 0)}, "pay": {0: pv(3, 0, replicas=(3, 1))}}
    )
    events = diff(None, BASE) + step(later)
    engine = Engine()
    out = [r for offset, e in enumerate(events) for r in engine.process(parse_event(e, offset))]
    assert [r for r in out if r["type"] == "Divergence"] == []
    assert engine.observations["match"] == 1


def test_view_survives_its_json_form():
    v = settle(
        None, view(topics={"orders": TopicView(((0, pv(1, 3)), (1, pv(2, 0, isr=(2,)))), "id-a")})
    )
    assert ClusterView.from_json(v.to_json()) == v


@pytest.mark.parametrize(
    ("event", "key"),
    [
        ({"type": "BrokerStartup", "broker_id": 3}, "broker-3"),
        ({"type": "TopicCreation", "topic": "orders", "partitions": {}}, "topic-orders"),
        ({"type": "ObservedPartitionState", "topic": "orders", "partition": 2}, "orders-2"),
        ({"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1}, "controller"),
    ],
)
def test_event_key_is_the_entity(event, key):
    assert event_key(event) == key


def test_metadata_response_topics_to_views():
    import uuid

    described = [
        {
            "name": "a",
            "topic_id": uuid.UUID(int=0),
            "partitions": [
                {
                    "partition_index": 1,
                    "leader_id": 2,
                    "leader_epoch": -1,
                    "replica_nodes": [2],
                    "isr_nodes": [2],
                },
                {
                    "partition_index": 0,
                    "leader_id": 1,
                    "leader_epoch": 4,
                    "replica_nodes": [1, 2],
                    "isr_nodes": [1],
                },
            ],
        },
        {"name": "being-created", "partitions": []},
    ]
    topics = topics_from_metadata(described)
    assert list(topics) == ["a"]
    assert topics["a"] == TopicView(
        ((0, PartitionView((1, 2), 1, (1,), 4)), (1, PartitionView((2,), 2, (2,), None))), None
    )


@pytest.mark.parametrize(
    ("failures", "delay"), [(1, 1.0), (2, 2.0), (3, 4.0), (6, 30.0), (100, 30.0)]
)
def test_backoff_is_exponential_and_capped(failures, delay):
    assert backoff_delay(failures, 1.0, 30.0) == delay
