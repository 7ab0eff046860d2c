"""TF1 timeline, tfprof and PyTorch runs through the HTTP app: discovery, tools, CSV, exports, bad files."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.protos import pprof_profile_pb2
from tests.tfprof_data import golden

API = "/data/plugin/tbprof/"
TIMELINE_RUN = "experiments/estimator/tf1_timeline"
TFPROF_RUN = f"{TIMELINE_RUN} (tfprof)"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Path:
    root = tmp_path_factory.mktemp("legacy_logdir")
    shutil.copytree(sample_profiles / "tf1_timeline", root / "experiments" / "estimator" / "tf1_timeline")
    shutil.copytree(sample_profiles / "torch_cnn", root / "torch" / "torch_cnn")
    broken = root / "broken_tfprof"
    broken.mkdir()
    data = (sample_profiles / "tf1_timeline" / "profile.pb").read_bytes()
    (broken / "profile.pb").write_bytes(data[: len(data) // 3])
    steps = root / "broken_steps"
    steps.mkdir()
    good = (sample_profiles / "tf1_timeline" / "timeline-0.json").read_text()
    (steps / "timeline-0.json").write_text(good)
    (steps / "timeline-1.json").write_text(good[: len(good) // 2])  # truncated JSON
    (steps / "timeline-2.json").write_text('{"name": "not a trace"}')
    (steps / "timeline-3.json").write_text('{"traceEvents": []}')  # an empty timeline
    return root


@pytest.fixture(scope="module")
def client(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    return Client(create_app(logdir, cache_dir=tmp_path_factory.mktemp("legacy_cache")))


def _get(client: Client, route: str, **args: Any) -> Any:
    return client.get(API + route, query_string=args)


def test_runs_show_each_kind_wherever_it_sits(client: Client) -> None:
    runs = {r["run"]: r for r in _get(client, "runs").get_json()["runs"]}
    assert {name: r["kind"] for name, r in runs.items()} == {
        TIMELINE_RUN: "tf1_timeline",
        TFPROF_RUN: "tfprof",
        f"{TIMELINE_RUN} (tfprof_timeline)": "tfprof_timeline",
        "torch/torch_cnn": "pytorch",
        "broken_tfprof": "tfprof",
        "broken_steps": "tf1_timeline",
    }
    assert runs[TIMELINE_RUN]["hosts"] == [f"timeline-{s}" for s in range(6)]
    assert runs[TFPROF_RUN]["hosts"] == ["profile.pb"]
    tools = {r["run"]: set(r["tools"]) for r in _get(client, "runs").get_json()["runs"]}
    assert {"tfprof_views", "tfprof_advice"} <= tools[TFPROF_RUN]
    assert {"tf1_steps", "tf1_op_stats", "tf1_memory", "trace_viewer"} <= tools[TIMELINE_RUN]
    # PyTorch runs get XProf's pages under XProf's ids (the old ids are aliases, not listed).
    assert {"overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "pod_viewer",
            "trace_viewer", "gpu_breakdown"} <= tools["torch/torch_cnn"]
    assert not {"pytorch_kernel_stats", "pytorch_op_stats"} & tools["torch/torch_cnn"]
    # TF1 timelines: the overview (a step per file) and framework op stats, nothing PyTorch-only;
    # nothing TF1-only on a PyTorch run.
    assert {"overview_page", "framework_op_stats", "memory_profile"} <= tools[TIMELINE_RUN]
    assert not {"kernel_stats", "gpu_breakdown", "pod_viewer"} & tools[TIMELINE_RUN]
    assert not {"tf1_steps", "tf1_op_stats", "tf1_memory"} & tools["torch/torch_cnn"]


def test_tfprof_views_data_with_options(client: Client) -> None:
    r = _get(client, "data", run=TFPROF_RUN, tool="tfprof_views", view="scope", max_depth="2")
    assert r.status_code == 200
    body = r.get_json()
    table = body["tables"]["nodes"]
    names = [row[0] for row in table["rows"]]
    case = next(c for c in golden("tfprof_views.json")["cases"] if c["id"] == "scope_max_depth_2")
    assert names == [row[0] for row in case["rows"]]
    assert body["options"]["max_depth"] == 2 and body["view"] == "scope"
    # The generic table filter narrows rows (the tree's own regexes are options, see next test).
    r = _get(client, "data", run=TFPROF_RUN, tool="tfprof_views", view="scope", **{"filter.name": "^mlp"})
    assert all(row[0].startswith("mlp") for row in r.get_json()["tables"]["nodes"]["rows"])


def test_tfprof_views_csv(client: Client) -> None:
    args = {"run": TFPROF_RUN, "tool": "tfprof_views", "view": "op", "order_by": "micros",
            "show_name_regexes": "Mat.*,Relu"}
    data = _get(client, "data", **args).get_json()["tables"]["nodes"]
    r = _get(client, "csv", **args)
    assert r.status_code == 200 and r.mimetype == "text/csv"
    rows = list(csv.reader(io.StringIO(r.get_data(as_text=True))))
    assert rows[0] == [c["name"] for c in data["columns"]]
    assert [row[0] for row in rows[1:]] == ["_TFProfRoot", "Relu", "MatMul"]
    assert len(rows) - 1 == data["total_rows"]


def test_tfprof_timeline_export_equals_tensorflow(client: Client) -> None:
    r = _get(client, "tfprof_export", run=TFPROF_RUN, format="timeline", view="graph", step="3")
    assert r.status_code == 200
    assert "attachment" in r.headers["Content-Disposition"]
    want = golden("tfprof_timeline_graph.json")["trace"]["traceEvents"]
    assert json.loads(r.get_data())["traceEvents"] == want


def test_tfprof_pprof_export(client: Client) -> None:
    r = _get(client, "tfprof_export", run=TFPROF_RUN, format="pprof", view="code", metric="micros")
    assert r.status_code == 200 and r.headers["Content-Disposition"].endswith('.pb.gz"')
    prof = pprof_profile_pb2.Profile.FromString(gzip.decompress(r.get_data()))
    assert len(prof.sample) == len(golden("tfprof_pprof_code.json")["samples"])


@pytest.mark.parametrize("args,status,match", [
    ({"run": TFPROF_RUN, "format": "svg"}, 400, "format"),
    ({"run": TFPROF_RUN, "format": "timeline", "view": "op"}, 400, "no timeline"),
    ({"run": TFPROF_RUN, "format": "timeline", "view": "graph"}, 400, "one step"),
    ({"run": TFPROF_RUN, "format": "pprof", "metric": "colour"}, 400, "pprof metric"),
    ({"run": TFPROF_RUN, "format": "timeline", "step": "99"}, 400, "step=99"),
    ({"run": TIMELINE_RUN, "format": "timeline"}, 400, "tfprof ProfileProto runs"),
    ({"run": "nope"}, 404, "unknown run"),
])
def test_export_errors(client: Client, args: dict[str, str], status: int, match: str) -> None:
    r = _get(client, "tfprof_export", **args)
    assert r.status_code == status
    assert match in r.get_json()["error"]


def test_bad_tfprof_option_is_400(client: Client) -> None:
    r = _get(client, "data", run=TFPROF_RUN, tool="tfprof_views", order_by="depth")
    assert r.status_code == 400 and "order_by" in r.get_json()["error"]


def test_broken_tfprof_file_is_422_and_others_keep_working(client: Client) -> None:
    r = _get(client, "data", run="broken_tfprof", tool="tfprof_views")
    assert r.status_code == 422
    body = r.get_json()
    assert body["file"].endswith("broken_tfprof/profile.pb") and "truncated" in body["reason"]
    assert _get(client, "data", run=TFPROF_RUN, tool="tfprof_advice").status_code == 200
    assert _get(client, "runs").status_code == 200


@pytest.mark.parametrize("host,reason", [
    ("timeline-1", "not valid JSON"),
    ("timeline-2", "not a Chrome trace"),
])
def test_broken_step_file_is_422(client: Client, host: str, reason: str) -> None:
    r = _get(client, "data", run="broken_steps", host=host, tool="tf1_steps")
    assert r.status_code == 422
    assert reason in r.get_json()["reason"]


def test_all_steps_skip_broken_files_and_name_the_empty_one(client: Client) -> None:
    r = _get(client, "data", run="broken_steps", host="__all__", tool="tf1_steps")
    assert r.status_code == 200
    body = r.get_json()
    assert sorted(e["host"] for e in body["host_errors"]) == ["timeline-1", "timeline-2"]
    assert body["empty_files"] == ["timeline-3"] and "empty timeline" in body["message"]
    steps = body["tables"]["steps"]["rows"]
    assert [row[0] for row in steps] == [0, 3]
    # The good step's numbers are those of the same file in the complete run.
    full = _get(client, "data", run=TIMELINE_RUN, host="timeline-0", tool="tf1_steps").get_json()
    assert steps[0][2] == full["tables"]["steps"]["rows"][0][2]


def test_timeline_and_pytorch_tools(client: Client, sample_profiles: Path) -> None:
    r = _get(client, "data", run=TIMELINE_RUN, host="__all__", tool="tf1_op_stats")
    assert r.status_code == 200 and r.get_json()["steps"] == list(range(6))
    r = _get(client, "data", run=TIMELINE_RUN, host="timeline-4", tool="trace_viewer")
    assert r.status_code == 200 and r.get_json()["event_count"] > 0
    r = _get(client, "data", run="torch/torch_cnn", tool="pytorch_kernel_stats")
    trace = json.loads(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")).read_text())
    kernels = sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel")  # counted apart from tbprof
    assert r.status_code == 200 and r.get_json()["kernel_event_count"] == kernels > 0
    # The old id still answers (an alias of framework_op_stats for one release).
    r = _get(client, "csv", run="torch/torch_cnn", tool="pytorch_op_stats")
    assert r.status_code == 200 and r.get_data(as_text=True).startswith("rank,host_or_device,")


def test_summary_of_legacy_runs(logdir: Path, tmp_path: Path) -> None:
    from tbprof.service.profiles import Profiles
    from tbprof.service.summary import summary

    profiles = Profiles(logdir, cache_dir=tmp_path / "cache")
    tfprof = summary(profiles, profiles.run(TFPROF_RUN))
    views = golden("tfprof_views.json")
    graph = next(c for c in views["cases"] if c["id"] == "graph_default")
    root = dict(zip(graph["fields"], graph["rows"][0], strict=True))
    assert tfprof["tfprof_nodes"] == len(graph["rows"]) - 1
    assert tfprof["tfprof_steps"] == 6
    # TensorFlow's root total: the sum of each node's mean time over the steps.
    assert tfprof["tfprof_exec_us_per_step"] == root["total_exec_micros"]
    timeline = summary(profiles, profiles.run(TIMELINE_RUN))
    assert timeline["host_count"] == 6 and "tfprof_nodes" not in timeline
