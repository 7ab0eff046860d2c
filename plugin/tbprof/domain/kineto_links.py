"""How a PyTorch (Kineto) trace links device work to the operators that launched it.

A device event's ``correlation`` names the runtime call that launched it (``cudaLaunchKernel``,
``hipLaunchKernel``, MTIA's ``runFunction``); its operator is the innermost ``cpu_op`` that
encloses that call on its thread, as HTA and PyTorch's own tools find it. A collective's own span
(``nccl:_all_gather_base``, a ``user_annotation``: ``kineto_names.is_collective_name``) counts as
an operator: it lies inside ``record_param_comms``, the ``cpu_op`` every c10d call launches from,
so NCCL kernels belong to the collective, not to that wrapper. Without a launch in the trace: the
collective whose GPU annotation (``gpu_user_annotation``, on the kernel's stream) encloses the
device event, then the ``cpu_op`` carrying the device event's ``External id`` (DDP's kernels carry
External ids no operator has, so the launch comes first; NCCL kernels carry
``record_param_comms``'s, which then stands for the collective span inside it).

An operator's **precision** comes from its ``Input type`` (``record_shapes``): any bf16, fp16 or
fp8 input makes its device work 16-bit (or narrower), else a float/double input 32-bit; without
input types, from the kernel's name (``bf16``, ``fp16``/``half``, ``fp8``/``e4m3``/``e5m2`` vs
``fp32``/``f32``/``tf32``/``sgemm``/``float``/``double``); else it is unknown.
"""

from __future__ import annotations

import json

import numpy as np

from tbprof.domain.event_tree import parent_rows
from tbprof.domain.planes import on_device_side
from tbprof.store import kineto_names as kn
from tbprof.store.arrays import sorted_unique
from tbprof.store.derived import Derived
from tbprof.store.tables import Plane, ProfileStore

_LAUNCH_CATEGORIES = kn.LAUNCH_CATEGORIES


# The events' stats that a Kineto trace's summary reads (steps, operator links, device activity).
_LINK_STATS = ("cat", "correlation", "stream", "External id", "Input type")


def _prefetch_link_stats(store: ProfileStore) -> bool:
    ids = [store.stat_id(n) for n in _LINK_STATS]
    for plane in store.planes:
        if plane.n_events:
            plane.prefetch_stat_columns(ids)
    return True


def prefetch_link_stats(store: ProfileStore) -> None:
    """Gathers ``_LINK_STATS`` of every plane in one pass over its stat table instead of a pass
    per stat (a large trace's host plane holds tens of millions of stats); once per store, the
    analyses that run side by side (``analyses/overview/headline.py``) waiting for one gathering."""
    store.memo(("kineto_link_stats",), lambda: _prefetch_link_stats(store), size=lambda _: 0)


def category_mask(store: ProfileStore, plane: Plane, names: tuple[str, ...]) -> np.ndarray:
    """Whether each event of ``plane`` is in one of the categories ``names``."""
    sid = store.stat_id("cat")
    if sid < 0:
        return np.zeros(plane.n_events, bool)
    ids = [store.strings.id(n) for n in names]
    return plane.str_stat_in(sid, np.asarray([i for i in ids if i >= 0], dtype=np.int64))


def external_id(store: ProfileStore, plane: Plane) -> np.ndarray:
    sid = store.stat_id("External id")
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int64)
    return plane.event_stat(sid).dense_int(plane.n_events)


def _int_stat(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int64)
    return plane.event_stat(sid).dense_int(plane.n_events)


