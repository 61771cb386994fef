"""File output without the decisions on the driver: each executor writes its own.

A creation of a million partitions decides about nine million records; collected on the
driver through Arrow they need gigabytes of heap in the JVM and in Python at once
(`bench/job_bench.py` at 1,000,000 partitions ran out of both). With file output the
executors therefore write them, in the same Spark job as the batch (one action, so the
stateful operators run once):

* **executors**: decision runs, sorted in the contract's order (cause_offset, key, seq),
  are written as segments of a part file of each task's own under
  `<output>/_parts/<batch id>/`, and only what the driver must see passes on: the other
  kinds of row (summaries, deletion reports, dead letters, the controlled-shutdown and
  UpdateMetadata shares, metrics, statistics), one `part` row naming a file's segments
  with their counts, and one `safety` row per safety divergence, to log. In scale mode
  the partition stage writes each group's runs as it folds them, a segment per group
  (`write_group`): the runs never cross to the JVM. Keyed per partition, a task folds
  thousands of groups, so the sink runs one more step after the stage instead
  (`write_part`): each task unpacks the stage's rows, one Arrow batch at a time, and
  writes each batch's runs as a segment;
* **the driver** (`write_batch`): assembles the small rows as ever
  (`assemble.assemble_runs`: shares merged into their results), then merges its own few
  runs with the sorted segments into `decisions-<batch id>.jsonl`, streaming, and removes
  the parts. The file is byte-for-byte what `assemble_batch` writes from a collect.

The parts are named by task attempt, and the driver reads only the files the collect
named, so a task or a batch run again leaves no doubt which files count. On a cluster the
output directory must be one every executor and the driver share, like the checkpoint.
"""

from __future__ import annotations

import heapq
import io
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow

from state_machines.errors import ShadowControllerError

from .assemble import UNCLEAN_ELECTION, Assembled, Run, assemble_runs, may_be_safety, run_order
from .packing import US, OutputRow, pack_outputs, unpack_outputs

PARTS_DIR = "_parts"

# A segment is one zstd frame (level 1): the benchmark's decisions shrink 40 to 120-fold
# (a creation's 43-fold), and a creation of a million partitions writes 2 GB of them,
# which the driver writes again into the decisions file; written as they were, the parts
# doubled the disk's work.
_SEGMENT_CODEC = pyarrow.Codec("zstd", compression_level=1)
_READ_BUFFER = 64 * 1024

# A run as the driver merges it: (cause_offset, key, first seq, its documents as UTF-8,
# each ending in a newline).
Entry = tuple[int, str, int, bytes]


def parts_dir(base: str, batch_id: int) -> str:
    return os.path.join(base, PARTS_DIR, f"{batch_id:012d}")


def write_part(batches: Iterable[Sequence[str]], directory: str, task: str) -> list[str]:
    """Executor side: write the decision runs of `batches` (each a sequence of packed output
    rows, as Spark hands them over) to a part file in `directory`, one sorted segment per
    batch, so that a task holds one batch's runs at a time; return the packed rows the
    driver needs."""
    small = _write_segments((unpack_outputs(texts) for texts in batches), directory, _part_path(directory, task), "wb")
    return pack_outputs(small) if small else []


def stage_parts_base(output: str, buckets: int) -> str | None:
    """The output directory, when the partition stage writes its groups' decision runs
    itself (`write_group`): file output in scale mode, where a task folds a few hundred
    groups at most. Keyed per partition, a task folds thousands of groups, too many
    segments for the driver to merge, and the sink writes each task's runs after the
    stage (`write_part`)."""
    return output[5:] if output.startswith("file:") and buckets > 0 else None


def write_group(rows: list[OutputRow], directory: str, task: str) -> list[OutputRow]:
    """Executor side, in the partition stage (scale mode): one group's decision runs
    appended to its task attempt's part file as one sorted segment; returns the other
    rows, and one naming the segment. A task's groups run one after another in one Python
    worker, which closes the file after each group."""
    global _TASK_PART
    if _TASK_PART[0] != (directory, task):
        _TASK_PART = ((directory, task), _part_path(directory, task))
    return _write_segments((rows,), directory, _TASK_PART[1], "ab")


# the batch's parts directory and the task attempt whose groups this Python worker appends
# to a part, and the part's path
_TASK_PART: tuple[tuple[str, str], str] = (("", ""), "")


def _part_path(directory: str, task: str) -> str:
    """A new part of the task attempt `task` (a random suffix: a batch run again after a
    crash may meet the same attempt's name)."""
    return os.path.join(directory, f"part-{task}-{uuid.uuid4().hex}.runs")


def _write_segments(batches: Iterable[Iterable[OutputRow]], directory: str, path: str, mode: str) -> list[OutputRow]:
    """Each batch's decision runs as a sorted segment of the file at `path` (opened with
    `mode`, once there is a run to write); the other rows, and a `part` row naming the
    segments."""
    small: list[OutputRow] = []
    segments: list[int] = []  # where each segment starts, then where the file ends
    records = unclean = 0
    fh = None
    try:
        for rows in batches:
            runs: list[Run] = []
            for kind, cause, key, seq, payload in rows:
                if kind == "decision":
                    runs.append((cause, key, seq, payload))
                else:
                    small.append((kind, cause, key, seq, payload))
            if not runs:
                continue
            runs.sort(key=run_order)
            if fh is None:
                os.makedirs(directory, exist_ok=True)
                fh = open(path, mode)
            segments.append(fh.tell())
            text = _segment_text(runs)
            fh.write(_SEGMENT_CODEC.compress(text.encode(), asbytes=True))
            # counted over the segment's text at once: each run's header and documents end
            # in a newline, and neither a header nor a key holds the unclean election's text
            records += text.count("\n") - len(runs)
            unclean += text.count(UNCLEAN_ELECTION)
            if may_be_safety(text):
                for cause, key, _, payload in runs:
                    if may_be_safety(payload):
                        small.extend(("safety", cause, key, 0, doc) for doc in payload.split("\n") if may_be_safety(doc))
        if fh is not None:
            # no fsync: a part lives for its batch only, and the driver reads it after the
            # task has closed it (close-to-open, on a shared filesystem too); a batch cut
            # short by a crash runs again and writes new parts
            segments.append(fh.tell())
    finally:
        if fh is not None:
            fh.close()
    if segments:
        small.append(("part", 0, "", 0, f"{path}\t{records}\t{unclean}\t{','.join(map(str, segments))}"))
    return small


