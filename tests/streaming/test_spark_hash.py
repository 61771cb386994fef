"""`streaming.spark_hash` against Spark itself: scale mode's bucket labels are only balanced
if the Python Murmur3 is Spark's, byte for byte, and shuffles as Spark's partitioner does."""

from __future__ import annotations

from collections import Counter

from pyspark.sql import functions as F

from streaming.spark_hash import balanced_labels, murmur3_string, shuffle_partition
from streaming.storage import partition_storage

# every tail length (0-3 bytes), multi-byte UTF-8 (bytes above 127 are sign-extended), keys
# as the job makes them
WORDS = [
    "",
    "a",
    "ab",
    "abc",
    "abcd",
    "abcde",
    "é",
    "漢字",
    "x\u00ffy",
    "controller",
    "__direct__",
    "orders-0",
    "topic-00001-57",
    *(f"bucket-{i}" for i in range(40)),
]


def test_murmur3_is_sparks_hash(spark):
    rows = (
        spark.createDataFrame([(w,) for w in WORDS], "w string")
        .select("w", F.hash("w").alias("h"))
        .collect()
    )
    assert {r.w: r.h for r in rows} == {w: murmur3_string(w) for w in WORDS}


def test_labels_land_in_the_shuffle_partition_spark_sends_them_to(spark):
    for partitions in (2, 3, 8):
        labels = balanced_labels(24, partitions)
        df = spark.createDataFrame([(label,) for label in labels], "grp string").repartition(
            partitions, "grp"
        )
        landed = {
            r.grp: r.pid for r in df.select("grp", F.spark_partition_id().alias("pid")).collect()
        }
        assert landed == {label: shuffle_partition(label, partitions) for label in labels}
        assert [landed[label] for label in labels] == [i % partitions for i in range(24)]


def test_buckets_are_spread_evenly_and_stably():
    labels = balanced_labels(64, 2)
    assert len(set(labels)) == 64
    assert Counter(shuffle_partition(label, 2) for label in labels) == {0: 32, 1: 32}
    assert labels == balanced_labels.__wrapped__(
        64, 2
    )  # deterministic, not an accident of the cache
    keys = [f"topic-{t:05d}-{p}" for t in range(20) for p in range(50)]
    assert {partition_storage(64, 2).group(k) for k in keys} <= set(labels)
    assert (
        partition_storage(0, 2).group("orders-0") == "orders-0"
    )  # per-partition keying is unchanged
