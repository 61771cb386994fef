"""`shadow-controller metadata-log`: commands over a copy of KRaft's metadata log
(`<metadata.log.dir>/__cluster_metadata-0/`).

- `dump PATH... [--from-offset N] [--json] [--skip-corrupt]` prints the batches and records
  as `kafka-dump-log --cluster-metadata-decoder --files ...` does (DumpLogSegments.dumpLog
  and printBatchLevel, kafka 3.9), or one JSON object per record with `--json`.
- `verify`: registered by its own module, below (`_SUBCOMMANDS`).

A file that cannot be read, a corrupt batch or a record that does not decode is one line
on stderr naming the file and byte offset, and exit 2; with `--skip-corrupt` each is
reported on stderr, the dump goes on, and the exit code is 1 when anything was skipped.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TextIO

from state_machines.speed import IdentityMemo
from streaming import exits
from streaming.metadata_log.batches import (
    DELETE_HORIZON_FLAG,
    LOG_APPEND_TIME_FLAG,
    SEGMENT,
    SNAPSHOT,
    LogRecord,
    RecordBatch,
    log_files,
    read_batches,
)
from streaming.metadata_log.errors import CorruptBatch, MetadataLogError, RecordDecodeError
from streaming.metadata_log.records import (
    ControlRecord,
    control_type,
    decode_control,
    decode_metadata,
)
from streaming.metadata_log.schemas import CONTROL, METADATA_BY_NAME, Field

from .metadata_log_verify import add_parser as add_verify_parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"an offset is not negative: {text}")
    return value


def add_parser(sub: Any) -> None:
    group = sub.add_parser(
        "metadata-log",
        help="read a KRaft cluster's metadata log (__cluster_metadata): dump, verify",
        description=__doc__.split("\n\n")[0],
    )
    commands = group.add_subparsers(dest="metadata_log_command", metavar="COMMAND", required=True)
    dump = commands.add_parser(
        "dump",
        help="print the batches and records, like kafka-dump-log --cluster-metadata-decoder",
    )
    dump.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="segment (.log) or snapshot (.checkpoint) files, or __cluster_metadata-0 directories",
    )
    dump.add_argument(
        "--from-offset",
        type=_positive_int,
        default=None,
        metavar="N",
        help="only records at log offset N and after (snapshots are then left out)",
    )
    dump.add_argument("--json", action="store_true", help="one JSON object per record")
    dump.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="report a corrupt batch or record on stderr and go on (exit 1 at the end)",
    )
    dump.set_defaults(func=cmd_dump)
    for register in _SUBCOMMANDS:
        register(commands)


# `verify` (and any later sibling) adds itself here: a function taking the `metadata-log`
# group's subparsers, e.g. `from .metadata_log_verify import add_parser as add_verify`.
_SUBCOMMANDS: list[Callable[[Any], None]] = [add_verify_parser]


# -- JSON as Kafka's generated JsonConverters write it ---------------------------------------


def _camel(name: str) -> str:
    """MessageGenerator's camelCaseName: the JSON name with its first letter lowered."""
    return name[:1].lower() + name[1:]


# how each field is shown: as is, a tuple as a list, bytes as base64, a struct (array)
_PLAIN, _LIST, _BYTES, _STRUCTS, _STRUCT = range(5)
_Plan = tuple[tuple[str, str, Field, int], ...]
# per version, by identity of the schema's fields, which the memo holds
_PLANS: dict[int, IdentityMemo[_Plan]] = {}


def _plan(fields: tuple[Field, ...], version: int) -> _Plan:
    """The fields of a version in order, each with its key, JSON name and kind; computed
    once per schema and version."""
    plans = _PLANS.get(version)
    if plans is None:
        plans = _PLANS[version] = IdentityMemo(4096)
    plan = plans.get(fields)
    if plan is None:
        kinds = {"bytes": _BYTES, "[]": _STRUCTS, "{}": _STRUCT}
        plan = tuple(
            (
                f.key,
                _camel(f.name),
                f,
                kinds.get(f.type, _LIST if f.type.startswith("[]") else _PLAIN),
            )
            for f in fields
            if f.present(version)
        )
        plans.put((fields,), plan)
    return plan


