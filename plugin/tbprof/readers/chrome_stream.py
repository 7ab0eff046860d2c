"""Converts a Chrome trace JSON (a PyTorch/Kineto trace, a TF1 timeline, ...) larger than the memory
budget by building its store in the disk cache.

The reader is ``chrome_trace.py``'s, with its columns in files instead of memory
(``chrome_columns.py``): the scanner's columns are drained to scratch files of the entry being
written whenever they pass a share of the budget; the builder walks them in chunks of rows and
writes the events and stats it collects to more scratch files; the planes' columns are created as
the entry's own files and filled through memory maps. Anonymous memory is then one window of the
file, one chunk's temporaries, the token table and string table, a phase code per event, and the
steps that hold a whole column of something smaller than the events (the rows of one thread
sorted by time, the flow points, the events of phases other than ``X``), each checked against the
budget first (``MemoryRefusal`` names it). The entry is committed whole and reopened by
``DiskCache.load``: tools then see a memory-mapped store equal to the in-memory reader's
(``tests/readers/test_chrome_disk_build.py`` compares every column).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from tbprof.cache.disk_cache import PLANE_ARRAYS, STAT_ARRAYS, DiskCache, save_blobs
from tbprof.cache.entry_writer import EntryWriter
from tbprof.fs import UrlPath
from tbprof.readers import chrome_trace
from tbprof.readers.byte_sources import StreamSource
from tbprof.readers.chrome_columns import EntryWork, Spill
from tbprof.readers.plane_builder import Limit
from tbprof.readers.streamed_entry import stream_into_entry
from tbprof.store import tables

_MIN_WINDOW_BYTES = 1 << 20
# The window, the scanner's undrained columns and the builder's chunk are these shares of the
# budget (a chunk's temporaries take up to ~_BYTES_PER_CHUNK_EVENT an event).
_WINDOW_SHARE = 32
_DRAIN_SHARE = 8
_BYTES_PER_CHUNK_EVENT = 1024
_MIN_CHUNK_EVENTS = 1 << 14
_MAX_CHUNK_EVENTS = 1 << 22
# Decompressed JSON a streaming conversion accepts: the entry and its scratch columns take up to
# about this share of the free disk per byte of JSON (cache/memory_guard.py STREAM_DISK_FACTOR),
# and no more than this many times the gzip file (profiles compress 8-13x, bench/measurements.md;
# a gzip bomb 1000x: decompressing it would cost minutes of CPU for nothing).
_JSON_DISK_SHARE = 2
_MAX_GZIP_RATIO = 200


def _json_limit(file_bytes: int, disk: DiskCache) -> tuple[int, str]:
    """(decompressed bytes accepted, why no more) for a gzip file of ``file_bytes``."""
    by_disk = shutil.disk_usage(disk.root).free // _JSON_DISK_SHARE
    by_ratio = _MAX_GZIP_RATIO * file_bytes
    if by_ratio < by_disk:
        return by_ratio, (f"{_MAX_GZIP_RATIO} times the file: profiles compress about 10x, so this is not one "
                          "(a gzip bomb?)")
    return by_disk, (f"more than the disk cache ({disk.root}) has room to convert; free some disk there, or "
                     "point --cache-dir elsewhere")


def stream_chrome_trace(path: Path | UrlPath, disk: DiskCache, key: str, budget_bytes: int, host: str | None = None,
                        chunk_events: int | None = None, window_bytes: int | None = None) -> tables.ProfileStore:
    """Converts ``path`` into ``disk``'s entry ``key`` within ``budget_bytes`` of anonymous memory
    and returns the store loaded from it (memory-mapped). Raises ProfileReadError as the
    in-memory reader does; ``chunk_events`` and ``window_bytes`` (tests: tiny chunks and windows
    put every step on a boundary somewhere) override those derived from the budget."""
    source = str(path)
    host_name = host if host is not None else chrome_trace.host_of(path)
    window = window_bytes if window_bytes is not None else \
        max(_MIN_WINDOW_BYTES, min(chrome_trace.WINDOW_BYTES, budget_bytes // _WINDOW_SHARE))
    chunk = chunk_events if chunk_events is not None else \
        max(_MIN_CHUNK_EVENTS, min(_MAX_CHUNK_EVENTS, budget_bytes // _BYTES_PER_CHUNK_EVENT))

    def build(f: StreamSource, writer: EntryWriter) -> tables.ProfileStore:
        work = EntryWork(writer, Limit(source, budget_bytes), chunk)
        spill = Spill(work, max(1, budget_bytes // _DRAIN_SHARE), *_json_limit(f.size, disk))
        store = chrome_trace.read_windows(chrome_trace.file_windows(f, window), source, host_name, window, spill)
        _save_columns(writer, store)
        return store

    return stream_into_entry(path, disk, key, window, build)


def _is_file(arr: Any, path: Path) -> bool:
    """``arr`` maps the whole of ``path`` (a column built in place there)."""
    name = getattr(arr, "filename", None)
    if not name or not path.exists() or not os.path.samefile(name, path):
        return False
    with open(path, "rb") as fh:
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
        header_bytes = fh.tell()
    return int(arr.nbytes) + header_bytes == path.stat().st_size


def _save(writer: EntryWriter, name: str, arr: np.ndarray) -> None:
    """Writes a column the builder did not create in place (a slice of a scratch column, a small
    table, a plane Kineto's pass replaced): beside, then renamed over any file of that name (an
    array mapping the old file keeps it until it goes)."""
    target = writer.folder / f"{name}.npy"
    if _is_file(arr, target):
        return
    tmp = writer.folder / f"{name}.tmp.npy"
    np.save(tmp, np.ascontiguousarray(arr))
    os.replace(tmp, target)


def _save_columns(writer: EntryWriter, store: tables.ProfileStore) -> None:
    """Every column of ``store`` as the entry's files (``DiskCache.save``'s names), then the
    scratch columns removed."""
    for pi, p in enumerate(store.planes):
        for name in PLANE_ARRAYS:
            _save(writer, f"p{pi}_{name}", getattr(p, name))
        for n in STAT_ARRAYS:
            _save(writer, f"p{pi}_s_{n}", getattr(p.stats, n))
            _save(writer, f"p{pi}_m_{n}", getattr(p.meta_stats, n))
        save_blobs(writer.folder, pi, p.blobs)
    for entry in os.scandir(writer.folder):
        if entry.name.startswith("x") and entry.name.endswith(".npy"):
            os.unlink(entry.path)
