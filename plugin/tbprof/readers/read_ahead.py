"""One local XSpace file read and scanned on a thread while a command is still importing and
listing.

A cold ``tbprof summary`` of one host spends its first ~0.1 s in imports (numpy's a third of
it) and the logdir's listing, one core busy, before its conversion starts with the file's read
(~20 ms for 60 MB: fresh pages and a copy out of the page cache) and wire scan (on every core,
outside the GIL). Started here instead, the read runs beside numpy's import and the scan beside
the service's and the analyses' imports, on the core they leave idle; the command's conversion
then builds its store from the scan (bench/measurements.md#cold-summary). The build itself
holds the GIL: beside the imports it would only take turns with them, so it stays in the
conversion. The read starts before numpy is imported: into private anonymous memory that asks
for transparent huge pages, as numpy does for a large array (shared anonymous memory, ``mmap``'s
default, gets none: 30 ms instead of 18 for 60 MB).

One file at most, only where the path names a single ``.xplane.pb`` (a file, or a folder that
holds exactly one), only where converting it in memory fits now (what the conversion checks
before it reads: a file that would stream is not read here), and only where the caller says it
is not converted already. What was read is handed to the first reader of that same file (the
same path, and the same device, inode, size, mtime and ctime now as before and after the read:
the refusals of a normal read hold), once, with its scan (the eager reader's: the lazy reader
scans its own way); ``discard`` drops it untaken. Nothing is kept of a read or a scan that
failed: the command's own conversion then reads the file again and reports the error itself.
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from tbprof._core.wire import ScanResult

log = logging.getLogger("tbprof")

XSPACE_SUFFIX = ".xplane.pb"
# A folder's walk looking for its one XSpace file gives up after this many entries (a large
# logdir is a pod or many runs: nothing to read ahead, and no long walk on the import's core).
WALK_MAX_ENTRIES = 2000

# (device, inode, size, mtime, ctime): the file as it was read.
_Identity = tuple[int, int, int, int, int]


class _Ahead:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.source = ""
        self.identity: _Identity | None = None
        self.array: np.ndarray | None = None  # the bytes (over the memory read into)
        self.scanned: ScanResult | None = None


_lock = threading.Lock()
_slot: _Ahead | None = None


def _identity(st: os.stat_result) -> _Identity:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def single_xspace_file(path: Path, max_entries: int = WALK_MAX_ENTRIES) -> Path | None:
    """The one ``.xplane.pb`` regular file ``path`` names or holds (symlinks not followed: the
    listing's own rules decide those), None when it holds none, several, or too many entries."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return path if path.name.endswith(XSPACE_SUFFIX) else None
    if not stat.S_ISDIR(st.st_mode):
        return None
    found: Path | None = None
    seen = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        seen += len(dirs) + len(files)
        if seen > max_entries:
            return None
        for name in files:
            if name.endswith(XSPACE_SUFFIX):
                if found is not None:
                    return None
                found = Path(root, name)
    if found is None:
        return None
    try:
        return found if stat.S_ISREG(os.lstat(found).st_mode) else None
    except OSError:
        return None


# The eager reader's scan of a file's bytes (``xplane.scan_xspace``), given by the command: this
# module imports no reader (the readers take what it read).
Scan = Callable[["np.ndarray", str], "ScanResult"]


def start(path: Path, converted: Callable[[Path], bool], scan: Scan | None = None) -> threading.Thread:
    """Reads the single XSpace file of ``path`` (and scans it with ``scan``) on a daemon thread,
    unless ``converted(file)`` (its store is cached already: nothing will read the file) or its
    conversion would not fit in memory now; returns the thread (tests join it). The file found
    has the path the logdir's listing gives it (resolved), which its conversion asks for."""
    global _slot
    ahead = _Ahead()
    with _lock:
        _slot = ahead

    def read() -> None:
        try:
            _read(ahead, path, converted, scan)
        except Exception:  # kept: nothing; the command's conversion reads again and says what is wrong
            ahead.array = ahead.scanned = None
            log.debug("tbprof: reading %s ahead failed", path, exc_info=True)
        finally:
            ahead.done.set()

    thread = threading.Thread(target=read, name="tbprof-read-ahead", daemon=True)
    thread.start()
    return thread


def _read(ahead: _Ahead, path: Path, converted: Callable[[Path], bool], scan: Scan | None) -> None:
    from tbprof.cache.memory_guard import check_fits
    from tbprof.errors import ProfileReadError
    from tbprof.readers.files import read_unchanged

    file = single_xspace_file(path.resolve())  # the listing's form of the path (service/logdir.py)
    if file is None or os.stat(file).st_size == 0:  # an empty file: the conversion says so
        return
    try:
        check_fits(file)
    except ProfileReadError:  # the conversion streams it, or refuses it
        return
    if converted(file):
        return
    identity, data = read_unchanged(file, _buffer)
    import numpy as np  # (imported by the command meanwhile)

    array = np.frombuffer(data, dtype=np.uint8)
    scanned = scan(array, str(file)) if scan is not None else None
    ahead.source, ahead.identity, ahead.array, ahead.scanned = str(file), _identity(identity), array, scanned


def _buffer(size: int) -> mmap.mmap:
    """Private anonymous memory of ``size`` bytes (> 0), in huge pages where the kernel has them."""
    buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        buffer.madvise(mmap.MADV_HUGEPAGE)
    return buffer


def take(path: str | Path) -> tuple[np.ndarray, ScanResult | None] | None:
    """The bytes read ahead of ``path`` and their scan (None where not scanned), if they are of
    this same file unchanged (waiting for the read and scan when they are still running); handed
    out once."""
    global _slot
    with _lock:
        ahead = _slot
    if ahead is None:
        return None
    ahead.done.wait()
    try:
        now = _identity(os.stat(path))
    except OSError:
        return None
    with _lock:
        if _slot is not ahead or ahead.array is None or ahead.identity != now or ahead.source != str(path):
            return None
        _slot = None
    return ahead.array, ahead.scanned


def discard() -> None:
    """Drops what was read ahead and not taken (the run picked was another, or read otherwise)."""
    global _slot
    with _lock:
        _slot = None
