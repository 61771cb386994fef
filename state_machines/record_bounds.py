"""One input record within its bounds, decoded to JSON (contract v1's bounds).

A record's size, its nesting depth and the length of its numbers are checked before the
JSON decoder builds anything, so no record can make the decoder recurse out of the stack,
convert a 5,000-digit integer, or hold a megabyte-long `id` that every decision of its
event would echo; and no check here takes more than linear time in the record. The
decoded value's fields are `events.parse_event`'s to check. Whatever a record holds,
`decode_record` returns a JSON value or raises `InvalidEvent`, never anything else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import Any

from .errors import InvalidEvent

# what a reason quotes of the input, so a dead-letter reason stays one short line
_SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class InputLimits:
    """Bounds on one input record, checked before it is decoded (settings `[input]`)."""

    # Kafka's default max.message.bytes is 1,048,588; a bigger record is not a contract event
    max_record_bytes: int = 1_048_576
    # the deepest contract event (ReplicaLeaderElection) nests 3 levels
    max_depth: int = 32
    # digits of one JSON number; int64 needs 19
    max_number_digits: int = 20
    # `id` is echoed as `cause_id` into every decision of its event
    max_id_chars: int = 256


DEFAULT_LIMITS = InputLimits()


def shown(value: Any) -> str:
    """A value as a dead-letter reason quotes it: its repr, cut to one short line."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text)} chars)"


# A JSON string (escapes included), then the structural characters and digit runs outside
# strings: enough to measure depth and number length without decoding.
# An unclosed string runs to the end of the text: without that, a record holding one full
# of escaped quotes was scanned again from every quote (a 64 KB record took 8 s; 1 MiB,
# half an hour).
_STRING = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\Z)', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


@cache
def _digit_run(length: int) -> re.Pattern[str]:
    """Digits, at least `length` of them (compiled once per bound)."""
    return re.compile(rf"\d{{{length},}}")


def _check_shape(text: str, limits: InputLimits) -> None:
    """Depth and number length, on the text with its strings removed. The quick counts
    settle most records; one that could break a bound is scanned exactly (a creation of
    more than a few dozen partitions opens more brackets than the depth bound)."""
    opened = text.count("[") + text.count("{")
    long_digits = _digit_run(limits.max_number_digits + 1).search(text)
    if opened <= limits.max_depth and long_digits is None:
        return
    bare = _STRING.sub('""', text)
    # the deepest point: the running sum of +1 for each opening bracket and -1 for each
    # closing one, summed in C (a Python loop over a million-partition creation's brackets
    # took 0.3 s of the sequencer)
    if opened > limits.max_depth:
        # (the brackets counted may all be inside strings: then there are none here)
        deepest = max(accumulate(map(_DEPTH_STEP.__getitem__, _BRACKETS.findall(bare))), default=0)
        if deepest > limits.max_depth:
            raise InvalidEvent(f"nested deeper than {limits.max_depth} levels")
    if long_digits is not None:
        number = _digit_run(limits.max_number_digits + 1).search(bare)
        if number is not None:
            raise InvalidEvent(
                f"a number has {len(number.group())} digits, over the limit of "
                f"{limits.max_number_digits}"
            )


def _reject_constant(name: str) -> Any:
    raise InvalidEvent(f"not JSON: {name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the record: a key given twice is refused (the decoder would keep the
    last value and drop the first without a word; {"0": [1], "0": [2]} in a creation)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise InvalidEvent(f"key {shown(twice)} appears twice in one object")
    return obj


def decode_record(line: str | bytes | None, limits: InputLimits = DEFAULT_LIMITS) -> Any:
    """One record's JSON value, within `limits`. Every way a record can be bad, from a null
    value to bytes that are not UTF-8, is an InvalidEvent."""
    if line is None:
        raise InvalidEvent("null value (a tombstone): an event is a JSON object")
    size = len(line) if isinstance(line, bytes) else len(line.encode("utf-8", "surrogatepass"))
    if size > limits.max_record_bytes:
        raise InvalidEvent(f"record is {size} bytes, over the limit of {limits.max_record_bytes}")
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        raise InvalidEvent(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    _check_shape(text, limits)
    try:
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except (
        RecursionError,
        ValueError,
    ) as exc:  # bounds above make these unreachable; belt and braces
        raise InvalidEvent(f"not decodable: {type(exc).__name__}") from None
    return obj
