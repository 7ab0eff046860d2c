"""A digest of every column of a ``ProfileStore``: equal digests mean equal stores.

Used to pin the compiled core to the numba kernels it replaced: ``store_digests.json`` holds
the digests the numba version produced for the six real xplanes (made with
``python -m tests.core.store_digest`` before the switch), and ``test_store_digests.py``
checks the current reader against them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tbprof.store import tables

DIGESTS = Path(__file__).with_name("store_digests.json")
# The six real xplanes, by archive and host.
PROFILES = (("keras_cnn", "vm"), ("custom_loop", "vm"), ("jax_mlp", "vm"), ("jax_2hosts", "worker0"),
            ("jax_2hosts", "worker1"), ("jax_large", "vm"))


def _h(value: Any) -> str:
    h = hashlib.sha256()
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()[:16]


def _stats(prefix: str, t: tables.StatTable) -> dict[str, str]:
    return {f"{prefix}.{k}": _h(getattr(t, k)) for k in ("owner", "stat_id", "kind", "value")}


def store_digest(store: tables.ProfileStore) -> dict[str, str]:
    """Column name -> short sha256 of its dtype, shape and bytes."""
    out = {"origin_ps": _h(store.origin_ps), "span_ps": _h(store.span_ps), "strings": _h(store.strings.as_list()),
           "hostnames": _h(store.hostnames), "errors": _h(store.errors), "warnings": _h(store.warnings)}
    for p in store.planes:
        pre = f"{p.index}:{p.name}"
        out[f"{pre}.id"] = _h(p.id)
        for col in ("line_ids", "line_timestamp_ns", "line_offsets", "start_ps", "dur_ps", "meta_idx", "name_id",
                    "depth", "line_idx", "meta_ids", "meta_name_id", "meta_display_name_id"):
            out[f"{pre}.{col}"] = _h(getattr(p, col))
        out[f"{pre}.line_names"] = _h(p.line_names)
        out[f"{pre}.line_display_names"] = _h(p.line_display_names)
        out[f"{pre}.plane_stats"] = _h(sorted((k, repr(v)) for k, v in p.plane_stats.items()))
        out[f"{pre}.blobs"] = _h(p.blobs)
        out.update(_stats(f"{pre}.stats", p.stats))
        out.update(_stats(f"{pre}.meta_stats", p.meta_stats))
    return out


def main(argv: list[str]) -> int:
    """python -m tests.core.store_digest [--check] UNPACKED_ROOT: writes store_digests.json, or
    with --check compares the current reader's stores with it (exit 1 on a difference)."""
    from tbprof.readers import xplane

    check = "--check" in argv
    root = Path(next(a for a in argv[1:] if a != "--check"))
    want = json.loads(DIGESTS.read_text()) if check else {}
    result = {}
    for name, host in PROFILES:
        path = next((root / name).rglob(f"{host}.xplane.pb"))
        result[f"{name}/{host}"] = store_digest(xplane.read_xspace(path))
        if check:
            key = f"{name}/{host}"
            diff = sorted(k for k in set(want[key]) | set(result[key]) if want[key].get(k) != result[key].get(k))
            print(f"{key}: {len(result[key])} columns, {'identical' if not diff else f'DIFFER: {diff}'}")
    if check:
        return 0 if result == want else 1
    DIGESTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
