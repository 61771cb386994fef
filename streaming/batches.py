"""The job's micro-batches without Spark, for tests: `run_batches` chains the sequencer,
the partition stage and the batch sink as the query does, on the same code.

Work and outputs are packed and unpacked as they cross Spark (`packing.py`), each
group's partition state goes through the storage strategy (`storage.py`) into a
`MemoryState` shaped like Spark's `GroupState`, and deletion reports come back in the
next batch with the partitions' summaries, as through the feedback files. So a difference
between `run_batches` and the in-process engine is one the Spark job would have. Only the
directory is kept decoded between batches, as a Python worker that Spark reuses keeps it
(`operators.LastDirectory`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

from state_machines.errors import InvariantViolation
from state_machines.loop import Pending, RawEvent, Sequencer
from state_machines.model import ControllerConfig
from state_machines.outputs import contract_key

from . import decision_parts as parts
from .assemble import assemble_batch
from .packing import pack_groups, pack_outputs, unpack_outputs, unpack_work
from .pipeline import read_feedback
from .storage import fold_group, partition_storage


class MemoryState:
    """One group's state, in memory, with the part of `GroupState` the storage uses."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple[Any, ...]:
        assert self.value is not None
        return self.value

    def update(self, newValue: tuple[Any, ...]) -> None:
        self.value = newValue

    def remove(self) -> None:
        self.value = None


class _MapState:
    def __init__(self) -> None:
        self.entries: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def getValue(self, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return self.entries.get(key)

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...]) -> None:
        self.entries[key] = value

    def removeKey(self, key: tuple[Any, ...]) -> None:
        self.entries.pop(key, None)

    def iterator(self) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        return iter(list(self.entries.items()))


class _ListState:
    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def exists(self) -> bool:
        return bool(self.rows)

    def get(self) -> Iterator[tuple[Any, ...]]:
        return iter(list(self.rows))

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = list(rows)

    def clear(self) -> None:
        self.rows = []


class _ValueState:
    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def exists(self) -> bool:
        return self.value is not None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


class MemoryHandle:
    """One key's state, in memory, with the part of `StatefulProcessorHandle` the sequencer
    uses (its map, list and value states)."""

    def __init__(self) -> None:
        self.states: dict[str, Any] = {}

    def getMapState(self, name: str, *schema: Any) -> _MapState:
        state: _MapState = self.states.setdefault(name, _MapState())
        return state

    def getListState(self, name: str, *schema: Any) -> _ListState:
        state: _ListState = self.states.setdefault(name, _ListState())
        return state

    def getValueState(self, name: str, *schema: Any) -> _ValueState:
        state: _ValueState = self.states.setdefault(name, _ValueState())
        return state


class WorkerPool:
    """The sequencer's stage as Spark runs it: `operators.SequencerProcessor` under its key
    and under each mirror's (`operators.mirror_keys`), each key's state in memory, and in
    every batch each key's task served by a Python worker drawn at random from `workers`,
    each worker with its own copy of the directory (`operators.LastDirectory`): a worker
    each if there are as many as keys (the tasks run side by side), else one after another
    in random order, sharing workers (fewer cores than tasks). `reads` counts the batches
    whose sequencer read the directory from its state."""

    def __init__(
        self, config: ControllerConfig, storage: Any, mirrors: int, workers: int, seed: int
    ) -> None:
        from .operators import SEQUENCER_KEY, LastDirectory, SequencerProcessor, mirror_keys

        self.keys = [SEQUENCER_KEY, *mirror_keys(mirrors + 1, mirrors)]
        self.copies = [LastDirectory() for _ in range(workers)]
        self.random = random.Random(seed)
        pool = self

        class Processor(SequencerProcessor):
            def worker_copy(self) -> LastDirectory:
                return pool.serving

            def batch_id(self) -> int | None:
                return pool.batch

        self.processors = {}
        for key in self.keys:
            proc = Processor(config, storage)
            proc.init(MemoryHandle())  # type: ignore[arg-type]
            self.processors[key] = proc
        self.serving = self.copies[0]
        self.batch = 0

    @property
    def reads(self) -> int:
        return sum(c.reads for c in self.copies)

    def run(self, batch: int, events: list[RawEvent], feedback: list[str]) -> dict[str, list[str]]:
        """The batch's packed work by group (the gauges' row in the direct group)."""
        import pandas as pd

        rows: list[tuple[str, int, bytes | None, str | None, str | None]] = [
            ("event", e.offset, e.value, e.source, None) for e in events
        ]
        if feedback:
            rows.append(("report", -1, None, None, "\n".join(feedback)))
        frame = pd.DataFrame(rows, columns=["kind", "offset", "value", "source", "payload"])
        self.batch = batch
        keys = self.keys[:]
        self.random.shuffle(keys)
        groups: dict[str, list[str]] = {}
        if len(self.copies) >= len(keys):
            serving = self.random.sample(self.copies, len(keys))
        else:
            serving = [self.random.choice(self.copies) for _ in keys]
        for key, copy in zip(keys, serving, strict=True):
            self.serving = copy
            for out in self.processors[key].handleInputRows((key,), iter([frame]), None):
                for grp, text in out.itertuples(index=False):
                    groups.setdefault(grp, []).append(text)
        return groups


