"""On-disk cache of converted stores: one folder of ``.npy`` columns per profile file.

Reopening maps the columns (``np.load(mmap_mode="r")``) instead of reading them, so a restart opens
a converted profile without reading its columns (bench/measurements.md#serving) and pages in only
what a tool touches. Entries are keyed by (absolute path, size, mtime, inode, ctime, tbprof version,
format version): a profile that is rewritten, or a newer tbprof, simply misses. Writes go to a
temporary folder renamed into place, so a crash never leaves a half-written entry behind.

Nothing in an entry is executable: metadata is JSON (``meta.json``; bytes values tagged and
base64-encoded), blobs one ``uint8`` column, and every column is read with ``allow_pickle=False``
semantics (no object dtype). An entry that cannot be read (damaged, or left unreadable by
``sudo tbprof``) is a miss: it is removed, or moved aside when we may not remove it, and converted
again. A *transient* error (too many open files, EAGAIN, no memory) is a miss that keeps the entry.

The cache is bounded in bytes (``$TBPROF_CACHE_MAX_BYTES``, default the smaller of 10 GB and a
tenth of its disk): after each write, the least recently used entries go until the rest fits,
and the entries of a file's older versions (same path and format, another key) go at once. An
entry in use, memory-mapped by a live store of any process, holds a shared ``flock`` on its
``meta.json`` and is never removed under it; removal takes the exclusive lock, renames the entry
aside (``.stale-*``) and deletes it. Writers lock their temporary folder, so the folders that a
killed writer left behind (and ``.stale-*`` leftovers) are removed when a cache is opened.
"""

from __future__ import annotations

import base64
import ctypes
import errno
import hashlib
import json
import logging
import mmap
import os
import re
import shutil
import stat
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tbprof import __version__
from tbprof.cache.cache_dir import check_cache_dir
from tbprof.errors import ProfileReadError, UnsafeCacheDir
from tbprof.fs import Location
from tbprof.store import tables
from tbprof.store.strings import StringTable

# Bump when the store layout changes, so entries of another layout are ignored. This layout:
# JSON metadata (never pickle) with the trace metadata (Kineto's deviceProperties, matched by
# position where ids differ, and distributedInfo); Kineto stores in one vocabulary, their
# devices found by their work, marked by metadata "producer" and carrying their vendor; Chrome
# trace times exact to the file's decimal text, never through float64.
FORMAT_VERSION = 6
META = "meta.json"
# Per entry: its source (path and format) and size, so trimming reads one small file per entry.
SOURCE = "source.json"

# The per-host partials' folder under the cache root (service/partials.py writes it; trimmed here).
PARTIALS_DIR = "partials"

MAX_BYTES_ENV = "TBPROF_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 10 * 10**9
DEFAULT_DISK_SHARE = 10  # percent of the cache's file system

# Errors that say nothing about the entry: the process or the machine is short of something now.
TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM, errno.EINTR, errno.EBUSY,
                              errno.ENOBUFS})

log = logging.getLogger("tbprof")

try:
    import fcntl
except ImportError:  # not POSIX: no locks; entries are then never removed while this process runs
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

PLANE_ARRAYS = ("line_ids", "line_timestamp_ns", "line_offsets", "start_ps", "dur_ps", "meta_idx",
                 "name_id", "depth", "line_idx", "meta_ids", "meta_name_id", "meta_display_name_id")
STAT_ARRAYS = tuple(f.name for f in fields(tables.StatTable))


def cache_key(path: Location, extra: str = "") -> str:
    """The key of ``path``'s current content; a file that vanished since discovery is a 422
    naming it (ProfileReadError), not an OSError."""
    try:
        st = path.stat()
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from None
    return _key(path.resolve(), st, extra)


