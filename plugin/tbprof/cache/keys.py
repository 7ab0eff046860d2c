"""Where a converted store lives in a disk cache: its key (the file's path, size, times, inode,
tbprof's version and the store layout) and its entry's folder.

No numpy and nothing of the store: a command asks whether its file is converted already before
it has imported them (readers/read_ahead.py).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tbprof import __version__
from tbprof.cache.paths import chosen_cache_dir
from tbprof.errors import ProfileReadError
from tbprof.fs import Location, is_url

# Bump when the store layout changes, so entries of another layout are ignored. This layout:
# JSON metadata (never pickle) with the trace metadata (Kineto's deviceProperties, matched by
# position where ids differ, and distributedInfo); Kineto stores in one vocabulary, their
# devices found by their work, marked by metadata "producer" and carrying their vendor; Chrome
# trace times exact to the file's decimal text, never through float64.
FORMAT_VERSION = 6
META = "meta.json"


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


def entry_dir(root: Path, key: str) -> Path:
    """The folder of ``key``'s entry in the cache at ``root``."""
    return root / "stores" / key


def entry_committed(root: Path, key: str) -> bool:
    """Whether the cache at ``root`` holds ``key``'s entry whole (its meta file is written last),
    without opening the cache (``DiskCache`` checks its folders and cleans leftovers)."""
    meta = entry_dir(root, key) / META
    return os.path.isfile(meta) and os.access(meta, os.R_OK)  # neither raises


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


def converted_on_disk(cache_dir: Path | str | None, path: Path, kind: str = "xspace") -> bool:
    """Whether the local disk cache of ``--cache-dir`` holds ``path``'s store of ``kind``, asked
    without opening the cache (readers/read_ahead.py: before the command has its ``ProfileCache``).
    True where it cannot say cheaply (a URL cache: a request; a key that cannot be made)."""
    root = chosen_cache_dir(cache_dir)
    if isinstance(root, str) and is_url(root):
        if not root.startswith("file://"):
            return True
        root = root[len("file://"):]
    try:
        return entry_committed(Path(root), cache_key(path, kind))
    except (OSError, ProfileReadError):
        return True
