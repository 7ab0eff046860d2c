"""Refuses to convert a profile file that cannot fit in memory, before reading a byte of it.

Converting holds the file's bytes and its columns at once; a file far larger than the free
memory would otherwise get the whole server killed by the kernel's OOM killer (or swap the
machine to a halt) instead of answering "too large". Peak memory per byte of file, measured
on the shared profiles (``ru_maxrss`` growth while reading): XSpace 4.6x (jax_large, 60.7 MB
-> 280 MB); Chrome trace JSON 68x of the gzip size (jax_large's 26.7 MB trace.json.gz -> 1.8 GB,
json objects per event). The factors below round those up.
"""

from __future__ import annotations

import os

from tbprof.errors import ProfileReadError
from tbprof.store.fs import Location

_FACTOR_BY_SUFFIX = ((".xplane.pb", 5), (".gz", 80), (".json", 12))
_DEFAULT_FACTOR = 10  # tfprof ProfileProto and anything else: upb objects, a few x the bytes

# Tests and operators can state the memory a conversion may use (bytes); else MemAvailable.
LIMIT_ENV = "TBPROF_CONVERT_MEMORY_BYTES"


def memory_factor(path: Location) -> int:
    name = path.name.lower()
    return next((f for suffix, f in _FACTOR_BY_SUFFIX if name.endswith(suffix)), _DEFAULT_FACTOR)


def available_bytes() -> int | None:
    """Memory a conversion may use: $TBPROF_CONVERT_MEMORY_BYTES, else the kernel's
    MemAvailable (None when unknown, e.g. not Linux: then nothing is refused)."""
    env = os.environ.get(LIMIT_ENV, "").strip()
    if env.isdigit():
        return int(env)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def check_fits(path: Location) -> None:
    """Raises ProfileReadError naming the sizes when converting ``path`` would not fit."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    need = size * memory_factor(path)
    avail = available_bytes()
    if avail is not None and need > avail:
        raise ProfileReadError(str(path), (
            f"the file is too large to open here: it is {_gb(size)}, converting it needs about "
            f"{_gb(need)} of memory and {_gb(avail)} is available. Open it on a machine with more "
            f"memory, or capture a shorter profile (a smaller duration_ms or fewer steps)"))
