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
  runs with the sorted segments into `decisions-<batch id>.jsonl` and removes the parts.
  A segment is an index of its runs (Arrow) and their documents (one zstd frame): the
  driver orders every run of the batch by the indexes in one stable sort (it holds the
  indexes whole, a few tens of bytes a run), then copies the documents over, reading each
  segment straight through, a few kilobytes of it at a time, and writes them with
  O_DIRECT where the filesystem allows (`unbuffered_file.py`). The file is byte-for-byte
  what `assemble_batch` writes from a collect.

The parts are named by task attempt, and the driver reads only the files the collect
named, so a task or a batch run again leaves no doubt which files count. On a cluster the
output directory must be one every executor and the driver share, like the checkpoint.
"""

from __future__ import annotations

import io
import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy
import pyarrow
import pyarrow.compute
import pyarrow.ipc

from state_machines.errors import ShadowControllerError

from .assemble import UNCLEAN_ELECTION, Assembled, Run, assemble_runs, may_be_safety, run_order
from .packing import OutputRow, pack_outputs, unpack_outputs
from .unbuffered_file import UnbufferedFile

PARTS_DIR = "_parts"

# A segment's documents are one zstd frame (level 1): the benchmark's decisions shrink 40
# to 120-fold (a creation's 43-fold), and a creation of a million partitions writes 2 GB
# of them, which the driver writes again into the decisions file; written as they were,
# the parts doubled the disk's work.
_SEGMENT_CODEC = pyarrow.Codec("zstd", compression_level=1)


def parts_dir(base: str, batch_id: int) -> str:
    return os.path.join(base, PARTS_DIR, f"{batch_id:012d}")


def write_part(batches: Iterable[Sequence[str]], directory: str, task: str) -> list[str]:
    """Executor side: write the decision runs of `batches` (each a sequence of packed output
    rows, as Spark hands them over) to a part file in `directory`, one sorted segment per
    batch, so that a task holds one batch's runs at a time; return the packed rows the
    driver needs."""
    small = _write_segments(
        (unpack_outputs(texts) for texts in batches), directory, _part_path(directory, task), "wb"
    )
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


def _write_segments(
    batches: Iterable[Iterable[OutputRow]], directory: str, path: str, mode: str
) -> list[OutputRow]:
    """Each batch's decision runs as a sorted segment of the file at `path` (opened with
    `mode`, once there is a run to write); the other rows, and a `part` row naming the
    segments."""
    small: list[OutputRow] = []
    offsets: list[int] = []  # each segment's index and documents, then where the file ends
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
                fh = open(path, mode)  # noqa: SIM115  kept open across the loop; closed below
            index, documents = _segment(runs)
            offsets.append(fh.tell())
            fh.write(index)
            offsets.append(fh.tell())
            fh.write(_SEGMENT_CODEC.compress(documents.encode(), asbytes=True))
            # counted over the segment's documents at once: each ends in a newline, and
            # none but a decision of an unclean election holds that election's text
            records += documents.count("\n")
            unclean += documents.count(UNCLEAN_ELECTION)
            if may_be_safety(documents):
                for cause, key, _, payload in runs:
                    if may_be_safety(payload):
                        small.extend(
                            ("safety", cause, key, 0, doc)
                            for doc in payload.split("\n")
                            if may_be_safety(doc)
                        )
        if fh is not None:
            # no fsync: a part lives for its batch only, and the driver reads it after the
            # task has closed it (close-to-open, on a shared filesystem too); a batch cut
            # short by a crash runs again and writes new parts
            offsets.append(fh.tell())
    finally:
        if fh is not None:
            fh.close()
    if offsets:
        small.append(
            ("part", 0, "", 0, f"{path}\t{records}\t{unclean}\t{','.join(map(str, offsets))}")
        )
    return small


@dataclass(frozen=True, slots=True)
class Part:
    path: str
    records: int
    unclean_elections: int
    # each sorted segment's (index start, documents start, end) in the file
    segments: tuple[tuple[int, int, int], ...]


def split_parts(
    rows: Sequence[OutputRow],
) -> tuple[list[OutputRow], list[Part], list[tuple[str, str]]]:
    """Driver side: the collected rows without the `part` and `safety` rows, the parts
    they name, and the safety divergences' (key, document)."""
    rest: list[OutputRow] = []
    parts: list[Part] = []
    safety: list[tuple[str, str]] = []
    for row in rows:
        kind = row[0]
        if kind == "part":
            path, records, unclean, offsets = row[4].split("\t")
            at = tuple(map(int, offsets.split(",")))
            parts.append(
                Part(
                    path,
                    int(records),
                    int(unclean),
                    tuple(zip(at[:-1:2], at[1::2], at[2::2], strict=False)),
                )
            )
        elif kind == "safety":
            safety.append((row[2], row[4]))
        else:
            rest.append(row)
    return rest, parts, safety


