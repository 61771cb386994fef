"""Encoding of the core's values for Spark state, for rows between operators and for the
decisions the job writes.

Checkpoints outlive code, so everything persisted goes through here, and every encoding
carries its version; the versions are listed once, in `versions.py`, and a reader refuses
a version it does not know (`check_compact`) rather than guess. There are four encodings:

- `state`: the generic document `{"v": version, "d": value}`, derived from the values'
  type hints (`tagged.py`), so adding a field with a default is a compatible change and
  anything else bumps the version and adds a migration to `MIGRATIONS`;
- `compact`: JSON arrays, version first, for the values every partition touches on every
  command (its `PartitionRecord`, its `Command`, the directory's records:
  `directory_codec.py`), written from templates because they are written by the ten
  thousand;
- `bucket`: scale mode's state of one bucket, one line per partition, compressed, under a
  header;
- `contract`: a decision record as the contract's JSON (docs/contract.md), written by
  `decision_json.py`; only its version is kept here.

`dumps` and `loads` pick the encoding by type. JSON strings are used rather than Spark
map/array state fields because those crash the Python worker in 4.3.0 (spark-notes).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Union

import pyarrow

from state_machines import commands, directory, model, outputs, partition
from state_machines.states import LeaderRecoveryState, PartitionState, ReplicaState

from .json_text import canonical_json, compact_json, json_ints, json_str
from .tagged import TAGGED, from_jsonable, to_jsonable

from .directory_codec import DIRECTORY_TYPES as _DIRECTORY_TYPES, directory_in as _directory_in, topic_text as _topic_text
from .directory_codec import directory_out as _directory_out
from .versions import (
    BUCKET_HEADER, BUCKET_HEADER_V1, COMPACT_VERSION, CONTRACT_VERSION, MIGRATIONS, SCHEMA_VERSION, VERSIONS, UnknownEncoding, check_compact,
)

__all__ = ["BUCKET_HEADER", "COMPACT_VERSION", "CONTRACT_VERSION", "MIGRATIONS", "SCHEMA_VERSION", "VERSIONS",
           "UnknownEncoding", "check_compact", "dumps", "loads", "bucket_entries", "bucket_entry_in",
           "bucket_entry_out", "bucket_entry_seq", "bucket_text", "compressed", "decompressed", "DirectoryRecord"]

DirectoryRecord = Union[directory.ControllerRecord, directory.BrokerRecord, directory.TopicRecord]
PartitionRecordType = partition.PartitionRecord


# ---------------------------------------------------------------------------------------
# Compact encodings of the two values every partition touches on every command. They are
# JSON arrays with their own version first; `dumps`/`loads` pick them by type.

_Rec = partition.PartitionRecord
_Cmd = commands.Command
_R = {s.value: s for s in ReplicaState}
_P = {s.value: s for s in PartitionState}
_LRS = LeaderRecoveryState


def _la_out(la: model.LeaderAndIsr | None) -> list | None:
    if la is None:
        return None
    return [la.leader, la.leader_epoch, list(la.isr), la.partition_epoch, la.leader_recovery_state.value, la.controller_epoch]


_LRS_BY_NAME = {s.value: s for s in _LRS}


def _la_in(a: list | None) -> model.LeaderAndIsr | None:
    if a is None:
        return None
    return model.LeaderAndIsr(a[0], a[1], tuple(a[2]), a[3], _LRS_BY_NAME[a[4]], a[5])


def _brokers_out(brokers: tuple) -> list:
    return [[b, f.registered, f.shutting_down, f.broker_epoch] for b, f in brokers]


# A cluster has few distinct broker facts and every partition holds a few: decode each once.
_FACTS: dict[tuple, model.BrokerFact] = {}


def _fact(registered: bool, shutting_down: bool, epoch: int | None) -> model.BrokerFact:
    key = (registered, shutting_down, epoch)
    fact = _FACTS.get(key)
    if fact is None:
        if len(_FACTS) > 65536:
            _FACTS.clear()
        fact = _FACTS[key] = model.BrokerFact(registered, shutting_down, epoch)
    return fact


def _brokers_in(a: list) -> tuple:
    return tuple([(b, _fact(reg, sd, ep)) for b, reg, sd, ep in a])


def _record_out(r: partition.PartitionRecord) -> list:
    a = r.assignment
    out = [COMPACT_VERSION, r.topic, r.partition, list(a.replicas), list(a.adding_replicas), list(a.removing_replicas),
           r.state.value if r.state else None, _la_out(r.leadership),
           [[b, s.value] for b, s in r.replica_states], _brokers_out(r.brokers), r.being_reassigned]
    if r.offline_dirs or r.reassignment_started:  # trailing fields, written only when set: older records read the same
        out.append(list(r.offline_dirs))
    if r.reassignment_started:
        out.append(list(r.reassignment_started))
    return out


# The same bytes as `compact_json(_record_out(r))`, written directly: the JSON encoder
# builds a C encoder object per call, and the nested lists it would read are built only to
# be read. Every partition a command changes is written once per batch.
# (tests/unit/test_codec.py holds the two to the same bytes.)
_BOOL = {True: "true", False: "false"}
_QUOTED: dict[Any, str] = {s: json_str(s.value) for enum in (_R.values(), _P.values(), _LRS) for s in enum}


def _record_text(r: partition.PartitionRecord) -> str:
    a = r.assignment
    la = r.leadership
    if la is None:
        leadership = "null"
    else:
        leadership = (f"[{la.leader},{la.leader_epoch},{json_ints(la.isr)},{la.partition_epoch},"
                      f"{_QUOTED[la.leader_recovery_state]},{la.controller_epoch}]")
    states = ",".join([f"[{b},{_QUOTED[s]}]" for b, s in r.replica_states])
    brokers = ",".join([f"[{b},{_BOOL[f.registered]},{_BOOL[f.shutting_down]},"
                        f"{'null' if f.broker_epoch is None else f.broker_epoch}]" for b, f in r.brokers])
    return (f"[{COMPACT_VERSION},{json_str(r.topic)},{r.partition},{json_ints(a.replicas)},{json_ints(a.adding_replicas)},"
            f"{json_ints(a.removing_replicas)},{'null' if r.state is None else _QUOTED[r.state]},{leadership},"
            f"[{states}],[{brokers}],{_BOOL[r.being_reassigned]}"
            f"{',' + json_ints(r.offline_dirs) if r.offline_dirs or r.reassignment_started else ''}"
            f"{_started_text(r.reassignment_started) if r.reassignment_started else ''}]")


def _started_text(started: tuple[int, int | None]) -> str:
    offset, ts = started
    return f",[{offset},{'null' if ts is None else ts}]"


def _record_in(a: list) -> partition.PartitionRecord:
    check_compact("partition state", a[0])
    return partition.PartitionRecord(
        a[1], a[2], model.ReplicaAssignment(tuple(a[3]), tuple(a[4]), tuple(a[5])),
        _P[a[6]] if a[6] is not None else None, _la_in(a[7]),
        tuple([(b, _R[s]) for b, s in a[8]]), _brokers_in(a[9]), a[10], tuple(a[11]) if len(a) > 11 else (),
        (a[12][0], a[12][1]) if len(a) > 12 else None,
    )


def _op_out(op: Any) -> list:
    if isinstance(op, commands.LoadPartition):
        a = op.assignment
        return ["LoadPartition", list(a.replicas), list(a.adding_replicas), list(a.removing_replicas),
                _la_out(op.leadership), op.overwrite]
    cls = type(op)
    return [cls.__name__, *(getattr(op, n) for n in outputs.field_names(cls))]  # tuples encode as arrays


def _op_in(a: list) -> Any:
    name, args = a[0], a[1:]
    if name == "LoadPartition":
        return commands.LoadPartition(model.ReplicaAssignment(tuple(args[0]), tuple(args[1]), tuple(args[2])),
                                      _la_in(args[3]), args[4])
    cls = TAGGED[name]
    return cls(*(tuple(v) if isinstance(v, list) else v for v in args))


# A command travels as `topic \t partition \t shared`, where `shared` is the JSON of what
# a fan-out sends to every partition alike: the cause, the context and the op. The
# sequencer encodes it once per run of equal commands and the partition stage decodes each
# distinct one once (everything in it is immutable, so partitions can share the objects).
_last_shared: list = [None, None, None, None, ""]  # ctx, op, cause_offset, cause_id, text
_SHARED: dict[str, tuple] = {}
# The shared parts written lately, by the identity of their context and op (a fan-out over
# a broker's partitions alternates between a few contexts, one per replica set): the
# objects are kept beside the text, so an id is never taken for a later object's.
_SHARED_TEXT: dict[tuple[int, int, int, str | None], tuple[Any, Any, str]] = {}


_CONTEXT_TEXT: dict[int, tuple[commands.PartitionContext, str]] = {}


def _context_in(x: list) -> commands.PartitionContext:
    return commands.PartitionContext(x[0], x[1], x[2], x[3], _brokers_in(x[4]))


def _context_text(x: commands.PartitionContext) -> str:
    kept = _CONTEXT_TEXT.get(id(x))
    if kept is None or kept[0] is not x:
        if len(_CONTEXT_TEXT) >= 4096:
            _CONTEXT_TEXT.clear()
        kept = _CONTEXT_TEXT[id(x)] = (x, compact_json([x.active, x.controller_epoch, x.unclean_leader_election_enable,
                                                        x.queued_for_deletion, _brokers_out(x.brokers)]))
    return kept[1]


# Ops by value: a creation sends each partition an op of its own, and a cluster's replica
# sets are few. (Every op is a frozen dataclass of tuples and scalars: hashable.)
_OP_TEXT: dict[Any, str] = {}


def _op_text(op: Any) -> str:
    text = _OP_TEXT.get(op)
    if text is None:
        if len(_OP_TEXT) >= 4096:
            _OP_TEXT.clear()
        text = _OP_TEXT[op] = compact_json(_op_out(op))
    return text


def command_text(c: commands.Command) -> str:
    """`dumps` of a command."""
    return f"{c.topic}\t{c.partition}\t{command_shared(c)}"


def command_shared(c: commands.Command) -> str:
    """The shared part of a command's text (the sequencer's packer calls it once per
    command of a fan-out, and writes a run of commands that share it once)."""
    if type(c.ctx) is not commands.PartitionContext:
        return _generic_shared_text(c)
    last = _last_shared
    if not (last[0] is c.ctx and last[2] == c.cause_offset and last[3] == c.cause_id
            and (last[1] is c.op or last[1] == c.op)):
        key = (id(c.ctx), id(c.op), c.cause_offset, c.cause_id)
        kept = _SHARED_TEXT.get(key)
        if kept is not None and kept[0] is c.ctx and kept[1] is c.op:
            text = kept[2]
        else:
            # compact_json([COMPACT_VERSION, cause_offset, cause_id, ctx, op]), the context's
            # part written once per context (a creation sends each partition its own op)
            text = (f"[{COMPACT_VERSION},{c.cause_offset},{'null' if c.cause_id is None else json_str(c.cause_id)},"
                    f"{_context_text(c.ctx)},{_op_text(c.op)}]")
            if len(_SHARED_TEXT) >= 4096:
                _SHARED_TEXT.clear()
            _SHARED_TEXT[key] = (c.ctx, c.op, text)
        last[:] = [c.ctx, c.op, c.cause_offset, c.cause_id, text]
    return last[4]


def _generic_shared_text(c: commands.Command) -> str:
    """A command of another rule set (kraft mode's contexts and ops): the generic document
    of its shared part, which the decoder tells from the compact array by its "{"."""
    last = _last_shared
    if not (last[0] is c.ctx and last[2] == c.cause_offset and last[3] == c.cause_id and last[1] == c.op):
        text = canonical_json({"v": SCHEMA_VERSION, "d": [c.cause_offset, c.cause_id, to_jsonable(c.ctx),
                                                          to_jsonable(c.op)]})
        last[:] = [c.ctx, c.op, c.cause_offset, c.cause_id, text]
    return last[4]


def _generic_shared(shared: str) -> tuple:
    doc = json.loads(shared)
    if doc.get("v") != SCHEMA_VERSION:
        raise UnknownEncoding(f"command in schema version {doc.get('v')!r}; this build reads {SCHEMA_VERSION}")
    cause_offset, cause_id, ctx, op = doc["d"]
    return (cause_offset, cause_id, from_jsonable(ctx, TAGGED[ctx["_t"]]), from_jsonable(op, TAGGED[op["_t"]]))


def _command_from_text(text: str) -> commands.Command:
    topic, partition, shared = text.split("\t", 2)
    return commands.Command(topic, int(partition), *shared_parts(shared))


def shared_parts(shared: str) -> tuple:
    """The cause offset, cause id, context and op that `command_shared` wrote as `shared`
    (each distinct text decoded once: the values are immutable, and shared)."""
    parts = _SHARED.get(shared)
    if parts is None and shared.startswith(_SHARED_HEAD):
        parts = _compact_shared(shared)
        if parts is not None:
            if len(_SHARED) >= 4096:
                _SHARED.clear()
            _SHARED[shared] = parts
    if parts is None and shared.startswith("{"):
        parts = _generic_shared(shared)
        if len(_SHARED) >= 4096:
            _SHARED.clear()
        _SHARED[shared] = parts
    if parts is None:
        a = json.loads(shared)
        check_compact("command", a[0])
        x = a[3]
        parts = (a[1], a[2], _context_in(x), _op_in(a[4]))
        if len(_SHARED) >= 4096:
            _SHARED.clear()
        _SHARED[shared] = parts
    return parts


# A creation sends each partition its own op (its replicas), and a fan-out's shared parts
# name their cause: at a million partitions a bucket meets most shared texts once. Their
# contexts and ops are few (one per replica set), so a compact shared part is read in
# pieces, `[version,cause,cause id,context,op]`, and each distinct context's and op's text is
# decoded once. A context holds no string, so the op, an array whose first value is its
# name, starts at the first `,["` after the cause id. Any other text is decoded whole.
_SHARED_HEAD = f"[{COMPACT_VERSION},"
_CONTEXTS_IN: dict[str, commands.PartitionContext] = {}
_OPS_IN: dict[str, Any] = {}
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


def _compact_shared(shared: str) -> tuple | None:
    cause_end = shared.find(",", len(_SHARED_HEAD))
    if cause_end < 0 or not shared.endswith("]"):
        return None
    cause_text = shared[len(_SHARED_HEAD):cause_end]
    if not cause_text.isdigit():
        return None
    if shared.startswith("null,", cause_end + 1):
        cause_id, ctx_start = None, cause_end + 6
    elif shared.startswith('"', cause_end + 1):
        try:
            cause_id, id_end = _scan_string(shared, cause_end + 2)
        except ValueError:
            return None
        if not shared.startswith(",", id_end):
            return None
        ctx_start = id_end + 1
    else:
        return None
    op_start = shared.find(',["', ctx_start)
    if op_start < 0 or not shared.startswith("[", ctx_start):
        return None
    ctx_text, op_text = shared[ctx_start:op_start], shared[op_start + 1:-1]
    ctx = _CONTEXTS_IN.get(ctx_text)
    op = _OPS_IN.get(op_text)
    if ctx is None or op is None:
        try:
            x, y = json.loads(ctx_text), json.loads(op_text)
        except ValueError:
            return None  # the whole decoding says what is wrong
        if len(_CONTEXTS_IN) >= 4096 or len(_OPS_IN) >= 4096:
            _CONTEXTS_IN.clear()
            _OPS_IN.clear()
        ctx = _CONTEXTS_IN[ctx_text] = _context_in(x)
        op = _OPS_IN[op_text] = _op_in(y)
    return (int(cause_text), cause_id, ctx, op)


# -- dumps and loads: the encoding by type --------------------------------------------------

def dumps(value: Any) -> str:
    """`value` in its encoding: compact for a command, a partition record and a directory
    record, the versioned generic document for anything else."""
    if isinstance(value, _Cmd):
        return command_text(value)
    if isinstance(value, _Rec):
        return _record_text(value)
    if type(value) is directory.TopicRecord:
        return _topic_text(value)
    if isinstance(value, _DIRECTORY_TYPES):
        return compact_json(_directory_out(value))
    return canonical_json({"v": SCHEMA_VERSION, "d": to_jsonable(value)})


# A partition's record as text is its topic and number, then a tail (the assignment, the
# states, the leadership, the replica states, the broker view and the reassignment's
# fields) that many partitions of a cluster share: the tails of a million partitions take
# a few thousand values. Each distinct tail is decoded once into the record's fields,
# which the records that share it then share (they are immutable). A topic name holds no
# quote or backslash (Kafka's legal characters), so the topic ends at the first quote;
# any other text is decoded whole.
_RECORD_HEAD = f'[{COMPACT_VERSION},"'
_TOPIC_START = len(_RECORD_HEAD)
_TAILS: dict[str, tuple] = {}


def _record_from_text(text: str) -> partition.PartitionRecord:
    start = _TOPIC_START
    if text.startswith(_RECORD_HEAD):
        topic_end = text.find('"', start)
        number_end = text.find(",", topic_end + 2)
        if topic_end > 0 and text[topic_end + 1] == "," and number_end > 0 and "\\" not in text[start:topic_end]:
            tail = text[number_end + 1:]
            fields = _TAILS.get(tail)
            if fields is not None:
                return _Rec(text[start:topic_end], int(text[topic_end + 2:number_end]), *fields)
            rec = _record_in(json.loads(text))
            if len(_TAILS) >= 65536:
                _TAILS.clear()
            _TAILS[tail] = (rec.assignment, rec.state, rec.leadership, rec.replica_states, rec.brokers,
                            rec.being_reassigned, rec.offline_dirs, rec.reassignment_started)
            return rec
    return _record_in(json.loads(text))


def loads(text: str, hint: Any) -> Any:
    """The value of type `hint` that `dumps` wrote as `text` (a generic document of an
    older schema version is migrated first)."""
    if hint is _Cmd:
        return _command_from_text(text)
    if hint is _Rec and text.startswith("["):
        return _record_from_text(text)
    if text.startswith("["):
        doc = json.loads(text)
        if hint is DirectoryRecord or hint in _DIRECTORY_TYPES:
            return _directory_in(doc)
        raise TypeError(f"no compact decoding for {hint!r}")
    doc = json.loads(text)
    version = doc.get("v")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise UnknownEncoding(f"state written by schema version {version!r}; this build reads up to {SCHEMA_VERSION}")
    while version < SCHEMA_VERSION:
        doc = MIGRATIONS[version](doc)
        version += 1
    return from_jsonable(doc["d"], hint)


# ---------------------------------------------------------------------------------------
# Scale mode's state of one bucket: one line per partition, `gkey \t seq_cause \t seq_next
# \t record`, in key order. A batch decodes only the lines of the partitions it touches;
# the others are carried as text. (Topic names cannot hold a tab or newline, and the
# compact JSON of a record holds neither unescaped.)
#
# Spark moves a bucket's whole state on every batch that touches it: out of RocksDB,
# pickled to the Python worker, and back into RocksDB and its changelog. The lines are
# therefore stored compressed (layout 2): `bucket-v2 \n <length of the lines in bytes> \n
# <base64 of their zstd frame>`. The lines are much alike (each topic's name, the state
# names and the broker lists again and again): the benchmark's buckets at 100,000
# partitions take a twenty-ninth of their text, and zstd at level 1 costs about half a
# millisecond per megabyte each way. The state schema stays one string, so
# a checkpoint of layout 1 (the lines under a `bucket-v1` header) is read as it was.

_ZSTD = pyarrow.Codec("zstd", compression_level=1)


def compressed(text: str) -> str:
    """`text` as `<its length in UTF-8 bytes> \\n <base64 of its zstd frame>` (`decompressed`
    reads it); the directory's chunks are kept the same way (`directory_store`)."""
    raw = text.encode()
    return f"{len(raw)}\n{base64.b64encode(_ZSTD.compress(raw, asbytes=True)).decode('ascii')}"


def decompressed(packed: str) -> str:
    head, _, data = packed.partition("\n")
    size = int(head)
    return _ZSTD.decompress(base64.b64decode(data), decompressed_size=size, asbytes=True).decode() if size else ""


def bucket_entries(text: str | None) -> dict[str, str]:
    """{gkey: encoded line tail} of a bucket's state."""
    if not text:
        return {}
    header, _, body = text.partition("\n")
    if header == BUCKET_HEADER:
        body = decompressed(body)
    elif header != BUCKET_HEADER_V1:
        raise UnknownEncoding(f"bucket state in layout {header[:20]!r}; this build reads {BUCKET_HEADER!r} "
                              f"and {BUCKET_HEADER_V1!r}")
    if not body:  # a bucket whose partitions were all deleted
        return {}
    out = {}
    for line in body.split("\n"):
        gkey, _, rest = line.partition("\t")
        out[gkey] = rest
    return out


def bucket_entry_in(entry: str) -> tuple[Any, int, int]:
    seq_cause, seq_next, record = entry.split("\t", 2)
    return loads(record, _Rec), int(seq_cause), int(seq_next)


def bucket_entry_out(record: Any, seq_cause: int, seq_next: int) -> str:
    return f"{seq_cause}\t{seq_next}\t{dumps(record)}"


def bucket_entry_seq(entry: str, seq_cause: int, seq_next: int) -> str:
    """`entry` with other sequence numbers, its record's text as it was."""
    record = entry.split("\t", 2)[2]
    return f"{seq_cause}\t{seq_next}\t{record}"


def bucket_text(entries: dict[str, str]) -> str:
    """A bucket's state: its lines in key order, compressed (the same state is the same
    bytes, for one build of zstd)."""
    lines = "\n".join([f"{k}\t{entries[k]}" for k in sorted(entries)])
    return f"{BUCKET_HEADER}\n{compressed(lines)}"
