"""`state_machines/speed.py`: each speed trick keeps the semantics it stands in for.

`IdentityMemo` is keyed by `id()`, which is unique only while its object lives: the memo
must hold the objects of every key it keeps (else a dead object's id, reused by a new one,
would find the dead one's value), and must let them go when its bound empties it.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from state_machines.speed import IdentityMemo


class Obj:
    """A weak-referenceable stand-in for a broker view (tuples cannot be referenced
    weakly); equal to every other, so only identity tells two apart."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj)

    def __hash__(self) -> int:
        return 0


def test_a_hit_is_for_the_very_objects_not_equal_ones() -> None:
    memo: IdentityMemo[str] = IdentityMemo(8)
    a, b = Obj(), Obj()
    assert memo.put((a, b), "ab") == "ab"
    assert memo.get(a, b) == "ab"
    assert memo.get(b, a) is None  # order counts
    assert memo.get(Obj(), b) is None  # an equal object is not the same object
    assert memo.get(a) is None  # and neither is a shorter key


def test_the_objects_of_a_key_live_while_their_entry_does() -> None:
    memo: IdentityMemo[int] = IdentityMemo(8)
    a, b = Obj(), Obj()
    alive_a, alive_b = weakref.ref(a), weakref.ref(b)
    key = (id(a), id(b))
    memo.put((a, b), 1)
    del a, b
    gc.collect()
    # without the memo's references both would be gone and their ids free for reuse
    assert alive_a() is not None and alive_b() is not None
    assert (id(alive_a()), id(alive_b())) == key
    assert memo.get(alive_a(), alive_b()) == 1


def test_a_dead_objects_id_reused_by_a_new_object_is_not_a_hit() -> None:
    """The failure the holding prevents: made while nothing else keeps the objects, then
    many new objects of the same size (CPython reuses freed memory at once)."""
    memo: IdentityMemo[str] = IdentityMemo(1_000_000)
    for i in range(2000):
        memo.put((Obj(),), f"value {i}")
    assert len(memo) == 2000  # every object held, so every id distinct
    assert all(memo.get(Obj()) is None for _ in range(2000))


def test_the_bound_empties_the_memo_and_releases_its_objects() -> None:
    memo: IdentityMemo[int] = IdentityMemo(3)
    objs = [Obj() for _ in range(3)]
    refs = [weakref.ref(o) for o in objs]
    for i, o in enumerate(objs):
        memo.put((o,), i)
    assert len(memo) == 3
    del objs, o
    gc.collect()
    assert all(r() is not None for r in refs)  # held by the memo alone
    newest = Obj()
    memo.put((newest,), 9)  # the fourth: the memo empties first
    assert len(memo) == 1 and memo.get(newest) == 9
    gc.collect()
    assert all(r() is None for r in refs)  # let go
    memo.clear()
    assert len(memo) == 0 and memo.get(newest) is None


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="bound 0"):
        IdentityMemo(0)


def test_the_partition_view_memo_is_an_identity_memo_that_holds_its_keys() -> None:
    """`partition._VIEWS`, the core's one id-keyed memo, is this class (a plain dict keyed by
    id would pass every other test here)."""
    from state_machines import partition

    assert isinstance(partition._VIEWS, IdentityMemo)