class PartNotShared(ShadowControllerError):
    """A part an executor wrote is not where the driver looks: the output directory is not
    shared between them."""


class PartDamaged(ShadowControllerError):
    """A part holds fewer bytes of documents than its index names."""


# a segment's index: one row per run, in the segment's order
_INDEX = pyarrow.schema(
    [
        ("cause", pyarrow.int64()),
        ("key", pyarrow.string()),
        ("seq", pyarrow.int64()),
        ("length", pyarrow.int64()),
    ]
)
_INDEX_OPTIONS = pyarrow.ipc.IpcWriteOptions(compression="zstd")
_ORDER = [("cause", "ascending"), ("key", "ascending"), ("seq", "ascending")]


def _index_and_documents(runs: list[Run]) -> tuple[pyarrow.RecordBatch, str]:
    """Sorted runs' index (see `_segment`) and their documents, each run's ending in a
    newline."""
    if not runs:
        return pyarrow.RecordBatch.from_pylist([], schema=_INDEX), ""
    causes, keys, seqs, payloads = zip(*runs, strict=True)
    documents = "\n".join((*payloads, ""))
    # a run's length in bytes: its characters, when the whole text is ASCII
    lengths = (
        numpy.fromiter(map(len, payloads), numpy.int64, len(payloads)) + 1
        if documents.isascii()
        else [len(p.encode()) + 1 for p in payloads]
    )
    return pyarrow.record_batch(
        [
            pyarrow.array(causes, pyarrow.int64()),
            pyarrow.array(keys, pyarrow.string()),
            pyarrow.array(seqs, pyarrow.int64()),
            pyarrow.array(lengths, pyarrow.int64()),
        ],
        schema=_INDEX,
    ), documents


def _segment(runs: list[Run]) -> tuple[bytes, str]:
    """A segment of sorted runs: its index, each run's (cause, key, seq, length) as an
    Arrow IPC stream, and its documents: each run's documents and a newline, `length`
    bytes in UTF-8. The driver orders the batch's runs by the indexes alone and copies
    the documents to the decisions file as they are."""
    index, documents = _index_and_documents(runs)
    sink = pyarrow.BufferOutputStream()
    with pyarrow.ipc.new_stream(sink, _INDEX, options=_INDEX_OPTIONS) as writer:
        writer.write_batch(index)
    return sink.getvalue().to_pybytes(), documents


def _open_part(path: str) -> pyarrow.MemoryMappedFile:
    try:
        return pyarrow.memory_map(path)
    except FileNotFoundError:
        raise PartNotShared(
            f"the decisions an executor wrote to {path} are not visible to the driver: with file "
            f"output on a cluster, job.output must be a directory the driver and every executor "
            f"share, at the same path (README: Submitting to a Spark cluster)"
        ) from None


