"""Kafka's primitive encodings, as `org.apache.kafka.common.utils.ByteUtils` and the
generated messages' `Readable`/`Writable` write them: unsigned varints (LEB128, at most 5
bytes for an int), zig-zag varints and varlongs (the record framing of batch format v2),
and Uuids as `Uuid.toString` shows them (URL-safe base64 of the 16 bytes, unpadded)."""

from __future__ import annotations

import base64
import binascii

from .errors import RecordDecodeError


def read_uvarint(b: bytes, p: int) -> tuple[int, int]:
    """ByteUtils.readUnsignedVarint: the value and the position after it. More than 5
    bytes is Kafka's "Varint is too long" (an IllegalArgumentException there)."""
    value = 0
    shift = 0
    while True:
        c = b[p]
        p += 1
        value |= (c & 0x7F) << shift
        if c < 0x80:
            return value, p
        shift += 7
        if shift > 28:
            raise RecordDecodeError("varint is too long")


def read_varint(b: bytes, p: int) -> tuple[int, int]:
    """ByteUtils.readVarint (zig-zag, int32); ByteUtils.readVarlong is the same up to 10
    bytes, which this accepts too."""
    value = 0
    shift = 0
    while True:
        c = b[p]
        p += 1
        value |= (c & 0x7F) << shift
        if c < 0x80:
            return (value >> 1) ^ -(value & 1), p
        shift += 7
        if shift > 63:
            raise RecordDecodeError("varlong is too long")


def uvarint(value: int) -> bytes:
    """ByteUtils.writeUnsignedVarint."""
    if value < 0:
        raise ValueError(f"unsigned varint of a negative value {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """ByteUtils.writeVarint / writeVarlong: zig-zag, then as an unsigned varint."""
    return uvarint((value << 1) ^ (value >> 63))


UUID_CACHE: dict[bytes, str] = {}
_UUIDS = UUID_CACHE


def uuid_text(raw: bytes) -> str:
    """Uuid.toString of 16 bytes (most significant long first). Cached: a log names a
    few topics a great many times."""
    text = _UUIDS.get(raw)
    if text is None:
        if len(raw) != 16:
            raise RecordDecodeError("truncated uuid")
        text = base64.urlsafe_b64encode(raw)[:22].decode("ascii")
        if len(_UUIDS) > 65536:
            _UUIDS.clear()
        _UUIDS[raw] = text
    return text


def uuid_bytes(text: str) -> bytes:
    """Uuid.fromString: the 16 bytes of a 22-character URL-safe base64 Uuid."""
    if len(text) != 22:
        raise ValueError(f"a Uuid is 22 base64 characters, not {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except binascii.Error as exc:
        raise ValueError(f"not a base64 Uuid: {text!r}") from exc
    if len(raw) != 16:
        raise ValueError(f"not a base64 Uuid: {text!r}")
    return raw
