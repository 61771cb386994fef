"""`hash_set_iteration_order` against `java.util.HashSet<Integer>`.

Each expected order was printed by OpenJDK 17 running `new HashSet<>(initial)`, then
`add` for each later batch, then iterating. The orders Kafka's ELR lists come out in
depend on it (`PartitionChangeBuilder.maybePopulateTargetElr`).
"""

from __future__ import annotations

import pytest

from state_machines.kraft.java_hash_set import hash_set_iteration_order

JAVA_17 = [
    # a 16-bucket table: 17 lands in bucket 1, before 3
    (((3, 17, 5),), (17, 3, 5)),
    (((), (3, 17, 5)), (17, 3, 5)),
    (((1001, 1002), (1003, 1017)), (1001, 1017, 1002, 1003)),
    # nine ids in bucket 0 of a 16-bucket table: treeifyBin resizes to 32 instead
    (((), (0, 16, 32, 48, 64, 80, 96, 112, 128, 144)), (0, 32, 64, 96, 128, 16, 48, 80, 112, 144)),
    # twelve ids size the table at 32, and the thirteenth does not resize it
    (
        ((100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200), (1300,)),
        (800, 100, 900, 200, 1000, 300, 1100, 400, 1200, 500, 1300, 600, 700),
    ),
    # the hash is spread (h ^ h >>> 16): 65537 goes to bucket 0, 65536 to bucket 1
    (((65536, 1, 65537),), (65537, 65536, 1)),
]


@pytest.mark.parametrize(("batches", "expected"), JAVA_17)
def test_matches_java_hash_set(
    batches: tuple[tuple[int, ...], ...], expected: tuple[int, ...]
) -> None:
    assert hash_set_iteration_order(batches[0], *batches[1:]) == expected
