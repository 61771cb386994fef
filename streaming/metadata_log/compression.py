"""The codecs of a record batch's attributes (bits 0-2, `CompressionType`), in the framing
Kafka's Java client writes, from maintained libraries:

- gzip (1): `GZIPOutputStream`, one gzip member: the standard library's zlib.
- snappy (2): snappy-java's `SnappyOutputStream`, the "xerial" framing: an 8-byte magic
  (0x82 'SNAPPY' 0), int32 version and compatible version, then blocks of an int32 length
  and raw snappy data. `SnappyInputStream` also reads plain raw snappy (what librdkafka
  writes), and so does this. Raw snappy: cramjam.
- lz4 (3): `Lz4BlockOutputStream` (KafkaLZ4BlockOutputStream before 3.8), the LZ4 frame
  format (magic 0x184D2204; independent 64 KiB blocks, no content size or checksum; for
  magic 2 the header checksum is right, the v0/v1 bug is gone): cramjam's frame decoder.
- zstd (4): `ZstdOutputStreamNoFinalizer`, zstd frames without a content size: cramjam.

cramjam is one maintained Rust-backed package for the three codecs the standard library
lacks (python-snappy and lz4 would be two more, with their own build needs).
"""

from __future__ import annotations

import struct
import zlib

import cramjam

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")


class CodecError(ValueError):
    """The compressed records could not be decompressed (the message says why)."""


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == 1:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = d.decompress(data)
            if not d.eof:
                raise CodecError("gzip stream ends early")
            return out
        if codec == 2:
            return _snappy(data)
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        if codec == 4:
            return bytes(cramjam.zstd.decompress(data))
    except CodecError:
        raise
    except (zlib.error, cramjam.DecompressionError, ValueError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        name = CODECS[codec]
        raise CodecError(text if text.startswith(name) else f"{name}: {text}") from None
    raise CodecError(f"unknown compression codec {codec}")


def _snappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    p = _XERIAL_HEADER.size
    out: list[bytes] = []
    while p < len(data):
        if p + 4 > len(data):
            raise CodecError("snappy: truncated block length")
        (n,) = struct.unpack_from(">i", data, p)
        p += 4
        if n < 0 or p + n > len(data):
            raise CodecError("snappy: truncated block")
        out.append(bytes(cramjam.snappy.decompress_raw(data[p : p + n])))
        p += n
    return b"".join(out)


def compress(codec: str, data: bytes) -> bytes:
    """The test-data side: the framing Kafka's Java client writes."""
    if codec == "none":
        return data
    if codec == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == "snappy":
        block = bytes(cramjam.snappy.compress_raw(data))
        header = _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)
        return header + struct.pack(">i", len(block)) + block
    if codec == "lz4":
        return bytes(cramjam.lz4.compress(data))
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression {codec!r} (one of {', '.join(CODECS)})")