def _compute_op_by_external_id(store: ProfileStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    exts: list[np.ndarray] = []
    names: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    for pi, plane in enumerate(store.planes):
        rows = np.nonzero(category_mask(store, plane, (kn.OPERATOR,)))[0]
        ext = external_id(store, plane)[rows]
        keep = ext >= 0
        rows, ext = rows[keep], ext[keep]
        owner = rows.copy()  # the event that names each operator: itself, or the collective inside it
        spans = np.nonzero(_collective_mask(store, plane, (kn.USER_ANNOTATION, kn.OPERATOR)))[0]
        if spans.shape[0] and rows.shape[0]:
            parent = parent_rows(plane)[spans]
            pos = np.minimum(np.searchsorted(rows, parent), rows.shape[0] - 1)
            inside = (parent >= 0) & (rows[pos] == parent)
            owner[pos[inside]] = spans[inside]
        exts.append(ext)
        names.append(plane.name_id[owner].astype(np.int64))
        keys.append((np.int64(pi) << _ROW_BITS) | owner)
    if not exts:
        z = np.zeros(0, np.int64)
        return z, z, z
    ext_all, name_all, key_all = np.concatenate(exts), np.concatenate(names), np.concatenate(keys)
    order = np.argsort(ext_all, kind="stable")
    ext_all, name_all, key_all = ext_all[order], name_all[order], key_all[order]
    last = np.ones(ext_all.shape[0], bool)
    last[:-1] = ext_all[1:] != ext_all[:-1]
    return ext_all[last], name_all[last], key_all[last]


OP_BY_EXTERNAL_ID: Derived[tuple[np.ndarray, np.ndarray, np.ndarray]] = Derived(
    ("kineto_op_by_external_id",), _compute_op_by_external_id)


def op_by_external_id(store: ProfileStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(External ids ascending, name id of the operator carrying each, its instance key) (memoised).
    Of several operators with one External id, the last row (the innermost) owns it. An operator
    holding a collective's span (``record_param_comms`` > ``nccl:_all_gather_base``) stands for
    that collective: its External id is the one NCCL kernels carry."""
    return store.derive(OP_BY_EXTERNAL_ID)


def _lookup(sorted_ids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, found) of ``ids`` in ``sorted_ids``."""
    if sorted_ids.shape[0] == 0:
        return np.zeros(ids.shape[0], np.int64), np.zeros(ids.shape[0], bool)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.shape[0] - 1)
    return pos, (ids >= 0) & (sorted_ids[pos] == ids)


def _enclosing_op(is_op: np.ndarray, parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row of the innermost operator enclosing each of ``rows`` (the row itself excluded), -1 if none."""
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    todo = np.arange(rows.shape[0])
    cur = parent[rows]
    while todo.shape[0]:
        alive = cur >= 0
        todo, cur = todo[alive], cur[alive]
        found = is_op[cur]
        out[todo[found]] = cur[found]
        todo, cur = todo[~found], parent[cur[~found]]
    return out


# An operator instance's key: (plane << 40) | its row.
_ROW_BITS = 40


def _compute_collective_name_ids(store: ProfileStore) -> np.ndarray:
    parts = [sorted_unique(p.name_id) for p in store.planes if p.n_events]
    ids = sorted_unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    names = store.strings.lookup(ids)
    return np.asarray([i for i, n in zip(ids.tolist(), names, strict=True) if kn.is_collective_name(n)],
                      np.int64)


COLLECTIVE_NAME_IDS: Derived[np.ndarray] = Derived(("kineto_collective_name_ids",), _compute_collective_name_ids)


def collective_name_ids(store: ProfileStore) -> np.ndarray:
    """Name ids of the store's collective spans (``kineto_names.is_collective_name``), memoised;
    only event names are tested (the string table also holds every stat's text)."""
    return store.derive(COLLECTIVE_NAME_IDS)


def _collective_mask(store: ProfileStore, plane: Plane, categories: tuple[str, ...]) -> np.ndarray:
    """Events of ``plane`` that are a collective's span (by name) in one of ``categories``."""
    names = collective_name_ids(store)
    if names.shape[0] == 0:
        return np.zeros(plane.n_events, bool)
    return np.isin(plane.name_id, names) & category_mask(store, plane, categories)


def _operator_mask(store: ProfileStore, plane: Plane) -> np.ndarray:
    """The host events a launch may belong to: operators and collectives' spans."""
    return category_mask(store, plane, (kn.OPERATOR,)) | _collective_mask(
        store, plane, (kn.USER_ANNOTATION, kn.OPERATOR))


def _enclosing_collective(store: ProfileStore, plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(name id, instance key) of the collective GPU annotation on the same line of ``plane`` that
    encloses each device event ``rows`` (-1: none)."""
    name = np.full(rows.shape[0], -1, np.int64)
    key = np.full(rows.shape[0], -1, np.int64)
    anno = np.nonzero(_collective_mask(store, plane, (kn.GPU_USER_ANNOTATION,)))[0]
    if anno.shape[0] == 0 or rows.shape[0] == 0:
        return name, key
    pi = np.int64(store.planes.index(plane))
    for line in np.unique(plane.line_idx[anno]).tolist():  # a few streams
        mine = anno[plane.line_idx[anno] == line]
        mine = mine[np.argsort(plane.start_ps[mine], kind="stable")]
        sel = np.nonzero(plane.line_idx[rows] == line)[0]
        # Each event's candidate: the last annotation starting at or before it.
        pos = np.searchsorted(plane.start_ps[mine], plane.start_ps[rows[sel]], side="right") - 1
        cand = mine[np.clip(pos, 0, None)]
        ev = rows[sel]
        ok = (pos >= 0) & (plane.start_ps[cand] + plane.dur_ps[cand] >= plane.start_ps[ev] + plane.dur_ps[ev])
        name[sel[ok]] = plane.name_id[cand[ok]]
        key[sel[ok]] = (pi << _ROW_BITS) | cand[ok]
    return name, key


def _compute_op_by_correlation(store: ProfileStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    corrs: list[np.ndarray] = []
    ops: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    for pi, plane in enumerate(store.planes):
        if on_device_side(plane) or plane.n_events == 0:
            continue
        corr = _int_stat(store, plane, "correlation")
        rows = np.nonzero((corr >= 0) & category_mask(store, plane, _LAUNCH_CATEGORIES))[0]
        if rows.shape[0] == 0:
            continue
        op = _enclosing_op(_operator_mask(store, plane), parent_rows(plane), rows)
        found = op >= 0
        corrs.append(corr[rows[found]])
        ops.append(plane.name_id[op[found]].astype(np.int64))
        keys.append((np.int64(pi) << _ROW_BITS) | op[found])
    if not corrs:
        z = np.zeros(0, np.int64)
        return z, z, z
    corr_all = np.concatenate(corrs)
    order = np.argsort(corr_all, kind="stable")
    return corr_all[order], np.concatenate(ops)[order], np.concatenate(keys)[order]


OP_BY_CORRELATION: Derived[tuple[np.ndarray, np.ndarray, np.ndarray]] = Derived(
    ("kineto_op_by_correlation",), _compute_op_by_correlation)


def op_by_correlation(store: ProfileStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correlation ids ascending, name id of the operator enclosing their launch, that operator
    event's instance key) (memoised)."""
    return store.derive(OP_BY_CORRELATION)


def launching_op(store: ProfileStore, plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the device events ``rows`` of ``plane``: the name id of the operator that launched each
    (-1: none) and a key of that operator instance."""
    op = np.full(rows.shape[0], -1, dtype=np.int64)
    key = np.full(rows.shape[0], -1, dtype=np.int64)
    corr_sorted, op_sorted, key_sorted = op_by_correlation(store)
    pos, hit = _lookup(corr_sorted, _int_stat(store, plane, "correlation")[rows])
    op[hit], key[hit] = op_sorted[pos[hit]], key_sorted[pos[hit]]
    missing = np.nonzero(~hit)[0]
    if missing.shape[0]:
        c_name, c_key = _enclosing_collective(store, plane, rows[missing])
        found = c_name >= 0
        op[missing[found]], key[missing[found]] = c_name[found], c_key[found]
        missing = missing[~found]
    if missing.shape[0]:
        ext_sorted, name_sorted, ext_key_sorted = op_by_external_id(store)
        pos, found = _lookup(ext_sorted, external_id(store, plane)[rows[missing]])
        op[missing[found]] = name_sorted[pos[found]]
        key[missing[found]] = ext_key_sorted[pos[found]]
    return op, key



PRECISION_UNKNOWN, PRECISION_16, PRECISION_32 = 0, 16, 32
_LOW_TYPES = ("bfloat16", "half", "float8", "float4")
_FULL_TYPES = ("float", "double")
# Tokens of kernel names, checked on the lower-cased name split at non-alphanumerics.
_LOW_TOKENS = frozenset(("bf16", "bfloat16", "fp16", "f16", "half", "fp8", "e4m3", "e5m2", "e4m3fn", "f8",
                         "bf16x9", "h16", "hgemm"))
_FULL_TOKENS = frozenset(("fp32", "f32", "float", "float32", "tf32", "sgemm", "dgemm", "double", "fp64", "f64",
                          "s1688gemm", "s16816gemm"))


def _precision_of_types(text: str) -> int:
    """PRECISION_* of an operator's ``Input type`` text (a JSON list of type names)."""
    try:
        types = json.loads(text)
    except (ValueError, RecursionError):
        return PRECISION_UNKNOWN
    if not isinstance(types, list):
        return PRECISION_UNKNOWN
    names = [t.lower() for t in types if isinstance(t, str)]
    if any(low in n for n in names for low in _LOW_TYPES):
        return PRECISION_16
    if any(n.split("::")[-1] in _FULL_TYPES for n in names):
        return PRECISION_32
    return PRECISION_UNKNOWN


def precision_of_name(name: str) -> int:
    """PRECISION_* from a kernel name's tokens (``ampere_bf16_s16816gemm...`` -> 16)."""
    cleaned = "".join(c if c.isalnum() else " " for c in name.lower())
    tokens = set(cleaned.split())
    if tokens & _LOW_TOKENS:
        return PRECISION_16
    if tokens & _FULL_TOKENS:
        return PRECISION_32
    return PRECISION_UNKNOWN


def device_precision(store: ProfileStore, plane: Plane, rows: np.ndarray) -> np.ndarray:
    """PRECISION_* of each device event ``rows`` of ``plane``: its operator's input types, else
    its own name."""
    out = np.zeros(rows.shape[0], dtype=np.int64)
    _, key = launching_op(store, plane, rows)
    sid = store.stat_id("Input type")
    if sid >= 0:
        has = key >= 0
        op_plane = np.where(has, key >> _ROW_BITS, -1)
        for pi in np.unique(op_plane[has]).tolist():
            sel = np.nonzero(op_plane == pi)[0]
            op_rows = key[sel] & ((1 << _ROW_BITS) - 1)
            src = store.planes[pi]
            text_id = src.dense_str_ids(sid)[op_rows]
            uniq, inv = np.unique(text_id, return_inverse=True)
            prec = np.array([_precision_of_types(store.strings[int(t)]) if t >= 0 else PRECISION_UNKNOWN
                             for t in uniq.tolist()], dtype=np.int64)
            out[sel] = prec[inv.reshape(-1)]
    unknown = np.nonzero(out == PRECISION_UNKNOWN)[0]
    if unknown.shape[0]:
        uniq, inv = np.unique(plane.name_id[rows[unknown]], return_inverse=True)
        prec = np.array([precision_of_name(n) for n in store.strings.lookup(uniq)], dtype=np.int64)
        out[unknown] = prec[inv.reshape(-1)]
    return out
