"""Poison records for the hardening tests: the five that used to stop the job, random
bytes, and valid events mutated until they are not valid any more.

`poisoned_log` interleaves them with a clean log at seeded positions and says where each
went, so a test can check that every bad record reached the dead letters and that the
decisions are the clean log's, offset for offset.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from state_machines.errors import InvalidEvent
from state_machines.events import parse_line

MIB = 1 << 20


def named_poisons() -> list[tuple[str, bytes | None]]:
    """The records that stopped the job (or were read as events) before it parsed within bounds."""
    return [
        ("tombstone", None),
        ("deep nesting", b"[" * 100_000 + b"]" * 100_000),
        ("5000-digit integer", b'{"v":1,"type":"BrokerFailure","broker_id":' + b"7" * 5000 + b"}"),
        ("1 MiB of garbage", bytes(random.Random(1).randrange(256) for _ in range(MIB))),
        (
            "valid event with a 1 MiB id",  # just under the record limit, so the id bound decides
            json.dumps(
                {"v": 1, "type": "BrokerStartup", "broker_id": 9, "id": "x" * (MIB - 100)}
            ).encode(),
        ),
        ("float version", b'{"v":1.0,"type":"BrokerFailure","broker_id":1}'),
        ("NaN", b'{"v":1,"type":"BrokerFailure","broker_id":NaN}'),
        ("empty", b""),
        # 33 brackets send the record to the exact depth scan, whose string pattern retried
        # an unclosed string from every quote: about half an hour for this one record
        (
            "unclosed string of escaped quotes",
            b'{"v":1,' + b"[" * 33 + b'"x":"' + b'\\"' * ((MIB - 200) // 2),
        ),
        (
            "a key given twice",
            b'{"v":1,"type":"TopicCreation","topic":"twice","partitions":{"0":[1],"0":[2]}}',
        ),
        (
            "a topic name with a final newline",
            b'{"v":1,"type":"TopicDeletion","topic":"orders\\n"}',
        ),
    ]


def _invalid(value: bytes | None) -> bool:
    try:
        parse_line(value, 0)
    except InvalidEvent:
        return True
    return False


def _mutate(rng: random.Random, line: bytes) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:  # insert JSON punctuation or a digit run
            data[pos:pos] = rng.choice([b"{", b"]", b'"', b",", b"-", b"9" * 30, b"null", b"\xff"])
        elif op == 2 and data:  # delete a slice
            del data[pos : pos + rng.randint(1, 8)]
        else:  # truncate
            del data[pos:]
    return bytes(data)


def fuzzed(rng: random.Random, clean: list[bytes], count: int) -> list[tuple[str, bytes]]:
    """`count` invalid records: random bytes, and mutations of clean lines that no longer
    parse (a mutation that happens to stay valid would be a real event, so it is redrawn)."""
    out: list[tuple[str, bytes]] = []
    while len(out) < count:
        if rng.random() < 0.3:
            value = bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
            what = "random bytes"
        else:
            value = _mutate(rng, rng.choice(clean))
            what = "mutated event"
        if b"\n" in value or b"\r" in value:
            continue  # one record per line in file mode
        if _invalid(value):
            out.append((what, value))
    return out


@dataclass(frozen=True)
class PoisonedLog:
    lines: list[bytes | None]
    bad: dict[int, tuple[str, bytes | None]]  # offset -> (what, value)
    clean_offset: dict[int, int]  # offset in `lines` -> offset in the clean log


def poisoned_log(
    clean: list[bytes], poisons: list[tuple[str, bytes | None]], seed: int
) -> PoisonedLog:
    rng = random.Random(seed)
    slots = sorted(rng.randrange(len(clean) + 1) for _ in poisons)
    order = list(poisons)
    rng.shuffle(order)
    lines: list[bytes | None] = []
    bad: dict[int, tuple[str, bytes | None]] = {}
    clean_offset: dict[int, int] = {}
    it = iter(zip(slots, order, strict=True))
    nxt = next(it, None)
    for i, line in enumerate([*clean, None]):
        while nxt is not None and nxt[0] == i:
            bad[len(lines)] = nxt[1]
            lines.append(nxt[1][1])
            nxt = next(it, None)
        if i < len(clean):
            clean_offset[len(lines)] = i
            lines.append(line)
    return PoisonedLog(lines, bad, clean_offset)


def remap(record: dict, log: PoisonedLog) -> dict:
    """A decision of the poisoned log as the clean log numbers it."""
    return {**record, "cause_offset": log.clean_offset[record["cause_offset"]]}
