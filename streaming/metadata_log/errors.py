"""What goes wrong reading a metadata log: each a one-line message naming the file and the
byte offset, as a `shadow-controller metadata-log` command prints it."""

from __future__ import annotations

from dataclasses import dataclass

from streaming.exits import UsageError


class RecordDecodeError(ValueError):
    """A record's bytes are not a record Kafka writes: an unknown type or version, a bad
    frame, a truncated or overlong body. `read_batches`' callers add the file and offset."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MetadataLogError(UsageError):
    """A batch that cannot be read: a bad CRC or magic, a truncated or corrupt batch, a
    record that does not decode. Its text is one line: `<path>: byte <position>: <reason>`."""

    def __init__(self, path: str, position: int | None, reason: str) -> None:
        where = f"{path}: byte {position}" if position is not None else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CorruptBatch:
    """In place of a batch that cannot be read, when the reader was asked to go on
    (`skip_corrupt`): where it was and why. The reader resumes after the batch's stated
    length when that length is sane, and stops the file otherwise."""

    path: str
    position: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: byte {self.position}: {self.reason}"
