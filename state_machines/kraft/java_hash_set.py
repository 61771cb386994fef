"""The iteration order of a `java.util.HashSet<Integer>`, so that lists Kafka builds by
streaming a HashSet come out in Kafka's order.

Why: `PartitionChangeBuilder.maybePopulateTargetElr` (apache/kafka 3.9.0 to 4.1) builds the
ELR and last known ELR by streaming a `HashSet<Integer>`, and the records carry those lists
as they come out. Same input, same output bytes (docs/style.md, rule 8) means the same order
as Kafka's, which is not sorted order once broker ids reach the table's capacity (16 for
small sets): ids 3 and 17 iterate as [17, 3] in a 16-bucket table.

How a HashSet orders its elements (java.util.HashMap, JDK 8 to 21, unchanged):

* an Integer's hash is its value, spread as `h ^ (h >>> 16)`; its bucket is that hash
  masked by `capacity - 1`; iteration walks buckets in index order and each bucket in
  insertion order (a resize splits a bucket and keeps the relative order);
* `new HashSet<>(c)` starts with capacity `tableSizeFor(max((int) (c.size() / .75f) + 1, 16))`;
  a table doubles when its size passes three quarters of its capacity, or when one bucket
  reaches nine entries while the capacity is under 64 (`treeifyBin`).

Not modelled: a bucket that turns into a tree (nine ids in one bucket of a table of 64 or
more), whose iteration order differs. No replica set comes near it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _spread(value: int) -> int:
    h = value & 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return n


def hash_set_iteration_order(initial: Sequence[int], *added: Iterable[int]) -> tuple[int, ...]:
    """The order in which `new HashSet<>(initial)` iterates after `add`ing each of `added`
    in turn (duplicates ignored, as `add` ignores them)."""
    capacity = _table_size_for(max(int(len(initial) / 0.75) + 1, _DEFAULT_CAPACITY))
    return _iteration_order([v for batch in (initial, *added) for v in batch], _identity, capacity)


def _identity(value: int) -> int:
    return value  # Integer.hashCode


def java_string_hash(text: str) -> int:
    """`String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over the UTF-16 code units, in
    32 bits (unsigned here; `_spread` masks it as Java's int)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def string_hash_map_order(keys: Iterable[str]) -> tuple[str, ...]:
    """The order in which a `new HashMap<String, V>()` iterates its keys after `put`ting
    `keys` in turn: how Kafka's controller walks a request's config names
    (`ConfigurationControlManager.incrementalAlterConfigResource` over the HashMap the request
    was read into), and so the order of the ConfigRecords it appends."""
    return _iteration_order(list(keys), java_string_hash, _DEFAULT_CAPACITY)


def _iteration_order(
    values: Sequence[Any], hash_of: Callable[[Any], int], capacity: int
) -> tuple[Any, ...]:
    buckets: dict[int, list[Any]] = {}
    members: set[Any] = set()

    def rebucket(new_capacity: int) -> None:
        ordered = [v for index in sorted(buckets) for v in buckets[index]]
        buckets.clear()
        for v in ordered:
            buckets.setdefault(_spread(hash_of(v)) & (new_capacity - 1), []).append(v)

    for value in values:
        if value in members:
            continue
        members.add(value)
        bucket = buckets.setdefault(_spread(hash_of(value)) & (capacity - 1), [])
        bucket.append(value)
        if len(bucket) > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            rebucket(capacity)
        if len(members) > capacity * 3 // 4:
            capacity *= 2
            rebucket(capacity)
    return tuple(v for index in sorted(buckets) for v in buckets[index])
