"""Refuses a cache dir that someone else could write to.

Cache entries are read back as trusted columns (row indices into other columns, offsets the
compiled kernels follow), so whoever can write into the cache can feed every tbprof process of
this user crafted data. The cache dir and the folders above it up to an existing one must be
owned by this user (or root) and not writable by group or others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tbprof.errors import UnsafeCacheDir

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


def _problem(st: os.stat_result, uid: int) -> str | None:
    if st.st_uid not in (uid, 0):
        return f"it is owned by user id {st.st_uid}, not by you ({uid})"
    if st.st_mode & _WRITABLE_BY_OTHERS:
        return f"other users can write to it (mode {stat.filemode(st.st_mode)})"
    return None


def check_cache_dir(root: Path) -> None:
    """Raises UnsafeCacheDir naming the folder and the fix; a missing dir is fine (we create it 0700)."""
    if not hasattr(os, "getuid"):
        return  # not POSIX: no owner/mode bits to check
    uid = os.getuid()
    path = Path(os.path.abspath(root))
    for folder in (path, path / "stores"):
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise UnsafeCacheDir(f"tbprof cache dir {folder}: cannot inspect it ({e.strerror or e})") from None
        if stat.S_ISLNK(st.st_mode):
            try:
                st = folder.stat()
            except OSError as e:
                raise UnsafeCacheDir(f"tbprof cache dir {folder}: broken symlink ({e.strerror or e})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeCacheDir(f"tbprof cache dir {folder} is not a directory")
        why = _problem(st, uid)
        if why:
            raise UnsafeCacheDir(
                f"refusing the tbprof cache dir {folder}: {why}, so they could plant converted profiles "
                f"that tbprof would trust. Use a cache dir of your own (--cache-dir, --tbprof_cache_dir or "
                f"$TBPROF_CACHE_DIR), or fix it: chown {uid} {folder} && chmod go-w {folder}")
