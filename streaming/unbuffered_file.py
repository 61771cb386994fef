"""A file written once and read by another process, if at all, kept out of the page cache.

The driver writes each batch's decisions file through it (`decision_parts.write_decisions`):
the caller fills the room `space` gives and `commit`s it; whole blocks go to the disk with
O_DIRECT, or where that cannot be had through the page cache, dropped behind as they are
written.
"""

from __future__ import annotations

import contextlib
import mmap
import os

# O_DIRECT where the platform and the filesystem allow it (tests turn it off to run the
# page cache's path); its unit: offsets, lengths and the buffer's address in whole blocks
_DIRECT = True
_BLOCK = 4096

# Without O_DIRECT, what is written is handed to the kernel's writeback every
# 32 MiB and dropped from the page cache behind it (`posix_fadvise(POSIX_FADV_DONTNEED)`, as
# `dd oflag=nocache` does), in writes of a megabyte (larger ones took longer here).
_DROP_BEHIND = 32 << 20
_PAGE_CACHE_WRITE = 1 << 20


def _drop_behind(fd: int, offset: int, length: int) -> None:
    if hasattr(os, "posix_fadvise"):  # not on macOS or Windows
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


class UnbufferedFile:
    """A file written once, front to back: window after window into one page-aligned
    buffer, whole blocks of it written with O_DIRECT, and what is left of the last block
    (`held`) written through the page cache at the end.

    The file is written once and read by another process, if at all. A creation at a
    million partitions writes 2 GB, and each page of it written through the page cache is
    memory the kernel must find and fill. On the benchmark's machine, a virtual machine
    that backs fresh memory slowly, the job's driver spent 2.8 to 4.2 s of the creation's
    batch in those writes, with one core mostly in the kernel, where O_DIRECT writes the
    same 2 GB from this buffer, the same memory every window, in 0.6 to 0.7 s (README:
    Scale). Where O_DIRECT cannot be had (no such flag, a filesystem that refuses it as
    tmpfs does, or a direct write that fails or stops mid-block), the rest goes through
    the page cache, dropped behind as it is written."""

    def __init__(self, path: str, capacity: int) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.direct: int | None = None
        if _DIRECT and hasattr(os, "O_DIRECT"):
            with contextlib.suppress(OSError):
                self.direct = os.open(path, os.O_WRONLY | os.O_DIRECT)
        self.buffer = mmap.mmap(
            -1, capacity + _BLOCK
        )  # anonymous: page-aligned; grows if a window needs it
        self.held = 0  # bytes at the buffer's start not yet written
        self.written = self.dropped = 0  # bytes in the file; of them, dropped from the page cache

    def space(self, size: int) -> memoryview:
        """Room for `size` more bytes after those held, to fill and then `commit`."""
        if self.held + size > len(self.buffer):
            bigger = mmap.mmap(-1, -(-(self.held + size) // _BLOCK) * _BLOCK)
            bigger[: self.held] = self.buffer[: self.held]
            self.buffer = bigger
        return memoryview(self.buffer)[self.held : self.held + size]

    def commit(self, size: int) -> None:
        """Write the held bytes and the `size` after them that `space` gave, but for the
        last part block, which stays held."""
        end = self.held + size
        whole = end - end % _BLOCK if self.direct is not None else end
        self._write(memoryview(self.buffer)[:whole])
        self.buffer.move(0, whole, end - whole)
        self.held = end - whole

    def _write(self, data: memoryview) -> None:
        while data:
            if self.direct is not None:
                try:
                    n = os.pwrite(self.direct, data, self.written)
                except (
                    OSError
                ):  # the filesystem refuses O_DIRECT writes: the page cache for the rest
                    os.close(self.direct)
                    self.direct = None
                    continue
                self.dropped = self.written + n  # nothing of it is in the page cache
                if n % _BLOCK:  # a direct write ended mid-block: the rest through the page cache
                    os.close(self.direct)
                    self.direct = None
            else:
                n = os.pwrite(self.fd, data[:_PAGE_CACHE_WRITE], self.written)
            data = data[n:]
            self.written += n
            if self.direct is None and self.written - self.dropped >= _DROP_BEHIND:
                _drop_behind(self.fd, self.dropped, self.written - self.dropped)
                self.dropped = self.written

    def close(self) -> None:
        """Write what is held through the page cache, sync the file and close it."""
        try:
            if self.direct is not None:
                os.close(self.direct)
                self.direct = None
            self._write(memoryview(self.buffer)[: self.held])
            os.fsync(self.fd)
        finally:
            os.close(self.fd)
            if self.direct is not None:
                os.close(self.direct)
