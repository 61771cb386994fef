"""Where the partition stage keeps a partition between batches (`streaming/storage.py`):
a record a batch leaves as it was keeps its stored text; one it changes is written anew."""

from __future__ import annotations

import json

import pytest

from state_machines.loop import RawEvent, Sequencer
from state_machines.model import ControllerConfig
from streaming import codec
from streaming.batches import MemoryState
from streaming.pipeline import pack_groups, read_feedback, unpack_work, pack_outputs, unpack_outputs
from streaming.assemble import assemble_batch
from streaming.storage import Buckets, PerPartition, fold_group

START = [
    {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b, "id": f"b{b}"} for b in (1, 2, 3)
] + [
    {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1, "id": "elected"},
    {"v": 1, "type": "TopicCreation", "topic": "orders", "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]}, "id": "create"},
]
PREFERRED = {"v": 1, "type": "ReplicaLeaderElection", "election_type": "PREFERRED",
             "partitions": [{"topic": "orders", "partition": 0}], "id": "preferred"}
FAILURE = {"v": 1, "type": "BrokerFailure", "broker_id": 1, "id": "b1-crash"}


class Job:
    """The job's stages over a list of events, as `batches.run_batches` chains them, with
    the groups' states at hand."""

    def __init__(self, storage: Buckets | PerPartition) -> None:
        self.storage = storage
        self.config = ControllerConfig()
        self.directory: dict = {}
        self.states: dict[str, MemoryState] = {}
        self.pending, self.buffer, self.offset = None, [], 0

    def run(self, events: list[dict]) -> list[dict]:
        chunk = [RawEvent(self.offset + i, json.dumps(e).encode(), "test") for i, e in enumerate(events)]
        self.offset += len(events)
        feedback: list[str] = []
        decisions: list[dict] = []
        while chunk or feedback:
            seq = Sequencer(self.directory, self.config)
            self.pending, self.buffer = seq.run(self.pending, self.buffer, chunk, *read_feedback(feedback))
            packed: list[str] = []
            for grp, texts in pack_groups(seq.work, self.storage.group).items():
                state = self.states.setdefault(grp, MemoryState())
                packed.extend(pack_outputs(fold_group(self.storage, grp, state, unpack_work(texts), self.config)))
            batch = assemble_batch(unpack_outputs(packed))
            decisions.extend(json.loads(payload) for _, payload in batch.decisions)
            feedback, chunk = batch.assembled.reports, []
        return decisions


def _older_text(text: str) -> str:
    """The same record as a build that always wrote the trailing offline dirs would have
    written it: other bytes, the same record."""
    assert text.endswith("]") and codec._record_in(json.loads(text[:-1] + ",[]]")) == codec._record_in(json.loads(text))
    return text[:-1] + ",[]]"


@pytest.mark.parametrize("layout", ["buckets", "per-partition"])
def test_a_record_the_batch_leaves_as_it_was_keeps_its_text_and_a_changed_one_is_written_anew(layout: str) -> None:
    job = Job(Buckets(2, 1) if layout == "buckets" else PerPartition())
    job.run(START)
    group = job.storage.group("orders-0")
    state = job.states[group]

    def stored() -> tuple[str, int, int]:
        if layout == "buckets":
            seq_cause, seq_next, text = codec.bucket_entries(state.get[0])["orders-0"].split("\t", 2)
            return text, int(seq_cause), int(seq_next)
        text, seq_cause, seq_next = state.get
        return text, seq_cause, seq_next

    text, seq_cause, _ = stored()
    older = _older_text(text)
    if layout == "buckets":
        entries = codec.bucket_entries(state.get[0])
        entries["orders-0"] = entries["orders-0"].replace(text, older)
        state.update((codec.bucket_text(entries),))
    else:
        state.update((older, *state.get[1:]))

    # broker 1, the preferred replica, already leads: the election fails and the record stays
    decisions = job.run([PREFERRED])
    assert [d["type"] for d in decisions if d.get("topic") == "orders"] == ["ElectionResult"]
    kept, new_cause, _ = stored()
    assert kept == older and new_cause > seq_cause  # the sequence moved on, the text did not

    # broker 1 fails: the record changes, and is written in this build's layout
    job.run([FAILURE])
    written, _, _ = stored()
    assert written != older and written == codec.dumps(codec.loads(written, codec.PartitionRecordType))
    assert json.loads(written)[7][0] != 1  # another leader
