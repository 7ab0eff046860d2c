"""On-disk cache of converted stores: one folder of ``.npy`` columns per profile file.

Reopening maps the columns (``np.load(mmap_mode="r")``) instead of reading them, so a
restart opens a converted 60 MB profile in milliseconds and pages in only what a tool
touches. Entries are keyed by (absolute path, size, mtime, tbprof version, format version):
a profile that is rewritten, or a newer tbprof, simply misses. Writes go to a temporary
folder renamed into place, so a crash never leaves a half-written entry behind.

Nothing in an entry is executable: metadata is JSON (``meta.json``; bytes values tagged and
base64-encoded), blobs one ``uint8`` column, and every ``np.load`` has ``allow_pickle=False``.
An entry that cannot be read for any reason (damaged, or left unreadable by ``sudo tbprof``)
is a miss: it is removed, or moved aside when we may not remove it, and converted again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from tbprof import __version__
from tbprof.errors import ProfileReadError
from tbprof.store import tables
from tbprof.store.cache_dir import check_cache_dir
from tbprof.store.fs import Location
from tbprof.store.strings import StringTable

# Bump when the store layout changes, so old entries are ignored (3: JSON metadata, no pickle,
# and the store's trace metadata: Kineto's deviceProperties and distributedInfo).
FORMAT_VERSION = 3
META = "meta.json"

_PLANE_ARRAYS = ("line_ids", "line_timestamp_ns", "line_offsets", "start_ps", "dur_ps", "meta_idx",
                 "name_id", "depth", "line_idx", "meta_ids", "meta_name_id", "meta_display_name_id")
_STAT_ARRAYS = tuple(f.name for f in fields(tables.StatTable))


def cache_key(path: Location, extra: str = "") -> str:
    """The key of ``path``'s current content; a file that vanished since discovery is a 422
    naming it (ProfileReadError), not an OSError."""
    try:
        st = path.stat()
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from None
    raw = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{__version__}|{FORMAT_VERSION}|{extra}"
    # A POSIX path is bytes: one that is not UTF-8 holds surrogate escapes, kept as its bytes.
    return hashlib.sha256(raw.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _to_json(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _load(path: Path, mmap: bool = True) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def save_blobs(folder: Path, plane_index: int, blobs: list[bytes]) -> None:
    """A plane's bytes values: one uint8 column and the end offset of each."""
    np.save(folder / f"p{plane_index}_blobs.npy", np.frombuffer(b"".join(blobs), dtype=np.uint8))
    np.save(folder / f"p{plane_index}_blob_ends.npy", np.cumsum([len(b) for b in blobs], dtype=np.int64))


def entry_meta(store: tables.ProfileStore) -> dict[str, Any]:
    """The ``meta.json`` of an entry: everything of the store that is not a column."""
    planes_meta = [_to_json({"index": p.index, "id": p.id, "name": p.name, "line_names": p.line_names,
                             "line_display_names": p.line_display_names, "plane_stats": p.plane_stats})
                   for p in store.planes]
    return {
        "strings": store.strings.as_list(),
        "planes": planes_meta,
        "store": _to_json({"source_path": store.source_path, "host": store.host, "format": store.format,
                           "origin_ps": store.origin_ps, "span_ps": store.span_ps,
                           "hostnames": store.hostnames, "errors": store.errors, "warnings": store.warnings,
                           "metadata": store.metadata}),
    }


# Names of derived values and of their arrays become file names: nothing but these characters.
_DERIVED_NAME = re.compile(r"[a-z0-9_]{1,64}")


