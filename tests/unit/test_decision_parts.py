"""File output's decision parts (streaming/decision_parts.py): executors write sorted
segments, the driver merges them with its own runs into the contract's order, and reads
only the parts the batch's collect named."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow
import pytest

from streaming import decision_parts as parts
from streaming import unbuffered_file
from streaming.packing import pack_outputs, unpack_outputs


def _decision(cause: int, key: str, seq: int, n: int = 1) -> tuple[str, int, str, int, str]:
    docs = [f'{{"cause_offset":{cause},"key":"{key}","seq":{seq + i}}}' for i in range(n)]
    return ("decision", cause, key, seq, "\n".join(docs))


def test_segments_merge_with_the_drivers_runs_in_contract_order(tmp_path: Path) -> None:
    directory = str(tmp_path / "p")
    task_a = [
        pack_outputs([_decision(2, "t-1", 0), _decision(1, "t-9", 0, 2)]),
        pack_outputs([_decision(1, "t-0", 0), ("summary", 1, "", 0, "S\tt\t0")]),
    ]
    task_b = [pack_outputs([_decision(1, "t-5", 0), _decision(3, "a-0", 4)])]
    small = parts.write_part(task_a, directory, "00000-0") + parts.write_part(
        task_b, directory, "00001-0"
    )
    rest, written, safety = parts.split_parts(unpack_outputs(small))
    assert [r[0] for r in rest] == ["summary"] and safety == []
    assert [len(p.segments) for p in written] == [2, 1]
    assert sum(p.records for p in written) == 6
    mine = [(1, "t-3", 0, '{"driver":1}'), (2, "broker-1", 0, '{"driver":2}')]
    out = tmp_path / "decisions.jsonl"
    parts.write_decisions(str(out), mine, written)
    keys = [
        line.split('"key":"')[1].split('"')[0] if '"key"' in line else line
        for line in out.read_text().splitlines()
    ]
    assert keys == ["t-0", '{"driver":1}', "t-5", "t-9", "t-9", '{"driver":2}', "t-1", "a-0"]


def test_a_part_the_collect_did_not_name_is_not_read(tmp_path: Path) -> None:
    """A task attempt that failed after writing leaves its part behind; the batch's file
    holds only the runs of the attempts whose rows reached the driver."""
    directory = str(tmp_path / "p")
    rows = [pack_outputs([_decision(1, "t-0", 0), _decision(1, "t-1", 0)])]
    parts.write_part(rows, directory, "00000-0")  # the failed attempt
    small = parts.write_part(rows, directory, "00000-1")
    _, written, _ = parts.split_parts(unpack_outputs(small))
    assert len(list((tmp_path / "p").iterdir())) == 2
    out = tmp_path / "decisions.jsonl"
    parts.write_decisions(str(out), [], written)
    assert out.read_text().count("\n") == 2
    parts.remove_parts(str(tmp_path), 7)  # another batch's: nothing to remove, no error


def test_safety_divergences_come_back_to_the_driver_to_be_logged(tmp_path: Path) -> None:
    doc = '{"type":"Divergence","severity":"safety","cause_offset":4,"reason":"x"}'
    small = parts.write_part(
        [pack_outputs([("decision", 4, "t-0", 0, f'{{"a":1}}\n{doc}')])], str(tmp_path), "0"
    )
    _, written, safety = parts.split_parts(unpack_outputs(small))
    assert safety == [("t-0", doc)] and written[0].records == 2


def test_a_part_counts_its_records_and_unclean_elections_and_keeps_documents_outside_ascii(
    tmp_path: Path,
) -> None:
    """The counts the driver reports come from each segment's text at once; a run whose
    documents hold characters outside ASCII is measured in bytes, and reads back whole."""
    unclean = '{"type":"LeaderAndIsr","election":"unclean"}'
    runs = [
        ("decision", 1, "t-0", 0, f'{{"cause_id":"caf\u00e9 \u2603"}}\n{unclean}'),
        ("decision", 1, "t-1", 0, unclean),
        _decision(2, "t-0", 0, 3),
    ]
    small = parts.write_part(
        [pack_outputs(runs[:2]), pack_outputs(runs[2:])], str(tmp_path / "p"), "0"
    )
    _, written, _ = parts.split_parts(unpack_outputs(small))
    assert [(p.records, p.unclean_elections, len(p.segments)) for p in written] == [(6, 2, 2)]
    out = tmp_path / "decisions.jsonl"
    parts.write_decisions(str(out), [], written)
    assert out.read_text(encoding="utf-8").splitlines() == [
        line for r in runs for line in r[4].split("\n")
    ]


def test_the_partition_stage_writes_the_parts_for_file_output_in_scale_mode_only() -> None:
    assert parts.stage_parts_base("file:/data/out", 64) == "/data/out"
    assert (
        parts.stage_parts_base("file:/data/out", 0) is None
    )  # keyed per partition: the sink's step
    assert parts.stage_parts_base("kafka:decisions", 64) is None


def test_the_partition_stages_groups_append_segments_to_their_task_attempts_part(
    tmp_path: Path,
) -> None:
    """Scale mode: each group's runs are one sorted segment, appended to its task
    attempt's part; another task attempt, or the same label in another batch's directory,
    starts a part of its own. The driver merges the segments in contract order."""
    first, second = str(tmp_path / "_parts" / "1"), str(tmp_path / "_parts" / "2")
    small = (
        parts.write_group([_decision(1, "t-5", 0), ("summary", 1, "", 0, "S")], first, "00000-0-7")
        + parts.write_group([_decision(1, "t-2", 0, 2), _decision(1, "t-0", 0)], first, "00000-0-7")
        + parts.write_group([_decision(1, "t-1", 0)], first, "00001-0-8")
        + parts.write_group([_decision(1, "t-9", 0)], second, "00000-0-7")
    )
    rest, written, _ = parts.split_parts(small)
    assert [r[0] for r in rest] == ["summary"]
    assert [(Path(p.path).parent.name, len(p.segments), p.records) for p in written] == [
        ("1", 1, 1),
        ("1", 1, 3),
        ("1", 1, 1),
        ("2", 1, 1),
    ]
    assert (
        len({p.path for p in written}) == 3
        and written[0].segments[0][2] == written[1].segments[0][0]
    )
    out = tmp_path / "decisions.jsonl"
    parts.write_decisions(str(out), [], written[:3])
    keys = [line.split('"key":"')[1].split('"')[0] for line in out.read_text().splitlines()]
    assert keys == ["t-0", "t-1", "t-2", "t-2", "t-5"]


def test_packed_rows_are_bounded_in_size_so_spark_cuts_small_arrow_batches() -> None:
    """Spark's Python stages cut Arrow batches by rows (10,000), so a packed row must stay
    small: at most PACK_CHARS characters, unless one entry alone is longer."""
    from streaming.packing import PACK_CHARS

    rows = [_decision(i, f"t-{i}", 0, 20) for i in range(2000)] + [
        ("dlq", 5, "", 0, "x" * (3 * PACK_CHARS))
    ]
    packed = pack_outputs(rows)
    assert len(packed) > 1
    assert all(len(text) <= PACK_CHARS for text in packed[:-1])
    assert len(packed[-1]) > PACK_CHARS and packed[-1].count("\x1e") == 0
    assert unpack_outputs(packed) == rows


def test_a_part_the_driver_cannot_see_names_the_shared_directory_it_needs(tmp_path: Path) -> None:
    """On a cluster whose output directory is local to each machine, the driver does not
    find the executors' parts: one clear error, and no half-written decisions file."""
    small = parts.write_part([pack_outputs([_decision(1, "t-0", 0)])], str(tmp_path / "p"), "0")
    _, written, _ = parts.split_parts(unpack_outputs(small))
    for p in (tmp_path / "p").iterdir():
        p.unlink()
    out = tmp_path / "decisions.jsonl"
    with pytest.raises(
        parts.PartNotShared,
        match="job.output must be a directory the driver and every executor share",
    ):
        parts.write_decisions(str(out), [], written)
    assert list(tmp_path.glob("decisions*")) == []


