"""Property tests in kraft mode: the ZK machine's random cluster histories through the KRaft
rules (`ControllerConfig(mode="kraft")`), KRaft's invariants after every event.

The machines reuse `ControllerMachine`'s rules and the generator's events as they are; in
kraft mode StopReplicaResponse and ReplicaDirFailure are dead letters (the generator keeps
each event's dead letters, and the checker asserts exactly one for each of those events).
The checker is `KraftInvariantChecker` (kraft_invariants.py). Three rule sets run:
metadata.version 3.9-IV0 (the default), 3.5-IV2 (an ISR shrink bumps the leader epoch,
KAFKA-15021), and 4.0-IV1 with
eligible.leader.replicas.version 1 and topics with min.insync.replicas 2 or 3 (KIP-966).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig
from tests.property.generator import LogBuilder, generate_log
from tests.property.kraft_invariants import KraftInvariantChecker
from tests.property.test_controller_machine import ControllerMachine, replay

KRAFT = ControllerConfig(mode="kraft")
KRAFT_3_5 = ControllerConfig(mode="kraft", metadata_version="3.5-IV2")
KRAFT_ELR = ControllerConfig(
    mode="kraft", metadata_version="4.0-IV1", eligible_leader_replicas_version=1
)


def check_kraft_log(events: list[dict[str, Any]], config: ControllerConfig) -> None:
    """Every KRaft invariant over a whole log, one event at a time, plus determinism."""
    engine = Engine(config)
    checker = KraftInvariantChecker(config)
    for offset, event in enumerate(events):
        before = engine.state_json()
        seen = len(engine.errors)
        records = engine.process(parse_event(event, offset))
        checker.check_step(event, before, records, engine.state_json(), engine.errors[seen:])
    assert replay(events, config) == replay(events, config), (
        "[determinism] two fresh engines disagree"
    )


class KraftControllerMachine(ControllerMachine):
    """`ControllerMachine`'s rules in kraft mode, checked by `KraftInvariantChecker`."""

    config = KRAFT
    min_isr_configs = False

    def __init__(self) -> None:
        super(ControllerMachine, self).__init__()
        self.builder = LogBuilder(self.config, min_isr_configs=self.min_isr_configs)
        self.checker = KraftInvariantChecker(self.config)  # type: ignore[assignment]
        self.builder.observers.append(self._check)

    def _check(self, event: dict[str, Any], before: Any, records: list[Any], after: Any) -> None:
        try:
            self.checker.check_step(event, before, records, after, self.builder.dead_letters[-1])  # type: ignore[call-arg]
        except AssertionError as exc:
            log = "\n".join(json.dumps(e) for e in self.builder.events)
            raise AssertionError(f"{exc}\nevent log (JSONL, last line failed):\n{log}") from None

    def teardown(self) -> None:
        """[determinism] Two fresh engines give byte-identical records and state, equal to
        what the live engine produced."""
        events = self.builder.events
        if not events:
            return
        first, second = replay(events, self.config), replay(events, self.config)
        assert first == second, "[determinism] two fresh engines disagree on the same log"
        live = "\n".join(json.dumps(r) for recs in self.builder.outputs for r in recs)
        assert first == (live, json.dumps(self.builder.state())), (
            "[determinism] a fresh engine disagrees with the engine that ran the log step by step"
        )


class KraftMv35Machine(KraftControllerMachine):
    """metadata.version 3.5-IV2: before 3.6-IV0 an ISR shrink bumps the leader epoch."""

    config = KRAFT_3_5


class KraftElrMachine(KraftControllerMachine):
    """ELR on (metadata.version 4.0-IV1, eligible.leader.replicas.version 1), with topics
    whose min.insync.replicas is 2 or 3."""

    config = KRAFT_ELR
    min_isr_configs = True


_SETTINGS = dict(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
KraftControllerMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, **_SETTINGS
)
KraftMv35Machine.TestCase.settings = settings(max_examples=50, stateful_step_count=40, **_SETTINGS)
KraftElrMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, **_SETTINGS)
TestKraftControllerMachine = KraftControllerMachine.TestCase
TestKraftMv35Machine = KraftMv35Machine.TestCase
TestKraftElrMachine = KraftElrMachine.TestCase


@pytest.mark.parametrize(
    "config,min_isr_configs", [(KRAFT, False), (KRAFT_ELR, True)], ids=["3.9-IV0", "elr"]
)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=7456)  # an election from the ELR leaves the rest of it at min ISR (kraft_invariants)
def test_seeded_kraft_logs_keep_invariants(
    config: ControllerConfig, min_isr_configs: bool, seed: int
) -> None:
    """The seeded generator (`generate_log`) in kraft mode: every KRaft invariant holds."""
    check_kraft_log(
        generate_log(seed, n_events=60, config=config, min_isr_configs=min_isr_configs), config
    )


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_seeded_kraft_logs_with_unclean_cluster_default(seed: int) -> None:
    """The same with `unclean.leader.election.enable=true` cluster-wide."""
    config = ControllerConfig(mode="kraft", unclean_leader_election_enable=True)
    check_kraft_log(generate_log(seed, n_events=60, config=config), config)