def _key(resolved: object, st: Any, extra: str) -> str:
    # Inode and ctime too (a local file's; an object's listing has neither): a file rewritten with
    # its old size and mtime (``cp -p``, ``touch -r``, a tool restoring times) gets a new ctime, and a
    # file replaced by a rename a new inode, so neither serves the old file's results.
    ino, ctime_ns = getattr(st, "st_ino", 0), getattr(st, "st_ctime_ns", 0)
    raw = f"{resolved}|{st.st_size}|{st.st_mtime_ns}|{ino}|{ctime_ns}|{__version__}|{FORMAT_VERSION}|{extra}"
    # A POSIX path is bytes: one that is not UTF-8 holds surrogate escapes, kept as its bytes.
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def cache_keys(paths: Sequence[Location], extra: str = "") -> list[str]:
    """``cache_key`` of each path. A local folder's real path is resolved once for all its files
    (a pod's hosts share one folder), not once per file: resolving checks every folder on the
    way, which made looking up a 1024-host pod's keys a phase of its own (bench/pod_scale.py).
    A file that is itself a link is resolved as ``cache_key`` does."""
    folders: dict[str, str] = {}
    out = []
    for path in paths:
        if not isinstance(path, Path) or path.name in ("", ".", ".."):
            out.append(cache_key(path, extra))
            continue
        text = str(path)
        try:
            st = os.lstat(text)
        except OSError:
            out.append(cache_key(path, extra))  # its error, as cache_key words it
            continue
        if stat.S_ISLNK(st.st_mode):
            out.append(cache_key(path, extra))
            continue
        parent, name = os.path.split(text)
        folder = folders.get(parent)
        if folder is None:
            folder = folders[parent] = str(path.parent.resolve())
        out.append(_key(os.path.join(folder, name), st, extra))
    return out


def _to_json(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _open_in(dir_fd: int, name: str, flags: int = os.O_RDONLY) -> int:
    """Opens ``name`` inside the folder ``dir_fd`` without following a symlink (ELOOP)."""
    return os.open(name, flags | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)


def _libc_mapper() -> tuple[Any, Any] | None:
    """libc's ``mmap`` and ``munmap`` (None where there is no such libc: then ``np.memmap``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        map_fn, unmap_fn = libc.mmap, libc.munmap
    except (OSError, AttributeError):
        return None
    map_fn.restype = ctypes.c_void_p
    map_fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64)
    unmap_fn.restype = ctypes.c_int
    unmap_fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return map_fn, unmap_fn


_MAPPER = _libc_mapper() if os.name == "posix" else None
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map_column(f: Any, dtype: np.dtype[Any], shape: tuple[int, ...], order: Literal["C", "F"],
                count: int) -> np.ndarray:
    """The column's values from the open file ``f`` (at its position), mapped read-only.

    ``np.memmap`` (Python's ``mmap``) keeps a duplicate of the file's descriptor as long as the
    mapping lives: a store of many small planes pinned one per column, thousands of them, until
    the process ran out. A mapping needs no descriptor once made, so libc's ``mmap`` maps it
    and the descriptor is closed with ``f``; the pages are unmapped when the last array viewing
    them goes. Still a read-only ``np.memmap`` (a view), as the cache's columns always are."""
    offset = f.tell()
    nbytes = count * dtype.itemsize
    if os.fstat(f.fileno()).st_size < offset + nbytes:
        raise ValueError(f"{f.name}: truncated (a column of {nbytes} bytes)")  # mapped, it would be SIGBUS
    if _MAPPER is None:
        return np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
    map_fn, unmap_fn = _MAPPER
    start = offset - offset % mmap.ALLOCATIONGRANULARITY
    length = nbytes + (offset - start)
    addr = map_fn(None, length, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), start)
    if addr is None or addr == _MAP_FAILED:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), f.name)
    pages = (ctypes.c_char * length).from_address(addr)
    weakref.finalize(pages, unmap_fn, addr, length)
    flat = np.frombuffer(pages, dtype=np.uint8, count=nbytes, offset=offset - start)
    arr = flat.view(dtype).reshape(shape, order=order).view(np.memmap)
    arr.flags.writeable = False  # the pages are PROT_READ: a write would crash the process
    return arr


