"""Refuses a cache dir that someone else could write to, or swap.

Cache entries are read back as trusted columns (row indices into other columns, offsets the
compiled kernels follow), so whoever can write into the cache can feed every tbprof process of
this user crafted data. The cache dir and its ``stores`` folder must be owned by this user (or
root) and not writable by group or others; every folder above them, along the path as given
and along its resolved path, must be owned by this user or root and not writable by others
unless sticky (``/tmp``: others cannot rename what they do not own), since whoever may rename
a parent can swap the whole cache. ``DiskCache`` checks again before every read and write, so
a folder that turns unsafe while tbprof runs is not trusted from then on.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tbprof.errors import UnsafeCacheDir

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _problem(st: os.stat_result, uid: int, parent: bool = False) -> str | None:
    if st.st_uid not in (uid, 0):
        return f"it is owned by user id {st.st_uid}, not by you ({uid})"
    if st.st_mode & _WRITABLE_BY_OTHERS and not (parent and st.st_mode & stat.S_ISVTX):
        return f"other users can write to it (mode {stat.filemode(st.st_mode)})"
    return None


def _refuse(folder: Path, why: str, uid: int, parent: bool) -> UnsafeCacheDir:
    what = "a folder above the tbprof cache dir" if parent else "the tbprof cache dir"
    return UnsafeCacheDir(
        f"refusing {what} {folder}: {why}, so they could plant converted profiles that tbprof would "
        f"trust. Use a cache dir of your own (--cache-dir, --tbprof_cache_dir or $TBPROF_CACHE_DIR), or "
        f"fix it: chown {uid} {folder} && chmod go-w {folder}")


def _parents(path: Path) -> list[Path]:
    """The folders above ``path`` as given and above its resolved form (a symlink's target's
    parents decide who can swap what it points at)."""
    seen: dict[Path, None] = {}
    for p in (path, Path(os.path.realpath(path))):
        for parent in p.parents:
            seen.setdefault(parent, None)
    return list(seen)


def check_cache_dir(root: Path) -> None:
    """Raises UnsafeCacheDir naming the folder and the fix; a missing dir is fine (we create it 0700)."""
    if not hasattr(os, "getuid"):
        return  # not POSIX: no owner/mode bits to check
    uid = os.getuid()
    path = Path(os.path.abspath(root))
    checks = [(path, False), (path / "stores", False), *((p, True) for p in _parents(path))]
    for folder, parent in checks:
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise UnsafeCacheDir(f"tbprof cache dir {folder}: cannot inspect it ({e.strerror or e})") from None
        if stat.S_ISLNK(st.st_mode):
            # The link itself cannot be changed but by whoever may write its folder (checked as a
            # parent); its target is checked as the folder it leads to.
            try:
                st = folder.stat()
            except OSError as e:
                raise UnsafeCacheDir(f"tbprof cache dir {folder}: broken symlink ({e.strerror or e})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeCacheDir(f"tbprof cache dir {folder} is not a directory")
        why = _problem(st, uid, parent)
        if why:
            raise _refuse(folder, why, uid, parent)
