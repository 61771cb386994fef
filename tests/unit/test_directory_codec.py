"""A topic's record read back in pieces (`directory_codec.topic_from_text`) is the record
the whole decoding reads, or None, and then the whole decoding reads it."""

from __future__ import annotations

import dataclasses

import pytest

from state_machines import directory
from streaming import codec, directory_codec, directory_store
from streaming.directory_store import load, writes
from tests.unit.test_directory_store import a_directory, apply, entries


def topics(seed: int) -> list[directory.TopicRecord]:
    return [r for r in a_directory(seed).values() if isinstance(r, directory.TopicRecord)]


def whole(text: str):
    return codec.loads(text, codec.DirectoryRecord)


@pytest.mark.parametrize("seed", range(12))
def test_every_topic_record_the_codec_writes_is_read_in_pieces_as_the_same_record(
    seed: int,
) -> None:
    records = topics(seed)
    assert records
    for rec in records:
        text = codec.dumps(rec)
        assert text == directory_codec.topic_text(rec)
        read = directory_codec.topic_from_text(text)
        assert read is not None, text
        assert read == whole(text) == rec


def test_records_without_partitions_or_summaries_and_with_unknown_summary_fields_read_the_same() -> (  # noqa: E501  the test's name is its claim
    None
):
    rec = topics(1)[0]
    some = rec.summaries[0][1]
    unknown = dataclasses.replace(
        some, state=None, leader=None, isr_size=None, replication_factor=None, replica_count=None
    )
    for variant in (
        dataclasses.replace(rec, summaries=()),
        dataclasses.replace(rec, partitions=(), summaries=()),
        dataclasses.replace(rec, summaries=((0, unknown), (1, some))),
        dataclasses.replace(rec, mirror=(), configs=(("cleanup.policy", "compact,[delete]"),)),
    ):
        text = codec.dumps(variant)
        read = directory_codec.topic_from_text(text)
        assert read is not None, text
        assert read == whole(text) == variant


def test_the_previous_record_lends_its_partitions_only_when_their_text_is_the_same() -> None:
    rec = topics(2)[0]
    assert len(rec.partitions) >= 1 and rec.summaries
    text = codec.dumps(rec)
    moved = dataclasses.replace(
        rec, summaries=tuple((p, dataclasses.replace(s, leader=-7)) for p, s in rec.summaries)
    )
    lent = directory_codec.topic_from_text(codec.dumps(moved), (text, rec))
    assert lent == moved and lent.partitions is rec.partitions
    # another assignment: the previous record's partitions are not taken
    p0, brokers = rec.partitions[0]
    reassigned = dataclasses.replace(
        moved, partitions=((p0, brokers + (99,)),) + rec.partitions[1:]
    )
    read = directory_codec.topic_from_text(codec.dumps(reassigned), (text, rec))
    assert read == reassigned and read.partitions is not rec.partitions


@pytest.mark.parametrize(
    "text",
    [
        # another compact version
        '["T",2,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",1,1]]]',
        # a field after the summaries, flat or not
        '["T",1,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",1,1]],[5]]',
        '["T",1,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",1,1]],[[5]]]',
        # a summary that is not a flat array
        '["T",1,[[0,[1,2]]],[],false,false,false,[],[[0,"OnlinePartition",[1],1]]]',
        # not compact JSON
        '["T", 1, [[0, [1, 2]]], [], false, false, false, []]',
        # not a record at all
        '["T",1,[[0,[1,2]]],[],false',
    ],
)
def test_a_text_in_another_layout_is_left_to_the_whole_decoding(text: str) -> None:
    assert directory_codec.topic_from_text(text) is None


def test_a_worker_reading_a_directory_it_did_not_write_gets_the_stored_records(monkeypatch) -> None:
    before = a_directory(3)
    store: dict[str, str] = {}
    apply(store, *writes(before, before))
    monkeypatch.setattr(directory_store, "_TEXTS", {})
    load(entries(store))  # this worker's copy, then another worker changes every summary
    after = {
        k: dataclasses.replace(
            r, summaries=tuple((p, dataclasses.replace(s, leader=None)) for p, s in r.summaries)
        )
        if isinstance(r, directory.TopicRecord)
        else r
        for k, r in before.items()
    }
    monkeypatch.setattr(directory_store, "_TEXTS", {})
    apply(store, *writes(after, after))
    monkeypatch.setattr(
        directory_store, "_TEXTS", {k: (codec.dumps(r), r) for k, r in before.items()}
    )
    loaded, _ = load(entries(store))
    assert loaded == after
    assert all(
        loaded[k].partitions is before[k].partitions
        for k in after
        if isinstance(after[k], directory.TopicRecord)
    )


