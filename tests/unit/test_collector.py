"""The job's collector policy (`streaming/collector.py`)."""

from __future__ import annotations

import gc

import pytest

from streaming.collector import paused


def test_paused_stops_cyclic_collection_inside_and_restores_the_collector_as_it_was() -> None:
    assert gc.isenabled()
    try:
        with paused():
            assert not gc.isenabled()
            with paused():
                assert not gc.isenabled()
            assert not gc.isenabled(), "an inner pause leaves the outer one in force"
        assert gc.isenabled()
        with pytest.raises(RuntimeError), paused():
            raise RuntimeError("a batch fails")
        assert gc.isenabled(), "a failing batch leaves the collector on"
        gc.disable()
        with paused():
            pass
        assert not gc.isenabled(), "a collector that was off stays off"
    finally:
        gc.enable()


def test_the_engine_runs_an_event_with_the_collector_paused_and_its_state_settled_after() -> None:
    from state_machines.engine import Engine
    from state_machines.events import parse_event
    from streaming.collector import run_settled

    seen: list[bool] = []

    class Watched(Engine):
        def process(self, envelope):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return super().process(envelope)

    events = [parse_event({"v": 1, "type": "BrokerStartup", "broker_id": b}, b) for b in (1, 2)]
    frozen = gc.get_freeze_count()
    try:
        records = list(run_settled(Watched(), events))
        assert seen == [False, False], "the core runs each event with the cyclic collector off"
        assert gc.isenabled(), "and the collector is on again after it"
        assert gc.get_freeze_count() > frozen, "what the events left is settled (frozen)"
        assert records == list(Engine().run(events))
    finally:
        gc.unfreeze()


def test_a_process_settles_its_imports_at_its_first_stage_call_and_only_then() -> None:
    """A fresh interpreter, as a worker the daemon forks: the first `collect_less` freezes
    what is alive, so the full collection the daemon runs after every task skips it; the
    next calls freeze nothing more (a batch's objects are never frozen)."""
    import subprocess
    import sys

    code = """
import gc
from streaming.collector import GC_THRESHOLDS, collect_less
assert gc.get_freeze_count() == 0
collect_less()
first = gc.get_freeze_count()
assert first > 10_000, first  # pyspark-free, yet the imports of the core alone
garbage = [[] for _ in range(1000)]
collect_less()
assert gc.get_freeze_count() == first, (gc.get_freeze_count(), first)
assert gc.get_threshold() == GC_THRESHOLDS
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert out.stdout.strip() == "ok", out.stderr
