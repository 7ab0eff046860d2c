"""PyTorch profiler (Kineto) traces as every PyTorch version writes them, in XSpace's shape.

Runs on the store the Chrome-trace reader built, when the trace is a Kineto trace (its metadata
or its categories say so):

1. **Categories** are normalised to today's vocabulary (``store/kineto_names.py``): 1.8's
   ``Operator``/``Kernel``/``Runtime``/``Memcpy``/``Memset``, 1.9's capitalised names and any
   other casing become ``cpu_op``/``kernel``/``cuda_runtime``/``gpu_memcpy``/``gpu_memset``; the
   renaming is listed in ``store.metadata["kineto_categories"]``.
2. **Devices are found by their work**, not only by labels: a process holding device work
   (kernels, memcpys, memsets, GPU annotations) is ``/device:GPU:<n>``, ``n`` from its
   ``GPU <n>`` label, else from its events' ``device`` argument, else its pid. A labelled
   process without device work (a thread that happens to share the GPU's pid 0, a label
   without events) is no device. Threads of a device process that run host work (a Python
   thread with pid 0) move to a plane of their own, so a device plane holds device work only.
3. **The host** is the process labelled ``CPU``, else the one with the most operators.
4. ``deviceProperties`` become XSpace's plane stats of the device (``gpu_device_name``,
   ``core_count`` = SMs or compute units, compute capability, memory), looked up by the
   device's index; where a trace numbers its devices otherwise than its properties' ids but
   has one entry per device, the n-th device in index order takes the n-th entry.
5. **The vendor** (XSpace's ``device_vendor``) is decided by the runtime the host called, not
   by the compute capability, which AMD reports too (an MI300X is 9.4, which would read as an
   NVIDIA Hopper): HIP calls (``hipLaunchKernel``, ...) are ROCm's, MTIA's categories are
   Meta's MTIA (an accelerator, no GPU), CUDA calls NVIDIA's.

``store.metadata["producer"] = "pytorch"`` marks the store for the analyses.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from tbprof.readers.plane_builder import take_lines
from tbprof.store import kineto_names as kn
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique

PRODUCER = "pytorch"
_DEVICE_LABEL = re.compile(r"(?:GPU|MTIA|XPU|HPU)\s?(\d{1,4})")
_MAX_DEVICE_INDEX = 4096
# XSpace's device_vendor values (tsl kDeviceVendorNvidia / kDeviceVendorAMD) and MTIA's.
VENDOR_NVIDIA, VENDOR_AMD, VENDOR_MTIA = "Nvidia", "AMD", "Meta MTIA"
# Host calls that only a ROCm (HIP) or a CUDA build of PyTorch makes.
_HIP_CALLS = ("hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
              "hipLaunchCooperativeKernel", "hipMemcpyAsync", "hipMemsetAsync", "hipGraphLaunch",
              "hipMemcpyWithStream")
_CUDA_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
               "cudaMemsetAsync", "cudaGraphLaunch")
# Host-side work: a line of a device process holding these (and no device work) is a host thread.
_HOST_CATEGORIES = (kn.OPERATOR, kn.USER_ANNOTATION, kn.PYTHON_FUNCTION, *kn.LAUNCH_CATEGORIES,
                    "cpu_instant_event")


def is_kineto_store(store: tables.ProfileStore) -> bool:
    if store.metadata.get("producer") == PRODUCER:
        return True
    meta = store.metadata
    if "deviceProperties" in meta or "distributedInfo" in meta or "baseTimeNanoseconds" in meta:
        return True
    return any(c.lower() in kn.MARKER_CATEGORIES for c in _categories(store))


def finish(store: tables.ProfileStore) -> None:
    """Normalises a Kineto store in place (no-op for other Chrome traces)."""
    if not is_kineto_store(store):
        return
    store.metadata["producer"] = PRODUCER
    _normalise_categories(store)
    _name_planes(store)


def _cat_stat(store: tables.ProfileStore) -> int:
    return store.strings.id("cat")


def _categories(store: tables.ProfileStore) -> set[str]:
    sid = _cat_stat(store)
    if sid < 0:
        return set()
    ids: set[int] = set()
    for plane in store.planes:
        ms = plane.meta_stats
        ids.update(sorted_unique(ms.value[ms.stat_id == sid]).tolist())
    return {store.strings[i] for i in ids if i > 0}


def _normalise_categories(store: tables.ProfileStore) -> None:
    sid = _cat_stat(store)
    if sid < 0:
        return
    renamed: dict[str, str] = {}
    remap: dict[int, int] = {}
    for cat in sorted(_categories(store)):  # canonical names interned in one order, whatever the hash seed
        canonical = kn.CANONICAL_CATEGORY.get(cat.lower())
        if canonical is not None and canonical != cat:
            renamed[cat] = canonical
            remap[store.strings.id(cat)] = store.strings.intern(canonical)
    if not remap:
        return
    old = np.array(sorted(remap), dtype=np.int64)
    new = np.array([remap[o] for o in old.tolist()], dtype=np.int64)
    for plane in store.planes:
        ms = plane.meta_stats
        is_cat = ms.stat_id == sid
        pos = np.searchsorted(old, ms.value)
        pos_c = np.minimum(pos, old.shape[0] - 1)
        hit = is_cat & (old[pos_c] == ms.value)
        if hit.any():
            value = ms.value.copy()
            value[hit] = new[pos_c[hit]]
            plane.meta_stats = tables.StatTable(ms.owner, ms.stat_id, ms.kind, value)
        plane._columns.clear()  # cached stat columns hold the old ids
    store.metadata["kineto_categories"] = dict(sorted(renamed.items()))


def _category_ids(store: tables.ProfileStore, names: tuple[str, ...]) -> np.ndarray:
    return np.array([i for i in (store.strings.id(n) for n in names) if i >= 0], dtype=np.int64)


def _event_categories(store: tables.ProfileStore, plane: tables.Plane) -> np.ndarray:
    return plane.dense_str_ids(_cat_stat(store)).astype(np.int64)


def _device_index_of_events(store: tables.ProfileStore, plane: tables.Plane, rows: np.ndarray) -> int | None:
    sid = store.strings.id("device")
    if sid < 0 or rows.shape[0] == 0:
        return None
    dev = plane.event_stat(sid).dense_int(plane.n_events)[rows]
    dev = dev[(dev >= 0) & (dev < _MAX_DEVICE_INDEX)]
    if dev.shape[0] == 0:
        return None
    values, counts = np.unique(dev, return_counts=True)
    return int(values[int(np.argmax(counts))])


def _vendor(store: tables.ProfileStore) -> str | None:
    """The device vendor by the runtime the host called (None when the trace shows no call)."""
    cats = _categories(store)
    if cats & {"mtia_runtime", "mtia_ccp_events"}:
        return VENDOR_MTIA
    if any(store.strings.id(n) >= 0 for n in _HIP_CALLS):
        return VENDOR_AMD
    if any(store.strings.id(n) >= 0 for n in _CUDA_CALLS):
        return VENDOR_NVIDIA
    return None


def _device_properties(store: tables.ProfileStore, indices: list[int]) -> dict[int, dict[str, Any]]:
    """``deviceProperties`` by device index (see the module docstring, 4.)."""
    by_id: dict[int, dict[str, Any]] = {}
    for dev in store.metadata.get("deviceProperties") or []:
        if isinstance(dev, dict) and isinstance(dev.get("id"), int) and not isinstance(dev.get("id"), bool):
            by_id[dev["id"]] = dev
    if all(i in by_id for i in indices) or len(by_id) != len(indices):
        return by_id
    return {index: by_id[pid] for index, pid in zip(sorted(indices), sorted(by_id), strict=True)}


def _name_planes(store: tables.ProfileStore) -> None:
    device_cats = _category_ids(store, kn.DEVICE_PROCESS_CATEGORIES)
    host_cats = _category_ids(store, _HOST_CATEGORIES)
    op_cat = _category_ids(store, (kn.OPERATOR,))

    # 1. Which processes hold device work, and which of their lines are host threads.
    claims: list[tuple[tables.Plane, int | None, bool]] = []  # plane, device index, from a label
    for pi in range(len(store.planes)):
        plane = store.planes[pi]
        if plane.n_events == 0 or plane.name.startswith("/device:"):
            continue
        cats = _event_categories(store, plane)
        is_dev = np.isin(cats, device_cats)
        if not is_dev.any():
            continue
        host_lines = _host_lines(plane, is_dev, np.isin(cats, host_cats))
        if host_lines.any():
            plane = _split_off(store, plane, host_lines)
            is_dev = np.isin(_event_categories(store, plane), device_cats)
        label = plane.plane_stats.get("process_labels")
        m = _DEVICE_LABEL.search(label) if isinstance(label, str) else None
        index = int(m.group(1)) if m else _device_index_of_events(store, plane, np.nonzero(is_dev)[0])
        if index is None:
            pid = plane.plane_stats.get("pid")
            index = pid if isinstance(pid, int) and 0 <= pid < _MAX_DEVICE_INDEX else None
        claims.append((plane, index, m is not None))

    # 2. Device indices: a label's or the events' own; clashes and unknowns get the next free one.
    used: set[int] = set()
    order = sorted(range(len(claims)), key=lambda k: (not claims[k][2], claims[k][1] is None, k))
    named: list[tuple[tables.Plane, int]] = []
    for k in order:
        plane, index, _ = claims[k]
        if index is None or index in used:
            index = next(i for i in range(_MAX_DEVICE_INDEX * 2) if i not in used)
        used.add(index)
        named.append((plane, index))
    props = _device_properties(store, [index for _, index in named])
    vendor = _vendor(store) if named else None
    for plane, index in named:
        plane.plane_stats["process_name"] = plane.name
        plane.name = f"/device:GPU:{index}"
        if vendor is not None:
            plane.plane_stats["device_vendor"] = vendor
        dev = props.get(index, {})
        for ours, theirs in (("gpu_device_name", "name"), ("core_count", "numSms"),
                             ("compute_cap_major", "computeMajor"), ("compute_cap_minor", "computeMinor"),
                             ("memory_size_bytes", "totalGlobalMem")):
            if theirs in dev:
                plane.plane_stats[ours] = dev[theirs]

    # 3. The host: the process labelled CPU, else the one with the most operators.
    if any(p.name == "/host:CPU" for p in store.planes):
        return
    labelled = [p for p in store.planes if not p.name.startswith("/device:")
                and str(p.plane_stats.get("process_labels", "")).strip() == "CPU"]
    best: tables.Plane | None = labelled[0] if labelled else None
    if best is None and op_cat.shape[0]:
        counts = Counter({p.index: int(np.isin(_event_categories(store, p), op_cat).sum())
                          for p in store.planes if not p.name.startswith("/device:") and p.n_events})
        top = counts.most_common(1)
        if top and top[0][1] > 0:
            best = store.planes[top[0][0]]
    if best is not None:
        best.plane_stats["process_name"] = best.name
        best.name = "/host:CPU"


def _host_lines(plane: tables.Plane, is_dev: np.ndarray, is_host: np.ndarray) -> np.ndarray:
    """Lines of a device process that hold host work and no device work."""
    n_lines = plane.n_lines
    dev_per_line = np.bincount(plane.line_idx[is_dev], minlength=n_lines)
    host_per_line = np.bincount(plane.line_idx[is_host], minlength=n_lines)
    return (dev_per_line == 0) & (host_per_line > 0)


def _split_off(store: tables.ProfileStore, plane: tables.Plane, move: np.ndarray) -> tables.Plane:
    """Moves the lines ``move`` of ``plane`` into a new plane appended to the store; returns the
    plane that replaces ``plane`` (its other lines)."""
    kept = take_lines(plane, ~move, plane.index, plane.name)
    moved = take_lines(plane, move, len(store.planes), f"{plane.name} (host threads)")
    moved.plane_stats.pop("process_labels", None)
    store.planes[plane.index] = kept
    store.planes.append(moved)
    return kept
