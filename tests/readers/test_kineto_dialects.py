"""PyTorch profiler traces as every PyTorch version and platform writes them (issue #23).

Each dialect is the real ``demo_logs/torch_cnn`` trace (PyTorch 2.11, one GPU) rewritten the
way that producer writes its fields: PyTorch 1.8's categories (``Operator``, ``Kernel``,
``Runtime``, ``Memcpy``, ``Memset``; no ``deviceProperties``), 1.9's capitalised ones, traces
without process labels, GPU-only traces, a Python thread sharing the GPU's pid 0, ROCm's HIP
memory device type, MTIA's categories and launch call, Triton kernels recorded as ``cpu_op`` with
a ``stream``, kernels without an ``External id``, ``[memory]`` events with ``Bytes`` alone.
Expected numbers are counted from the rewritten JSON here, independently of the reader.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import breakdown
from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import framework_op_stats, kernel_stats
from tbprof.analyses.overview import overview
from tbprof.analyses.steps.assignment import steps_of
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.service.logdir import discover, runs_for_path
from tbprof.store.tables import ProfileStore

Doc = dict[str, Any]
# PyTorch 1.8's names for today's categories (torch/autograd/profiler + libkineto 0.1's output).
CATEGORIES_1_8 = {"cpu_op": "Operator", "kernel": "Kernel", "cuda_runtime": "Runtime", "gpu_memcpy": "Memcpy",
                  "gpu_memset": "Memset", "cuda_driver": "Runtime", "python_function": "Python"}
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@pytest.fixture(scope="module")
def doc(sample_profiles: Path) -> Doc:
    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    loaded: Doc = json.loads(path.read_text())
    return loaded


def _write(tmp_path: Path, doc: Doc, name: str = "w.pt.trace.json") -> ProfileStore:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return read_chrome_trace(path)


def _rewrite(doc: Doc, event: Callable[[dict[str, Any]], dict[str, Any] | None], **top: Any) -> Doc:
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out.update(top)
    events = []
    for e in doc["traceEvents"]:
        got = event(copy.deepcopy(e))
        if got is not None:
            events.append(got)
    out["traceEvents"] = events
    return {k: v for k, v in out.items() if v is not None}


def _kernels(doc: Doc) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]


def _kernel_count(result: Mapping[str, Any]) -> int:
    return int(sum(result["tables"]["kernels"].data["occurrences"]))


# --- found by content --------------------------------------------------------------------------

def test_kineto_files_are_found_by_content_whatever_their_name(tmp_path: Path, doc: Doc) -> None:
    text = json.dumps(doc)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "rank-0.json.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "a" / "rank-1.json.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "trace.json").write_text(text)  # prof.export_chrome_trace("trace.json")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.trace.json.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "b" / "config.json").write_text('{"lr": 0.1, "layers": [1, 2]}')  # not a trace
    runs = discover(tmp_path)
    assert {n: (r.kind, sorted(r.hosts)) for n, r in runs.items()} == {
        "a": ("pytorch", ["rank-0", "rank-1"]), "b": ("pytorch", ["trace"]), "c": ("pytorch", ["x"])}
    # A path given directly is read the same way.
    for path, host in ((tmp_path / "a" / "rank-0.json.gz", "rank-0"), (tmp_path / "b" / "trace.json", "trace")):
        (run,) = runs_for_path(path).values()
        assert run.kind == "pytorch" and list(run.hosts) == [host]


def test_a_generic_chrome_trace_stays_one(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": "work", "cat": "app", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]
    (tmp_path / "anything.json").write_text(json.dumps({"traceEvents": events}))
    (run,) = discover(tmp_path).values()
    assert run.kind == "chrome_trace" and list(run.hosts) == ["anything"]


# --- PyTorch versions ----------------------------------------------------------------------------

def _as_1_8(doc: Doc) -> Doc:
    """1.8: capitalised categories, no deviceProperties, no process labels."""
    def event(e: dict[str, Any]) -> dict[str, Any] | None:
        if e.get("ph") == "M" and e.get("name") == "process_labels":
            return None
        if e.get("cat") in CATEGORIES_1_8:
            e["cat"] = CATEGORIES_1_8[e["cat"]]
        return e
    return _rewrite(doc, event, deviceProperties=None, distributedInfo=None)


def test_pytorch_1_8_categories(tmp_path: Path, doc: Doc) -> None:
    store = _write(tmp_path, _as_1_8(doc))
    assert store.plane("/device:GPU:0") is not None and store.plane("/host:CPU") is not None
    assert store.metadata["kineto_categories"]["Kernel"] == "kernel"
    ks = kernel_stats.compute([store], {})
    assert _kernel_count(ks) == len(_kernels(doc))
    assert all(op for op in ks["tables"]["kernels"].data["op_name"])  # every kernel found its operator
    result = overview.compute([store], {})
    assert result["run_environment"]["device_type"] == "GPU"
    assert result["run_environment"]["device_count"] == 1
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") == "user_annotation"]
    assert result["steps"]["step_count"] == len(steps)
    # Device compute is most of the device time, not "all others".
    bd = result["performance_summary"]["breakdown_ms"]
    assert (bd["device_compute_ms"]["avg"] or 0) > 0


def test_pytorch_1_9_capitalised_categories_with_device_properties(tmp_path: Path, doc: Doc) -> None:
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("cat") in ("kernel", "gpu_memcpy"):
            e["cat"] = {"kernel": "Kernel", "gpu_memcpy": "Memcpy"}[e["cat"]]
        elif e.get("cat") == "cpu_op":
            e["cat"] = "Operator"
        return e
    store = _write(tmp_path, _rewrite(doc, event))
    result = kernel_stats.compute([store], {})
    assert result["has_gpu_kernels"] and _kernel_count(result) == len(_kernels(doc))


def test_bytes_only_memory_events_accumulate(tmp_path: Path, doc: Doc) -> None:
    """1.9 wrote ``[memory]`` events with ``Bytes`` and no totals: the peak is the running sum."""
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("name") == "[memory]":
            e["args"].pop("Total Allocated", None)
            e["args"].pop("Total Reserved", None)
        return e
    rewritten = _rewrite(doc, event)
    gpu = sorted(((e["ts"], i, e["args"]["Bytes"]) for i, e in enumerate(rewritten["traceEvents"])
                  if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1
                  and e["args"].get("Device Id") == 0))
    running, peak = 0, 0
    for _, _, nbytes in gpu:
        running += nbytes
        peak = max(peak, running)
    assert peak > 0
    store = _write(tmp_path, rewritten)
    result = memory_profile.compute([store], memory_profile.TOOLS[0].parse_options({}))
    assert result["allocators"]["GPU 0"]["peak_bytes_in_use"] == peak


# --- processes -------------------------------------------------------------------------------------

def test_gpu_process_without_labels_is_found_by_its_work(tmp_path: Path, doc: Doc) -> None:
    def event(e: dict[str, Any]) -> dict[str, Any] | None:
        if e.get("ph") == "M" and e.get("name") in ("process_labels", "process_name", "process_sort_index"):
            return None
        return e
    store = _write(tmp_path, _rewrite(doc, event, deviceProperties=None))
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None and store.plane("/host:CPU") is not None
    # The device index comes from the kernels' own "device" argument.
    assert {e["args"]["device"] for e in _kernels(doc)} == {0}
    assert overview.compute([store], {})["run_environment"]["device_count"] == 1


def test_gpu_only_trace(tmp_path: Path, doc: Doc) -> None:
    def event(e: dict[str, Any]) -> dict[str, Any] | None:
        if e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function",
                            "cpu_instant_event", "fwdbwd", "ac2g") or e.get("name") == "[memory]":
            return None
        return e
    store = _write(tmp_path, _rewrite(doc, event))
    ks = kernel_stats.compute([store], {})
    assert _kernel_count(ks) == len(_kernels(doc))
    ops = framework_op_stats.compute([store], framework_op_stats.TOOLS[0].parse_options({}))
    assert ops["row_count"] > 0
    result = overview.compute([store], {})
    # Steps from the GPU annotations of the ProfilerStep markers (4 here: none dropped below 6).
    gpu_steps = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"
                 and str(e.get("name", "")).startswith("ProfilerStep#")}
    assert result["steps"]["step_count"] == len(gpu_steps) == 4
    assert result["run_environment"]["device_count"] == 1


def test_a_python_thread_sharing_the_gpus_pid(tmp_path: Path, doc: Doc) -> None:
    """A thread of pid 0 with host work beside GPU 0's streams: one device, which keeps its model."""
    extra = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 99999, "args": {"name": "python"}}]
    t0 = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X")
    extra += [{"ph": "X", "cat": "python_function", "name": f"fn{i}", "pid": 0, "tid": 99999, "ts": t0 + 10 * i,
               "dur": 5, "args": {"Python id": i}} for i in range(20)]
    rewritten = _rewrite(doc, lambda e: e)
    rewritten["traceEvents"] += extra
    store = _write(tmp_path, rewritten)
    gpus = [p for p in store.planes if p.name.startswith("/device:") and p.n_events]
    assert [p.name for p in gpus] == ["/device:GPU:0"]
    assert gpus[0].plane_stats["gpu_device_name"] == doc["deviceProperties"][0]["name"]
    assert "python" not in gpus[0].line_names
    host_threads = [p for p in store.planes if p.name.endswith("(host threads)")]
    assert len(host_threads) == 1 and host_threads[0].n_events == 20
    assert overview.compute([store], {})["run_environment"]["device_count"] == 1


