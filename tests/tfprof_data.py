"""Shared helpers for the tfprof tests: the real profile and TensorFlow's golden answers."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from tbprof.analyses.tfprof.tfprof_engine import METRICS, ViewOptions, ViewResult
from tbprof.readers.tfprof import read_tfprof
from tbprof.store.tfprof import TfprofProfile
from tests.conftest import SAMPLE_PROFILES

GOLDEN = Path(__file__).resolve().parent / "golden" / "tf1_timeline"
PROFILE_PB = SAMPLE_PROFILES / "tf1_timeline" / "profile.pb"


@cache
def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / name).read_text())


@cache
def profile() -> TfprofProfile:
    return read_tfprof(PROFILE_PB)


def options(overrides: dict[str, Any]) -> ViewOptions:
    """ViewOptions from the golden generator's base options plus a case's overrides."""
    merged: dict[str, Any] = dict(golden("tfprof_views.json")["base_options"], **overrides)
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in merged.items()}
    return ViewOptions(**fields)


def rows_as_golden(result: ViewResult) -> list[dict[str, Any]]:
    """Our rows under the field names of TensorFlow's GraphNodeProto / MultiGraphNodeProto."""
    out = []
    for row in result.rows:
        values: dict[str, Any] = {"name": row.name, "depth": row.depth, "graph_nodes": row.node_count}
        for i, m in enumerate(METRICS):
            if m != "definition_count":
                values[m] = row.self_stats[i]
            values[f"total_{m}"] = row.total_stats[i]
        out.append(values)
    return out


# --- crafted ProfileProto files (issue #25): the fewest bytes per name scope / frame ------------


def deep_scope_pb(size_bytes: int) -> bytes:
    """One graph node named ``a/a/.../a`` of ``size_bytes``: a name scope per 2 bytes."""
    from tbprof.protos import tfprof_log_pb2

    p = tfprof_log_pb2.ProfileProto()
    node = p.nodes[1]
    node.name, node.op, node.id = ("a/" * (size_bytes // 2))[:-1].encode(), b"Const", 1
    return p.SerializeToString()


def long_file_pb(file_name_bytes: int, frames: int) -> bytes:
    """One graph node whose call stack has ``frames`` frames, all in one file whose name has
    ``file_name_bytes`` characters (each frame another line: another call site)."""
    from tbprof.protos import tfprof_log_pb2

    p = tfprof_log_pb2.ProfileProto(has_trace=True)
    p.id_to_string[1] = b"f" * file_name_bytes + b".py"
    p.id_to_string[2] = b"fn"
    node = p.nodes[1]
    node.name, node.op, node.id = b"x", b"Const", 1
    for i in range(frames):
        node.trace.traces.add(file_id=1, lineno=i + 1, function_id=2)
    return p.SerializeToString()
