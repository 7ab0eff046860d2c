"""Fast per-event columns for the op analyses: costs scale with the events a tool needs.

A plane of jax_large has millions of events and stats; a tool that needs a small share of them
(its memory events or its kernels) must not scan, sort or densify the whole plane per stat. Stats are sorted by
owner row, so the stats of chosen rows are contiguous ranges found by a forward walk.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tbprof._core.kernels import gather_stats
from tbprof.store.tables import KIND_BYTES, KIND_DOUBLE, KIND_REF, KIND_STR, Plane, ProfileStore


class RowStats:
    """Stats of selected event rows (event stats, falling back to their metadata's stats)."""

    def __init__(self, store: ProfileStore, plane: Plane, rows: np.ndarray, names: Iterable[str]) -> None:
        self.n = int(rows.shape[0])
        self._cols: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # name -> has, kind, value
        names = [nm for nm in dict.fromkeys(names) if store.stat_id(nm) >= 0]
        if not names or self.n == 0:
            return
        slot_of = np.full(len(store.strings), -1, dtype=np.int64)
        for i, nm in enumerate(names):
            slot_of[store.stat_id(nm)] = i
        k = len(names)
        has = np.zeros((k, self.n), dtype=bool)
        kind = np.zeros((k, self.n), dtype=np.int8)
        value = np.zeros((k, self.n), dtype=np.int64)
        # Metadata stats first, event stats last: event values overwrite inherited ones.
        for table, owners in ((plane.meta_stats, plane.meta_idx[rows]), (plane.stats, rows)):
            if len(table) == 0:
                continue
            mode = 2 if owners is not rows else (0 if self.n * 64 > len(table) else 1)
            gather_stats(table.owner, table.stat_id, table.kind, table.value, owners.astype(np.int64), slot_of,
                    has, kind, value, mode)
        for i, nm in enumerate(names):
            if has[i].any():
                self._cols[nm] = (has[i], kind[i], value[i])

    def has(self, name: str) -> np.ndarray:
        col = self._cols.get(name)
        return col[0] if col else np.zeros(self.n, dtype=bool)

    def int(self, name: str, missing: int = 0) -> np.ndarray:
        col = self._cols.get(name)
        if col is None:
            return np.full(self.n, missing, dtype=np.int64)
        has, kind, value = col
        out = np.where(has, value, missing)
        dbl = kind == KIND_DOUBLE
        if dbl.any():
            out[dbl] = value[dbl].view(np.float64).astype(np.int64)
        return out

    def float(self, name: str, missing: float = 0.0) -> np.ndarray:
        col = self._cols.get(name)
        if col is None:
            return np.full(self.n, missing)
        has, kind, value = col
        out = value.astype(np.float64)
        dbl = kind == KIND_DOUBLE
        out[dbl] = value[dbl].view(np.float64)
        out[~has] = missing
        return out

    def blob(self, name: str) -> np.ndarray:
        """Indexes into the plane's ``blobs`` of a bytes-valued stat (-1 where the row has none)."""
        col = self._cols.get(name)
        if col is None:
            return np.full(self.n, -1, dtype=np.int64)
        has, kind, value = col
        return np.where(has & (kind == KIND_BYTES), value, -1)

    def str_id(self, name: str) -> np.ndarray:
        """String ids (-1 where the row has no text value)."""
        col = self._cols.get(name)
        if col is None:
            return np.full(self.n, -1, dtype=np.int64)
        has, kind, value = col
        text = has & ((kind == KIND_STR) | (kind == KIND_REF))
        return np.where(text, value, -1)


def rows_with_stat(plane: Plane, stat_id: int) -> np.ndarray:
    """Event rows carrying ``stat_id`` as an event stat or through their metadata (ascending)."""
    if stat_id < 0:
        return np.zeros(0, dtype=np.int64)
    own = plane.stats.owner[plane.stats.stat_id == stat_id].astype(np.int64)  # sorted: stats are by owner
    if own.shape[0] > 1:
        own = own[np.concatenate([[True], own[1:] != own[:-1]])]
    metas = plane.meta_stats.owner[plane.meta_stats.stat_id == stat_id]
    if metas.shape[0] == 0:
        return own
    meta_has = np.zeros(max(len(plane.meta_ids), 1), dtype=bool)
    meta_has[metas] = True
    inherit = np.flatnonzero(meta_has[np.maximum(plane.meta_idx, 0)] & (plane.meta_idx >= 0))
    return np.union1d(own, inherit)


def rows_of_metas(plane: Plane, metas: np.ndarray) -> np.ndarray:
    """Event rows whose metadata row is in ``metas`` (ascending). A few metadata rows cost a
    compare per row each, many a lookup-table gather (the crossover: bench/measurements.md#plane-stats)."""
    if metas.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if metas.shape[0] <= 4:
        mask = plane.meta_idx == metas[0]
        for m in metas[1:].tolist():
            mask |= plane.meta_idx == m
        return np.flatnonzero(mask)
    lut = np.zeros(len(plane.meta_ids) + 1, dtype=bool)
    lut[metas] = True
    return np.flatnonzero(lut[plane.meta_idx])  # meta_idx -1 reads the spare last slot (False)


def factorize(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of the rows of several int columns, and the first row of each code.

    Columns are packed into one int64 (``code * width + value``) and compacted with
    ``np.unique`` only when the next column would overflow, so k columns cost ~1 unique.
    """
    n = cols[0].shape[0]
    code = np.zeros(n, dtype=np.int64)
    code_span = 1
    for col in cols:
        if n == 0:
            break
        lo, hi = int(col.min()), int(col.max())
        width = hi - lo + 1
        if code_span * width >= 1 << 62:
            _, code = np.unique(code, return_inverse=True)
            code = code.reshape(-1)
            code_span = int(code.max()) + 1
            if code_span * width >= 1 << 62:
                _, col_code = np.unique(col, return_inverse=True)
                col = col_code.reshape(-1)
                lo, width = 0, int(col.max()) + 1
        code = code * width + (col.astype(np.int64) - lo)
        code_span *= width
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return inv.reshape(-1), first