def test_rocm_hip_memory_is_gpu_memory(tmp_path: Path, doc: Doc) -> None:
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1:
            e["args"]["Device Type"] = 6  # c10::DeviceType::HIP
        return e
    store = _write(tmp_path, _rewrite(doc, event))
    result = memory_profile.compute([store], memory_profile.TOOLS[0].parse_options({}))
    assert "GPU 0" in result["memory_ids"]
    assert not any("device type" in m for m in result["memory_ids"])


# --- attribution and precision ---------------------------------------------------------------------

def test_kernels_without_external_ids_find_their_operator(tmp_path: Path, doc: Doc) -> None:
    """DDP's kernels carry External ids that no operator has: the launch's correlation decides."""
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("cat") in (*DEVICE_CATS, "cuda_runtime", "cuda_driver"):
            e["args"]["External id"] = 10_000_000 + e["args"].get("External id", 0)
        return e
    store = _write(tmp_path, _rewrite(doc, event))
    ops = framework_op_stats.compute([store], framework_op_stats.TOOLS[0].parse_options({}))
    t = ops["tables"]["ops"].data
    device_types = [ty for side, ty in zip(t["host_or_device"], t["type"], strict=True) if side == "Device"]
    assert device_types and "Unknown" not in device_types


def test_precision_from_operator_input_types(tmp_path: Path, doc: Doc) -> None:
    """torch_cnn ran under bf16 autocast: its convolutions' operators have BFloat16 inputs."""
    store = _write(tmp_path, _rewrite(doc, lambda e: e))
    perf = overview.compute([store], {})["performance_summary"]
    assert perf["device_compute_precision_source"] == "operator_input_types"
    low = perf["device_compute_16bit_percent"]
    assert low is not None and low > 50.0
    # Without record_shapes (no input types) and with names that say nothing, it is unknown.
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("cat") == "cpu_op":
            e["args"].pop("Input type", None)
        if e.get("cat") == "kernel":
            e["name"] = f"kernel_{hash(e['name']) % 97}"
        return e
    store = _write(tmp_path, _rewrite(doc, event), "noshapes.pt.trace.json")
    result = overview.compute([store], {})
    perf = result["performance_summary"]
    assert perf["device_compute_precision_source"] == "unknown" and perf["device_compute_16bit_percent"] is None
    steps = result["tables"]["steps"].data
    assert sum(steps["device_compute_unknown_precision_ms"]) > sum(steps["device_compute_32bit_ms"])
    assert "bf16/fp16 ops run faster" not in result["recommendation"]["precision_statement"]


