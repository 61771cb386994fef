"""The core's speed tricks, in one place (issue 44, point 4).

Everything here trades a little plainness for time on the hot path of a fan-out (tens of
thousands of partitions stepped per event). Each trick says why it is safe and what it
was measured to gain; `tests/unit/test_speed.py` fails if one breaks the semantics it
stands in for. Value classes elsewhere in the core are plain frozen dataclasses and named
tuples: nobody editing them has to reason about object identity, except through the
helpers below.

`IdentityMemo`: a memo found again by the identity (`id()`) of the objects a value was
worked out from, for objects whose own hash or equality is too slow to key on (a
partition's broker view is a tuple of (broker, fact) pairs). An `id()` is unique only
while its object lives, so each entry holds the objects of its key: while the entry
exists none of them can die, and no other object can take one of their ids. A hit is
therefore always for the very objects the value was made from. At `bound` entries the
memo empties itself, which also releases the objects it held.
"""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """Values by the identity of the objects they were worked out from, holding them."""

    __slots__ = ("_entries", "bound")

    def __init__(self, bound: int) -> None:
        if bound < 1:
            raise ValueError(f"bound {bound}: must be at least 1")
        self.bound = bound
        # ids of the objects -> (the objects, the value): the objects keep the ids theirs
        self._entries: dict[tuple[int, ...], tuple[tuple[object, ...], V]] = {}

    def get(self, *objects: object) -> V | None:
        """The value put for these very objects (in this order), or None."""
        entry = self._entries.get(tuple(map(id, objects)))
        return None if entry is None else entry[1]

    def put(self, objects: tuple[object, ...], value: V) -> V:
        """Keep `value` for `objects` (holding them) and return it; a full memo empties
        first."""
        if len(self._entries) >= self.bound:
            self._entries.clear()
        self._entries[tuple(map(id, objects))] = (objects, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
