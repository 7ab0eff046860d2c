"""Helpers shared by several test modules (public names; test modules import nothing private from each other)."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import ProfileStore
from tests.conftest import SAMPLE_PROFILES, xplane_of

GOLDEN = Path(__file__).resolve().parent / "golden"
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """A script of ``scripts/`` as a module (they are run by hand and checked by tests)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def golden(profile: str, tool: str) -> dict[str, Any]:
    """XProf 2.24.2's output of ``tool`` on ``profile`` (tests/golden, written by make_goldens.py)."""
    return json.loads((GOLDEN / profile / f"{tool}.json").read_text())


@lru_cache(maxsize=8)
def _store(path: Path) -> ProfileStore:
    return read_xspace(path)


def store_of(root: Path, profile: str) -> ProfileStore:
    """The store of a golden profile name (``jax_2hosts_worker0`` is one host of jax_2hosts), read once."""
    if profile.startswith("jax_2hosts_"):
        return _store(xplane_of(root, "jax_2hosts", profile.removeprefix("jax_2hosts_")))
    if profile == "tpu_inference":
        # Not among the shared fixture's profiles (it would add a run to every logdir test):
        # read in place from demo_logs/, which reading never modifies.
        return _store(xplane_of(SAMPLE_PROFILES, "tpu_inference", "tpu_inference_2"))
    return _store(xplane_of(root, profile))


def conforms(value: Any, tp: Any, path: str = "$", wire: bool = True) -> list[str]:
    """Where ``value`` breaks the type ``tp`` (a TypedDict, list/dict/Literal/union of JSON types):
    one message per mismatch, empty when it conforms. Extra keys are allowed (tools may send more
    than the dashboard reads); missing required keys are not. ``wire``: ``value`` is decoded JSON,
    checked against the JSON view of ``tp`` (a result's ``Table`` is a ``TableJson``, a numpy array a
    list: http/schemas.py ``wire_view``); else a tool's Python result, as ``compute`` returned it."""
    import types as _types
    from typing import Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

    from tbprof.analyses.table import Table
    from tbprof.http.schemas import wire_view

    if wire:
        tp = wire_view(tp)
    if tp is Any:
        return []
    if tp is Table:
        return [] if isinstance(value, Table) else [f"{path}: expected a Table, found {type(value).__name__}"]
    if get_origin(tp) is np.ndarray:
        return [] if isinstance(value, np.ndarray) else [f"{path}: expected an array, found {type(value).__name__}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, found {type(value).__name__}"]
        out = []
        for key, sub in get_type_hints(tp).items():
            if key not in value:
                if key in tp.__required_keys__:
                    out.append(f"{path}.{key}: missing")
                continue
            out += conforms(value[key], sub, f"{path}.{key}", wire)
        return out
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {args}"]
    if origin in (Union, _types.UnionType):
        fits = any(not conforms(value, a, path, wire) for a in args)
        return [] if fits else [f"{path}: {value!r} fits none of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: expected a list, found {type(value).__name__}"]
        return [m for i, v in enumerate(value) for m in conforms(v, args[0], f"{path}[{i}]", wire)]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, found {type(value).__name__}"]
        return [m for k, v in value.items() for m in conforms(v, args[1], f"{path}.{k}", wire)]
    if tp is type(None) or tp is None:
        return [] if value is None else [f"{path}: expected null, found {value!r}"]
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, tp)
    return [] if ok else [f"{path}: expected {tp.__name__}, found {value!r}"]


def assert_same_store(a: ProfileStore, b: ProfileStore) -> None:
    """Two stores hold the same profile: strings, planes and every column."""
    assert a.strings.as_list() == b.strings.as_list()
    assert (a.origin_ps, a.span_ps, a.hostnames, a.host) == (b.origin_ps, b.span_ps, b.hostnames, b.host)
    for pa, pb in zip(a.planes, b.planes, strict=True):
        assert (pa.name, pa.line_names, pa.plane_stats) == (pb.name, pb.line_names, pb.plane_stats)
        for col in ("start_ps", "dur_ps", "name_id", "depth", "line_offsets", "meta_ids"):
            assert np.array_equal(getattr(pa, col), getattr(pb, col)), col
        for col in ("owner", "stat_id", "kind", "value"):
            assert np.array_equal(getattr(pa.stats, col), getattr(pb.stats, col)), col
            assert np.array_equal(getattr(pa.meta_stats, col), getattr(pb.meta_stats, col)), col


# Three inference requests (request id, start ps, duration ps): 7 spans 0..5 us, 8 spans
# 10..12 us and 9 spans 20..29 us (two events each for 7 and 9): latencies 5, 2 and 9 us.
SERVING_REQUESTS = ((7, 0, 2_000_000), (7, 3_000_000, 2_000_000), (8, 10_000_000, 2_000_000),
                    (9, 20_000_000, 4_000_000), (9, 25_000_000, 4_000_000))
SERVING_LATENCY_MS = {7: 0.005, 8: 0.002, 9: 0.009}


def write_serving_xspace(path: Path) -> Path:
    """A small XSpace of a serving host (``SERVING_REQUESTS``), written with the protobuf API: no
    sample profile has inference request markers."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name=b"/host:CPU")
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = b"request_id"
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = b"Serving::Run"
    line = plane.lines.add(id=1, name=b"worker", timestamp_ns=0)
    for rid, start_ps, dur_ps in SERVING_REQUESTS:
        ev = line.events.add(metadata_id=1, offset_ps=start_ps, duration_ps=dur_ps)
        ev.stats.add(metadata_id=1, int64_value=rid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path
