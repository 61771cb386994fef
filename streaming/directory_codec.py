"""The compact encoding of the directory's records (the sequencer's MapState): a topic's
record (its partitions' brokers, configs, deletion mirror and every partition's summary),
a broker's and the controller's, as JSON arrays with the kind and the compact version
first. Fields added since the first layout trail, written only when set, so records
without them keep their bytes and older records read with the defaults.

`directory_out` is the layout; a topic's record, written by the ten thousand at a million
partitions, is written directly by `topic_text`, the same bytes.
"""

from __future__ import annotations

import json
from itertools import compress
from operator import is_not, ne
from typing import Any

from state_machines import commands, directory, model
from state_machines.states import PartitionState, ReplicaState

from .json_text import compact_json, json_ints
from .versions import COMPACT_VERSION, UnknownEncoding, check_compact

_R = {s.value: s for s in ReplicaState}
_P = {s.value: s for s in PartitionState}


def directory_out(rec: Any) -> list[Any]:
    if isinstance(rec, directory.TopicRecord):
        out = [
            "T",
            COMPACT_VERSION,
            [[p, list(b)] for p, b in rec.partitions],
            [list(kv) for kv in rec.configs],
            rec.queued,
            rec.started,
            rec.ineligible,
            [
                [
                    p,
                    list(m.replicas),
                    [[b, s.value] for b, s in m.replica_states],
                    m.being_reassigned,
                ]
                for p, m in rec.mirror
            ],
        ]
        if rec.summaries:
            out.append([_summary_out(p, m) for p, m in rec.summaries])
        return out
    if isinstance(rec, directory.BrokerRecord):
        f = rec.fact
        out = ["B", COMPACT_VERSION, [f.registered, f.shutting_down, f.broker_epoch]]
        if rec.offline_dirs:
            # a[3] held a per-broker topic index in earlier builds: left null
            out += [None, [[t, p] for t, p in rec.offline_dirs]]
        return out
    out = [
        "C",
        COMPACT_VERSION,
        rec.active,
        rec.controller_id,
        rec.controller_epoch,
        sorted(rec.topics),
        sorted(rec.brokers),
        sorted(rec.queued_topics),
    ]
    if rec.dynamic_configs or rec.rebalance_due is not None or rec.event_time is not None:
        out += [[list(kv) for kv in rec.dynamic_configs], rec.rebalance_due]
    if rec.event_time is not None:
        out.append(rec.event_time)
    return out


def directory_in(a: list[Any]) -> Any:
    kind, version = a[0], a[1]
    check_compact("directory record", version)
    if kind == "T":
        return _topic_record(
            _partitions_in(a[2]),
            a[3],
            a[4],
            a[5],
            a[6],
            a[7],
            tuple((m[0], summary_of(*m[1:])) for m in a[8]) if len(a) > 8 else (),
        )
    if kind == "B":
        # a[3], the per-broker topic index of earlier builds, is no longer kept
        dirs = tuple((t, p) for t, p in a[4]) if len(a) > 4 else ()
        return directory.BrokerRecord(model.BrokerFact(a[2][0], a[2][1], a[2][2]), dirs)
    if kind == "C":
        dynamic, due = (tuple((k, v) for k, v in a[8]), a[9]) if len(a) > 8 else ((), None)
        return directory.ControllerRecord(
            a[2],
            a[3],
            a[4],
            frozenset(a[5]),
            frozenset(a[6]),
            frozenset(a[7]),
            dynamic,
            due,
            a[10] if len(a) > 10 else None,
        )
    raise UnknownEncoding(f"unknown directory record kind {kind!r}")


