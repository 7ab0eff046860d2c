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
from typing import Any

from tbprof.analyses.partials import PARTIAL_FORMATS, PARTIAL_VERSION, MissingPartial, build_partial
from tbprof.service import tools as registry
from tbprof.store.tables import ProfileStore

log = logging.getLogger("tbprof")


def available_tools(store: ProfileStore) -> list[str]:
    """Tools of the registry with data for this store (the server filters them by run kind)."""
    return [t.name for t in registry.all_tools() if store.format in t.formats and t.available(store)]


def make_partial(store: ProfileStore) -> dict[str, Any] | None:
    """The JSON partial of a store, or None when its format has none or a value cannot be one."""
    if store.format not in PARTIAL_FORMATS:
        return None
    try:
        return build_partial(store, available_tools(store))
    except (TypeError, MissingPartial):  # a plane stat or derived value with no JSON form
        log.debug("tbprof: no partial for %s", store.source_path, exc_info=True)
        return None


class PartialFiles:
    """The partials of a disk cache's root folder."""

    def __init__(self, root: Path | str) -> None:
        self.dir = Path(root) / "partials"

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.p{PARTIAL_VERSION}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("version") == PARTIAL_VERSION else None

    def save(self, key: str, partial: dict[str, Any]) -> None:
        """Writes the partial atomically; a cache folder we cannot write only costs a recomputation."""
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}")
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp.write_bytes(json.dumps(partial, separators=(",", ":")).encode())
            os.replace(tmp, path)
        except OSError:
            log.debug("tbprof: cannot write the partial %s", path, exc_info=True)
            try:
                tmp.unlink()
            except OSError:
                pass
