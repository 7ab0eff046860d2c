"""Timeline and pprof exports of tfprof views against the files TensorFlow's tfprof writes."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from tbprof.analyses.tfprof import tfprof_export
from tbprof.analyses.tfprof.tfprof_engine import METRICS, show_view
from tbprof.protos import pprof_profile_pb2
from tests.tfprof_data import golden, options, profile


@pytest.mark.parametrize("view", ["graph", "scope", "code"])
def test_timeline_equals_tensorflow(view: str) -> None:
    g = golden(f"tfprof_timeline_{view}.json")
    result = show_view(profile(), view, options(g["options"]))
    assert tfprof_export.timeline_trace(profile(), result)["traceEvents"] == g["trace"]["traceEvents"]


def test_graph_timeline_equals_shared_tfprof_timeline(sample_profiles: Path) -> None:
    """tfprof_timeline.json_3 was written with ProfileOptionBuilder.time_and_memory() at step 3."""
    shared = json.loads((sample_profiles / "tf1_timeline" / "tfprof_timeline.json_3").read_text())
    opts = options({"step": 3, "min_bytes": 1, "min_micros": 1, "order_by": "micros",
                    "account_displayed_op_only": True})
    result = show_view(profile(), "graph", opts)
    assert tfprof_export.timeline_trace(profile(), result)["traceEvents"] == shared["traceEvents"]


def test_scope_timeline_widths_add_up() -> None:
    result = show_view(profile(), "scope", options({}))
    events = [e for e in tfprof_export.timeline_trace(profile(), result)["traceEvents"] if e["ph"] == "X"]
    root = events[0]
    assert root["name"] == "_TFProfRoot" and root["dur"] == result.root.total_stats[METRICS.index("exec_micros")]
    top = [e for e in events if e["pid"] == 1]
    # Top-level scopes sit side by side from 0 and fill the root exactly (no self time at the root).
    assert top[0]["ts"] == 0
    assert all(a["ts"] + a["dur"] == b["ts"] for a, b in itertools.pairwise(top))
    assert sum(e["dur"] for e in top) == root["dur"]


def _decode(data: bytes) -> tuple[pprof_profile_pb2.Profile, list[str]]:
    prof = pprof_profile_pb2.Profile.FromString(gzip.decompress(data))
    return prof, list(prof.string_table)


def test_code_pprof_equals_tensorflow() -> None:
    g = golden("tfprof_pprof_code.json")
    result = show_view(profile(), "code", options(g["options"]))
    prof, strings = _decode(tfprof_export.pprof_gz(profile(), result, "micros"))
    assert strings[0] == ""
    assert [[strings[t.type], strings[t.unit]] for t in prof.sample_type] == g["sample_types"]
    functions = {f.id: strings[f.name] for f in prof.function}
    locations = {loc.id: functions[loc.line[0].function_id] for loc in prof.location}
    samples = [{"graph_node": next(strings[lb.str] for lb in s.label if strings[lb.key] == "graph node:"),
                "values": list(s.value), "stack": [locations[i] for i in s.location_id]} for s in prof.sample]
    assert samples == g["samples"]


def test_scope_pprof_samples_sum_to_the_root_total() -> None:
    """tbprof's extension: scope view as pprof, one sample per displayed node's own value."""
    result = show_view(profile(), "scope", options({}))
    prof, strings = _decode(tfprof_export.pprof_gz(profile(), result, "bytes"))
    assert sum(s.value[1] for s in prof.sample) == result.root.total_stats[METRICS.index("requested_bytes")]
    assert [strings[t.unit] for t in prof.sample_type] == ["count", "bytes"]
    # A sample's stack is its scope path, leaf first.
    functions = {f.id: strings[f.name] for f in prof.function}
    locations = {loc.id: functions[loc.line[0].function_id] for loc in prof.location}
    relu = next(s for s in prof.sample if strings[s.label[0].str] == "mlp/Relu")
    assert [locations[i] for i in relu.location_id] == ["mlp/Relu", "mlp"]


@pytest.mark.parametrize("view,overrides,match", [
    ("op", {}, "no timeline"),
    ("graph", {}, "one step"),
])
def test_timeline_refusals(view: str, overrides: dict[str, int], match: str) -> None:
    result = show_view(profile(), view, options(overrides))
    with pytest.raises(tfprof_export.ExportError, match=match):
        tfprof_export.timeline_trace(profile(), result)


def test_unknown_pprof_metric() -> None:
    result = show_view(profile(), "code", options({}))
    with pytest.raises(tfprof_export.ExportError, match="pprof metric"):
        tfprof_export.pprof_gz(profile(), result, "tensor_value")
