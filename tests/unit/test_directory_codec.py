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
def test_every_topic_record_the_codec_writes_is_read_in_pieces_as_the_same_record(seed: int) -> None:
    records = topics(seed)
    assert records
    for rec in records:
        text = codec.dumps(rec)
        assert text == directory_codec.topic_text(rec)
        read = directory_codec.topic_from_text(text)
        assert read is not None, text
        assert read == whole(text) == rec


def test_records_without_partitions_or_summaries_and_with_unknown_summary_fields_read_the_same() -> None:
    rec = topics(1)[0]
    some = rec.summaries[0][1]
    unknown = dataclasses.replace(some, state=None, leader=None, isr_size=None, replication_factor=None,
                                  replica_count=None)
    for variant in (dataclasses.replace(rec, summaries=()),
                    dataclasses.replace(rec, partitions=(), summaries=()),
                    dataclasses.replace(rec, summaries=((0, unknown), (1, some))),
                    dataclasses.replace(rec, mirror=(), configs=(("cleanup.policy", "compact,[delete]"),))):
        text = codec.dumps(variant)
        read = directory_codec.topic_from_text(text)
        assert read is not None, text
        assert read == whole(text) == variant


def test_the_previous_record_lends_its_partitions_only_when_their_text_is_the_same() -> None:
    rec = topics(2)[0]
    assert len(rec.partitions) >= 1 and rec.summaries
    text = codec.dumps(rec)
    moved = dataclasses.replace(rec, summaries=tuple((p, dataclasses.replace(s, leader=-7)) for p, s in rec.summaries))
    lent = directory_codec.topic_from_text(codec.dumps(moved), (text, rec))
    assert lent == moved and lent.partitions is rec.partitions
    # another assignment: the previous record's partitions are not taken
    p0, brokers = rec.partitions[0]
    reassigned = dataclasses.replace(moved, partitions=((p0, brokers + (99,)),) + rec.partitions[1:])
    read = directory_codec.topic_from_text(codec.dumps(reassigned), (text, rec))
    assert read == reassigned and read.partitions is not rec.partitions


@pytest.mark.parametrize("text", [
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
])
def test_a_text_in_another_layout_is_left_to_the_whole_decoding(text: str) -> None:
    assert directory_codec.topic_from_text(text) is None


def test_a_worker_reading_a_directory_it_did_not_write_gets_the_stored_records(monkeypatch) -> None:
    before = a_directory(3)
    store: dict[str, str] = {}
    apply(store, *writes(before, before))
    monkeypatch.setattr(directory_store, "_TEXTS", {})
    load(entries(store))  # this worker's copy, then another worker changes every summary
    after = {k: dataclasses.replace(r, summaries=tuple((p, dataclasses.replace(s, leader=None)) for p, s in r.summaries))
             if isinstance(r, directory.TopicRecord) else r for k, r in before.items()}
    monkeypatch.setattr(directory_store, "_TEXTS", {})
    apply(store, *writes(after, after))
    monkeypatch.setattr(directory_store, "_TEXTS", {k: (codec.dumps(r), r) for k, r in before.items()})
    loaded, _ = load(entries(store))
    assert loaded == after
    assert all(loaded[k].partitions is before[k].partitions for k in after if isinstance(after[k], directory.TopicRecord))
