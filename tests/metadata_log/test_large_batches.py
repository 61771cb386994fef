"""A batch as large as Kafka writes them: QuorumController.MAX_RECORDS_PER_BATCH is 10000
records, a snapshot's batch up to KafkaRaftClient.MAX_BATCH_SIZE_BYTES (8 MiB). From the
8193rd record on an offset delta is a three-byte varint, which `batches._records` reads
inline."""

from __future__ import annotations

from streaming.metadata_log.batches import parse_batch
from streaming.metadata_log.encode import encode_batch


def test_every_offset_of_a_batch_past_the_three_byte_deltas() -> None:
    values = [i.to_bytes(3, "big") for i in range(20_000)]
    batch = parse_batch("test", 0, encode_batch(values, 7))
    assert [r.offset for r in batch.records] == list(range(7, 20_007))
    assert [r.value for r in batch.records] == values
    assert batch.last_offset == 20_006