def _json_fields(
    fields: tuple[Field, ...], values: Mapping[str, Any], version: int
) -> dict[str, Any]:
    """A record's data as `<Name>JsonConverter.write` shows it: the fields of the version,
    camelCase names; a tagged field only when it differs from its default."""
    out: dict[str, Any] = {}
    for key, name, f, kind in _plan(fields, version):
        value = values.get(key, f.default)
        if f.tag is not None and f.is_default(value):
            continue
        if value is None or kind == _PLAIN:
            out[name] = value
        elif kind == _LIST:
            out[name] = list(value)
        elif kind == _BYTES:
            out[name] = base64.b64encode(value).decode("ascii")
        elif kind == _STRUCTS:
            out[name] = [_json_fields(f.fields, item, version) for item in value]
        else:
            out[name] = _json_fields(f.fields, value, version)
    return out


@cache
def _enum_name(name: str) -> str:
    """MetadataRecordType's constant: RegisterBrokerRecord -> REGISTER_BROKER_RECORD."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (name[i - 1].islower() or name[i - 1].isdigit()):
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


def metadata_json(value: bytes) -> dict[str, Any]:
    """ClusterMetadataLogMessageParser.parse's payload: type, version, data."""
    record = decode_metadata(value)
    schema = METADATA_BY_NAME[record.name]
    data = _json_fields(schema.fields, record.fields, record.version)
    return {"type": _enum_name(record.name), "version": record.version, "data": data}


def control_json(record: ControlRecord) -> dict[str, Any]:
    if record.type not in CONTROL:
        return dict(record.fields)
    return _json_fields(CONTROL[record.type].fields, record.fields, record.version)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- dump ------------------------------------------------------------------------------------


class _Dump:
    def __init__(self, out: TextIO, err: TextIO, as_json: bool, skip_corrupt: bool) -> None:
        self.out = out
        self.err = err
        self.as_json = as_json
        self.skip_corrupt = skip_corrupt
        self.skipped = 0

    def problem(self, path: str, position: int, reason: str) -> None:
        if not self.skip_corrupt:
            raise MetadataLogError(path, position, reason)
        self.skipped += 1
        print(
            f"shadow-controller metadata-log dump: {path}: byte {position}: {reason}", file=self.err
        )

    def file(self, path: Path, from_offset: int | None) -> None:
        if not self.as_json:
            print(f"Dumping {path}", file=self.out)
            segment, snapshot = SEGMENT.match(path.name), SNAPSHOT.match(path.name)
            if path.name == "bootstrap.checkpoint":  # BootstrapDirectory's binary file
                print("KRaft bootstrap snapshot", file=self.out)
            elif segment:
                print(f"Log starting offset: {int(segment.group(1))}", file=self.out)
            elif snapshot:
                print(
                    f"Snapshot end offset: {int(snapshot.group(1))}, "
                    f"epoch: {int(snapshot.group(2))}",
                    file=self.out,
                )
        end = 0
        for item in read_batches(path, skip_corrupt=self.skip_corrupt):
            if isinstance(item, CorruptBatch):
                self.problem(item.path, item.position, item.reason)
                continue
            end = item.position + item.size
            if from_offset is not None and item.last_offset < from_offset:
                continue
            self.batch(item, from_offset)
        try:
            trailing = path.stat().st_size - end
        except OSError:  # removed while it was read (a segment deleted by retention)
            trailing = 0
        if trailing > 0 and not self.as_json and not self.skipped:
            # DumpLogSegments.dumpLog: a batch still being written, or a torn tail
            print(f"Found {trailing} invalid bytes at the end of {path.name}", file=self.out)

    def batch(self, batch: RecordBatch, from_offset: int | None) -> None:
        if not self.as_json:
            print(
                f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
                f"count: {len(batch.records)} baseSequence: {batch.base_sequence} "
                f"lastSequence: {_last_sequence(batch)} producerId: {batch.producer_id} "
                f"producerEpoch: {batch.producer_epoch} "
                f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
                f"isTransactional: {_bool(batch.is_transactional)} "
                f"isControl: {_bool(batch.is_control)} deleteHorizonMs: {_delete_horizon(batch)} "
                f"position: {batch.position} {_timestamp_type(batch)}: {batch.max_timestamp} "
                f"size: {batch.size} magic: {batch.magic} compresscodec: {batch.compression} "
                f"crc: {batch.crc} isvalid: true",
                file=self.out,
            )
        for record in batch.records:
            if from_offset is not None and record.offset < from_offset:
                continue
            self.record(batch, record)

    def record(self, batch: RecordBatch, record: LogRecord) -> None:
        kind: str
        body: Any
        try:
            if batch.is_control:
                _, name = control_type(record.key)
                if name not in CONTROL and name not in ("Abort", "Commit"):
                    # DumpLogSegments.printControlRecord's default: named, not decoded
                    kind, body, version = name, None, None  # name: "Unknown(<id>)"
                else:
                    control = decode_control(record.key, record.value)
                    kind, body = control.type, control_json(control)
                    version = control.version
            else:
                if record.value is None:
                    raise RecordDecodeError("a metadata record without a value")
                payload = metadata_json(record.value)
                kind, body, version = "payload", payload, payload["version"]
        except RecordDecodeError as exc:
            self.problem(batch.path, batch.position, f"offset {record.offset}: {exc.reason}")
            return
        if self.as_json:
            line: dict[str, Any] = {
                "file": batch.path,
                "position": batch.position,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "control": batch.is_control,
            }
            if batch.is_control:
                line.update(type=kind, version=version, data=body)
            else:
                line.update(body)
            print(_dumps(line), file=self.out)
            return
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        head = (
            f"| offset: {record.offset} {_timestamp_type(batch)}: {record.timestamp} "
            f"keySize: {key_size} valueSize: {value_size} sequence: {_sequence(batch, record)} "
            f"headerKeys: [{','.join(k for k, _ in record.headers)}]"
        )
        if batch.is_control:
            print(f"{head} {_control_text(kind, body)}", file=self.out)
        else:
            print(f"{head} payload: {_dumps(body)}", file=self.out)