def _stretches(
    runs: list[Run], parts: Sequence[Part]
) -> tuple[list[_Source], numpy.ndarray, numpy.ndarray]:
    """The batch's documents in the contract's order, (cause_offset, key, seq), as
    stretches to copy: a source for the driver's own runs (sorted) and one for each
    segment's documents, then, for each stretch in order, its source's number and its
    length in bytes. Runs of equal place keep the order of their sources, the driver's
    first, then the parts' segments as named: Arrow's sort is stable over the indexes in
    that order. So each source's runs come out in the order they are in it, each source
    is read straight through, and neighbouring runs of one source are one stretch."""
    index, documents = _index_and_documents(runs)
    sources: list[_Source] = [io.BytesIO(documents.encode())]
    indexes, numbers = [index], [0]
    mapped: dict[str, pyarrow.MemoryMappedFile] = {}
    for part in parts:
        if part.path not in mapped:
            mapped[part.path] = _open_part(part.path)
        file = mapped[part.path]
        for start, body, end in part.segments:
            with pyarrow.ipc.open_stream(file.read_at(body - start, start)) as stream:
                for batch in stream:
                    indexes.append(batch)
                    numbers.append(len(sources))
            # the segment's zstd frame, decompressed as it is read: the driver holds a few
            # kilobytes of each segment at a time, whatever the batch's size
            sources.append(
                io.BufferedReader(
                    pyarrow.CompressedInputStream(
                        pyarrow.BufferReader(file.read_at(end - body, body)), "zstd"
                    ),
                    _READ_BUFFER,
                )
            )
    table = pyarrow.Table.from_batches(indexes, schema=_INDEX)
    if not table.num_rows:
        return sources, numpy.zeros(0, numpy.int64), numpy.zeros(0, numpy.int64)
    order = pyarrow.compute.sort_indices(table, sort_keys=_ORDER)
    source = numpy.repeat(numbers, [len(index) for index in indexes])[order.to_numpy()]
    length = table.column("length").take(order).to_numpy()
    starts = numpy.concatenate(([0], numpy.flatnonzero(source[1:] != source[:-1]) + 1))
    return sources, source[starts], numpy.add.reduceat(length, starts)


# what a source of documents is read through: the driver's own as they are, a segment's
# through zstd, a few kilobytes ahead
_Source = io.BytesIO | io.BufferedReader
_READ_BUFFER = 64 * 1024

# The documents are copied into the file's buffer a window of stretches at a time, of
# about this many bytes (a stretch longer than that makes a window of its own), and each
# window is written with one call (`UnbufferedFile`).
_WINDOW = 4 << 20


def _windows(lengths: numpy.ndarray) -> list[tuple[int, int]]:
    """The stretches cut into windows of about `_WINDOW` bytes: (first, end) of each."""
    ends = (
        numpy.searchsorted(
            numpy.cumsum(lengths), numpy.arange(_WINDOW, int(lengths.sum()), _WINDOW), "left"
        )
        + 1
    )
    bounds = [0, *sorted(set(ends.tolist()) - {0, len(lengths)}), len(lengths)]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def _copy(
    sources: list[_Source], source: numpy.ndarray, length: numpy.ndarray, into: memoryview
) -> None:
    """Fill `into` with one window's stretches in order, each read from its source."""
    at = 0
    for number, n in zip(source.tolist(), length.tolist(), strict=True):
        got = sources[number].readinto(into[at : at + n])
        if got != n:
            raise PartDamaged(f"a decisions part ends {n - got} bytes short of its index")
        at += n


def write_decisions(path: str, runs: list[Run], parts: Sequence[Part]) -> None:
    """Write the documents of the driver's runs (sorted) and of the parts' segments, one
    per line, in the contract's order, atomically."""
    sources, source, length = _stretches(runs, parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    try:
        out = UnbufferedFile(tmp, _WINDOW)
        try:
            for a, b in _windows(length):
                size = int(length[a:b].sum())
                _copy(sources, source[a:b], length[a:b], out.space(size))
                out.commit(size)
        finally:
            out.close()
    except BaseException:
        if os.path.exists(tmp):
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
    write_decisions(decisions_file(base, batch_id), out.runs, written)
    remove_parts(base, batch_id)
    records = sum(p.records for p in written) + sum(r[3].count("\n") + 1 for r in out.runs)
    unclean = sum(p.unclean_elections for p in written) + sum(
        r[3].count(UNCLEAN_ELECTION) for r in out.runs
    )
    return WrittenBatch(out, records, unclean, safety)
