"""Where a reader's bytes come from, read by offset: a local file, an object in a bucket, or a
file already in memory. The streaming readers (``xplane_stream.py``, ``chrome_trace.py``) read
bounded windows through ``pread``; the in-memory XSpace reader hands its bytes over as a
``MemoryBytes`` so that the one plane builder (``plane_builder.py``) reads both alike."""

from __future__ import annotations

import os
from pathlib import Path

from tbprof.errors import ProfileReadError
from tbprof.fs import UrlPath
from tbprof.readers.files import open_regular


class LocalFile:
    """A regular file read by offset, refusing one that changes while it is read."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.path = path
        self.fd = open_regular(path)
        st = os.fstat(self.fd)
        self.size = st.st_size
        self._stamp = (st.st_size, st.st_mtime_ns)

    def pread(self, offset: int, n: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            try:
                part = os.pread(self.fd, n - got, offset + got)
            except OSError as e:
                raise ProfileReadError(self.source, f"cannot read the file: {e.strerror or e}") from e
            if not part:
                raise self._changed()
            parts.append(part)
            got += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def check_unchanged(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise ProfileReadError(self.source, f"cannot read the file: {e.strerror or e}") from e
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise self._changed()

    def _changed(self) -> ProfileReadError:
        return ProfileReadError(self.source, "the file changed while it was being read (is the profiler still "
                                "writing it?); try again when it is complete")

    def close(self) -> None:
        os.close(self.fd)


class UrlFile:
    """An object in a bucket read by offset: ranged GETs of at least ``block_bytes`` each, the
    last block kept so that the many small reads of headers and texts cost no request each.
    An object whose size differs from the listing's (rewritten since) is refused."""

    def __init__(self, path: UrlPath, block_bytes: int) -> None:
        self.source = str(path)
        self.path = path
        self.size = path.stat().st_size  # from the listing: no request
        self._block_bytes = block_bytes
        self._block_start = 0
        self._block = b""

    def pread(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise self._changed()
        if self._block_start <= offset and offset + n <= self._block_start + len(self._block):
            at = offset - self._block_start
            return self._block[at:at + n]
        end = min(self.size, offset + max(n, self._block_bytes))
        data = self.path.read_range(offset, end)
        if len(data) != end - offset:
            raise self._changed()
        if n >= self._block_bytes:
            return data[:n]  # a whole window: not kept (the next one starts after it)
        self._block_start, self._block = offset, data
        return data[:n]

    def check_unchanged(self) -> None:
        if self.path.current_size() != self.size:
            raise self._changed()

    def _changed(self) -> ProfileReadError:
        return ProfileReadError(self.source, "the file changed while it was being read (rewritten since it was "
                                "listed?); reload the page")

    def close(self) -> None:
        self._block = b""


class MemoryBytes:
    """A file's bytes already in memory: reads are views, nothing is copied."""

    def __init__(self, data: memoryview, source: str) -> None:
        self.view = data
        self.source = source
        self.size = len(data)

    def pread(self, offset: int, n: int) -> memoryview:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ProfileReadError(self.source, "not a readable XSpace profile: a field runs past the end of the file")
        return self.view[offset:offset + n]


# What the streaming readers read from: a local file or an object in a bucket.
StreamSource = LocalFile | UrlFile
# What the plane builder reads texts from: either of those, or bytes in memory.
ByteSource = LocalFile | UrlFile | MemoryBytes
