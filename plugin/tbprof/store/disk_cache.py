"""On-disk cache of converted stores: one folder of ``.npy`` columns per profile file.

Reopening maps the columns (``np.load(mmap_mode="r")``) instead of reading them, so a
restart opens a converted 60 MB profile in milliseconds and pages in only what a tool
touches. Entries are keyed by (absolute path, size, mtime, tbprof version, format version):
a profile that is rewritten, or a newer tbprof, simply misses. Writes go to a temporary
folder renamed into place, so a crash never leaves a half-written entry behind.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from tbprof import __version__
from tbprof.store import tables
from tbprof.store.fs import Location
from tbprof.store.strings import StringTable

# Bump when the store layout changes, so old entries are ignored.
FORMAT_VERSION = 2

_PLANE_ARRAYS = ("line_ids", "line_timestamp_ns", "line_offsets", "start_ps", "dur_ps", "meta_idx",
                 "name_id", "depth", "line_idx", "meta_ids", "meta_name_id", "meta_display_name_id")
_STAT_ARRAYS = tuple(f.name for f in fields(tables.StatTable))


def cache_key(path: Location, extra: str = "") -> str:
    st = path.stat()
    raw = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{__version__}|{FORMAT_VERSION}|{extra}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


class DiskCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _entry(self, key: str) -> Path:
        return self.root / "stores" / key

    def has(self, key: str) -> bool:
        return (self._entry(key) / "meta.pkl").is_file()

    def load(self, key: str) -> tables.ProfileStore | None:
        entry = self._entry(key)
        meta_path = entry / "meta.pkl"
        if not meta_path.is_file():
            return None
        try:
            with open(meta_path, "rb") as f:
                meta = pickle.load(f)
            planes = []
            for pi, pmeta in enumerate(meta["planes"]):
                arrays = {name: np.load(entry / f"p{pi}_{name}.npy", mmap_mode="r") for name in _PLANE_ARRAYS}
                stats = tables.StatTable(*(np.load(entry / f"p{pi}_s_{n}.npy", mmap_mode="r") for n in _STAT_ARRAYS))
                meta_stats = tables.StatTable(*(np.load(entry / f"p{pi}_m_{n}.npy") for n in _STAT_ARRAYS))
                planes.append(tables.Plane(stats=stats, meta_stats=meta_stats, **arrays, **pmeta))
            store_meta = meta["store"]
            return tables.ProfileStore(strings=StringTable(meta["strings"]), planes=planes, **store_meta)
        except (OSError, EOFError, pickle.UnpicklingError, KeyError, ValueError, TypeError):
            # A damaged entry is not an error for the user: convert again.
            shutil.rmtree(entry, ignore_errors=True)
            return None

    def save(self, key: str, store: tables.ProfileStore) -> None:
        entry = self._entry(key)
        if entry.exists():
            return
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=entry.parent))
        except OSError:
            return  # an unwritable cache dir only costs speed
        try:
            planes_meta: list[dict[str, Any]] = []
            for pi, p in enumerate(store.planes):
                for name in _PLANE_ARRAYS:
                    np.save(tmp / f"p{pi}_{name}.npy", np.ascontiguousarray(getattr(p, name)))
                for n in _STAT_ARRAYS:
                    np.save(tmp / f"p{pi}_s_{n}.npy", np.ascontiguousarray(getattr(p.stats, n)))
                    np.save(tmp / f"p{pi}_m_{n}.npy", np.ascontiguousarray(getattr(p.meta_stats, n)))
                planes_meta.append({"index": p.index, "id": p.id, "name": p.name, "line_names": p.line_names,
                                    "line_display_names": p.line_display_names, "plane_stats": p.plane_stats,
                                    "blobs": p.blobs})
            meta = {
                "strings": store.strings.as_list(),
                "planes": planes_meta,
                "store": {"source_path": store.source_path, "host": store.host, "format": store.format,
                          "origin_ps": store.origin_ps, "span_ps": store.span_ps, "hostnames": store.hostnames,
                          "errors": store.errors, "warnings": store.warnings,
                          "metadata": store.metadata},
            }
            with open(tmp / "meta.pkl", "wb") as f:
                pickle.dump(meta, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, entry)
        except OSError:
            pass
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