# --- HTA's dialects --------------------------------------------------------------------------------

def test_triton_kernels_recorded_as_cpu_ops_with_a_stream_are_device_work(tmp_path: Path, doc: Doc) -> None:
    """ROCm's Triton kernels: ``cpu_op`` events with a ``stream`` on the GPU process (HTA counts
    every event with a stream as device work)."""
    kernels = _kernels(doc)
    gpu_pid, stream = kernels[0]["pid"], kernels[0]["args"]["stream"]
    # In the first step (HTA drops device work from the last, incomplete one).
    t0 = min(e["ts"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") == "user_annotation")
    triton = [{"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_0", "pid": gpu_pid, "tid": stream,
               "ts": t0 + 1 + 0.002 * i, "dur": 0.001, "args": {"stream": stream, "device": 0}} for i in range(5)]
    base = _write(tmp_path, _rewrite(doc, lambda e: e))
    rewritten = _rewrite(doc, lambda e: e)
    rewritten["traceEvents"] += triton
    store = _write(tmp_path, rewritten, "triton.pt.trace.json")
    assert _device_events(store) == _device_events(base) + len(triton)


def _device_events(store: ProfileStore) -> int:
    from tbprof.analyses.gpu.activity import device_activity
    return device_activity(store).n


def test_mtia_trace(tmp_path: Path, doc: Doc) -> None:
    """MTIA writes ``mtia_runtime`` launches (``runFunction - job_prep_and_submit_for_execution``)
    and ``mtia_ccp_events`` device work."""
    def event(e: dict[str, Any]) -> dict[str, Any]:
        if e.get("cat") == "cuda_runtime":
            e["cat"] = "mtia_runtime"
            if e["name"] == "cudaLaunchKernel":
                e["name"] = "runFunction - job_prep_and_submit_for_execution"
        elif e.get("cat") == "kernel":
            e["cat"] = "mtia_ccp_events"
        return e
    store = _write(tmp_path, _rewrite(doc, event))
    assert store.plane("/device:GPU:0") is not None
    cuda = _write(tmp_path, _rewrite(doc, lambda e: e), "cuda.pt.trace.json")
    opts = breakdown.TOOLS[0].parse_options({})
    mtia_rows = breakdown.compute([store], opts)["tables"]["kernel_launches"].n_rows
    # The same launches as the CUDA trace it was written from (kernels and memsets alike).
    assert mtia_rows == breakdown.compute([cuda], opts)["tables"]["kernel_launches"].n_rows
    assert mtia_rows > sum(1 for e in doc["traceEvents"] if e.get("name") == "cudaMemsetAsync")


def test_steps_of_a_trace_without_profiler_steps(tmp_path: Path, doc: Doc) -> None:
    store = _write(tmp_path, _rewrite(doc, lambda e: None if str(e.get("name", "")).startswith("ProfilerStep#")
                                      else e))
    steps = steps_of(store)
    assert steps.n_steps == 0 and "ProfilerStep" in steps.diagnosis
    result = overview.compute([store], {})
    assert result["steps"]["step_count"] == 0


# --- a run lists exactly the tools that answer -----------------------------------------------------

def test_every_listed_tool_answers_on_every_dialect(tmp_path: Path, doc: Doc) -> None:
    from werkzeug.test import Client

    from tbprof.analyses.results.common import ToolEnvelope
    from tbprof.http.app import create_app
    from tbprof.service.tools import result_types
    from tests.helpers import conforms

    variants = {
        "v1_8": _as_1_8(doc),
        "gpu_only": _rewrite(doc, lambda e: None if e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime",
                                                                     "cuda_driver") else e),
        "no_steps": _rewrite(doc, lambda e: None if str(e.get("name", "")).startswith("ProfilerStep#") else e),
    }
    for name, variant in variants.items():
        (tmp_path / "logs" / name).mkdir(parents=True)
        (tmp_path / "logs" / name / "rank-0.json").write_text(json.dumps(variant))
    client = Client(create_app(tmp_path / "logs", cache_dir=tmp_path / "cache"))
    runs = client.get("/runs").get_json()["runs"]
    assert sorted(r["run"] for r in runs) == sorted(variants)
    for run in runs:
        tools = [t["name"] for t in client.get("/tools", query_string={"run": run["run"]}).get_json()["tools"]]
        # Every accelerator trace gets the accelerator pages, steps or not. (HTA drops a GPU-only
        # trace's kernels: no launch of theirs is in it, so gpu_breakdown has nothing to show.)
        assert {"overview_page", "kernel_stats", "framework_op_stats"} <= set(tools), run["run"]
        assert ("gpu_breakdown" in tools) == (run["run"] != "gpu_only")
        for tool in tools:
            r = client.get("/data", query_string={"run": run["run"], "host": "rank-0", "tool": tool, "rows": "3"})
            assert r.status_code == 200, (run["run"], tool, r.get_data(as_text=True)[:200])
            assert conforms(r.get_json(), result_types().get(tool, ToolEnvelope)) == [], (run["run"], tool)
        overview_steps = client.get("/data", query_string={"run": run["run"], "host": "rank-0",
                                                           "tool": "overview_page"}).get_json()["steps"]
        assert (overview_steps["step_count"] == 0) == (run["run"] == "no_steps")  # GPU-only: GPU annotations