def _batches(texts: list[str]) -> list[list[str]]:
    """Packed rows in Arrow batches of two, as Spark cuts a task's input."""
    return [texts[i : i + 2] for i in range(0, len(texts), 2)]


def _through_parts(
    packed: list[str],
    base: str,
    batch_id: int,
    dlq: list[dict[str, Any]],
    feedback: list[str],
    written: bool,
) -> list[dict[str, Any]]:
    """File output's sink (`sink.BatchSink`): parts written by three tasks (by the
    partition stage already if `written`), merged."""
    directory = parts.parts_dir(base, batch_id)
    if written:
        small = packed
    else:
        small = [
            text
            for task in range(3)
            for text in parts.write_part(_batches(packed[task::3]), directory, f"{task:05d}-0")
        ]
    out = parts.write_batch(base, batch_id, unpack_outputs(small)).out
    dlq.extend(out.dlq)
    feedback.extend(out.reports)
    with open(parts.decisions_file(base, batch_id), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _order(d: dict[str, Any]) -> tuple[int, str, int]:
    return (d["cause_offset"], contract_key(d), d["seq"])


class Batches:
    """The job's state between micro-batches, kept in memory: the directory, each group's
    state, and what the sequencer holds. `run` goes on from where the last call stopped, so
    a test can look at a group's state between two runs (`states`, keyed by `storage.group`)."""

    def __init__(
        self,
        config: ControllerConfig = ControllerConfig(),
        buckets: int = 0,
        workers: tuple[int, int, int] | None = None,
    ) -> None:
        self.config = config
        self.buckets = buckets
        self.storage = partition_storage(buckets, shuffle_partitions=1)
        # (mirrors, workers, seed): the sequencer's stage as Spark runs it (`WorkerPool`);
        # None: the sequencer alone, its directory always at hand
        self.pool = None if workers is None else WorkerPool(config, self.storage, *workers)
        self.directory: dict[str, Any] = {}
        self.states: dict[str, MemoryState] = {}
        self.pending: Pending | None = None
        self.buffer: list[RawEvent] = []
        self.offset = 0
        self.batches = 0

    def run(
        self,
        lines: Sequence[bytes],
        batch_size: int,
        parts_base: str | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """`lines` in micro-batches of `batch_size` events, then the batches their feedback
        leads to: (decisions, dlq records). With `parts_base`, the sink is file output's:
        the decision runs go to parts there (`decision_parts.py`), written by the partition
        stage in scale mode and by three tasks after it otherwise, and the batch's file is
        merged from them."""
        feedback: list[str] = []
        decisions: list[dict[str, Any]] = []
        dlq: list[dict[str, Any]] = []
        position = 0
        while True:
            chunk = [
                RawEvent(self.offset + i, lines[i], f"line:{self.offset + i}")
                for i in range(position, min(position + batch_size, len(lines)))
            ]
            position += len(chunk)
            if not chunk and not feedback:
                if self.pending is not None or self.buffer:
                    raise InvariantViolation(
                        "the sequencer waits for deletion reports that no command will send"
                    )
                break
            if self.pool is None:
                seq = Sequencer(self.directory, self.config)
                self.pending, self.buffer = seq.run(
                    self.pending, self.buffer, chunk, *read_feedback(feedback)
                )
                groups = pack_groups(seq.work, self.storage.group)
            else:
                groups = self.pool.run(self.batches, chunk, feedback)
            packed: list[str] = []
            # file output in scale mode: the partition stage writes the runs, the groups
            # split between three tasks in turn
            stage_parts = (
                None
                if parts_base is None
                else parts.stage_parts_base(f"file:{parts_base}", self.buckets)
            )
            for i, (grp, texts) in enumerate(groups.items()):
                work = unpack_work(texts)  # as they cross Spark
                state = self.states.setdefault(grp, MemoryState())
                out = fold_group(self.storage, grp, state, work, self.config)
                if stage_parts is not None:
                    task = f"{i * 3 // len(groups):05d}-0-{self.batches}"
                    out = parts.write_group(out, parts.parts_dir(stage_parts, self.batches), task)
                packed.extend(pack_outputs(out))
            if parts_base is None:
                batch = assemble_batch(unpack_outputs(packed))
                decisions.extend(json.loads(payload) for _, payload in batch.decisions)
                dlq.extend(batch.assembled.dlq)
                feedback = batch.assembled.reports
            else:
                feedback = []
                decisions.extend(
                    _through_parts(
                        packed, parts_base, self.batches, dlq, feedback, stage_parts is not None
                    )
                )
            self.batches += 1
        self.offset += len(lines)
        decisions.sort(key=_order)
        return decisions, dlq


def run_batches(
    lines: Sequence[bytes],
    batch_size: int,
    config: ControllerConfig = ControllerConfig(),
    buckets: int = 0,
    parts_base: str | None = None,
    workers: tuple[int, int, int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Replay lines in micro-batches of `batch_size` events as the Spark job does (feedback
    included, everything packed as it crosses Spark). Returns (decisions, dlq records,
    number of micro-batches); `Batches.run` says what `parts_base` does, `Batches` what
    `workers` does."""
    batches = Batches(config, buckets, workers)
    decisions, dlq = batches.run(lines, batch_size, parts_base)
    return decisions, dlq, batches.batches