def wide_topics(seed: int) -> list[directory.TopicRecord]:
    """The log's topic records, each with twelve partitions' summaries drawn from every
    topic's (the generated topics have one or two partitions)."""
    records = topics(seed)
    pool = [s for r in records for _, s in r.summaries]
    assert pool
    return [
        dataclasses.replace(r, summaries=tuple((p, pool[(p + i) % len(pool)]) for p in range(12)))
        for i, r in enumerate(records)
    ]


def _with_summaries(
    rec: directory.TopicRecord, changed: set[int], **fields
) -> directory.TopicRecord:
    """`rec` with the summaries at the places `changed` made anew (the other pairs kept, the
    same objects, as `apply_summaries` keeps them)."""
    pairs = tuple(
        (pair[0], dataclasses.replace(pair[1], leader=(pair[1].leader or 0) + 7))
        if i in changed
        else pair
        for i, pair in enumerate(rec.summaries)
    )
    return dataclasses.replace(rec, summaries=pairs, **fields)


@pytest.mark.parametrize("seed", range(6))
def test_a_record_written_from_its_previous_text_is_the_whole_encoding(seed: int) -> None:
    for rec in topics(seed) + wide_topics(seed):
        n = len(rec.summaries)
        before = (codec.dumps(rec), rec)
        variants = [
            rec,  # nothing changed
            _with_summaries(rec, {0}),  # one pair
            _with_summaries(rec, set(range(0, n, 3))),  # a third
            _with_summaries(rec, set(range(n // 2 + 1))),  # more than half (the whole encoding)
            _with_summaries(rec, {0}, queued=not rec.queued),  # another head
            dataclasses.replace(rec, summaries=rec.summaries[:-1]),  # fewer pairs
            dataclasses.replace(rec, summaries=()),
        ]
        for after in variants:
            assert directory_codec.topic_text(after, before) == codec.dumps(after)
        # a previous text that is not the record's layout lends nothing
        assert directory_codec.topic_text(rec, ("[]", rec)) == codec.dumps(rec)


def test_the_pairs_the_record_kept_come_from_the_previous_text() -> None:
    rec = wide_topics(0)[0]
    text = codec.dumps(rec)
    # the previous text's pairs are taken as they are: a marked one shows where they came from
    at = text.rindex(",[[") + len(f",[[{rec.summaries[0][0]},")  # the summaries are last, flat
    marked = text[:at] + "MARK" + text[at:]
    assert "MARK" in directory_codec.topic_text(_with_summaries(rec, {1}), (marked, rec))
    # the first pair made anew is written, not taken
    assert "MARK" not in directory_codec.topic_text(_with_summaries(rec, {0}), (marked, rec))
    # equal pairs that are other objects are written again: only identity lends a pair's text
    copied = dataclasses.replace(
        rec, summaries=tuple((p, dataclasses.replace(s)) for p, s in rec.summaries)
    )
    assert "MARK" not in directory_codec.topic_text(_with_summaries(rec, {1}), (marked, copied))


@pytest.mark.parametrize("seed", range(6))
def test_the_previous_record_lends_the_summaries_whose_text_is_the_same(seed: int) -> None:
    for rec in wide_topics(seed):
        text = codec.dumps(rec)
        n = len(rec.summaries)
        for changed in ({1}, set(range(0, n, 3)), set(range(n // 2 + 1)), set()):
            after = _with_summaries(rec, changed)
            read = directory_codec.topic_from_text(codec.dumps(after), (text, rec))
            assert read == whole(codec.dumps(after)) == after
            lent = [i for i in range(n) if read.summaries[i] is rec.summaries[i]]
            # under half changed: the others are the previous record's pairs; else none are
            assert lent == (
                [i for i in range(n) if i not in changed] if 2 * len(changed) <= n else []
            )
        # fewer pairs, or a previous record without summaries: nothing lent, the same record
        for before in (
            dataclasses.replace(rec, summaries=rec.summaries[:-1]),
            dataclasses.replace(rec, summaries=()),
        ):
            read = directory_codec.topic_from_text(text, (codec.dumps(before), before))
            assert read == rec and not any(
                a is b for a, b in zip(read.summaries, before.summaries, strict=False)
            )
