"""The order in which Kafka's Scala 2.13 controller iterates its immutable maps and sets of Ints.

Why this matters
----------------
`ZkReplicaStateMachine.handleStateChanges` (ReplicaStateMachine.scala) groups the replicas
of one call by broker, `replicas.groupBy(_.replica)`, and runs `doHandleStateChanges` one
broker at a time. For OfflineReplica each broker's turn writes the ISR of its partitions
(`removeReplicasFromIsr`), and the ISR is never emptied: its last member stays. So when a
call takes several ISR members of one partition offline (topic deletion, a reassignment's
removed replicas, a controller's startup), the member visited last is the ISR that
remains, and every later election reads it. Kafka 3.9's default build is Scala 2.13
(`gradle.properties`: `scalaVersion=2.13.14`).

What Scala 2.13 does (scala/scala v2.13.14, src/library/scala/collection/)
---------------------------------------------------------------------------
* `IterableOps.groupBy` (Iterable.scala) fills a `mutable.Map` of builders, then copies it
  into `immutable.HashMap.empty` with `updated`: the result is always a `HashMap`, even for
  one key. `immutable.Set.from`/`toSet`, `Set(...)` and `Map.from`/`toMap` keep `Set1`..`Set4`
  and `Map1`..`Map4` (insertion order) up to four distinct elements and build a `HashSet` /
  `HashMap` from the fifth on (`Set4.incl`: `HashSet.empty + elem1 + ... + elem4 + elem`).
* `HashMap` and `HashSet` are CHAMP tries (immutable/HashMap.scala, ChampCommon.scala). A key
  is placed by `Hashing.improve(key.##)` (Hashing.scala; `##` of an Int is the Int), five
  bits per level from the lowest (`Node.maskFrom(hash, shift) = (hash >>> shift) & 31`). A
  node keeps the keys whose bits up to its level no other key shares as payload, in
  ascending mask order, and one sub-node per shared mask, in ascending mask order.
  `ChampBaseIterator` yields a node's payload first, then each sub-node's keys, depth first.
  `improve` is a bijection of the 32-bit ints, so two distinct Ints never collide fully and
  the structure (so the order) depends only on the set of keys, not on insertion order.

The relative order of two keys therefore depends on the other keys of the collection: a
key whose slot another key shares moves down a level and after every payload key of the
level above. Broker ids 0 to 24 all have distinct slots at the root (`improve(id) & 31`),
so among them the order is by slot; from 25 on slots are shared (24 and 25 both take 3).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "group_by_order",
    "hash_order",
    "hint_for",
    "improve",
    "restricted",
    "small_or_hash_order",
    "visit_order",
    "CallHints",
]

_MASK32 = 0xFFFFFFFF
_BITS = 5  # Node.BitPartitionSize
_SLOT = (1 << _BITS) - 1  # Node.BitPartitionMask
_SMALL = 4  # Set1..Set4, Map1..Map4


def improve(hcode: int) -> int:
    """`scala.collection.Hashing.improve` on a 32-bit Int, as an unsigned 32-bit value."""
    h = hcode & _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def _champ(keyed: list[tuple[int, int]], shift: int, out: list[int]) -> None:
    """Append the keys of one CHAMP node in `ChampBaseIterator` order: payload, then
    sub-nodes, each in ascending slot order. `keyed` holds (improved hash, key)."""
    slots: dict[int, list[tuple[int, int]]] = {}
    for pair in keyed:
        slots.setdefault((pair[0] >> shift) & _SLOT, []).append(pair)
    ordered = sorted(slots.items())
    out.extend(group[0][1] for _, group in ordered if len(group) == 1)
    for _, group in ordered:
        if len(group) > 1:
            _champ(group, shift + _BITS, out)


_ORDERS: dict[frozenset[int], tuple[int, ...]] = {}


def hash_order(keys: Iterable[int]) -> tuple[int, ...]:
    """The iteration order of an `immutable.HashMap` (or `HashSet`) of these Int keys."""
    key_set = frozenset(keys)
    found = _ORDERS.get(key_set)
    if found is None:
        out: list[int] = []
        _champ([(improve(k), k) for k in key_set], 0, out)
        found = tuple(out)
        if len(_ORDERS) > 65536:  # bounded for any cluster, as the other caches of the core
            _ORDERS.clear()
        _ORDERS[key_set] = found
    return found


def small_or_hash_order(keys: Iterable[int]) -> tuple[int, ...]:
    """The iteration order of `toSet`, `Set(...)` or `toMap` over these keys (in the order
    given): insertion order up to four distinct keys (`Set1`..`Set4`), else `hash_order`."""
    distinct = tuple(dict.fromkeys(keys))
    return distinct if len(distinct) <= _SMALL else hash_order(distinct)


def group_by_order(keys: Iterable[int]) -> tuple[int, ...]:
    """The keys of `xs.groupBy(f)` in its iteration order: always a `HashMap`."""
    return hash_order(keys)


_VISITS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def visit_order(brokers: Sequence[int], call_order: Sequence[int] = ()) -> tuple[int, ...]:
    """The distinct `brokers` in the order `handleStateChanges` visits them.

    `call_order`: the brokers of every replica of Kafka's call (all its partitions) in
    `group_by_order`, or any list in which those brokers keep that relative order; empty
    when the call holds only these brokers (then their own `group_by_order`). A broker
    missing from `call_order` comes after the others, in its own `group_by_order`."""
    if len(brokers) <= 1:
        return tuple(brokers)
    key = (tuple(brokers), tuple(call_order))
    found = _VISITS.get(key)
    if found is None:
        distinct = set(brokers)
        if call_order:
            found = tuple(b for b in dict.fromkeys(call_order) if b in distinct)
            rest = distinct.difference(found)
            if rest:
                found += group_by_order(rest)
        else:
            found = group_by_order(distinct)
        if len(_VISITS) > 65536:
            _VISITS.clear()
        _VISITS[key] = found
    return found


def restricted(order: Sequence[int], keep: Iterable[int]) -> tuple[int, ...]:
    """`order` with only the elements of `keep`, in `order`'s order."""
    kept = set(keep)
    return tuple(b for b in order if b in kept)


