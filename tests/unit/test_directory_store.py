"""The sequencer's directory in its MapState, in chunks of records (`directory_store.py`)."""

from __future__ import annotations

import dataclasses

import pytest

from state_machines.engine import Engine
from state_machines.errors import InvariantViolation
from state_machines.events import parse_event
from streaming import codec, directory_store
from streaming.directory_store import CHUNK_PREFIX, STAMP_KEY, load, writes
from tests.property.generator import generate_log


def a_directory(seed: int) -> dict:
    engine = Engine()
    for i, event in enumerate(generate_log(seed, n_events=80)):
        engine.process(parse_event(event, i))
    assert len(engine.directory) > 3
    return dict(engine.directory)


def apply(store: dict[str, str], updates, removals) -> None:
    for key in removals:
        store.pop(key, None)
    for key, text in updates:
        store[key] = text


def entries(store: dict[str, str]):
    return (((k,), (v,)) for k, v in store.items())


def fresh_worker(monkeypatch) -> None:
    monkeypatch.setattr(directory_store, "_TEXTS", {})


@pytest.mark.parametrize("seed", range(4))
def test_a_directory_written_in_chunks_reads_back_whole_in_a_fresh_worker(
    seed: int, monkeypatch
) -> None:
    directory = a_directory(seed)
    store = {STAMP_KEY: "s1"}
    apply(store, *writes(directory, directory))
    assert all(k.startswith(CHUNK_PREFIX) for k in store if k != STAMP_KEY)
    assert len(store) - 1 <= directory_store.CHUNKS
    fresh_worker(monkeypatch)
    loaded, former = load(entries(store))
    assert loaded == directory and former == []
    # every line is the record's own text
    for key, rec in directory.items():
        assert f"{key}\t{codec.dumps(rec)}" in directory_store.chunk_lines(
            store[directory_store.chunk_of(key)]
        )
    # stored compressed: no record's text is in the store as such
    assert all(store[k].startswith(directory_store.COMPRESSED) for k in store if k != STAMP_KEY)
    assert not any(
        codec.dumps(rec) in value for rec in directory.values() for value in store.values()
    )


def test_a_batch_rewrites_only_the_chunks_of_the_records_it_changed_and_drops_emptied_ones(
    monkeypatch,
) -> None:
    directory = a_directory(1)
    store: dict[str, str] = {}
    apply(store, *writes(directory, directory))
    before = dict(store)
    key = next(k for k in directory if k.startswith("broker-"))
    changed = dict(directory)
    changed[key] = dataclasses.replace(directory[key], offline_dirs=(("t", 0),))
    assert writes(changed, []) == ([], []), "a batch that changed nothing writes nothing"
    updates, removals = writes(changed, [key])
    assert [k for k, _ in updates] == [directory_store.chunk_of(key)] and removals == []
    apply(store, updates, removals)
    assert {k for k in store if store[k] != before.get(k)} == {directory_store.chunk_of(key)}
    fresh_worker(monkeypatch)
    assert load(entries(store))[0] == changed
    # a record removed: its chunk loses its line, or goes when it held nothing else
    alone = {"controller": directory["controller"]}
    store = {}
    apply(store, *writes(alone, alone))
    updates, removals = writes({}, ["controller"])
    assert updates == [] and removals == [directory_store.chunk_of("controller")]


def test_a_checkpoint_in_the_former_layout_is_read_and_moved_into_chunks(monkeypatch) -> None:
    directory = a_directory(2)
    store = {key: codec.dumps(rec) for key, rec in directory.items()}  # one entry per record
    store[STAMP_KEY] = "old"
    fresh_worker(monkeypatch)
    loaded, former = load(entries(store))
    assert loaded == directory and sorted(former) == sorted(directory)
    apply(store, *writes(loaded, [], former))
    assert all(k.startswith(CHUNK_PREFIX) for k in store if k != STAMP_KEY)
    fresh_worker(monkeypatch)
    assert load(entries(store)) == (directory, [])


def test_a_worker_decodes_a_changed_text_again() -> None:
    directory = a_directory(3)
    key = next(k for k in directory if k.startswith("broker-"))
    store = {key: codec.dumps(directory[key])}
    assert load(entries(store))[0][key] == directory[key]
    other = dataclasses.replace(directory[key], offline_dirs=(("t", 1),))
    store = {key: codec.dumps(other)}
    assert load(entries(store))[0][key] == other


def test_a_key_that_cannot_be_a_line_is_refused() -> None:
    with pytest.raises(InvariantViolation):
        directory_store.chunk_text([("topic-a\tb", "[]")])


def test_chunks_of_lines_as_text_the_layout_before_compression_are_read(monkeypatch) -> None:
    directory = a_directory(0)
    store = {STAMP_KEY: "s1"}
    apply(store, *writes(directory, directory))
    plain = {
        k: v if k == STAMP_KEY else "\n".join(directory_store.chunk_lines(v))
        for k, v in store.items()
    }
    assert not any(v.startswith(directory_store.COMPRESSED) for v in plain.values())
    fresh_worker(monkeypatch)
    assert load(entries(plain)) == (directory, [])
