"""Every tool's declared result type (its ``Tool.result``, the return type of its ``compute`` that
mypy checks the producer against) holds for its real answer on every sample
profile: as ``compute`` returns it and as JSON. A key renamed, dropped or retyped on one side
fails here, not as an empty card on a page."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, NoReturn, get_type_hints

import pytest

from tbprof.analyses.encode import to_json_bytes
from tbprof.service.api import Profile
from tbprof.service.profiles import Profiles
from tbprof.service.tools import all_tools, result_types
from tests.conftest import REPO, SAMPLE_PROFILES
from tests.helpers import conforms, write_serving_xspace

TOOL_RESULTS = result_types()
# XProf's TPU counter tools: tbprof has no decoder for their data, so they only ever answer "no data".
NO_RESULT_TOOLS = ("megascale_stats", "perf_counters", "utilization_viewer", "kernel_utilization")


def test_every_tool_once_with_its_compute_return_type() -> None:
    names = [t.name for t in all_tools()]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted([*TOOL_RESULTS, *NO_RESULT_TOOLS])
    assert list(TOOL_RESULTS) == [n for n in names if n in TOOL_RESULTS]  # the menu order
    for tool in all_tools():
        declared = get_type_hints(tool.compute)["return"]
        assert declared is (NoReturn if tool.result is None else tool.result), tool.name


# Options that take a tool down another branch (keys its type marks NotRequired, other nodes).
VARIANTS: dict[str, list[dict[str, str]]] = {
    "framework_op_stats": [{"include_idle": "true"}],
    "memory_profile": [{"breakdown_scope": "window", "max_points": "10"}],
    "pod_viewer": [{"step": "0"}],
    "op_profile": [{"side": "host"}, {"order_by": "time_wasted", "top_percent": "90", "include_idle": "false"}],
    "graph_viewer": [{"format": "dot"}],
    "operators_by_shape": [{"group_by": "operator"}],
    "tfprof_views": [{"view": "op"}, {"view": "code"}, {"view": "graph"}],
}


def _results(roots: list[Path], cache_dir: Path) -> list[tuple[str, str, Any]]:
    """(run, tool, result) for every tool each run lists, on all hosts for multi-host tools, with
    its default options and each of its VARIANTS."""
    out = []
    for root in roots:
        profiles = Profiles(root, cache_dir=cache_dir)
        for run in profiles.index.runs().values():
            profile = Profile(profiles, run)
            for name in profile.tools():
                for options in [{}, *VARIANTS.get(name, [])]:
                    out.append((f"{root.name}/{run.name} {options}", name, profile.tool(name, **options)))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, Any]]:
    # The sample profiles, the PyTorch traces of tests/data (module hierarchy: module_view) and a
    # serving host's request markers (inference_profile; no sample profile has them).
    serving = tmp_path_factory.mktemp("serving")
    write_serving_xspace(serving / "serve" / "plugins" / "profile" / "s1" / "host0.xplane.pb")
    roots = [SAMPLE_PROFILES, REPO / "tests" / "data", serving]
    return _results(roots, tmp_path_factory.mktemp("cache"))


def test_every_tool_returns_its_type_on_every_sample_profile(results: list[tuple[str, str, Any]]) -> None:
    checked = set()
    for run, name, result in results:
        tp = TOOL_RESULTS[name]
        assert conforms(result, tp, wire=False) == [], (run, name)
        assert conforms(json.loads(to_json_bytes(result)), tp) == [], (run, name)
        checked.add(name)
    assert checked == set(TOOL_RESULTS)  # every typed tool ran on a real profile


def test_a_drifted_answer_fails_the_check(results: list[tuple[str, str, Any]]) -> None:
    """The check is not vacuous: a renamed key and a retyped value of a real answer are caught."""
    name, result = next((n, r) for _, n, r in results if n == "kernel_stats")
    renamed = copy.copy(result)
    renamed["total_time_us"] = renamed.pop("total_duration_us")
    assert conforms(renamed, TOOL_RESULTS[name], wire=False) == ["$.total_duration_us: missing"]
    retyped = json.loads(to_json_bytes(result))
    retyped["pie_by_kernel"] = [{"name": 3, "total_duration_us": 1.0}]
    assert conforms(retyped, TOOL_RESULTS[name]) == ["$.pie_by_kernel[0].name: expected str, found 3"]


def test_tfprof_views_answers_every_view_option() -> None:
    """``options`` of a tfprof view lists each of tfprof's options (tfprof_views._options_json
    names them one by one, so an option added to ViewOptions must be added to the type too)."""
    from dataclasses import fields

    from tbprof.analyses.results.tf1_tfprof import TfprofViewOptions
    from tbprof.analyses.tfprof.tfprof_engine import ViewOptions

    assert list(get_type_hints(TfprofViewOptions)) == [f.name for f in fields(ViewOptions)]
