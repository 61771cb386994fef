"""The sequencer's work as it crosses Spark: packed per group (`pipeline.pack_groups`)."""

from __future__ import annotations

import pytest

import state_machines.engine as engine_module
from state_machines.events import parse_event
from streaming.pipeline import pack_groups, unpack_work
from streaming.storage import Buckets
from tests.property.generator import generate_log


@pytest.mark.parametrize("seed", range(6))
def test_work_packed_in_the_sequencers_order_is_each_groups_own_packing(seed: int, monkeypatch) -> None:
    """Writing every item in the sequencer's order and sorting the texts into groups gives
    each group the bytes that packing the group's own items gives, and the groups in the
    order they first appear; unpacked, a group's texts are its items."""
    batches: list[list] = []
    original = engine_module.Engine._fold

    def fold(self, work, *args):
        work = list(work)
        batches.append(work)
        return original(self, work, *args)

    monkeypatch.setattr(engine_module.Engine, "_fold", fold)
    engine = engine_module.Engine()
    for i, event in enumerate(generate_log(seed, n_events=60)):
        engine.process(parse_event(event, i))
    storage = Buckets(5, 2)
    checked = 0
    for work in batches:
        by_group: dict[str, list] = {}
        for w in work:
            by_group.setdefault(storage.group(w.target), []).append(w)
        packed = pack_groups(work, storage.group)
        assert list(packed) == list(by_group)
        for grp, items in by_group.items():
            # the codec's caches of shared parts change no byte when the topics interleave
            assert packed[grp] == pack_groups(items, lambda target: grp)[grp]
            assert unpack_work(packed[grp]) == items
            checked += len(items)
    assert checked > 100
