"""Several hosts' stores as one: the ranks of a PyTorch run in one timeline.

A multi-rank PyTorch run writes one Kineto trace per rank. The trace viewer shows them as one
store whose planes are every rank's planes, rank after rank, each group labelled with its rank
("rank 0 · /device:GPU:0"), on one time base:

- **Time base.** Kineto writes ``ts`` in microseconds relative to ``baseTimeNanoseconds`` (the
  trace header; ranks of one job share the host's clock), so an event's absolute time is
  ``baseTimeNanoseconds`` + ``ts``. The reader keeps ``origin_ps`` (the first ``ts``) and the
  header; a rank's events move by its absolute origin minus the earliest rank's. A trace
  without ``baseTimeNanoseconds`` (older Kineto, other producers) counts as base 0: its ``ts``
  are then already absolute (the system clock), as Chrome traces write them. XSpace stores'
  ``origin_ps`` is absolute already (line timestamps).
- **Strings.** One string table: every rank's ids are mapped into the first rank's table
  (event names, metadata names, stat names and string stat values).
- **Link ids.** Correlation ids, External ids and flow ids are per process: rank k's values get
  ``k * LINK_ID_OFFSET`` added, so a kernel of rank 1 never links to a launch of rank 0.

The combined store is built once per set of stores and memoised under the memory budget (in
the first store's memo, so it goes when that store goes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tbprof.store.strings import StringTable
from tbprof.store.tables import KIND_INT64, KIND_REF, KIND_STR, KIND_UINT64, Plane, ProfileStore, StatTable

# Per-process ids that join events (a launch and its kernels, an operator and its device work,
# a flow chain): rank k's values + k * LINK_ID_OFFSET (decimal, so the id stays readable).
LINK_ID_STATS = ("correlation", "correlation_id", "External id", "external id", "flow_id")
LINK_ID_OFFSET = 10**12
PLANE_LABELS = "plane_labels"  # metadata key: the rank label of each plane, by plane index


def rank_label(store: ProfileStore, position: int) -> str:
    """``rank N`` from Kineto's ``distributedInfo``; else the host's name."""
    info = store.metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return f"rank {info['rank']}"
    return store.host or f"host {position}"


def _rank_key(store: ProfileStore) -> tuple[int, int, str]:
    info = store.metadata.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return (0, rank, store.host) if isinstance(rank, int) else (1, 0, store.host)


def absolute_origin_ps(store: ProfileStore) -> int:
    """The store's time zero on a clock that every rank of a run shares (see the docstring)."""
    base_ns = store.metadata.get("baseTimeNanoseconds")
    base_ps = int(base_ns) * 1000 if isinstance(base_ns, int) and store.format == "chrome_trace" else 0
    return base_ps + int(store.origin_ps)


def _remap(ids: np.ndarray, table: np.ndarray | None) -> np.ndarray:
    """String ids through a mapping array (negative ids, "none", stay); None: the identity
    (the first rank's own table), the array itself is shared."""
    if table is None:
        return ids
    out = ids.astype(np.int64, copy=True)
    ok = out >= 0
    out[ok] = table[out[ok]]
    return out.astype(ids.dtype, copy=False)


def _stats(stats: StatTable, table: np.ndarray | None, link_ids: np.ndarray, link_offset: int) -> StatTable:
    if table is None and not link_offset:
        return stats  # the first rank: its table as it is (no copy)
    stat_id = _remap(stats.stat_id, table)
    value = stats.value.copy()
    if table is not None:
        as_string = (stats.kind == KIND_STR) | (stats.kind == KIND_REF)
        strings_at = as_string & (value >= 0) & (value < table.shape[0])
        value[strings_at] = table[value[strings_at]]
    if link_offset and link_ids.shape[0]:
        link = np.isin(stat_id, link_ids) & ((stats.kind == KIND_INT64) | (stats.kind == KIND_UINT64))
        value[link] += link_offset
    return StatTable(stats.owner, stat_id, stats.kind, value)


def combine_stores(stores: Sequence[ProfileStore]) -> ProfileStore:
    """The stores as one (see the module docstring); ranks in rank order."""
    ordered = sorted(stores, key=_rank_key)
    origins = [absolute_origin_ps(s) for s in ordered]
    origin = min(origins)
    strings = StringTable(ordered[0].strings.as_list())
    planes: list[Plane] = []
    labels: list[str] = []
    span_ps = 0
    for position, (store, store_origin) in enumerate(zip(ordered, origins, strict=True)):
        mapped = np.asarray([strings.intern(s) for s in store.strings.as_list()], dtype=np.int64)
        # The first rank's ids are the combined table's: its columns are shared, not copied.
        table = None if np.array_equal(mapped, np.arange(mapped.shape[0])) else mapped
        link_ids = np.asarray([i for i in (strings.id(n) for n in LINK_ID_STATS) if i >= 0], dtype=np.int64)
        shift = store_origin - origin
        offset = position * LINK_ID_OFFSET
        label = rank_label(store, position)
        for plane in store.planes:
            planes.append(replace(
                plane, index=len(planes), start_ps=plane.start_ps + shift if shift else plane.start_ps,
                name_id=_remap(plane.name_id, table), meta_name_id=_remap(plane.meta_name_id, table),
                meta_display_name_id=_remap(plane.meta_display_name_id, table),
                stats=_stats(plane.stats, table, link_ids, offset),
                meta_stats=_stats(plane.meta_stats, table, link_ids, offset),
                plane_stats=dict(plane.plane_stats), blobs=list(plane.blobs), _columns={}))
            labels.append(label)
        span_ps = max(span_ps, shift + store.span_ps)
    metadata: dict[str, Any] = {PLANE_LABELS: labels, "hosts": [s.host for s in ordered],
                                "origins_ps": {s.host: o - origin for s, o in zip(ordered, origins, strict=True)}}
    for key in ("deviceProperties", "producer", "schemaVersion", "baseTimeNanoseconds"):
        if key in ordered[0].metadata:
            metadata[key] = ordered[0].metadata[key]
    return ProfileStore(
        source_path=" + ".join(s.source_path for s in ordered), host=" + ".join(s.host for s in ordered),
        format=ordered[0].format, strings=strings, planes=planes,
        origin_ps=origin - (absolute_origin_ps(ordered[0]) - ordered[0].origin_ps),
        span_ps=span_ps, hostnames=[h for s in ordered for h in s.hostnames],
        errors=[e for s in ordered for e in s.errors], warnings=[w for s in ordered for w in s.warnings],
        metadata=metadata)


def combined(stores: Sequence[ProfileStore]) -> ProfileStore:
    """``combine_stores`` memoised in the first store's memo (under the memory budget)."""
    if len(stores) == 1:
        return stores[0]
    key = ("combined", tuple((s.source_path, s.host) for s in stores))
    return stores[0].memo(key, lambda: combine_stores(stores), size=lambda c: c.nbytes)
