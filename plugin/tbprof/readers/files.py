"""Reading profile files that may be hostile: only regular files, bounded decompression.

A FIFO or device in the logdir (``mkfifo run/vm.xplane.pb``) would block ``open`` and ``read``
forever and hang the request that touched it; so files are opened non-blocking and anything
but a regular file is refused before a byte is read. A gzip member expands up to ~1000x
(and the JSON objects parsed from it far more: bench/measurements.md#conversion-memory), so
decompression streams and stops at a byte budget instead of trusting the compressed size.
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from pathlib import Path

import numpy as np

from tbprof._core import mapped, wire
from tbprof.errors import MemoryRefusal, ProfileReadError

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
    """
    data = _read_whole(path, as_array=True)
    assert isinstance(data, np.ndarray)
    return data


class ArrayRead:
    """A regular file read into a uint8 array by the compiled scanner's ``wire.FileRead``, so that
    ``wire.scan(reading=...)`` walks its headers while it arrives (a thread beside the read);
    ``finish`` then refuses what ``read_profile_array`` refuses (a file that changed while it was
    read) and closes the file. Use as a context manager."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        try:
            self._before = os.stat(path)
        except OSError as e:
            raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
        self._fd = open_regular(path)
        self.array = np.empty(self._before.st_size, dtype=np.uint8)
        self.reading = wire.FileRead(self._fd, self.array)

    def finish(self) -> np.ndarray:
        """The whole file (reading it now if no scan did); ProfileReadError as ``read_profile_array``."""
        try:
            if not self.reading.ran:
                self.reading.read()
            if self.reading.error:
                raise OSError(self.reading.error, os.strerror(self.reading.error))
            grew = os.pread(self._fd, 1, self._before.st_size) != b""
            after = os.stat(self.path)
        except OSError as e:
            raise ProfileReadError(str(self.path), f"cannot read the file: {e.strerror or e}") from e
        before = self._before
        if ((before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or grew
                or self.reading.got != after.st_size):
            raise ProfileReadError(str(self.path), _CHANGED)
        return self.array

    def __enter__(self) -> ArrayRead:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)


# Local files from this size on are mapped (``map_profile``). A smaller file is read: its bytes
# fit a heap that a conversion reuses, and a pod's hosts of 650 KB each converted no faster mapped
# (bench/measurements.md#mapped-reads).
MAP_MIN_BYTES = 8 << 20


class MappedProfile:
    """A local profile file mapped read-only (``_core/mapped.pyx``): ``array`` is its bytes as a
    read-only uint8 array, read from the page cache in place instead of copied into fresh memory
    (bench/measurements.md#mapped-reads). ``check`` refuses what was read if the file changed
    since it was mapped, as ``read_profile_array`` refuses a file that changes while it is read:
    cut short under the map (whose pages past the new end then read as zeros, never SIGBUS), or
    grown or rewritten in place (its size or modification time moved). A file replaced by
    another (renamed over, or deleted) leaves the mapped one intact: nothing to refuse."""

    def __init__(self, path: str | Path, fd: int, before: os.stat_result) -> None:
        self.path = path
        self._before = before
        self._map = mapped.MappedFile(fd, before.st_size)
        self.array = np.frombuffer(memoryview(self._map), dtype=np.uint8)

    def check(self) -> None:
        """ProfileReadError if the file changed since it was mapped (what was read is not the file)."""
        if self._map.changed:
            raise ProfileReadError(str(self.path), _CHANGED)
        try:
            after = os.stat(self.path)
        except OSError:
            return  # gone from the folder: the mapped file itself is unchanged
        before = self._before
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            return
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            raise ProfileReadError(str(self.path), _CHANGED)


def map_profile(path: str | Path) -> MappedProfile | None:
    """A local regular file of ``MAP_MIN_BYTES`` or more, mapped (``MappedProfile``); None where it
    is smaller, the platform maps no files or the map fails (the caller reads the file: its read
    reports what is wrong with it)."""
    if not mapped.supported():
        return None
    try:  # a small file costs one stat here, not an open (a pod's hosts are all read)
        if os.stat(path).st_size < max(MAP_MIN_BYTES, 1):
            return None
    except OSError:
        return None
    try:
        fd = open_regular(path)
    except ProfileReadError:
        return None
    try:
        before = os.fstat(fd)
        if before.st_size < max(MAP_MIN_BYTES, 1):  # an empty file has nothing to map: the read says so
            return None
        return MappedProfile(path, fd, before)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_beside(path: str | Path) -> ArrayRead | None:
    """An ``ArrayRead`` of a local file large enough for the scan's walk beside its read
    (``wire.READ_BESIDE_MIN_BYTES``) where the platform reads that way; else None."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None  # the plain read reports it
    if size < wire.READ_BESIDE_MIN_BYTES or not wire.FileRead.supported():
        return None
    return ArrayRead(path)


_CHANGED = ("the file changed while it was being read (is the profiler still writing it?); try again when it is "
            "complete")


def _read_whole(path: str | Path, as_array: bool) -> bytes | np.ndarray:
    try:
        before = os.stat(path)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb", buffering=0, closefd=True) as f:
            if as_array:
                array = np.empty(before.st_size, dtype=np.uint8)
                n = _read_into(f, array.data)
                data: bytes | np.ndarray = array
                # One byte more than expected: the file grew (caught below with the stat).
                grew = f.read(1) != b""
            else:
                data = f.read()
                n, grew = len(data), False
            after = os.stat(path)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or n != after.st_size or grew:
        raise ProfileReadError(str(path), _CHANGED)
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