def _load_at(dir_fd: int, name: str, mmap: bool = True) -> np.ndarray:
    """A ``.npy`` column of the entry folder ``dir_fd``, memory-mapped (or read), opened without
    following links; object arrays (pickles) are refused as ``np.load(allow_pickle=False)`` does."""
    with os.fdopen(_open_in(dir_fd, name), "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"{name}: .npy version {version} is not read here")
        if dtype.hasobject:
            raise ValueError(f"{name}: an object array (pickle) is never loaded")
        order: Literal["C", "F"] = "F" if fortran else "C"
        count = int(np.prod(shape, dtype=np.int64))
        if mmap:
            if count == 0:  # nothing to map; still a (read-only) memmap, as np.load gives
                empty = np.empty(shape, dtype=dtype).view(np.memmap)
                empty.flags.writeable = False
                return empty
            return _map_column(f, dtype, shape, order, count)
        data = np.fromfile(f, dtype=dtype, count=count)
        if data.shape[0] != count:
            raise ValueError(f"{name}: truncated ({data.shape[0]} of {count} values)")
        return data.reshape(shape, order=order)


def save_blobs(folder: Path, plane_index: int, blobs: list[bytes]) -> None:
    """A plane's bytes values: one uint8 column and the end offset of each."""
    np.save(folder / f"p{plane_index}_blobs.npy", np.frombuffer(b"".join(blobs), dtype=np.uint8))
    np.save(folder / f"p{plane_index}_blob_ends.npy", np.cumsum([len(b) for b in blobs], dtype=np.int64))


def entry_meta(store: tables.ProfileStore) -> dict[str, Any]:
    """The ``meta.json`` of an entry: everything of the store that is not a column."""
    planes_meta = [_to_json({"index": p.index, "id": p.id, "name": p.name, "line_names": p.line_names,
                             "line_display_names": p.line_display_names, "plane_stats": p.plane_stats})
                   for p in store.planes]
    return {
        "strings": store.strings.as_list(),
        "planes": planes_meta,
        "store": _to_json({"source_path": store.source_path, "host": store.host, "format": store.format,
                           "origin_ps": store.origin_ps, "span_ps": store.span_ps,
                           "hostnames": store.hostnames, "errors": store.errors, "warnings": store.warnings,
                           "metadata": store.metadata}),
    }


# Names of derived values and of their arrays become file names: nothing but these characters.
_DERIVED_NAME = re.compile(r"[a-z0-9_]{1,64}")


def _save_derived(folder: Path, derived: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Writes ``store.derived``'s arrays as ``d_<name>_<field>.npy``; their index for meta.json."""
    index: dict[str, Any] = {}
    for name, value in derived.items():
        arrays = value.get("arrays", {})
        if not _DERIVED_NAME.fullmatch(name) or not all(_DERIVED_NAME.fullmatch(f) for f in arrays):
            continue
        for f, array in arrays.items():
            np.save(folder / f"d_{name}_{f}.npy", np.ascontiguousarray(array))
        index[name] = {"arrays": sorted(arrays), "json": _to_json(value.get("json"))}
    return index


def _load_derived(dir_fd: int, index: Any) -> dict[str, dict[str, Any]]:
    """``store.derived`` of an entry (arrays memory-mapped); a malformed index is no index."""
    if not isinstance(index, dict):
        return {}
    derived: dict[str, dict[str, Any]] = {}
    for name, spec in index.items():
        fields_ = spec.get("arrays") if isinstance(spec, dict) else None
        if not (isinstance(name, str) and _DERIVED_NAME.fullmatch(name) and isinstance(fields_, list)
                and all(isinstance(f, str) and _DERIVED_NAME.fullmatch(f) for f in fields_)):
            continue
        derived[name] = {"arrays": {f: _load_at(dir_fd, f"d_{name}_{f}.npy") for f in fields_},
                         "json": _from_json(spec.get("json"))}
    return derived


def default_max_bytes(root: Path) -> int:
    """The smaller of 10 GB and a tenth of the file system that holds ``root``."""
    folder = Path(os.path.abspath(root))
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        total = shutil.disk_usage(folder).total
    except OSError:
        return DEFAULT_MAX_BYTES
    return min(DEFAULT_MAX_BYTES, total * DEFAULT_DISK_SHARE // 100)


def max_bytes_from_env(root: Path) -> int:
    """``$TBPROF_CACHE_MAX_BYTES`` (bytes; a suffix K, M, G or T multiplies by powers of 1024), else
    ``default_max_bytes``; a value that does not parse is reported and the default used."""
    text = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not text:
        return default_max_bytes(root)
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    scale = units.get(text[-1].upper(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        value = -1.0
    if not (0 <= value < 1 << 62):
        log.warning("tbprof: %s=%r is not a size in bytes; using the default", MAX_BYTES_ENV, text)
        return default_max_bytes(root)
    return int(value)


def is_transient(e: OSError) -> bool:
    return e.errno in TRANSIENT_ERRNOS


def _lock(fd: int, exclusive: bool) -> bool:
    """A non-blocking ``flock``; False when another holder conflicts (or locks are unsupported)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@contextmanager
def locked_temp_folder(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh temporary folder under ``parent`` holding an exclusive lock while the block runs:
    a cache opened meanwhile leaves it alone; once its writer is gone (even by kill -9, which
    releases the lock) it is an orphan and the next cache opened removes it."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        _lock(fd, exclusive=True)
        yield folder
    finally:
        os.close(fd)


def _is_temp_name(name: str) -> bool:
    return name.startswith(".stale-") or bool(re.fullmatch(r"\.[0-9a-f]{32}\..+", name))


class DiskCache:
    def __init__(self, root: Path, max_bytes: int | None = None) -> None:
        check_cache_dir(root)
        self.root = root
        self.max_bytes = max_bytes if max_bytes is not None else max_bytes_from_env(root)
        self._trim_lock = threading.Lock()
        self.clean_leftovers()

    def _entry(self, key: str) -> Path:
        return self.root / "stores" / key

    def entry_path(self, key: str) -> Path:
        """The folder of ``key``'s entry (cache/entry_writer.py writes one beside it)."""
        return self._entry(key)

    def discard(self, entry: Path) -> None:
        self._discard(entry)

    def listed(self) -> set[str] | None:
        """The names in the stores folder (one listing: the keys ``has`` may find; a pod's lookup
        asks it once instead of twice per host), None when it cannot be listed."""
        try:
            return set(os.listdir(self.root / "stores"))
        except FileNotFoundError:
            return set()
        except OSError:
            return None

    def has(self, key: str) -> bool:
        meta = self._entry(key) / META
        return os.path.isfile(meta) and os.access(meta, os.R_OK)  # neither raises

    # --- reading --------------------------------------------------------------------------
    def _open_stores(self) -> int:
        check_cache_dir(self.root)  # the folders above may have changed since the start
        return os.open(self.root / "stores", os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)

    def load(self, key: str) -> tables.ProfileStore | None:
        entry = self._entry(key)
        if not os.path.lexists(entry):
            return None
        stores_fd = entry_fd = meta_fd = -1
        loaded = False
        try:
            try:
                stores_fd = self._open_stores()
            except UnsafeCacheDir as e:
                _warn_unsafe(e)
                return None  # not trusted any more: convert, and do not write there either
            entry_fd = _open_in(stores_fd, key, os.O_RDONLY | _DIRECTORY)
            meta_fd = _open_in(entry_fd, META)
            if not _lock(meta_fd, exclusive=False) and fcntl is not None:
                os.close(meta_fd)
                meta_fd = -1
                return None  # being removed by another process right now: a miss, nothing to discard
            with os.fdopen(os.dup(meta_fd), "rb") as f:
                meta = json.loads(f.read())
            planes = []
            for pi, pmeta in enumerate(meta["planes"]):
                arrays: dict[str, Any] = {name: _load_at(entry_fd, f"p{pi}_{name}.npy") for name in PLANE_ARRAYS}
                stats = tables.StatTable(*(_load_at(entry_fd, f"p{pi}_s_{n}.npy") for n in STAT_ARRAYS))
                meta_stats = tables.StatTable(*(_load_at(entry_fd, f"p{pi}_m_{n}.npy", mmap=False)
                                                for n in STAT_ARRAYS))
                blob_bytes = _load_at(entry_fd, f"p{pi}_blobs.npy", mmap=False)
                ends = _load_at(entry_fd, f"p{pi}_blob_ends.npy", mmap=False).tolist()
                blobs = [blob_bytes[a:b].tobytes() for a, b in zip([0, *ends][:-1], ends, strict=True)]
                pmeta = {k: _from_json(v) for k, v in pmeta.items()}
                planes.append(tables.Plane(stats=stats, meta_stats=meta_stats, blobs=blobs, **arrays, **pmeta))
            store_meta = _from_json(meta["store"])
            derived = _load_derived(entry_fd, meta.get("derived", {}))
            store = tables.ProfileStore(strings=StringTable(meta["strings"]), planes=planes, **store_meta,
                                        derived=derived)
            loaded = True
        except OSError as e:
            if is_transient(e):
                # Short of descriptors or memory now: the entry is fine, and stays.
                log.debug("tbprof: cache entry %s not read now (%s)", key, e)
                return None
            self._discard(entry)
            return None
        except (KeyError, ValueError, TypeError, AttributeError):
            # A damaged or unreadable entry is not an error for the user: convert again.
            self._discard(entry)
            return None
        finally:
            for fd in (entry_fd, stores_fd):
                if fd >= 0:
                    os.close(fd)
            if meta_fd >= 0 and not loaded:
                os.close(meta_fd)
        # The shared lock lives as long as the store: no cache trims the entry under its mappings.
        weakref.finalize(store, os.close, meta_fd)
        _touch(entry)
        return store

    # --- removing -------------------------------------------------------------------------
    def _discard(self, entry: Path) -> None:
        """Removes an entry; one we may not remove (another user's) is renamed aside, so the
        fresh conversion can take its place."""
        shutil.rmtree(entry, ignore_errors=True)
        if os.path.lexists(entry):
            try:
                os.replace(entry, entry.with_name(f".stale-{entry.name}-{os.getpid()}-{os.urandom(4).hex()}"))
            except OSError:
                pass

    def evict(self, key: str) -> bool:
        """Removes ``key``'s entry unless a live store (of any process) maps it; True if removed."""
        entry = self._entry(key)
        try:
            fd = os.open(entry / META, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            fd = -1  # no meta.json: nothing can have mapped it
        except OSError:
            return False
        try:
            if fd >= 0 and not _lock(fd, exclusive=True):
                return False
            aside = entry.with_name(f".stale-{key}-{os.getpid()}-{os.urandom(4).hex()}")
            try:
                os.replace(entry, aside)  # under the lock: no loader starts on it from now on
            except OSError:
                return False
        finally:
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(aside, ignore_errors=True)
        return True

    def clean_leftovers(self) -> None:
        """Removes temporary folders of writers that are gone and ``.stale-*`` entries."""
        stores = self.root / "stores"
        try:
            names = [n for n in os.listdir(stores) if _is_temp_name(n)]
        except OSError:
            return
        for name in names:
            folder = stores / name
            if not name.startswith(".stale-"):
                try:
                    fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
                except OSError:
                    continue
                try:
                    if not _lock(fd, exclusive=True):
                        continue  # a writer is at work in it
                finally:
                    os.close(fd)
            shutil.rmtree(folder, ignore_errors=True)

    def entries(self) -> list[tuple[str, float, int, str]]:
        """(key, last use, size in bytes, source) of every committed entry."""
        stores = self.root / "stores"
        out = []
        try:
            with os.scandir(stores) as it:
                listing = list(it)
        except OSError:
            return []
        for d in listing:
            if d.name.startswith(".") or not d.is_dir(follow_symlinks=False):
                continue
            try:
                used = d.stat(follow_symlinks=False).st_mtime
                info = json.loads((Path(d.path) / SOURCE).read_bytes())
                size, source = int(info["size_bytes"]), str(info["source"])
            except (OSError, ValueError, KeyError, TypeError):
                size, source = _folder_bytes(Path(d.path)), ""  # an entry of an older tbprof, or downloaded
            out.append((d.name, used, size, source))
        return out

    def partials(self) -> list[tuple[Path, float, int]]:
        """(file, last use, size in bytes) of the per-host partials kept beside the stores
        (``<root>/partials/<key>.p<version>.bin``, service/partials.py; ``.json`` of older versions)."""
        try:
            with os.scandir(self.root / PARTIALS_DIR) as it:
                listing = list(it)
        except OSError:
            return []
        out = []
        for f in listing:
            try:
                if f.name.endswith((".bin", ".json")) and f.is_file(follow_symlinks=False):
                    st = f.stat(follow_symlinks=False)
                    out.append((Path(f.path), st.st_mtime, st.st_size))
            except OSError:
                continue
        return out

    def _drop_partials(self, key: str, partials: list[tuple[Path, float, int]]) -> int:
        removed = 0
        for path, _, size in partials:
            if path.name.startswith(f"{key}.p"):
                try:
                    path.unlink()
                    removed += size
                except OSError:
                    pass
        return removed

    def trim(self, keep: str | None = None) -> int:
        """Removes the older versions of ``keep``'s file (their stores and partials), then the
        least recently used stores and partials until the cache fits ``max_bytes`` (``keep``
        itself stays); returns the bytes removed."""
        with self._trim_lock:
            found = self.entries()
            partials = self.partials()
            kept_source = next((src for k, _, _, src in found if k == keep), "")
            removed = 0
            rest: list[tuple[float, str, int, Path | None]] = []
            for k, used, size, src in found:
                if k != keep and kept_source and src == kept_source and self.evict(k):
                    removed += size + self._drop_partials(k, partials)
                else:
                    rest.append((used, k, size, None))
            rest.extend((used, "", size, path) for path, used, size in partials if path.exists())
            total = sum(size for _, _, size, _ in rest)
            for _, k, size, path in sorted(rest, key=lambda item: item[0]):
                if total <= self.max_bytes:
                    break
                if path is not None:
                    try:
                        path.unlink()
                    except OSError:
                        continue
                elif k == keep or not self.evict(k):
                    continue
                total -= size
                removed += size
            return removed

    def committed(self, key: str, meta: dict[str, Any] | None = None) -> None:
        """After an entry is in place: records its source and size, and trims the cache."""
        entry = self._entry(key)
        try:
            if meta is not None:
                store_meta = meta.get("store", {})
                source = f"{store_meta.get('source_path')}|{store_meta.get('format')}"
                info = {"source": source, "size_bytes": _folder_bytes(entry)}
                tmp = entry / f".{SOURCE}.{os.urandom(4).hex()}"
                tmp.write_text(json.dumps(info))
                os.replace(tmp, entry / SOURCE)
        except OSError:
            log.debug("tbprof: cannot record the size of %s", entry, exc_info=True)
        try:
            self.trim(keep=key)
        except OSError:
            log.debug("tbprof: trimming the cache %s failed", self.root, exc_info=True)

    # --- writing --------------------------------------------------------------------------
    def save(self, key: str, store: tables.ProfileStore) -> None:
        entry = self._entry(key)
        if self.has(key):
            return
        try:
            check_cache_dir(self.root)
        except UnsafeCacheDir as e:
            _warn_unsafe(e)
            return
        self._discard(entry)
        try:
            entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with locked_temp_folder(entry.parent, f".{key}.") as tmp:
                try:
                    for pi, p in enumerate(store.planes):
                        for name in PLANE_ARRAYS:
                            np.save(tmp / f"p{pi}_{name}.npy", np.ascontiguousarray(getattr(p, name)))
                        for n in STAT_ARRAYS:
                            np.save(tmp / f"p{pi}_s_{n}.npy", np.ascontiguousarray(getattr(p.stats, n)))
                            np.save(tmp / f"p{pi}_m_{n}.npy", np.ascontiguousarray(getattr(p.meta_stats, n)))
                        save_blobs(tmp, pi, p.blobs)
                    meta = entry_meta(store)
                    meta["derived"] = _save_derived(tmp, store.derived)
                    (tmp / META).write_text(json.dumps(meta))
                    os.replace(tmp, entry)
                finally:
                    if tmp.exists():
                        shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            return  # an unwritable (or full) cache dir only costs speed
        self.committed(key, meta)


def _warn_unsafe(e: UnsafeCacheDir) -> None:
    log.warning("tbprof: the disk cache is not used any more: %s", e)


def _touch(entry: Path) -> None:
    """Marks an entry used now (its folder's mtime: the least recently used order)."""
    try:
        os.utime(entry)
    except OSError:
        pass


def _folder_bytes(folder: Path) -> int:
    total = 0
    try:
        # Closed even when a file goes while it is listed (another process trimming the cache).
        with os.scandir(folder) as it:
            for f in it:
                if f.is_file(follow_symlinks=False):
                    total += f.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total
