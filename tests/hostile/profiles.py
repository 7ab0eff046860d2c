"""Hostile profiles made from real ones: a demo profile with some of its names rewritten.

Only names change (the XSpace's event metadata and plane names, a Chrome trace's process,
thread and event names); every time, count and stat stays as the profiler wrote it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tbprof.protos import hlo_pb2, xplane_pb2
from tests.conftest import SAMPLE_PROFILES

CUSTOM_LOOP_SESSION = "custom_loop/plugins/profile/2026_11_26_00_33_59"
# A TensorFlow op of custom_loop's host plane ("scope/scope/name:Type").
TF_OP = b"sequential_2_1/dense_5_1/Cast/ReadVariableOp:ReadVariableOp"


def rewrite_xspace(src: Path, dst: Path, rename: Callable[[bytes, str], bytes]) -> None:
    """``src`` with each event-metadata name and plane name replaced by ``rename(name, what)``
    (``what``: "plane" or "event")."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(src.read_bytes())
    for plane in space.planes:
        plane.name = rename(plane.name, "plane")
        for meta in plane.event_metadata.values():
            meta.name = rename(meta.name, "event")
            if meta.display_name:
                meta.display_name = rename(meta.display_name, "event")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(space.SerializeToString())


def deep_scope_run(logdir: Path, levels: int = 5000) -> str:
    """custom_loop with one TensorFlow op nested ``levels`` name scopes deep; returns its run dir."""
    session = SAMPLE_PROFILES / CUSTOM_LOOP_SESSION
    out = logdir / "deep_scope" / "plugins" / "profile" / session.name
    deep = b"s/" * levels + TF_OP

    def rename(name: bytes, what: str) -> bytes:
        return deep if name == TF_OP else name

    rewrite_xspace(session / "vm.xplane.pb", out / "vm.xplane.pb", rename)
    return "deep_scope"


def copy_runs(logdir: Path, *names: str) -> None:
    for name in names:
        shutil.copytree(SAMPLE_PROFILES / name, logdir / name)


def rename_chrome_trace(src: Path, dst: Path, rename: Callable[[str, str], str]) -> None:
    """A Chrome trace (PyTorch/Kineto) with process, thread and event names rewritten."""
    trace = json.loads(src.read_text())
    for ev in trace["traceEvents"] if isinstance(trace, dict) else trace:
        if ev.get("ph") == "M" and isinstance(ev.get("args"), dict) and isinstance(ev["args"].get("name"), str):
            ev["args"]["name"] = rename(ev["args"]["name"], ev.get("name", "M"))
        elif isinstance(ev.get("name"), str):
            ev["name"] = rename(ev["name"], "event")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(trace))


HLO_PROTO_STAT = b"Hlo Proto"


def payload_xspace(src: Path, dst: Path, payload: bytes, iterator_payload: bytes) -> None:
    """``src`` with profile text replaced by markup payloads where the pages show it: every
    event name (prefixed: "scope/op:Type" keeps its shape), every device plane's name and every
    HLO op name (suffixed: planes are recognised by their prefix), tf.data iterator names
    (suffixed: "Iterator::..." is how iterators are recognised). HLO op names change in the HLO
    protos of ``/host:metadata`` and in the device events' ``hlo_op`` references alike, so
    events still find their ops."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(src.read_bytes())
    hlo_names: set[bytes] = set()
    for plane in space.planes:
        proto_ids = {k for k, m in plane.stat_metadata.items() if m.name == HLO_PROTO_STAT}
        for meta in plane.event_metadata.values():
            for stat in meta.stats:
                if stat.metadata_id in proto_ids and stat.bytes_value:
                    module = hlo_pb2.HloProto()
                    module.ParseFromString(stat.bytes_value)
                    for comp in module.hlo_module.computations:
                        for instr in comp.instructions:
                            hlo_names.add(instr.name)  # bytes: our protos keep names undecoded
                            instr.name = instr.name + payload
                    stat.bytes_value = module.SerializeToString()
    for plane in space.planes:
        if plane.name.startswith(b"/device:"):
            plane.name = plane.name + payload
        for stat_meta in plane.stat_metadata.values():
            if stat_meta.name in hlo_names:  # hlo_op values are references to these names
                stat_meta.name = stat_meta.name + payload
        for meta in plane.event_metadata.values():
            if meta.name.startswith(b"Iterator::"):
                meta.name = meta.name + iterator_payload
            elif plane.name != b"/host:metadata":  # program names there are "name(id)"
                meta.name = payload + meta.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(space.SerializeToString())


JAX_MLP_SESSION = "jax_mlp/plugins/profile/2026_11_26_00_32_23"


def one_name_gpu_xspace(dst: Path, name: bytes) -> None:
    """jax_mlp's XSpace with every GPU event named ``name``: each GPU plane's events point to
    one event metadata that carries it (times, correlations and stats as the profiler wrote them),
    so a name of megabytes is in the file once per plane and on a thousand events."""
    space = xplane_pb2.XSpace()
    space.ParseFromString((SAMPLE_PROFILES / JAX_MLP_SESSION / "vm.xplane.pb").read_bytes())
    for plane in space.planes:
        if not plane.name.startswith(b"/device:GPU:"):
            continue
        used = {e.metadata_id for line in plane.lines for e in line.events}
        keep = min(used)
        plane.event_metadata[keep].name = name
        plane.event_metadata[keep].display_name = b""
        for line in plane.lines:
            for e in line.events:
                e.metadata_id = keep
        for mid in used - {keep}:
            del plane.event_metadata[mid]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(space.SerializeToString())