@pytest.mark.parametrize("seed", range(12))
def test_the_decisions_file_is_a_stable_sort_of_every_source_in_contract_order(
    tmp_path: Path, seed: int, monkeypatch
) -> None:
    """Runs spread over the driver and several parts' segments, with places repeated
    within and across sources, keys and documents outside ASCII, and long stretches from
    one source: the file is the documents of a stable sort of the driver's runs, then
    each part's segments as named, by (cause_offset, key, seq), as a merge of them was.
    Copied in windows of a few bytes to the whole (a stretch longer than a window has one
    of its own), and written with O_DIRECT where the filesystem takes it, or through the
    page cache dropped behind every byte, every few hundred or every 32 MiB: the same
    bytes."""
    import random

    rnd = random.Random(seed)
    direct = seed % 2 == 0
    monkeypatch.setattr(unbuffered_file, "_DIRECT", direct)
    monkeypatch.setattr(parts, "_WINDOW", rnd.choice([1, 300, 5000, parts._WINDOW]))
    every = (1, 500, unbuffered_file._DROP_BEHIND)[seed % 3]
    monkeypatch.setattr(unbuffered_file, "_DROP_BEHIND", every)
    drops: list[tuple[int, int]] = []
    drop = unbuffered_file._drop_behind
    monkeypatch.setattr(
        unbuffered_file,
        "_drop_behind",
        lambda fd, offset, length: (drops.append((offset, length)), drop(fd, offset, length)),
    )

    from streaming.assemble import run_order

    keys = ["t-0", "t-1", "t-10", "t-2", "caf\u00e9-0", "z-9", "\u2603-1", "broker-3"]

    def run() -> tuple[int, str, int, str]:
        cause, key, seq = rnd.randrange(6), rnd.choice(keys), rnd.randrange(3)
        docs = [
            f'{{"n":{rnd.randrange(10**6)},"k":"{key}","pad":"{"x" * rnd.randrange(300)}"}}'
            for _ in range(rnd.randrange(1, 4))
        ]
        return cause, key, seq, "\n".join(docs)

    mine = sorted((run() for _ in range(rnd.randrange(0, 5))), key=run_order)
    sources: list[list[tuple[int, str, int, str]]] = [mine]
    small: list = []
    for task in range(rnd.randrange(1, 4)):
        batches = []
        for _ in range(rnd.randrange(1, 4)):
            segment = [run() for _ in range(rnd.randrange(0, 40))]
            sources.append(sorted(segment, key=run_order))
            batches.append(pack_outputs([("decision", c, k, s, p) for c, k, s, p in segment]))
        small += parts.write_part(batches, str(tmp_path / "p"), f"{task:05d}-0")
    _, written, _ = parts.split_parts(unpack_outputs(small))
    out = tmp_path / "decisions.jsonl"
    parts.write_decisions(str(out), mine, written)
    expected = sorted((r for source in sources for r in source), key=run_order)
    assert out.read_bytes() == "".join(f"{r[3]}\n" for r in expected).encode()
    if direct and _takes_direct_io(tmp_path):
        # nothing went through the page cache but the last part block
        assert sum(n for _, n in drops) < unbuffered_file._BLOCK and all(
            o + n == out.stat().st_size for o, n in drops
        )
    else:
        # each drop starts where the last ended, and together they cover all but the tail
        assert [o for o, _ in drops] == [sum(n for _, n in drops[:i]) for i in range(len(drops))]
        assert 0 <= out.stat().st_size - sum(n for _, n in drops) < max(every, 1 << 20) and (
            every > 500 or drops
        )
    assert sum(p.records for p in written) == sum(
        r[3].count("\n") + 1 for source in sources[1:] for r in source
    )


def test_a_part_shorter_than_its_index_is_an_error_and_leaves_no_file(tmp_path: Path) -> None:
    """A segment's documents that end before its index says they do: one error naming
    it, and no decisions file, rather than a file with runs missing."""
    runs = [(1, "t-0", 0, '{"a":1}'), (1, "t-1", 0, '{"b":2}')]
    index, documents = parts._segment(runs)
    path = tmp_path / "part.runs"
    with open(path, "wb") as fh:
        fh.write(index)
        middle = fh.tell()
        fh.write(pyarrow.Codec("zstd").compress(documents[:-3].encode(), asbytes=True))
        end = fh.tell()
    out = tmp_path / "decisions.jsonl"
    with pytest.raises(parts.PartDamaged, match="3 bytes short"):
        parts.write_decisions(str(out), [], [parts.Part(str(path), 2, 0, ((0, middle, end),))])
    assert list(tmp_path.glob("decisions*")) == []


def _takes_direct_io(directory: Path) -> bool:
    """Whether files in `directory` can be opened with O_DIRECT (tmpfs refuses it)."""
    if not hasattr(os, "O_DIRECT"):
        return False
    try:
        os.close(os.open(directory / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT))
        return True
    except OSError:
        return False