def hint_for(call_orders: Iterable[Sequence[int]], brokers: Iterable[int]) -> tuple[int, ...]:
    """What a partition hosting `brokers` needs to know of the calls whose brokers (each in
    `group_by_order`) are `call_orders`: for each call, its order restricted to these
    brokers, one after the other; or () when each is already their own `group_by_order`
    (then the partition needs nothing). Each of the partition's calls must take its brokers
    from one of `call_orders` (a call may be any of them when they are disjoint)."""
    mine = set(brokers)
    parts = [restricted(order, mine) for order in call_orders]
    if all(part == group_by_order(part) for part in parts):
        return ()
    return tuple(b for part in parts for b in part)


class CallHints:
    """`hint_for` over one fan-out's calls, for each partition's brokers in turn.

    When no two brokers of a call share a slot at the root of its HashMap (every cluster
    whose ids are 0 to 24, and most others), a broker's place in the order is its own slot,
    so any partition's own `group_by_order` is the call's: nothing is computed per partition.
    Otherwise each distinct set of brokers is worked out once."""

    __slots__ = ("_positions", "needed", "_found")

    def __init__(self, *call_keys: Iterable[int]) -> None:
        orders = [group_by_order(keys) for keys in call_keys]
        self._positions = [{b: i for i, b in enumerate(order)} for order in orders]
        # whether any partition may need a hint (a fan-out over a million partitions
        # skips the call when not)
        self.needed = any(len({improve(b) & _SLOT for b in o}) < len(o) for o in orders)
        self._found: dict[tuple[int, ...], tuple[int, ...]] = {}

    def __call__(self, brokers: Sequence[int]) -> tuple[int, ...]:
        if not self.needed:
            return ()
        key = tuple(brokers)
        found = self._found.get(key)
        if found is None:
            parts = []
            for pos in self._positions:
                mine = sorted({b for b in key if b in pos}, key=pos.__getitem__)
                parts.append(tuple(mine))
            same = all(part == group_by_order(part) for part in parts)
            found = self._found[key] = () if same else tuple(b for p in parts for b in p)
        return found
