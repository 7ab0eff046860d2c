"""Refuses to convert a profile file that cannot fit in memory, before reading a byte of it.

Converting holds the file's bytes and its columns at once; a file far larger than the free
memory would otherwise get the whole server killed by the kernel's OOM killer (or swap the
machine to a halt) instead of answering "too large". The factors below are peak memory per
byte of file (``ru_maxrss`` growth while reading), rounded up from what the shared profiles
took: XSpace files, and Chrome trace JSON read by the compiled streaming scanner
(readers/chrome_trace.py: bounded windows, the columns are the memory) per byte of JSON text
and per byte of gzip; the figures are in bench/measurements.md#conversion-memory.

An XSpace or Chrome trace JSON file that does not fit is not refused when a local disk cache is
there: it is converted by streaming (readers/xplane_stream.py, readers/chrome_stream.py: bounded
windows of the file decoded straight into the cache entry's column files), with a budget of half
the memory left (``plan``).

Compressed content is judged by its bytes, not its name (gzip inside a ``.json`` gets the gzip
factor), and the decompressed size is checked again while decompressing
(``decompressed_limit_bytes``), because gzip ratios reach 1000x. Conversions in flight reserve
their estimate (``conversion``), so ten concurrent conversions cannot each pass the check
against the same free memory.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.fs import Location

_FACTOR_BY_SUFFIX = ((".xplane.pb", 5), (".gz", 30), (".json", 3))
# tfprof ProfileProto and anything else: bounds upb's parse of a file of small graph nodes, the
# worst case found (bench/tfprof_memory_bench.py; bench/measurements.md#conversion-memory); the
# reader then checks its views' need from the file's counts of nodes, name scopes and frames
# (readers/tfprof.py), which its size cannot tell.
_DEFAULT_FACTOR = 16
_GZIP_FACTOR = 30
# Peak per byte of decompressed JSON (the scanner's columns), applied during decompression.
JSON_FACTOR = 3
_GZIP_MAGIC = b"\x1f\x8b"

_reserved_lock = threading.Lock()
_reserved_bytes = 0

# Tests and operators can state the memory a conversion may use (bytes); else MemAvailable.
LIMIT_ENV = "TBPROF_CONVERT_MEMORY_BYTES"


def memory_factor(path: Location, head: bytes = b"") -> int:
    """Peak bytes of memory per byte of file; ``head`` (the file's first bytes) overrides the name."""
    if head.startswith(_GZIP_MAGIC):
        return _GZIP_FACTOR
    name = path.name.lower()
    return next((f for suffix, f in _FACTOR_BY_SUFFIX if name.endswith(suffix)), _DEFAULT_FACTOR)


def reserved_bytes() -> int:
    return _reserved_bytes


def decompressed_limit_bytes() -> int | None:
    """How many bytes of JSON a decompression may produce now (None: no limit known)."""
    avail = available_bytes()
    return None if avail is None else max(0, avail) // JSON_FACTOR


def available_bytes() -> int | None:
    """Memory a conversion may use: $TBPROF_CONVERT_MEMORY_BYTES, else the kernel's
    MemAvailable (None when unknown, e.g. not Linux: then nothing is refused), read at most
    once per ``MEMINFO_TTL_S``."""
    env = os.environ.get(LIMIT_ENV, "").strip()
    if env.isdigit():
        return int(env)
    global _meminfo
    now = time.monotonic()
    if now - _meminfo[0] < MEMINFO_TTL_S:
        return _meminfo[1]
    found: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        found = None
    _meminfo = (now, found)
    return found


# The kernel composes /proc/meminfo on every read (tens of microseconds, twice per converted
# file: a visible share of a small pod host's conversion in a worker); a reading this recent
# still says what is available now.
MEMINFO_TTL_S = 0.05
_meminfo: tuple[float, int | None] = (-1.0, None)


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def _head(path: Location) -> bytes:
    # A FIFO must not block here either (the reader refuses it with a clear message).
    if not isinstance(path, Path):
        return b""  # an object in a bucket: judged by its name (one request less)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, 2)
    except OSError:
        return b""
    finally:
        os.close(fd)


# Disk a streamed entry takes per byte of XSpace file while it is written: bounds the entry and its
# scratch columns (metadata ids, text spans) on the demo profiles (bench/measurements.md#conversion-memory).
STREAM_DISK_FACTOR = 3

# Appended to a refusal of a file that could stream if the disk cache were local.
STREAM_HINT = (". Files larger than memory convert by streaming into tbprof's disk cache, which is "
               "off here (no disk cache, or a URL cache dir): use a local --cache-dir to open it")


def check_fits(path: Location) -> int:
    """Raises ProfileReadError naming the sizes when converting ``path`` would not fit in the
    memory that conversions in flight have not reserved; returns the estimate (bytes)."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    need = size * memory_factor(path, _head(path))
    avail = available_bytes()
    if avail is not None:
        avail -= _reserved_bytes
    if avail is not None and need > avail:
        raise MemoryRefusal(str(path), (
            f"the file is too large to open here: it is {_gb(size)}, converting it needs about "
            f"{_gb(need)} of memory and {_gb(avail)} is available. Open it on a machine with more "
            f"memory, or capture a shorter profile (a smaller duration_ms or fewer steps)"
            + (" (other conversions in flight hold part of it: try again shortly)" if _reserved_bytes else "")))
    return need


def streaming_budget_bytes() -> int:
    """The memory a streaming conversion may use now: half of what is free and not reserved
    (so a second large file can still stream beside it), or 0 when nothing is known."""
    avail = available_bytes()
    return 0 if avail is None else max(0, avail - _reserved_bytes) // 2


def plan(path: Location, streamable: bool | None = None, stream_dir: Path | None = None) -> tuple[int | None, int]:
    """(streaming budget or None to convert in memory, bytes to reserve) for ``path``.

    ``streamable``: None, the format cannot stream (a refusal is final); False, it could but no
    local disk cache is there (the refusal says how to enable streaming); True, a file that does
    not fit streams instead of being refused, when ``stream_dir`` (the disk cache) has room for
    the entry (``STREAM_DISK_FACTOR`` x the file).
    """
    try:
        return None, check_fits(path)
    except MemoryRefusal as e:
        if streamable is None:
            raise
        if not streamable:
            raise MemoryRefusal(e.path, e.reason + STREAM_HINT) from None
        if stream_dir is not None:
            _check_disk(e, path, stream_dir)
        budget = streaming_budget_bytes()
        return budget, budget


def _check_disk(refusal: MemoryRefusal, path: Location, stream_dir: Path) -> None:
    try:
        size = path.stat().st_size
        free = shutil.disk_usage(stream_dir).free
    except OSError:
        return  # unknown: a full disk is still an error (ProfileReadError), never a crash
    need = size * STREAM_DISK_FACTOR
    if need > free:
        raise MemoryRefusal(refusal.path, (
            f"{refusal.reason}; streaming it into the disk cache instead needs about {_gb(need)} of disk and "
            f"{_gb(free)} is free in {stream_dir}")) from None


@contextmanager
def conversion(path: Location, streamable: bool | None = None, stream_dir: Path | None = None) -> Iterator[int | None]:
    """Checks that converting ``path`` fits and reserves its estimate until the block ends.

    Yields None to convert in memory, or the budget (bytes) of a streaming conversion when the
    file does not fit and ``streamable`` (see ``plan``)."""
    global _reserved_bytes
    with _reserved_lock:
        budget, need = plan(path, streamable, stream_dir)
        _reserved_bytes += need
    try:
        yield budget
    finally:
        with _reserved_lock:
            _reserved_bytes -= need


def check_allocation(source: str, need_bytes: int, what: str | Callable[[], str]) -> None:
    """Refuses (MemoryRefusal) to allocate ``need_bytes`` more than the memory available now;
    ``what`` (or what it returns, asked only for a refusal) says what takes the memory.

    For readers that learn a file's real size only while decoding it: the XSpace scanner's
    counts say how many events a file holds, and a file of empty events holds one per 2 bytes
    (columns of ~40 bytes each: 19x the file, against the 5x assumed from its size).
    """
    avail = available_bytes()
    if avail is not None and need_bytes > avail:
        what = what if isinstance(what, str) else what()
        raise MemoryRefusal(source, (
            f"the file is too large to open here: it holds {what}, which need about {_gb(need_bytes)} of "
            f"memory and {_gb(avail)} is available. Open it on a machine with more memory, or capture a "
            "shorter profile"))


_trim: object = None
_libc: object = None
# glibc's mallopt parameters (malloc.h).
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
# glibc's heaps (arenas) shared by every thread created after ``share_heaps`` (its default cap).
SHARED_HEAPS = 2
# Blocks of this size or more still get mappings of their own (given back when freed).
HEAP_BLOCKS_BELOW_BYTES = 1 << 30
_heaps_shared = False
_heaps_lock = threading.Lock()


def _c_library() -> object:
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6")
        except OSError:
            _libc = False
    return _libc


def _mallopt(param: int, value: int) -> bool:
    libc = _c_library()
    mallopt = getattr(libc, "mallopt", None) if libc else None
    return mallopt is not None and bool(mallopt(param, value))


def share_heaps(count: int = SHARED_HEAPS) -> bool:
    """Caps glibc's heaps (arenas) at ``count`` for the threads created from now on, in the whole
    process. The first call decides (a one-shot command that asked for one heap keeps it when a
    reader later asks for ``SHARED_HEAPS``); nothing where ``$MALLOC_ARENA_MAX`` says how many (the
    user's choice stands), or without glibc. Whether it did.

    Each thread that allocates gets a heap of its own, up to 8 per CPU, and a heap keeps the free
    pages at its top (``malloc_trim`` hands back only the main heap's): after a Chrome trace's scan
    on many threads and its builder's pools, those tops held a large share of the peak while the
    analyses ran. Threads that share a few heaps reuse those pages instead; with one heap, what a conversion's
    thread frees serves the analyses on the command's (see ``large_blocks_in_heap``;
    bench/measurements.md).
    """
    global _heaps_shared
    with _heaps_lock:
        if _heaps_shared:
            return False
        _heaps_shared = True
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return _mallopt(_M_ARENA_MAX, count)


def large_blocks_in_heap() -> bool:
    """glibc takes blocks below ``HEAP_BLOCKS_BELOW_BYTES`` from the heap, not from mappings of
    their own that go back to the kernel when freed: with one heap (``share_heaps(1)``), a one-shot
    command's analyses then reuse the pages its conversion freed instead of faulting in fresh zeroed
    ones, at the same peak (neither call alone helps: bench/measurements.md#one-host-summary). For
    a process that ends after one file converted in memory: freed blocks stay in the heap. Whether
    it did (not glibc: nothing)."""
    return _mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_BELOW_BYTES)


def release_free_memory() -> None:
    """Hands the C heap's free pages back to the kernel (glibc's ``malloc_trim``; elsewhere nothing).

    A conversion frees most of what it allocated (the reader's temporaries), but glibc keeps freed
    blocks under its mmap threshold in the heap of the thread that freed them, and a conversion
    runs on a background thread: the tools that then run on another thread cannot reuse them, so
    the process' peak would be the conversion's leftovers plus the tools' own memory (the peak RSS of
    ``bench/json_bench.py``'s summaries shows it).
    """
    global _trim
    if _trim is None:
        libc = _c_library()
        _trim = getattr(libc, "malloc_trim", False) if libc else False
    if _trim:
        _trim(0)  # type: ignore[operator]
