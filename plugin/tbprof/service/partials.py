"""Per-host partials on the service side: built from a store (in a worker or in the server) and
kept as binary files (analyses/partials.py, ``encode_partials``) next to the stores in the disk
cache.

The files live in ``<cache root>/partials/<host cache key>.p<PARTIAL_VERSION>.bin`` (the
local root; for a URL cache dir, its local mirror): a restarted server, or a second worker,
reads a host's partial instead of loading its store. Written atomically (a temporary name,
then ``os.replace``); an unreadable or other-version file is a miss, never an error.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Light: the server reads cached partials (PartialFiles) before it hands a pod to the workers;
# the partials' analyses load when a partial is built.
from tbprof.analyses.partial_formats import PARTIAL_FORMATS, PARTIAL_VERSION
from tbprof.cache.disk_cache import PARTIALS_DIR
from tbprof.readers.kinds import format_traits

if TYPE_CHECKING:
    from tbprof.store.tables import ProfileStore

log = logging.getLogger("tbprof")


def available_tools(store: ProfileStore) -> list[str]:
    """Tools of the registry with data for this store (the server keeps those its run kind offers)."""
    from tbprof.service import tools as registry

    return [t.name for t in registry.offered(format_traits(store.format)) if t.available(store)]


# Memory a partial takes once decoded, per byte of its binary form, every carried value decoded:
# rounded up from what tracemalloc sees on the demo_logs hosts (bench/measurements.md#services;
# tests/service/test_partials.py checks the bound).
DECODED_BYTES_PER_BLOB_BYTE = 6


def partial_dict(store: ProfileStore, parts: frozenset[str] | None = None) -> dict[str, Any] | None:
    """The partial of a store before its binary form (``build_partial``) with ``parts`` (None:
    all of them, analyses/partials.py ``ALL_PARTS``), or None when its format has none or a
    derived value cannot be computed."""
    from tbprof.analyses.partials import ALL_PARTS, TOOL_LIST, build_partial

    if store.format not in PARTIAL_FORMATS:
        return None
    parts = ALL_PARTS if parts is None else parts
    try:
        return build_partial(store, available_tools(store) if TOOL_LIST in parts else None, parts)
    except (TypeError, ValueError):
        log.debug("tbprof: no partial for %s", store.source_path, exc_info=True)
        return None


def encode_partial(fields: dict[str, Any]) -> bytes | None:
    """``partial_dict``'s value in its binary form, or None when a value has no stored form."""
    from tbprof.analyses.partials import encode_partials

    try:
        return encode_partials([fields])
    except (TypeError, ValueError):  # a plane stat or derived value with no stored form
        log.debug("tbprof: no partial for %s", fields.get("source_path"), exc_info=True)
        return None


def make_partial(store: ProfileStore, parts: frozenset[str] | None = None) -> bytes | None:
    """The partial of a store in its binary form (what workers send and the cache keeps) with
    ``parts`` (None: all), or None when its format has none or a value cannot be one."""
    fields = partial_dict(store, parts)
    return encode_partial(fields) if fields is not None else None


class PartialFiles:
    """The partials of a disk cache's root folder."""

    def __init__(self, root: Path | str) -> None:
        self.dir = Path(root) / PARTIALS_DIR

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.p{PARTIAL_VERSION}.bin"

    def present(self) -> set[str] | None:
        """The cache keys with a partial file of this version (one listing instead of a failed
        open per host of a new pod); None when the folder cannot be listed."""
        suffix = f".p{PARTIAL_VERSION}.bin"
        try:
            return {n[:-len(suffix)] for n in os.listdir(self.dir) if n.endswith(suffix) and not n.startswith(".")}
        except FileNotFoundError:
            return set()
        except OSError:
            return None

    def load(self, key: str) -> bytes | None:
        """The bytes of a partial (the reader checks its form and version), None when absent."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except (OSError, ValueError):
            return None
        try:
            os.utime(path)  # used now: the disk cache's trim removes the least recently used
        except OSError:
            pass
        return data

    def save(self, key: str, partial: bytes) -> None:
        """Writes the partial atomically; a cache folder we cannot write only costs a recomputation."""
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}")
        try:
            try:
                tmp.write_bytes(partial)
            except FileNotFoundError:  # the cache's first partial (or its folder removed since):
                # made here, not before every write (a mkdir locks the folder above it, which
                # every worker of a pod writes to)
                self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                tmp.write_bytes(partial)
            os.replace(tmp, path)
        except OSError:
            log.debug("tbprof: cannot write the partial %s", path, exc_info=True)
            try:
                tmp.unlink()
            except OSError:
                pass
