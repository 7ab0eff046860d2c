"""Where tbprof keeps its caches: never inside the logdir (it may be read-only or shared)."""

from __future__ import annotations

import os
from pathlib import Path

from tbprof.fs import is_url


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tbprof``, else ``~/.cache/tbprof``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tbprof"


def default_cache_dir() -> Path:
    """Converted profiles: ``$TBPROF_CACHE_DIR``, else the user cache dir."""
    explicit = os.environ.get("TBPROF_CACHE_DIR")
    return Path(explicit) if explicit else user_cache_dir()


def chosen_cache_dir(cache_dir: Path | str | None) -> Path | str:
    """The cache dir of ``--cache-dir`` (None: none given), else ``$TBPROF_CACHE_DIR`` or the user
    cache dir: a folder, or a URL shared by a team and by workers (cache/remote_cache.py)."""
    explicit = os.environ.get("TBPROF_CACHE_DIR", "")
    return cache_dir or (explicit if is_url(explicit) else default_cache_dir())
