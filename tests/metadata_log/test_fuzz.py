"""Bad input never crashes the reader: mutated batches (with their CRC made right again, so
the parser and not the checksum meets the damage) and mutated record values give a batch,
a record, or a RecordDecodeError, never another exception."""

from __future__ import annotations

import contextlib
import struct

from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.metadata_log.batches import parse_batch
from streaming.metadata_log.encode import control_value, encode_batch, metadata_value
from streaming.metadata_log.errors import RecordDecodeError
from streaming.metadata_log.records import decode_control, decode_metadata

TOPIC = "AAAAAAAAAAAAAAAAAAAAAQ"
VALUES = [
    metadata_value(
        "PartitionRecord", partition_id=4, topic_id=TOPIC, replicas=(1, 2, 3), isr=(1, 2),
        leader=1, directories=(TOPIC,) * 3, eligible_leader_replicas=(3,),
    ),
    metadata_value(
        "PartitionChangeRecord", partition_id=4, topic_id=TOPIC, isr=(1,), leader=-1,
        directories=(TOPIC,), last_known_elr=(2,),
    ),
    metadata_value(
        "RegisterBrokerRecord", broker_id=1, incarnation_id=TOPIC, broker_epoch=9,
        end_points=[{"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": 0}],
        features=[{"name": "metadata.version", "min_supported_version": 1,
                   "max_supported_version": 21}],
        rack="r1", log_dirs=(TOPIC,),
    ),
    metadata_value("ClientQuotaRecord", entity=[{"entity_type": "user", "entity_name": None}],
                   key="producer_byte_rate", value=1024.0),
    metadata_value("DelegationTokenRecord", owner="User:a", renewers=("User:b",), token_id="t"),
    metadata_value("UserScramCredentialRecord", name="a", mechanism=1, salt=b"s" * 8,
                   stored_key=b"k" * 32, server_key=b"v" * 32, iterations=4096),
]  # fmt: skip
CONTROL = control_value("LeaderChange", leader_id=1, voters=[{"voter_id": 1}])

_MUTATION = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 255) | st.just(-1)), min_size=1, max_size=4
)


def _mutate(data: bytes, mutations: list[tuple[int, int]], start: int = 0) -> bytes:
    out = bytearray(data)
    for where, byte in mutations:
        if len(out) <= start:
            break
        i = start + where % (len(out) - start)
        if byte < 0:
            del out[i:]  # truncate here
        else:
            out[i] = byte
    return bytes(out)


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(VALUES), _MUTATION)
def test_mutated_values_decode_or_are_refused(
    value: bytes, mutations: list[tuple[int, int]]
) -> None:
    try:
        decode_metadata(_mutate(value, mutations))
    except RecordDecodeError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=500, deadline=None)
@given(_MUTATION)
def test_mutated_control_records_decode_or_are_refused(mutations: list[tuple[int, int]]) -> None:
    key, value = CONTROL
    with contextlib.suppress(RecordDecodeError):
        decode_control(_mutate(key, mutations[:1]), _mutate(value, mutations[1:] or [(0, 0)]))


@settings(max_examples=800, deadline=None)
@given(_MUTATION, st.booleans())
def test_mutated_batches_parse_or_are_refused(
    mutations: list[tuple[int, int]], control: bool
) -> None:
    records = [CONTROL] if control else VALUES
    data = _mutate(encode_batch(records, 100, control=control), mutations, start=21)
    if len(data) < 61:
        return
    data = data[:8] + struct.pack(">i", len(data) - 12) + data[12:]
    data = data[:17] + struct.pack(">I", crc32c(data[21:])) + data[21:]
    try:
        batch = parse_batch("fuzz", 0, data)
    except RecordDecodeError:
        return
    for record in batch.records:
        with contextlib.suppress(RecordDecodeError):
            if batch.is_control:
                decode_control(record.key, record.value)
            elif record.value is not None:
                decode_metadata(record.value)