def _partitions_in(partitions: list[Any]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple((p, tuple(b)) for p, b in partitions)


def _topic_record(
    partitions: tuple[tuple[int, tuple[int, ...]], ...],
    configs: list[Any],
    queued: bool,
    started: bool,
    ineligible: bool,
    mirror: list[Any],
    summaries: tuple[tuple[int, commands.PartitionSummary], ...],
) -> directory.TopicRecord:
    """A topic's record from its partitions and summaries, decoded, and its other fields as
    the JSON decoder reads them."""
    return directory.TopicRecord(
        partitions,
        tuple((k, v) for k, v in configs),
        queued,
        started,
        ineligible,
        tuple(
            (p, directory.DeletionMirror(tuple(r), tuple((b, _R[s]) for b, s in st), moving))
            for p, r, st, moving in mirror
        ),
        summaries,
    )


def _summary_out(p: int, m: commands.PartitionSummary) -> list[Any]:
    # the replica metrics' counts trail, absent when unknown (a summary read from a build
    # that did not keep them), which then reads back as unknown
    out = [p, m.state.value if m.state else None, m.preferred, m.leader]
    if m.isr_size is not None:
        out += [m.isr_size, m.replication_factor, m.replica_count]
    return out


# A cluster has few distinct summaries: decode each once (feedback lines too, `pipeline`).
_SUMMARIES: dict[tuple[Any, ...], commands.PartitionSummary] = {}


def summary_of(
    state: str | None, preferred: int, leader: int | None, *counts: int
) -> commands.PartitionSummary:
    key = (state, preferred, leader, *counts)
    summary = _SUMMARIES.get(key)
    if summary is None:
        if len(_SUMMARIES) > 65536:
            _SUMMARIES.clear()
        summary = _SUMMARIES[key] = commands.PartitionSummary(
            _P[state] if state else None, preferred, leader, *counts
        )
    return summary


DIRECTORY_TYPES = (directory.TopicRecord, directory.BrokerRecord, directory.ControllerRecord)


# A topic's record holds every partition's brokers and summary: the sequencer writes every
# topic a batch's summaries touched, ten thousand records at a million partitions. The same
# bytes as `compact_json(directory_out(rec))`, written directly, each distinct summary once.
# Both caches are keyed by the object's id and hold the object, so that an entry is never
# another object's (its id cannot be reused while the entry holds it): a summary's own hash
# is a Python call, and a topic's partitions are the same tuple until they change.
_SUMMARY_TEXT: dict[int, tuple[commands.PartitionSummary, str]] = {}
_PARTITIONS_TEXT: dict[int, tuple[tuple[tuple[int, tuple[int, ...]], ...], str]] = {}


def _summary_text(m: commands.PartitionSummary) -> str:
    kept = _SUMMARY_TEXT.get(id(m))
    if kept is not None and kept[0] is m:
        return kept[1]
    if len(_SUMMARY_TEXT) >= 65536:
        _SUMMARY_TEXT.clear()
    text = compact_json(_summary_out(0, m)[1:])[1:-1]
    _SUMMARY_TEXT[id(m)] = (m, text)
    return text


def _partitions_text(partitions: tuple[tuple[int, tuple[int, ...]], ...]) -> str:
    kept = _PARTITIONS_TEXT.get(id(partitions))
    if kept is not None and kept[0] is partitions:
        return kept[1]
    if len(_PARTITIONS_TEXT) >= 65536:
        _PARTITIONS_TEXT.clear()
    text = ",".join([f"[{p},{json_ints(b)}]" for p, b in partitions])
    _PARTITIONS_TEXT[id(partitions)] = (partitions, text)
    return text


def topic_text(rec: directory.TopicRecord, previous: tuple[str, Any] | None = None) -> str:
    """The record's text. `previous`, the text and record this worker last held under the
    same key (`directory_store`), lends the text of the summaries `rec` kept (`_summaries_text`)."""
    partitions = _partitions_text(rec.partitions)
    rest = compact_json(
        [
            [list(kv) for kv in rec.configs],
            rec.queued,
            rec.started,
            rec.ineligible,
            [
                [
                    p,
                    list(m.replicas),
                    [[b, s.value] for b, s in m.replica_states],
                    m.being_reassigned,
                ]
                for p, m in rec.mirror
            ],
        ]
    )[1:-1]
    head = f'["T",{COMPACT_VERSION},[{partitions}],{rest}'
    if rec.summaries:
        return f"{head},[{_summaries_text(rec.summaries, head, previous)}]]"
    return f"{head}]"


def _summaries_text(
    summaries: tuple[tuple[int, commands.PartitionSummary], ...],
    head: str,
    previous: tuple[str, Any] | None,
) -> str:
    """`[p,...],[p,...]`: each (partition, summary) pair as a flat array.

    A batch of the partitions' summaries after a broker event changes every topic's record,
    a tenth of each one's pairs with 30 brokers (`partition_summaries.apply_summaries` keeps
    the pairs nobody reported, the same objects): at a million partitions, writing every
    pair again took 0.4 s of the sequencer's batch. When the previous record holds as many
    pairs, under the same head (partitions, configs and deletion fields), and at most half
    of them changed, its text's pairs are split out (flat arrays: the brackets are only
    theirs) and only the changed ones written; the same bytes either way
    (tests/unit/test_directory_codec.py)."""
    if previous is not None:
        before_text, before = previous
        n = len(summaries)
        if (
            isinstance(before, directory.TopicRecord)
            and len(before.summaries) == n
            and before_text.startswith(head)
            and before_text.startswith(",[[", len(head))
        ):
            moved = list(map(is_not, before.summaries, summaries))
            changed = moved.count(True)
            if 2 * changed <= n:
                pieces = _summary_pieces(before_text)
                if pieces is not None and len(pieces) == n:
                    for i in compress(range(n), moved):
                        p, m = summaries[i]
                        pieces[i] = f"{p},{_summary_text(m)}"
                    return "[" + "],[".join(pieces) + "]"
    return ",".join([f"[{p},{_summary_text(m)}]" for p, m in summaries])


# ---------------------------------------------------------------------------------------
# A topic's record read back from its text, when a worker reads the directory it did not
# write last (`directory_store.load`): at a million partitions, ten thousand records of a
# hundred summaries each, which `json.loads` and `directory_in` took 1 s or more to decode.
# A record whose text `topic_text` wrote is read in pieces: its partitions kept from the
# worker's last copy of the record if their text is the same, its other fields but the
# summaries by the JSON decoder, and its summaries split as text, each distinct summary's
# text decoded once. A text that is not in that layout (another version, a field added
# after the summaries, a summary that is not a flat array) gives None, and the caller
# decodes it whole: the result is the same record either way (tests/unit/test_directory_codec.py).

_TOPIC_HEAD = f'["T",{COMPACT_VERSION},'
_NO_PARTITIONS = "[]"
_decode_value = json.JSONDecoder().raw_decode
_SUMMARY_OF_TEXT: dict[str, commands.PartitionSummary] = {}


def topic_from_text(
    text: str, previous: tuple[str, Any] | None = None
) -> directory.TopicRecord | None:
    """The topic record `text` holds, read as `topic_text` writes it, or None for a text
    in another layout or one that does not decode (the caller's whole decoding then says
    why). `previous`, the text and record this worker last held under the same key, lends
    its partitions when their text is unchanged."""
    if not text.startswith(_TOPIC_HEAD) or not text.endswith("]"):
        return None
    try:
        return _topic_from_text(text, previous)
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def _topic_from_text(text: str, previous: tuple[str, Any] | None) -> directory.TopicRecord | None:
    start = len(_TOPIC_HEAD)
    # the partitions hold only numbers: their array ends at the first "]]]", or is empty
    end = start + 2 if text.startswith(_NO_PARTITIONS, start) else text.index("]]]", start) + 3
    partitions = None
    if previous is not None and isinstance(previous[1], directory.TopicRecord):
        before = previous[0]
        if (
            before.startswith(_TOPIC_HEAD)
            and before[start:end] == text[start:end]
            and before[end : end + 1] == ","
        ):
            partitions = previous[1].partitions
    if partitions is None:
        partitions = _partitions_in(json.loads(text[start:end]))
    fields = []
    at = end
    for _ in range(5):  # configs, queued, started, ineligible, the deletion mirror
        if text[at] != ",":
            return None
        value, at = _decode_value(text, at + 1)
        fields.append(value)
    configs, queued, started, ineligible, mirror = fields
    summaries: tuple[tuple[int, commands.PartitionSummary], ...] = ()
    if at != len(text) - 1:
        if text[at] != ",":
            return None
        read = _summaries_from_text(text[at + 1 : -1], previous)
        if read is None:
            return None
        summaries = read
    return _topic_record(partitions, configs, queued, started, ineligible, mirror, summaries)


def _summaries_from_text(
    text: str, previous: tuple[str, Any] | None = None
) -> tuple[tuple[int, commands.PartitionSummary], ...] | None:
    """`[[p,state,preferred,leader,...],...]` as (partition, summary) pairs, or None if
    `text` is not a list of flat arrays. `previous` (as `topic_from_text`'s) lends the
    pairs whose text is unchanged (`_lent_pairs`)."""
    if text == "[]":
        return ()
    if not (text.startswith("[[") and text.endswith("]]")):
        return None
    pieces = text[2:-2].split("],[")  # as `_summary_pieces` splits a record's text
    # flat arrays only: the brackets are exactly the list's and each summary's
    if text.count("[") != len(pieces) + 1 or text.count("]") != len(pieces) + 1:
        return None
    lent = _lent_pairs(pieces, previous)
    if lent is not None:
        return lent
    return _pairs_of(pieces)


def _lent_pairs(
    pieces: list[str], previous: tuple[str, Any] | None
) -> tuple[tuple[int, commands.PartitionSummary], ...] | None:
    """The pairs of `pieces`, each one whose text the previous record's text holds at the
    same place being that record's pair, or None if the previous record lends nothing.

    A worker whose copy of the directory is a batch or more old (Spark gave the sequencer's
    task another Python worker than the last batch's) reads every topic whose summaries
    changed: after a broker event at a million partitions, every topic, a tenth of each
    one's pairs. Its previous text (a text is always its record's) is split the same way,
    and only the pieces that differ are decoded (tests/unit/test_directory_codec.py)."""
    if previous is None or not isinstance(previous[1], directory.TopicRecord):
        return None
    before_text, before = previous
    n = len(pieces)
    if len(before.summaries) != n:
        return None
    before_pieces = _summary_pieces(before_text)
    if before_pieces is None or len(before_pieces) != n:
        return None
    differ = list(map(ne, pieces, before_pieces))
    if 2 * differ.count(True) > n:
        return None
    out = list(before.summaries)
    for i, pair in zip(
        compress(range(n), differ), _pairs_of(list(compress(pieces, differ))), strict=True
    ):
        out[i] = pair
    return tuple(out)


def _summary_pieces(text: str) -> list[str] | None:
    """The `p,state,...` text of each summary of a topic record's text that holds summaries
    (`topic_text` wrote it: they are the last field, flat arrays, so the last ",[[" opens
    them), or None if the text does not end as such a record does."""
    if not text.endswith("]]]"):
        return None
    return text[text.rindex(",[[") + 3 : -3].split("],[")


def _pairs_of(pieces: list[str]) -> tuple[tuple[int, commands.PartitionSummary], ...]:
    out = []
    known = _SUMMARY_OF_TEXT.get
    for piece in pieces:
        partition, _, rest = piece.partition(",")
        summary = known(rest)
        if summary is None:
            if len(_SUMMARY_OF_TEXT) >= 65536:
                _SUMMARY_OF_TEXT.clear()
            summary = _SUMMARY_OF_TEXT[rest] = summary_of(*json.loads(f"[{rest}]"))
        out.append((int(partition), summary))
    return tuple(out)
