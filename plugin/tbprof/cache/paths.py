"""Where tbprof keeps its caches: never inside the logdir (it may be read-only or shared)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tbprof``, else ``~/.cache/tbprof``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tbprof"


def default_cache_dir() -> Path:
    """Converted profiles: ``$TBPROF_CACHE_DIR``, else the user cache dir."""
    explicit = os.environ.get("TBPROF_CACHE_DIR")
    return Path(explicit) if explicit else user_cache_dir()
