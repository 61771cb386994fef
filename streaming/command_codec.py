"""Compact encoding of a command, as it travels from the sequencer to the partition stage.

A command travels as `topic \t partition \t shared`, where `shared` is the JSON of what a
fan-out sends to every partition alike: the cause, the context and the op. The sequencer
encodes it once per run of equal commands (`packing.pack_groups` writes the run's shared
part once) and the partition stage decodes each distinct one once: everything in it is
immutable, so partitions can share the objects. A command of another rule set (kraft
mode's contexts and ops) travels as the versioned generic document instead.
"""

from __future__ import annotations

import json
from typing import Any

from state_machines import commands, contract_record, model

from .json_text import canonical_json, compact_json, json_str
from .record_codec import brokers_in, brokers_out, la_in, la_out
from .tagged import TAGGED, from_jsonable, to_jsonable
from .versions import COMPACT_VERSION, SCHEMA_VERSION, UnknownEncoding, check_compact


def _op_out(op: Any) -> list[Any]:
    if isinstance(op, commands.LoadPartition):
        a = op.assignment
        return [
            "LoadPartition",
            list(a.replicas),
            list(a.adding_replicas),
            list(a.removing_replicas),
            la_out(op.leadership),
            op.overwrite,
        ]
    cls: type = type(op)
    return [
        cls.__name__,
        *(getattr(op, n) for n in contract_record.field_names(cls)),
    ]  # tuples encode as arrays


def _op_in(a: list[Any]) -> Any:
    name, args = a[0], a[1:]
    if name == "LoadPartition":
        return commands.LoadPartition(
            model.ReplicaAssignment(tuple(args[0]), tuple(args[1]), tuple(args[2])),
            la_in(args[3]),
            args[4],
        )
    cls = TAGGED[name]
    return cls(*(tuple(v) if isinstance(v, list) else v for v in args))


# A command travels as `topic \t partition \t shared`, where `shared` is the JSON of what
# a fan-out sends to every partition alike: the cause, the context and the op. The
# sequencer encodes it once per run of equal commands and the partition stage decodes each
# distinct one once (everything in it is immutable, so partitions can share the objects).
_last_shared: list[Any] = [None, None, None, None, ""]  # ctx, op, cause_offset, cause_id, text
_SHARED: dict[str, tuple[Any, ...]] = {}
# The shared parts written lately, by the identity of their context and op (a fan-out over
# a broker's partitions alternates between a few contexts, one per replica set): the
# objects are kept beside the text, so an id is never taken for a later object's.
_SHARED_TEXT: dict[tuple[int, int, int, str | None], tuple[Any, Any, str]] = {}


_CONTEXT_TEXT: dict[int, tuple[commands.PartitionContext, str]] = {}


def _context_in(x: list[Any]) -> commands.PartitionContext:
    return commands.PartitionContext(x[0], x[1], x[2], x[3], brokers_in(x[4]))


# Contexts by value too: a creation makes a context for each partition, and a cluster's are
# few (one per replica set and broker state), so most are written already.
_CONTEXT_BY_VALUE: dict[commands.PartitionContext, str] = {}


def _context_text(x: commands.PartitionContext) -> str:
    kept = _CONTEXT_TEXT.get(id(x))
    if kept is None or kept[0] is not x:
        text = _CONTEXT_BY_VALUE.get(x)
        if text is None:
            if len(_CONTEXT_BY_VALUE) >= 65536:
                _CONTEXT_BY_VALUE.clear()
            text = _CONTEXT_BY_VALUE[x] = compact_json(
                [
                    x.active,
                    x.controller_epoch,
                    x.unclean_leader_election_enable,
                    x.queued_for_deletion,
                    brokers_out(x.brokers),
                ]
            )
        if len(_CONTEXT_TEXT) >= 4096:
            _CONTEXT_TEXT.clear()
        kept = _CONTEXT_TEXT[id(x)] = (x, text)
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
    if not (
        last[0] is c.ctx
        and last[2] == c.cause_offset
        and last[3] == c.cause_id
        and (last[1] is c.op or last[1] == c.op)
    ):
        key = (id(c.ctx), id(c.op), c.cause_offset, c.cause_id)
        kept = _SHARED_TEXT.get(key)
        if kept is not None and kept[0] is c.ctx and kept[1] is c.op:
            text = kept[2]
        else:
            # compact_json([COMPACT_VERSION, cause_offset, cause_id, ctx, op]), the context's
            # part written once per context (a creation sends each partition its own op)
            text = (
                f"[{COMPACT_VERSION},{c.cause_offset},"
                f"{'null' if c.cause_id is None else json_str(c.cause_id)},"
                f"{_context_text(c.ctx)},{_op_text(c.op)}]"
            )
            if len(_SHARED_TEXT) >= 4096:
                _SHARED_TEXT.clear()
            _SHARED_TEXT[key] = (c.ctx, c.op, text)
        last[:] = [c.ctx, c.op, c.cause_offset, c.cause_id, text]
    shared: str = last[4]
    return shared


def _generic_shared_text(c: commands.Command) -> str:
    """A command of another rule set (kraft mode's contexts and ops): the generic document
    of its shared part, which the decoder tells from the compact array by its "{"."""
    last = _last_shared
    if not (
        last[0] is c.ctx and last[2] == c.cause_offset and last[3] == c.cause_id and last[1] == c.op
    ):
        text = canonical_json(
            {
                "v": SCHEMA_VERSION,
                "d": [c.cause_offset, c.cause_id, to_jsonable(c.ctx), to_jsonable(c.op)],
            }
        )
        last[:] = [c.ctx, c.op, c.cause_offset, c.cause_id, text]
    shared: str = last[4]
    return shared


def _generic_shared(shared: str) -> tuple[Any, ...]:
    doc = json.loads(shared)
    if doc.get("v") != SCHEMA_VERSION:
        raise UnknownEncoding(
            f"command in schema version {doc.get('v')!r}; this build reads {SCHEMA_VERSION}"
        )
    cause_offset, cause_id, ctx, op = doc["d"]
    return (
        cause_offset,
        cause_id,
        from_jsonable(ctx, TAGGED[ctx["_t"]]),
        from_jsonable(op, TAGGED[op["_t"]]),
    )


def command_from_text(text: str) -> commands.Command:
    topic, partition, shared = text.split("\t", 2)
    return commands.Command(topic, int(partition), *shared_parts(shared))


def shared_parts(shared: str) -> tuple[Any, ...]:
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


def _compact_shared(shared: str) -> tuple[Any, ...] | None:
    cause_end = shared.find(",", len(_SHARED_HEAD))
    if cause_end < 0 or not shared.endswith("]"):
        return None
    cause_text = shared[len(_SHARED_HEAD) : cause_end]
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
    ctx_text, op_text = shared[ctx_start:op_start], shared[op_start + 1 : -1]
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
