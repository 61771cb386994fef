"""Partitions with the same brokers share one view of them (the directory's contexts carry
one object for equal broker facts, `DirectoryView._broker_facts`, and `partition._begin`
updates each view once for the partitions that hold it), and the shared view still says
what each broker's fact is now."""

from __future__ import annotations

from dataclasses import fields

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import BrokerFact


def test_partitions_of_the_same_brokers_share_one_view_across_topics_orders_and_events() -> None:
    engine = Engine()
    events = [{"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 10 + b} for b in (1, 2, 3, 4)]
    events.append({"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1})
    # the same three brokers in three orders, in two topics created by two events
    events.append({"v": 1, "type": "TopicCreation", "topic": "a", "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}})
    events.append({"v": 1, "type": "TopicCreation", "topic": "b", "partitions": {"0": [3, 1, 2], "1": [2, 3, 4]}})
    for i, e in enumerate(events):
        engine.process(parse_event(e, i))
    p = engine.partitions
    same = [p[("a", 0)].brokers, p[("a", 1)].brokers, p[("b", 0)].brokers]
    assert same[0] is same[1] is same[2]
    assert [b for b, _ in same[0]] == [1, 2, 3]
    assert p[("b", 1)].brokers is not same[0]

    # a controlled shutdown of broker 2 reaches every partition it hosts: they still share
    # one view, and it says broker 2 is shutting down
    engine.process(parse_event({"v": 1, "type": "ControlledShutdown", "broker_id": 2, "broker_epoch": 12}, len(events)))
    after = [p[("a", 0)].brokers, p[("a", 1)].brokers, p[("b", 0)].brokers]
    assert after[0] is after[1] is after[2] and after[0] is not same[0]
    facts = dict(after[0])
    assert facts[2].shutting_down and facts[2].registered
    assert not facts[1].shutting_down and not facts[3].shutting_down
    assert dict(p[("b", 1)].brokers)[2].shutting_down


def test_the_shared_facts_are_keyed_by_every_field_of_a_broker_fact() -> None:
    """`DirectoryView._broker_facts` keys each broker by its id and these fields: a new
    field of `BrokerFact` must join the key, or facts that differ in it would be shared."""
    assert [f.name for f in fields(BrokerFact)] == ["registered", "shutting_down", "broker_epoch"]