def _control_text(kind: str, body: Any) -> str:
    """DumpLogSegments.printControlRecord (Kafka 4.x): `LeaderChange: {json}` (3.9 named it
    `controlType: LEADER_CHANGE(2)` only), `SnapshotHeader {json}` and the others without
    the colon, a transaction marker as `endTxnMarker: COMMIT coordinatorEpoch: N`."""
    if kind in ("Abort", "Commit"):
        return f"endTxnMarker: {kind.upper()} coordinatorEpoch: {body['coordinator_epoch']}"
    if kind == "LeaderChange":
        return f"LeaderChange: {_dumps(body)}"
    if kind.startswith("Unknown("):
        return f"controlType: UNKNOWN{kind[len('Unknown') :]}"
    return f"{kind} {_dumps(body)}"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _delete_horizon(batch: RecordBatch) -> str:
    # DefaultRecordBatch.deleteHorizonMs: the base timestamp, when attribute bit 6 says so
    if batch.attributes & DELETE_HORIZON_FLAG:
        return f"OptionalLong[{batch.first_timestamp}]"
    return "OptionalLong.empty"


def _timestamp_type(batch: RecordBatch) -> str:
    return "LogAppendTime" if batch.attributes & LOG_APPEND_TIME_FLAG else "CreateTime"


def _last_sequence(batch: RecordBatch) -> int:
    # DefaultRecordBatch.lastSequence: no sequence without a producer
    if batch.base_sequence < 0:
        return -1
    return (batch.base_sequence + batch.last_offset - batch.base_offset) % (2**31)


def _sequence(batch: RecordBatch, record: LogRecord) -> int:
    if batch.base_sequence < 0:
        return -1
    return (batch.base_sequence + record.offset - batch.base_offset) % (2**31)


def dump(
    paths: list[str],
    *,
    from_offset: int | None = None,
    as_json: bool = False,
    skip_corrupt: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The dump of `paths`; the exit code (1 when something was skipped)."""
    out, err = out or sys.stdout, err or sys.stderr
    files = log_files(paths)
    if from_offset is not None:
        files = [f for f in files if not SNAPSHOT.match(f.name)] or files
    state = _Dump(out, err, as_json, skip_corrupt)
    for path in _from(files, from_offset):
        state.file(path, from_offset)
    return exits.CHECK_FAILED if state.skipped else exits.OK


def _from(files: list[Path], from_offset: int | None) -> Iterator[Path]:
    """Leave out a segment wholly below `from_offset`: the next segment of the same
    directory starts at or before it."""
    for i, path in enumerate(files):
        if from_offset is not None and SEGMENT.match(path.name) and i + 1 < len(files):
            following = files[i + 1]
            m = SEGMENT.match(following.name)
            if m and following.parent == path.parent and int(m.group(1)) <= from_offset:
                continue
        yield path


def cmd_dump(args: argparse.Namespace) -> int:
    try:
        return dump(
            args.paths,
            from_offset=args.from_offset,
            as_json=args.json,
            skip_corrupt=args.skip_corrupt,
        )
    except BrokenPipeError:  # `dump ... | head`
        sys.stderr.close()
        return exits.OK
