"""Spark's hash partitioning, computed without Spark.

A stateful operator's input is shuffled by `HashPartitioning(keys, n)`, whose partition id
is `pmod(Murmur3Hash(keys, seed 42), n)` (catalyst `HashPartitioning.partitionIdExpression`).
For a string key that is `Murmur3_x86_32.hashUnsafeBytes` over its UTF-8 bytes: Spark's
variant of Murmur3, which mixes each trailing byte as a whole (sign-extended) word instead
of folding the tail into one. `tests/streaming/test_spark_hash.py` checks this against
Spark's own `hash()` and `repartition()`.

Scale mode uses it to name its buckets so that each shuffle partition (one task, one core)
gets the same number of them; left to chance, 64 buckets over 2 partitions came out 22/42
and the batch waited for the larger half.
"""

from __future__ import annotations

from functools import cache

SEED = 42
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * 0xCC9E2D51) & _M, 15) * 0x1B873593) & _M


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _M


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M
    return h1 ^ (h1 >> 16)


def murmur3_string(value: str, seed: int = SEED) -> int:
    """Spark's `hash(value)` for a string: a signed 32-bit int."""
    data = value.encode("utf-8")
    aligned = len(data) - len(data) % 4
    h1 = seed & _M
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i : i + 4], "little")))
    for byte in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _M))
    h = _fmix(h1, len(data))
    return h - (1 << 32) if h & 0x80000000 else h


def shuffle_partition(value: str, partitions: int) -> int:
    """The shuffle partition Spark sends a row with this string key to (pmod, as Spark)."""
    return murmur3_string(value) % partitions


@cache
def balanced_labels(count: int, partitions: int, prefix: str = "bucket") -> tuple[str, ...]:
    """`count` group labels, label i landing in shuffle partition i mod `partitions`: the
    first of `prefix-i`, `prefix-i.1`, `prefix-i.2`, ... that hashes there. Deterministic,
    so a restarted job finds its state under the same labels."""
    labels = []
    for i in range(count):
        label, n = f"{prefix}-{i}", 0
        while shuffle_partition(label, partitions) != i % partitions:
            n += 1
            label = f"{prefix}-{i}.{n}"
        labels.append(label)
    return tuple(labels)
