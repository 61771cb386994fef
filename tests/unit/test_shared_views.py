"""Partitions with the same brokers share one view of them (the directory's contexts carry
one object for equal broker facts, `DirectoryView._broker_facts`, and `partition._begin`
updates each view once for the partitions that hold it), and the shared view still says
what each broker's fact is now."""

from __future__ import annotations

from dataclasses import replace

from state_machines.directory import BrokerRecord, DirectoryView, broker_key
from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import BrokerFact, ControllerConfig


def test_partitions_of_the_same_brokers_share_one_view_across_topics_orders_and_events() -> None:
    engine = Engine()
    events = [
        {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 10 + b}
        for b in (1, 2, 3, 4)
    ]
    events.append({"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1})
    # the same three brokers in three orders, in two topics created by two events
    events.append(
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "a",
            "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        }
    )
    events.append(
        {
            "v": 1,
            "type": "TopicCreation",
            "topic": "b",
            "partitions": {"0": [3, 1, 2], "1": [2, 3, 4]},
        }
    )
    for i, e in enumerate(events):
        engine.process(parse_event(e, i))
    p = engine.partitions
    same = [p[("a", 0)].brokers, p[("a", 1)].brokers, p[("b", 0)].brokers]
    assert same[0] is same[1] is same[2]
    assert [b for b, _ in same[0]] == [1, 2, 3]
    assert p[("b", 1)].brokers is not same[0]

    # a controlled shutdown of broker 2 reaches every partition it hosts: they still share
    # one view, and it says broker 2 is shutting down
    engine.process(
        parse_event(
            {"v": 1, "type": "ControlledShutdown", "broker_id": 2, "broker_epoch": 12}, len(events)
        )
    )
    after = [p[("a", 0)].brokers, p[("a", 1)].brokers, p[("b", 0)].brokers]
    assert after[0] is after[1] is after[2] and after[0] is not same[0]
    facts = dict(after[0])
    assert facts[2].shutting_down and facts[2].registered
    assert not facts[1].shutting_down and not facts[3].shutting_down
    assert dict(p[("b", 1)].brokers)[2].shutting_down


def test_contexts_share_broker_facts_only_when_every_field_is_equal() -> None:
    """Two directories whose broker 2 differs in one field of its fact (registered,
    shutting down, epoch) give contexts that do not share facts; equal facts, in other
    objects and another replica order, are shared."""
    base = BrokerFact(True, False, 12)

    def brokers(fact2: BrokerFact, order: tuple[int, ...] = (1, 2)) -> object:
        view = {
            broker_key(1): BrokerRecord(BrokerFact(True, False, 11)),
            broker_key(2): BrokerRecord(fact2),
        }
        return DirectoryView(view, ControllerConfig(), 0, None).ctx("t", order).brokers

    shared = brokers(base)
    assert brokers(BrokerFact(True, False, 12), (2, 1)) is shared
    for changed in (
        replace(base, registered=False),
        replace(base, shutting_down=True),
        replace(base, broker_epoch=13),
    ):
        other = brokers(changed)
        assert other is not shared and dict(other)[2] == changed
