"""Scala 2.13's iteration order of immutable maps and sets of Ints (state_machines/scala_hash.py).

Two checks: a table of the order for broker ids 0-40 and the size thresholds, written out
from Scala 2.13's source (`Hashing.improve`, the CHAMP trie of immutable/HashMap.scala and
ChampCommon.scala, `IterableOps.groupBy`, `Set1`..`Set4`), and the same orders asked of
Scala itself: the scala-library jar that PySpark ships (2.13.x; the collections' code is
the same as in 2.13.14, Kafka 3.9's build) run by a small Java program.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from state_machines.scala_hash import (
    CallHints,
    group_by_order,
    hash_order,
    hint_for,
    improve,
    small_or_hash_order,
    visit_order,
)

# HashMap(0 -> _, ..., 40 -> _).keys, in Scala 2.13's order
ORDER_0_TO_40 = (
    0, 5, 10, 14, 1, 6, 9, 13, 2, 12, 18, 11, 8, 4, 15, 24, 37, 25, 20, 29, 21,
    33, 28, 38, 17, 32, 34, 22, 27, 7, 39, 3, 35, 16, 31, 40, 26, 23, 36, 30, 19,
)  # fmt: skip


def test_improve_places_small_ids_in_these_root_slots() -> None:
    assert [improve(i) & 31 for i in range(8)] == [0, 7, 14, 20, 29, 1, 8, 18]
    # 0..24 have distinct root slots; 25 shares 24's
    assert len({improve(i) & 31 for i in range(25)}) == 25
    assert improve(25) & 31 == improve(24) & 31 == 3


def test_hash_order_of_ids_0_to_40() -> None:
    assert hash_order(range(41)) == ORDER_0_TO_40
    assert hash_order(reversed(range(41))) == ORDER_0_TO_40  # insertion order plays no part


def test_a_shared_slot_moves_keys_after_the_level_above() -> None:
    assert hash_order([24, 2]) == (24, 2)  # slots 3 and 14
    assert hash_order([24, 2, 25]) == (2, 24, 25)  # 24 and 25 share slot 3: one level down
    assert hash_order([32, 34]) == (32, 34)  # share slots 15 and 15: two levels down


def test_group_by_is_a_hash_map_at_every_size_and_to_set_only_from_five() -> None:
    assert group_by_order([0, 2, 1]) == (0, 1, 2)
    assert small_or_hash_order([3, 2, 1, 0]) == (3, 2, 1, 0)  # Set4: insertion order
    assert small_or_hash_order([3, 2, 3, 1, 0]) == (3, 2, 1, 0)  # four distinct
    assert small_or_hash_order([4, 3, 2, 1, 0]) == (0, 1, 2, 3, 4)  # HashSet from five


def test_visit_order_follows_the_call() -> None:
    assert visit_order([0, 2, 1]) == (0, 1, 2)
    assert visit_order([24, 2]) == (24, 2)
    assert visit_order([24, 2], hash_order([2, 24, 25])) == (2, 24)
    assert visit_order([7]) == (7,)


def test_hints_only_where_the_call_changes_a_partitions_own_order() -> None:
    assert hint_for([hash_order([2, 24, 25])], [24, 2]) == (2, 24)
    assert hint_for([hash_order([2, 24, 25])], [25]) == ()
    hints = CallHints([2, 24, 25])
    assert hints([24, 2]) == (2, 24) and hints([2]) == ()
    assert CallHints(range(25))([24, 0, 13]) == ()  # no shared root slot: never a hint
    # two disjoint calls (a controller's startup: online, then offline replicas)
    both = CallHints([2, 24, 25], [0, 1])
    assert both([24, 2, 1, 0]) == (2, 24, 0, 1)
    assert visit_order([1, 0], both([24, 2, 1, 0])) == (0, 1)


JAVA = """
import java.util.ArrayList;
import scala.jdk.javaapi.CollectionConverters;

public class ScalaOrder {
  static String show(scala.collection.Iterator<?> it) {
    StringBuilder sb = new StringBuilder();
    while (it.hasNext()) { sb.append(it.next()); if (it.hasNext()) sb.append(","); }
    return sb.toString();
  }
  public static void main(String[] args) {
    for (String arg : args) {
      ArrayList<Object> xs = new ArrayList<>();
      for (String s : arg.split(",")) xs.add(Integer.valueOf(s));
      scala.collection.immutable.List<Object> list = CollectionConverters.asScala(xs).toList();
      scala.Function1<Object, Object> id = x -> x;
      String grouped = show(list.groupBy(id).keysIterator());
      System.out.println(grouped + " " + show(list.toSet().iterator()));
    }
  }
}
"""


def _scala_library() -> Path | None:
    pyspark = pytest.importorskip("pyspark")
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("scala-library-2.13.*.jar"))
    return jars[-1] if jars else None


def test_the_orders_are_scalas_own(tmp_path: Path) -> None:
    java, jar = shutil.which("java"), _scala_library()
    if java is None or jar is None:
        pytest.skip("needs java and PySpark's scala-library 2.13 jar")
    rng = random.Random(43)
    cases = [list(range(41)), list(range(40, -1, -1)), [0, 2, 1], [3, 2, 1, 0], [25, 24, 2]]
    cases += [rng.sample(range(1200), rng.randint(1, 40)) for _ in range(60)]
    cases += [[1000 + rng.randrange(64) for _ in range(rng.randint(1, 12))] for _ in range(30)]
    source = tmp_path / "ScalaOrder.java"
    source.write_text(JAVA)
    args = [",".join(map(str, c)) for c in cases]
    proc = subprocess.run(
        [java, "-cp", str(jar), str(source), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == len(cases)
    for case, line in zip(cases, lines, strict=True):
        grouped, as_set = (tuple(int(x) for x in part.split(",")) for part in line.split(" "))
        assert grouped == group_by_order(case), case
        assert as_set == small_or_hash_order(case), case
