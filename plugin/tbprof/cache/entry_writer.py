"""Writes one disk-cache entry column by column, for a conversion that streams a file larger
than memory straight into the cache (readers/xplane_stream.py).

The entry is the one ``DiskCache.save`` writes (same file names, ``meta.json``, format
version), built in a temporary folder beside the entries and renamed into place whole by
``commit``, so ``DiskCache.load`` maps it like any other entry and a crash leaves no half entry.

Columns grow by plain appends (``Appender``) or are created at their final size
(``create``); either way their disk space exists before anything maps them: a full disk is an
``OSError`` from ``write``/``posix_fallocate``, never a SIGBUS on a write through a mapping of a
sparse file. Columns are then finished in place through ``np.memmap`` (``open``): those pages
are file-backed, so the kernel writes them back and drops them under memory pressure, and they
do not count as the process's anonymous memory.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from tbprof.cache.cache_dir import check_cache_dir
from tbprof.cache.disk_cache import META, DiskCache, locked_temp_folder


def _header(dtype: np.dtype[Any], shape: tuple[int, ...]) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                                               "shape": shape})
    return out.getvalue()


def _reserve(fd: int, size_bytes: int) -> None:
    """Allocates the file's blocks now, so that writes through a mapping cannot hit a full disk."""
    if size_bytes <= 0:
        return
    if not hasattr(os, "posix_fallocate"):
        return  # macOS: the file keeps its holes; a full disk there is the remaining risk
    try:
        os.posix_fallocate(fd, 0, size_bytes)
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without it: as above
            raise


class Appender:
    """A ``.npy`` file written by appending rows; the header gets its row count on ``close``.

    numpy pads every version-1 header to the same 128 bytes for any row count (room for the
    shape to grow), so the final header overwrites the placeholder in place.
    """

    def __init__(self, path: Path, dtype: np.dtype[Any] | type, width: int = 0) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.width = width  # 0: a 1-d column; else rows of ``width`` values
        self.rows = 0
        self._f = open(path, "wb")
        self._header_bytes = len(self._shape_header(0))
        self._f.write(self._shape_header(0))

    def _shape_header(self, rows: int) -> bytes:
        return _header(self.dtype, (rows, self.width) if self.width else (rows,))

    def append(self, values: np.ndarray) -> None:
        arr = np.ascontiguousarray(values, dtype=self.dtype)
        if (arr.ndim == 2) != bool(self.width) or (self.width and arr.shape[1] != self.width):
            raise ValueError(f"rows of shape {arr.shape} do not fit {self.path.name}")
        if arr.size:
            self._f.write(arr.reshape(-1).view(np.uint8).data)  # the array's own buffer, no copy
        self.rows += int(arr.shape[0])

    def close(self) -> None:
        if self._f.closed:
            return
        final = self._shape_header(self.rows)
        if len(final) != self._header_bytes:  # not with numpy's padding; kept as a guard
            raise OSError(f"{self.path.name}: the .npy header changed size")
        self._f.seek(0)
        self._f.write(final)
        self._f.close()


class EntryWriter:
    """A cache entry being written: ``with EntryWriter(disk, key) as w: ...; w.commit(meta)``."""

    def __init__(self, disk: DiskCache, key: str) -> None:
        self.disk = disk
        self.key = key
        entry = disk.entry_path(key)
        check_cache_dir(disk.root)  # UnsafeCacheDir: it turned unsafe since the cache was opened
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Locked while this writer lives: a cache opened meanwhile does not take it for an orphan.
        self._writing = locked_temp_folder(entry.parent, f".{key}.")
        self.folder = self._writing.__enter__()
        self._appenders: list[Appender] = []
        self.committed = False

    def __enter__(self) -> EntryWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.abort()

    def appender(self, name: str, dtype: np.dtype[Any] | type, width: int = 0) -> Appender:
        a = Appender(self.folder / f"{name}.npy", dtype, width)
        self._appenders.append(a)
        return a

    def create(self, name: str, dtype: np.dtype[Any] | type, rows: int) -> np.memmap[Any, Any]:
        """A new 1-d column of ``rows`` values, its space reserved, mapped for writing."""
        path = self.folder / f"{name}.npy"
        header = _header(np.dtype(dtype), (rows,))
        size = len(header) + rows * np.dtype(dtype).itemsize
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, header)
            os.ftruncate(fd, size)
            _reserve(fd, size)
        finally:
            os.close(fd)
        return self.open(name)

    def open(self, name: str) -> Any:
        """A written column mapped for reading and writing in place (an empty one as an array:
        a zero-length file cannot be mapped)."""
        arr = np.load(self.folder / f"{name}.npy", mmap_mode="r+", allow_pickle=False)
        return arr

    def save(self, name: str, array: np.ndarray) -> None:
        """A small column written at once (line tables, metadata tables)."""
        np.save(self.folder / f"{name}.npy", np.ascontiguousarray(array))

    def remove(self, name: str) -> None:
        """A scratch column the entry does not keep."""
        os.unlink(self.folder / f"{name}.npy")

    def commit(self, meta: dict[str, Any]) -> None:
        """Writes ``meta.json`` (``disk_cache.entry_meta``) and renames the folder into place (an
        entry that another process committed meanwhile is kept)."""
        for a in self._appenders:
            a.close()
        (self.folder / META).write_text(json.dumps(meta))
        entry = self.disk.entry_path(self.key)
        if self.disk.has(self.key):
            return
        self.disk.discard(entry)
        os.replace(self.folder, entry)
        self.committed = True
        self.disk.committed(self.key, meta)

    def abort(self) -> None:
        for a in self._appenders:
            try:
                a._f.close()
            except OSError:
                pass
        if not self.committed:
            shutil.rmtree(self.folder, ignore_errors=True)
        self._writing.__exit__(None, None, None)