@dataclass(frozen=True, slots=True)
class Part:
    path: str
    records: int
    unclean_elections: int
    segments: tuple[int, ...]  # the sorted segments' start offsets, then the file's end


def split_parts(rows: Sequence[OutputRow]) -> tuple[list[OutputRow], list[Part], list[tuple[str, str]]]:
    """Driver side: the collected rows without the `part` and `safety` rows, the parts
    they name, and the safety divergences' (key, document)."""
    rest: list[OutputRow] = []
    parts: list[Part] = []
    safety: list[tuple[str, str]] = []
    for row in rows:
        kind = row[0]
        if kind == "part":
            path, records, unclean, segments = row[4].split("\t")
            parts.append(Part(path, int(records), int(unclean), tuple(map(int, segments.split(",")))))
        elif kind == "safety":
            safety.append((row[2], row[4]))
        else:
            rest.append(row)
    return rest, parts, safety


class PartNotShared(ShadowControllerError):
    """A part an executor wrote is not where the driver looks: the output directory is not
    shared between them."""


def _segment_text(runs: list[Run]) -> str:
    """A segment's entries: each run as a header line, `cause US key US seq US length`,
    then its documents, `length` bytes in UTF-8, and a newline. The driver reads the
    header alone and copies the documents to the decisions file as they are."""
    return "".join([f"{cause}{US}{key}{US}{seq}{US}{len(payload) if payload.isascii() else len(payload.encode())}\n"
                    f"{payload}\n" for cause, key, seq, payload in runs])


def _read_segment(path: str, start: int, end: int) -> Iterator[Entry]:
    try:
        mapped = pyarrow.memory_map(path)
    except FileNotFoundError:
        raise PartNotShared(f"the decisions an executor wrote to {path} are not visible to the driver: with file "
                            f"output on a cluster, job.output must be a directory the driver and every executor "
                            f"share, at the same path (README: Submitting to a Spark cluster)") from None
    # the segment's zstd frame, decompressed as it is read: the driver holds a few
    # kilobytes of each segment at a time, whatever the batch's size
    with mapped, io.BufferedReader(pyarrow.CompressedInputStream(
            pyarrow.BufferReader(mapped.read_at(end - start, start)), "zstd"), _READ_BUFFER) as fh:
        readline, read = fh.readline, fh.read
        while header := readline():
            cause, key, seq, length = header.decode("utf-8").split(US)
            yield int(cause), key, int(seq), read(int(length) + 1)  # the documents and their newline


def merged_runs(runs: list[Run], parts: Sequence[Part]) -> Iterator[Entry]:
    """The driver's runs (sorted) and the parts' segments in the contract's order, each
    run's documents as the UTF-8 lines they are in the file. Runs of equal place keep
    the order of their sources, the driver's first (`heapq.merge` breaks ties by source)."""
    mine = ((cause, key, seq, f"{payload}\n".encode()) for cause, key, seq, payload in runs)
    segments = [_read_segment(p.path, start, end) for p in parts for start, end in zip(p.segments, p.segments[1:])]
    if not segments:
        return mine
    return heapq.merge(mine, *segments, key=run_order)


def write_decisions(path: str, runs: Iterable[Entry]) -> None:
    """Write the runs' documents, one per line, atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    try:
        # a megabyte's buffer: a run is a few hundred bytes, and each write a system call
        with open(tmp, "wb", buffering=1 << 20) as fh:
            fh.writelines(data for _, _, _, data in runs)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    os.replace(tmp, path)


def remove_parts(base: str, batch_id: int) -> None:
    shutil.rmtree(parts_dir(base, batch_id), ignore_errors=True)


def decisions_file(base: str, batch_id: int) -> str:
    return os.path.join(base, f"decisions-{batch_id:012d}.jsonl")


@dataclass(frozen=True, slots=True)
class WrittenBatch:
    out: Assembled  # the batch without its decision runs (those are in the file)
    records: int
    unclean_elections: int
    safety: list[tuple[str, str]]  # the safety divergences' (key, document), to log


def write_batch(base: str, batch_id: int, collected: Sequence[OutputRow]) -> WrittenBatch:
    """Driver side: assemble what the executors returned, merge their parts with the
    driver's own runs into the batch's decisions file, and remove the parts."""
    rows, written, safety = split_parts(collected)
    out = assemble_runs(rows)
    write_decisions(decisions_file(base, batch_id), merged_runs(out.runs, written))
    remove_parts(base, batch_id)
    records = sum(p.records for p in written) + sum(r[3].count("\n") + 1 for r in out.runs)
    unclean = sum(p.unclean_elections for p in written) + sum(r[3].count(UNCLEAN_ELECTION) for r in out.runs)
    return WrittenBatch(out, records, unclean, safety)
