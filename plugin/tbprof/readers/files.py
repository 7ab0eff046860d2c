"""Reading profile files that may be hostile: only regular files, bounded decompression.

A FIFO or device in the logdir (``mkfifo run/vm.xplane.pb``) would block ``open`` and ``read``
forever and hang the request that touched it; so files are opened non-blocking and anything
but a regular file is refused before a byte is read. A gzip member expands up to ~1000x
(and the JSON objects parsed from it far more: bench/measurements.md#conversion-memory), so
decompression streams and stops at a byte budget instead of trusting the compressed size.
"""

from __future__ import annotations

import io
import mmap
import os
import stat
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from tbprof.errors import MemoryRefusal, ProfileReadError

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where an array is made, not here: a command reads ahead (``read_ahead``)
# before it has imported numpy.

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK_BYTES = 1 << 20


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: str | Path) -> int:
    """A read-only descriptor of ``path``; ProfileReadError unless it is a regular file.

    ``O_NONBLOCK`` makes opening a FIFO return at once (instead of waiting for a writer); the
    ``fstat`` then refuses it, so no read can block.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    try:
        mode = os.fstat(fd).st_mode
    except OSError as e:
        os.close(fd)
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ProfileReadError(str(path), f"it is {_kind(mode)}, not a profile file; tbprof reads only regular files")
    return fd


def head_bytes(path: str | Path, n: int) -> bytes:
    """The first ``n`` bytes of a regular file (to sniff gzip content behind any name)."""
    fd = open_regular(path)
    try:
        return os.read(fd, n)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    finally:
        os.close(fd)


def read_profile_bytes(path: str | Path) -> bytes:
    """The whole file, refusing special files and a file that changes while it is read."""
    data = _read_whole(path, as_array=False)
    assert isinstance(data, bytes)
    return data


def read_profile_array(path: str | Path) -> np.ndarray:
    """The whole file as a uint8 array (what the XSpace scanner reads), with the same refusals.

    numpy asks the kernel for transparent huge pages on an array this large, where a ``bytes``
    object gets 4 KB pages, and on a VM first touching fresh memory in small pages is slow
    enough to show in the read (bench/measurements.md#store-build).

    The bytes of a ``read_ahead`` of this same file, unchanged since, are taken instead.
    """
    import numpy as np

    early = _AHEAD.take(path)
    if early is not None:
        return np.frombuffer(early, dtype=np.uint8)
    data = _read_whole(path, as_array=True)
    assert isinstance(data, np.ndarray)
    return data


# Below this a file reads in a few milliseconds: nothing to overlap.
READ_AHEAD_MIN_BYTES = 8 << 20


def read_ahead(path: str | Path) -> None:
    """Starts reading a profile file on a thread, for a command that will convert it once it has
    imported what converting takes: the copy out of the page cache (and first touch of the
    buffer) then overlaps the imports (bench/measurements.md#one-host-summary).

    One file at a time, taken once by ``read_profile_array``; a file smaller than
    ``READ_AHEAD_MIN_BYTES``, not a regular file, or too large for the memory
    (``memory_guard.check_fits``) is left to the ordinary read and its refusals. No numpy
    here: the thread would wait for the import it is meant to overlap.
    """
    try:
        if os.stat(path).st_size < READ_AHEAD_MIN_BYTES:
            return
    except OSError:
        return
    _AHEAD.start(path)


class _ReadAhead:
    """The one early read of the process: the file's identity when it was read, and its bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._path = ""
        self._read: tuple[tuple[int, int, int, int], mmap.mmap] | None = None

    def start(self, path: str | Path) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._path = os.path.realpath(path)
            self._thread = threading.Thread(target=self._run, args=(path,), name="tbprof-read-ahead", daemon=True)
            self._thread.start()

    def _run(self, path: str | Path) -> None:
        from tbprof.cache.memory_guard import check_fits

        try:
            # Only a file the conversion would accept: a file too large for the memory is
            # refused by it (MemoryRefusal), not read here first.
            check_fits(Path(path))
            buf = _read_whole(path, as_array=False, into_map=True)
        except (ProfileReadError, MemoryRefusal, OSError, ValueError):
            return  # the ordinary read reports it
        assert isinstance(buf, tuple)
        self._read = buf

    def take(self, path: str | Path) -> mmap.mmap | None:
        """The early bytes of ``path`` if it was read ahead and is unchanged since; taken once (a
        second read of the file reads it again, and another file may be read ahead)."""
        with self._lock:
            thread = self._thread
            if thread is None or os.path.realpath(path) != self._path:
                return None
        thread.join()
        with self._lock:
            read, self._read, self._thread = self._read, None, None
        if read is None:
            return None
        identity, buf = read
        try:
            now = os.stat(path)
        except OSError:
            return None
        return buf if identity == _identity(now) else None


_AHEAD = _ReadAhead()


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _read_whole(path: str | Path, as_array: bool,
                into_map: bool = False) -> bytes | np.ndarray | tuple[tuple[int, int, int, int], mmap.mmap]:
    try:
        before = os.stat(path)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb", buffering=0, closefd=True) as f:
            if into_map:
                # Anonymous memory asked for huge pages, as numpy does for a large array.
                buf = mmap.mmap(-1, before.st_size)
                if hasattr(mmap, "MADV_HUGEPAGE"):
                    buf.madvise(mmap.MADV_HUGEPAGE)
                n = _read_into(f, memoryview(buf)[:before.st_size])
                data: bytes | np.ndarray | tuple[tuple[int, int, int, int], mmap.mmap] = (_identity(before), buf)
                grew = f.read(1) != b""
            elif as_array:
                import numpy as np

                array = np.empty(before.st_size, dtype=np.uint8)
                n = _read_into(f, array.data)
                data = array
                # One byte more than expected: the file grew (caught below with the stat).
                grew = f.read(1) != b""
            else:
                data = f.read()
                n, grew = len(data), False
            after = os.stat(path)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or n != after.st_size or grew:
        raise ProfileReadError(str(path), "the file changed while it was being read (is the profiler "
                               "still writing it?); try again when it is complete")
    return data


def _read_into(f: io.RawIOBase, view: memoryview) -> int:
    """Fills ``view`` from ``f`` (reads may return less than asked); the bytes read."""
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            break
        done += got
    return done


def gunzip_bounded(data: bytes, source: str, limit_bytes: int | None) -> bytes:
    """Decompresses every gzip member of ``data``, refusing output beyond ``limit_bytes``."""
    out: list[bytes] = []
    total = 0
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)  # 31: gzip header and trailer
            pending = rest
            while not d.eof:
                chunk = d.decompress(pending, _CHUNK_BYTES)
                pending = d.unconsumed_tail
                if not chunk and not pending:
                    break  # no input left and no output: the member is cut short
                total += len(chunk)
                if limit_bytes is not None and total > limit_bytes:
                    raise MemoryRefusal(source, (
                        f"the gzip content expands beyond {limit_bytes / 1e6:.0f} MB, more than this "
                        f"machine can convert now ({len(data) / 1e6:.1f} MB compressed); open it on a "
                        "machine with more memory, or set $TBPROF_CONVERT_MEMORY_BYTES"))
                out.append(chunk)
            if not d.eof:
                raise ProfileReadError(source, "the gzip stream is damaged or truncated: it ends early")
            rest = d.unused_data.lstrip(b"\x00")  # members may follow (and padding)
            if rest and not rest.startswith(GZIP_MAGIC):
                break  # trailing garbage after the last member: ignored, as gzip(1) warns and does
    except zlib.error as e:
        raise ProfileReadError(source, f"the gzip stream is damaged or truncated: {e}") from e
    return b"".join(out)


# Opt-in for symlinks in the logdir that point outside it (a logdir of links to shared runs).
FOLLOW_EXTERNAL_ENV = "TBPROF_FOLLOW_EXTERNAL_SYMLINKS"


def profile_file_names(folder: Path, names: list[str], root: Path, follow_external: bool | None = None) -> list[str]:
    """The names in ``folder`` that may be read as profiles: regular files, and symlinks to
    regular files inside ``root`` (outside only when the user opted in with
    ``$TBPROF_FOLLOW_EXTERNAL_SYMLINKS=1``). FIFOs, devices and sockets are never listed."""
    if follow_external is None:
        follow_external = os.environ.get(FOLLOW_EXTERNAL_ENV) == "1"
    keep: list[str] = []
    for name in names:
        path = folder / name
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                target = path.resolve(strict=True)
                if not follow_external and not target.is_relative_to(root):
                    continue
                st = target.stat()
        except (OSError, RuntimeError, ValueError):  # vanished, dangling, a symlink loop
            continue
        if stat.S_ISREG(st.st_mode):
            keep.append(name)
    return keep
