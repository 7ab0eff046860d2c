"""Per-op time of a TF1 timeline step file, in XProf's OpMetricsDb shape.

Ops are the events of the op planes (``domain/tf1_planes``): named by the graph node
(``args.name``), typed by the op (``args.op``), host or device by their plane. Self time =
duration minus the events nested directly inside on the same thread; a side's total time is
the sum of its threads' op spans (idle = that minus the op self time), as for XSpace hosts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tbprof.domain.event_tree import parent_rows, self_time_ps
from tbprof.domain.tf1_planes import is_tf1_timeline, op_planes
from tbprof.store.arrays import sorted_unique
from tbprof.store.tables import Plane, ProfileStore

__all__ = ["is_tf1_timeline", "side_ops"]


def _str_stat(store: ProfileStore, plane: Plane, name: str, rows: np.ndarray) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    return plane.dense_str_ids(sid)[rows].astype(np.int64)


def side_ops(store: ProfileStore, side: str) -> dict[str, Any]:
    """The fields of an ``op_metrics.OpMetricsDb`` for the ``side`` ("Host" or "Device") ops."""
    keys: list[tuple[str, str]] = []
    dur_parts: list[np.ndarray] = []
    self_parts: list[np.ndarray] = []
    total_ps = 0
    for op in op_planes(store):
        if op.side != side or op.rows.shape[0] == 0:
            continue
        plane, rows = op.plane, op.rows
        node = _str_stat(store, plane, "name", rows)
        op_type = _str_stat(store, plane, "op", rows)
        names = store.strings.lookup(np.where(node >= 0, node, plane.name_id[rows]))
        types = store.strings.lookup(np.maximum(op_type, 0))
        keys.extend((n, t if ot >= 0 else "") for n, t, ot in zip(names, types, op_type.tolist(), strict=True))
        dur_parts.append(plane.dur_ps[rows].astype(np.float64))
        self_parts.append(self_time_ps(plane, parent_rows(plane))[rows].astype(np.float64))
        for line in sorted_unique(plane.line_idx[rows]).tolist():
            lr = rows[plane.line_idx[rows] == line]
            total_ps += int((plane.start_ps[lr] + plane.dur_ps[lr]).max() - plane.start_ps[lr].min())
    index: dict[tuple[str, str], int] = {}
    inv = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    k = len(index)
    dur = np.concatenate(dur_parts) if dur_parts else np.zeros(0)
    own = np.concatenate(self_parts) if self_parts else np.zeros(0)
    time_ps = np.bincount(inv, weights=dur, minlength=k).round() if k else np.zeros(0)
    self_ps = np.bincount(inv, weights=own, minlength=k).round() if k else np.zeros(0)
    names = [n for n, _ in index]
    return dict(
        name=np.array(names, dtype=object), type=np.array([t for _, t in index], dtype=object),
        provenance=np.full(k, "", dtype=object), program_id=np.zeros(k, np.int64),
        occurrences=np.bincount(inv, minlength=k).astype(np.int64), time_ps=time_ps.astype(np.int64),
        self_time_ps=self_ps.astype(np.int64), flops=np.zeros(k), bytes_accessed=np.zeros(k),
        # Graph mode: every op of a TF1 session runs inside a graph, none eagerly.
        is_eager=np.zeros(k, bool), total_time_ps=max(total_ps, int(self_ps.sum()) if k else 0),
    )
