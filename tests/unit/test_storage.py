"""Where the partition stage keeps a partition between batches (`streaming/storage.py`):
a record a batch leaves as it was keeps its stored text; one it changes is written anew."""

from __future__ import annotations

import json

import pytest

from streaming import codec, record_codec
from streaming.batches import Batches

START = [
    {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 100 + b, "id": f"b{b}"}
    for b in (1, 2, 3)
] + [
    {
        "v": 1,
        "type": "ControllerFailover",
        "controller_id": 1,
        "controller_epoch": 1,
        "id": "elected",
    },
    {
        "v": 1,
        "type": "TopicCreation",
        "topic": "orders",
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        "id": "create",
    },
]
PREFERRED = {
    "v": 1,
    "type": "ReplicaLeaderElection",
    "election_type": "PREFERRED",
    "partitions": [{"topic": "orders", "partition": 0}],
    "id": "preferred",
}
FAILURE = {"v": 1, "type": "BrokerFailure", "broker_id": 1, "id": "b1-crash"}


def _older_text(text: str) -> str:
    """The same record as a build that always wrote the trailing offline dirs would have
    written it: other bytes, the same record."""
    assert text.endswith("]") and record_codec.record_in(
        json.loads(text[:-1] + ",[]]")
    ) == record_codec.record_in(json.loads(text))
    return text[:-1] + ",[]]"


@pytest.mark.parametrize("layout", ["buckets", "per-partition"])
def test_a_record_the_batch_leaves_as_it_was_keeps_its_text_and_a_changed_one_is_written_anew(
    layout: str,
) -> None:
    job = Batches(buckets=2 if layout == "buckets" else 0)

    def run(events: list[dict]) -> list[dict]:
        return job.run([json.dumps(e).encode() for e in events], batch_size=10)[0]

    run(START)
    group = job.storage.group("orders-0")
    state = job.states[group]

    def stored() -> tuple[str, int, int]:
        if layout == "buckets":
            seq_cause, seq_next, text = codec.bucket_entries(state.get[0])["orders-0"].split(
                "\t", 2
            )
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
    decisions = run([PREFERRED])
    assert [d["type"] for d in decisions if d.get("topic") == "orders"] == ["ElectionResult"]
    kept, new_cause, _ = stored()
    assert kept == older and new_cause > seq_cause  # the sequence moved on, the text did not

    # broker 1 fails: the record changes, and is written in this build's layout
    run([FAILURE])
    written, _, _ = stored()
    assert written != older and written == codec.dumps(
        codec.loads(written, codec.PartitionRecordType)
    )
    assert json.loads(written)[7][0] != 1  # another leader