def _save_derived(folder: Path, derived: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Writes ``store.derived``'s arrays as ``d_<name>_<field>.npy``; their index for meta.json."""
    index: dict[str, Any] = {}
    for name, value in derived.items():
        arrays = value.get("arrays", {})
        if not _DERIVED_NAME.fullmatch(name) or not all(_DERIVED_NAME.fullmatch(f) for f in arrays):
            continue
        for f, array in arrays.items():
            np.save(folder / f"d_{name}_{f}.npy", np.ascontiguousarray(array))
        index[name] = {"arrays": sorted(arrays), "json": _to_json(value.get("json"))}
    return index


def _load_derived(entry: Path, index: Any) -> dict[str, dict[str, Any]]:
    """``store.derived`` of an entry (arrays memory-mapped); a malformed index is no index."""
    if not isinstance(index, dict):
        return {}
    derived: dict[str, dict[str, Any]] = {}
    for name, spec in index.items():
        fields_ = spec.get("arrays") if isinstance(spec, dict) else None
        if not (isinstance(name, str) and _DERIVED_NAME.fullmatch(name) and isinstance(fields_, list)
                and all(isinstance(f, str) and _DERIVED_NAME.fullmatch(f) for f in fields_)):
            continue
        derived[name] = {"arrays": {f: _load(entry / f"d_{name}_{f}.npy") for f in fields_},
                         "json": _from_json(spec.get("json"))}
    return derived


class DiskCache:
    def __init__(self, root: Path) -> None:
        check_cache_dir(root)
        self.root = root

    def _entry(self, key: str) -> Path:
        return self.root / "stores" / key

    def entry_path(self, key: str) -> Path:
        """The folder of ``key``'s entry (store/entry_writer.py writes one beside it)."""
        return self._entry(key)

    def discard(self, entry: Path) -> None:
        self._discard(entry)

    def has(self, key: str) -> bool:
        meta = self._entry(key) / META
        return os.path.isfile(meta) and os.access(meta, os.R_OK)  # neither raises

    def load(self, key: str) -> tables.ProfileStore | None:
        entry = self._entry(key)
        meta_path = entry / META
        if not os.path.lexists(entry):
            return None
        try:
            meta = json.loads(meta_path.read_bytes())
            planes = []
            for pi, pmeta in enumerate(meta["planes"]):
                arrays: dict[str, Any] = {name: _load(entry / f"p{pi}_{name}.npy") for name in _PLANE_ARRAYS}
                stats = tables.StatTable(*(_load(entry / f"p{pi}_s_{n}.npy") for n in _STAT_ARRAYS))
                meta_stats = tables.StatTable(*(_load(entry / f"p{pi}_m_{n}.npy", mmap=False) for n in _STAT_ARRAYS))
                blob_bytes = _load(entry / f"p{pi}_blobs.npy", mmap=False)
                ends = _load(entry / f"p{pi}_blob_ends.npy", mmap=False).tolist()
                blobs = [blob_bytes[a:b].tobytes() for a, b in zip([0, *ends][:-1], ends, strict=True)]
                pmeta = {k: _from_json(v) for k, v in pmeta.items()}
                planes.append(tables.Plane(stats=stats, meta_stats=meta_stats, blobs=blobs, **arrays, **pmeta))
            store_meta = _from_json(meta["store"])
            derived = _load_derived(entry, meta.get("derived", {}))
            return tables.ProfileStore(strings=StringTable(meta["strings"]), planes=planes, **store_meta,
                                       derived=derived)
        except (OSError, KeyError, ValueError, TypeError, AttributeError):
            # A damaged or unreadable entry is not an error for the user: convert again.
            self._discard(entry)
            return None

    def _discard(self, entry: Path) -> None:
        """Removes an entry; one we may not remove (another user's) is renamed aside, so the
        fresh conversion can take its place."""
        shutil.rmtree(entry, ignore_errors=True)
        if os.path.lexists(entry):
            try:
                os.replace(entry, entry.with_name(f".stale-{entry.name}-{os.getpid()}-{os.urandom(4).hex()}"))
            except OSError:
                pass

    def save(self, key: str, store: tables.ProfileStore) -> None:
        entry = self._entry(key)
        if self.has(key):
            return
        self._discard(entry)
        try:
            entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=entry.parent))
        except OSError:
            return  # an unwritable cache dir only costs speed
        try:
            for pi, p in enumerate(store.planes):
                for name in _PLANE_ARRAYS:
                    np.save(tmp / f"p{pi}_{name}.npy", np.ascontiguousarray(getattr(p, name)))
                for n in _STAT_ARRAYS:
                    np.save(tmp / f"p{pi}_s_{n}.npy", np.ascontiguousarray(getattr(p.stats, n)))
                    np.save(tmp / f"p{pi}_m_{n}.npy", np.ascontiguousarray(getattr(p.meta_stats, n)))
                save_blobs(tmp, pi, p.blobs)
            meta = entry_meta(store)
            meta["derived"] = _save_derived(tmp, store.derived)
            (tmp / META).write_text(json.dumps(meta))
            os.replace(tmp, entry)
        except OSError:
            pass
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
