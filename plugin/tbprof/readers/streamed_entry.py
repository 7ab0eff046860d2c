"""The frame both streaming readers share (``xplane_stream.py``, ``chrome_stream.py``): a file read
by windows (``pread`` locally, ranged GETs for an object in a bucket) into a disk-cache entry
written column by column, committed whole, then reopened memory-mapped.

Errors: the file's own are the reader's ``ProfileReadError``; the cache's (an unsafe folder, a
full or unwritable disk) are a ``MemoryRefusal``, the "may work later" kind, so the file is not
remembered as broken.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path

from tbprof.cache.disk_cache import DiskCache, entry_meta
from tbprof.cache.entry_writer import EntryWriter
from tbprof.cache.memory_guard import release_free_memory
from tbprof.errors import MemoryRefusal, ProfileReadError, UnsafeCacheDir
from tbprof.fs import UrlPath
from tbprof.readers.byte_sources import LocalFile, StreamSource, UrlFile
from tbprof.store import tables

# Builds the store into the entry being written, reading the file through the source.
Build = Callable[[StreamSource, EntryWriter], tables.ProfileStore]


def stream_into_entry(path: Path | UrlPath, disk: DiskCache, key: str, window_bytes: int,
                      build: Build) -> tables.ProfileStore:
    """``build``'s store of ``path`` written as ``disk``'s entry ``key``, returned as loaded back
    from the cache (memory-mapped)."""
    source = str(path)
    f: StreamSource = UrlFile(path, window_bytes) if isinstance(path, UrlPath) else LocalFile(path)
    try:
        if f.size == 0:
            raise ProfileReadError(source, "the file is empty (0 bytes)")
        try:
            with EntryWriter(disk, key) as writer:
                store = build(f, writer)
                f.check_unchanged()
                writer.commit(entry_meta(store))
                del store
        except UnsafeCacheDir as e:
            raise MemoryRefusal(source, f"cannot stream the file into the disk cache: {e}") from None
        except OSError as e:
            # The cache's disk (full, unwritable), not the file. The frames of the traceback hold
            # the half-written columns' mappings, whose deleted files keep their disk space until
            # unmapped: clear them now, and do not chain the error (an answer kept in a memo would
            # keep them too).
            reason = e.strerror or str(e)
            traceback.clear_frames(e.__traceback__)
            del e
            raise MemoryRefusal(source, f"cannot write the converted profile to the cache ({disk.root}): "
                                f"{reason}; free some disk there, or point --cache-dir elsewhere") from None
    finally:
        f.close()
    release_free_memory()  # the reader's heap, for the tools that run on the store next
    loaded = disk.load(key)
    if loaded is None:
        raise ProfileReadError(source, f"the converted profile could not be reopened from the cache ({disk.root})")
    return loaded
