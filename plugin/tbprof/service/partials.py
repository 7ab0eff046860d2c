"""Per-host partials on the service side: built from a store (in a worker or in the server) and
kept as JSON files next to the stores in the disk cache.

The files live in ``<cache root>/partials/<host cache key>.p<PARTIAL_VERSION>.json`` (the
local root; for a URL cache dir, its local mirror): a restarted server, or a second worker,
reads a host's partial instead of loading its store. Written atomically (a temporary name,
then ``os.replace``); an unreadable or other-version file is a miss, never an error.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from tbprof.analyses.partials import PARTIAL_FORMATS, PARTIAL_VERSION, MissingPartial, build_partial
from tbprof.service import tools as registry
from tbprof.store.disk_cache import PARTIALS_DIR
from tbprof.store.tables import ProfileStore

log = logging.getLogger("tbprof")


def available_tools(store: ProfileStore) -> list[str]:
    """Tools of the registry with data for this store (the server filters them by run kind)."""
    return [t.name for t in registry.all_tools() if store.format in t.formats and t.available(store)]


# Memory a partial takes once decoded, per byte of its JSON text: 2.3-3.3 measured with
# tracemalloc on the demo_logs hosts (jax_2hosts: 21.8 KB of JSON, 69 KB decoded).
DECODED_BYTES_PER_JSON_BYTE = 4


def make_partial(store: ProfileStore) -> str | None:
    """The partial of a store as JSON text (what workers send and the cache keeps: a string
    pickles and travels faster than nested objects, and its length sizes the decoded partial),
    or None when its format has none or a value cannot be one."""
    if store.format not in PARTIAL_FORMATS:
        return None
    try:
        return json.dumps(build_partial(store, available_tools(store)), separators=(",", ":"))
    except (TypeError, ValueError, MissingPartial):  # a plane stat or derived value with no JSON form
        log.debug("tbprof: no partial for %s", store.source_path, exc_info=True)
        return None


class PartialFiles:
    """The partials of a disk cache's root folder."""

    def __init__(self, root: Path | str) -> None:
        self.dir = Path(root) / PARTIALS_DIR

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.p{PARTIAL_VERSION}.json"

    def load(self, key: str) -> str | None:
        """The JSON text of a partial (the reader checks its version), None when absent."""
        path = self._path(key)
        try:
            text = path.read_text()
        except (OSError, ValueError):
            return None
        try:
            os.utime(path)  # used now: the disk cache's trim removes the least recently used
        except OSError:
            pass
        return text

    def save(self, key: str, partial: str) -> None:
        """Writes the partial atomically; a cache folder we cannot write only costs a recomputation."""
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}")
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp.write_text(partial)
            os.replace(tmp, path)
        except OSError:
            log.debug("tbprof: cannot write the partial %s", path, exc_info=True)
            try:
                tmp.unlink()
            except OSError:
                pass
