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
