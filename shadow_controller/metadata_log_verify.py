"""`shadow-controller metadata-log verify PATH... [--json] [--report DIR] [--skip-corrupt]`:
check every decision a KRaft cluster's controller wrote to its metadata log against the
project's KRaft rules (issue 45 §2).

The files are read as `dump` reads them (`streaming.metadata_log`); the checking is
`state_machines.log_verify` (pure). When the log's start has been cleaned (its first
segment starts past offset 0), the state is loaded from the earliest snapshot that reaches
it, as Kafka's replay loads it, and the records from the snapshot's end offset on are
checked. metadata.version and ELR's feature level come from the log's FeatureLevelRecords.

The controller's own static configs are not in the log: Kafka's defaults
(min.insync.replicas 1, unclean.leader.election.enable false) unless `--controller-config`
says otherwise.

Output: each event that diverges, or whose grouping is ambiguous, then a summary; `--json`
prints one JSON object instead; `--report DIR` writes every event's verdict
(`events.jsonl`) and the summary (`summary.json`). Exit 1 when a safety divergence was
found (or, with `--skip-corrupt`, a batch was skipped), 2 for a file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from state_machines.log_verify.entries import LogEntry
from state_machines.log_verify.log_state import ReplayError, StaticConfig
from state_machines.log_verify.verifier import EventVerdict, Verifier
from streaming import exits
from streaming.exits import UsageError
from streaming.metadata_log.batches import SEGMENT, SNAPSHOT, log_files, read_batches
from streaming.metadata_log.errors import CorruptBatch, MetadataLogError, RecordDecodeError
from streaming.metadata_log.records import decode_control, decode_metadata

PROG = "shadow-controller metadata-log verify"
_CONFIG_KEYS = ("min.insync.replicas", "unclean.leader.election.enable")


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "verify",
        help="check every decision in the log against the KRaft rules",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="segment (.log) or snapshot (.checkpoint) files, or __cluster_metadata-0 directories",
    )
    p.add_argument("--json", action="store_true", help="print the verdicts as one JSON object")
    p.add_argument("--report", metavar="DIR", help="write events.jsonl and summary.json here")
    p.add_argument(
        "--skip-corrupt",
        action="store_true",
        help="report a corrupt batch or record on stderr and go on (exit 1 at the end)",
    )
    p.add_argument(
        "--controller-config",
        action="append",
        metavar="KEY=VALUE",
        help="the controllers' static min.insync.replicas or unclean.leader.election.enable "
        "(server.properties; not in the log)",
    )
    p.set_defaults(func=cmd_verify)


def _static(items: list[str] | None) -> StaticConfig:
    values: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in _CONFIG_KEYS:
            raise UsageError(
                f"--controller-config takes KEY=VALUE with KEY one of {', '.join(_CONFIG_KEYS)}: "
                f"{item!r}"
            )
        values[key.strip()] = value.strip()
    static = StaticConfig()
    try:
        min_isr = int(values.get("min.insync.replicas", static.min_insync_replicas))
    except ValueError:
        raise UsageError("--controller-config min.insync.replicas takes an integer") from None
    if min_isr < 1:
        raise UsageError("--controller-config min.insync.replicas is at least 1")
    unclean = values.get("unclean.leader.election.enable")
    if unclean is not None and unclean.lower() not in ("true", "false"):
        raise UsageError("--controller-config unclean.leader.election.enable takes true or false")
    return StaticConfig(
        min_insync_replicas=min_isr,
        unclean_leader_election_enable=(unclean or "false").lower() == "true",
    )


class _Reader:
    def __init__(self, skip_corrupt: bool, err: TextIO) -> None:
        self.skip_corrupt = skip_corrupt
        self.err = err
        self.skipped = 0

    def problem(self, path: str, position: int | None, reason: str) -> None:
        if not self.skip_corrupt:
            raise MetadataLogError(path, position, reason)
        self.skipped += 1
        print(f"{PROG}: {path}: byte {position}: {reason}", file=self.err)

    def entries(self, path: Path, snapshot: bool, from_offset: int = 0) -> Iterator[LogEntry]:
        for batch in read_batches(path, skip_corrupt=self.skip_corrupt):
            if isinstance(batch, CorruptBatch):
                self.problem(batch.path, batch.position, batch.reason)
                continue
            if batch.last_offset < from_offset:
                continue
            base = batch.base_offset
            for record in batch.records:
                if record.offset < from_offset:
                    continue
                try:
                    if batch.is_control:
                        c = decode_control(record.key, record.value)
                        yield LogEntry(
                            record.offset, base, c.type, c.version, c.fields, True, snapshot
                        )
                        continue
                    if record.value is None:
                        raise RecordDecodeError("a metadata record without a value")
                    m = decode_metadata(record.value)
                except RecordDecodeError as exc:
                    self.problem(
                        batch.path, batch.position, f"offset {record.offset}: {exc.reason}"
                    )
                    continue
                yield LogEntry(record.offset, base, m.name, m.version, m.fields, False, snapshot)


def _plan(paths: list[str]) -> tuple[Path | None, int, list[Path]]:
    """The snapshot to start from (None: the log from offset 0), the first offset to check,
    and the segments."""
    files = log_files(paths)
    snapshots = [f for f in files if SNAPSHOT.match(f.name)]
    segments = [f for f in files if SEGMENT.match(f.name)]
    starts = [int(m.group(1)) for f in segments if (m := SEGMENT.match(f.name))]
    log_start = min(starts) if starts else None
    if log_start == 0 or (log_start is not None and not snapshots):
        if log_start:
            raise UsageError(
                f"the log starts at offset {log_start} (its start was cleaned) and no snapshot "
                "(.checkpoint) is given to load the state before it: pass the whole "
                "__cluster_metadata-0 directory"
            )
        return None, 0, segments
    ends = sorted((int(m.group(1)), f) for f in snapshots if (m := SNAPSHOT.match(f.name)))
    if log_start is None:
        end, snap = ends[-1]
        return snap, end, []
    reaching = [(end, f) for end, f in ends if end >= log_start]
    if not reaching:
        raise UsageError(
            f"the log starts at offset {log_start} and no snapshot reaches it (the latest ends at "
            f"{ends[-1][0]}): the state before the log cannot be loaded"
        )
    end, snap = reaching[0]
    return snap, end, segments


def verify(
    paths: list[str],
    *,
    as_json: bool = False,
    report: str | None = None,
    skip_corrupt: bool = False,
    static: StaticConfig | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    snapshot, start, segments = _plan(paths)
    reader = _Reader(skip_corrupt, err)
    v = Verifier(static)
    events_out = None
    if report:
        directory = Path(report)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            events_out = open(directory / "events.jsonl", "w")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"--report {report}: {exc.strerror or exc}") from None
    try:
        if snapshot is not None:
            try:
                v.load_snapshot(reader.entries(snapshot, True), start)
            except ReplayError as exc:
                raise UsageError(f"{snapshot}: the snapshot cannot be loaded: {exc}") from None
        for path in segments:
            for entry in reader.entries(path, False, start):
                v.feed(entry)
        summary = v.finish()
        if events_out is not None:
            for verdict in v.verdicts:
                events_out.write(json.dumps(verdict.to_json(), separators=(",", ":")) + "\n")
    finally:
        if events_out is not None:
            events_out.close()
    doc = summary.to_json()
    doc["files"] = [str(p) for p in ([snapshot] if snapshot else []) + segments]
    doc["skipped_corrupt"] = reader.skipped
    if report:
        (Path(report) / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    shown = [x for x in v.verdicts if x.outcome != "match" or x.grouping is not None]
    if as_json:
        print(
            json.dumps({"summary": doc, "events": [x.to_json() for x in shown]}, indent=2), file=out
        )
    else:
        _print_text(doc, shown, out)
    failed = summary.divergent.get("safety", 0) > 0 or reader.skipped > 0
    return exits.CHECK_FAILED if failed else exits.OK


def _print_text(doc: dict[str, Any], shown: list[EventVerdict], out: TextIO) -> None:
    for x in shown:
        where = (
            f"{x.first_offset}"
            if x.first_offset == x.last_offset
            else f"{x.first_offset}-{x.last_offset}"
        )
        print(f"{x.outcome:7} offsets {where}: {x.kind} ({x.method})", file=out)
        if x.grouping:
            print(f"        grouping ambiguous: {x.grouping}", file=out)
        if x.note:
            print(f"        note: {x.note}", file=out)
        for d in x.divergences:
            at = ",".join(map(str, d.offsets)) or "-"
            print(f"  {d.severity:6} {d.partition or ''} @{at}: {'; '.join(d.reasons)}", file=out)
            if d.log is not None or d.predicted is not None:
                print(f"           log:       {json.dumps(d.log)}", file=out)
                print(f"           predicted: {json.dumps(d.predicted)}", file=out)
            print(f"           decided by {d.method}", file=out)
    snap = doc["snapshot"]
    if snap["end_offset"] is not None:
        print(
            f"started from a snapshot ending at offset {snap['end_offset']} "
            f"({snap['records']} records loaded)",
            file=out,
        )
    print(
        f"metadata.version {doc['metadata_version'] or 'not in the log (3.0-IV1 assumed)'}, "
        f"ELR {'on' if doc['eligible_leader_replicas'] else 'off'}",
        file=out,
    )
    kinds = ", ".join(f"{k} {n}" for k, n in doc["events_by_kind"].items())
    print(f"events by kind: {kinds or 'none'}", file=out)
    if doc["records_not_checked"]:
        other = ", ".join(f"{k} {n}" for k, n in doc["records_not_checked"].items())
        print(f"records the rules do not read: {other}", file=out)
    div = doc["divergent"]
    print(
        f"batches {doc['batches']}, records {doc['records']} (+{doc['control_records']} control), "
        f"events {doc['events']}, decisions checked {doc['decisions_checked']}, matched "
        f"{doc['matched']}, divergent: benign {div['benign']}, safety {div['safety']}; inputs "
        f"checked {doc['inputs_checked']}; ambiguous groupings {doc['ambiguous_groupings']}",
        file=out,
    )


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        return verify(
            args.paths,
            as_json=args.json,
            report=args.report,
            skip_corrupt=args.skip_corrupt,
            static=_static(args.controller_config),
        )
    except BrokenPipeError:  # `verify ... | head`
        sys.stderr.close()
        return exits.OK
