"""A real ``torch.compile`` trace (tests/data/torch_compile): Inductor's Triton launchers are host
operators carrying a ``stream`` argument; they make no device, and the headline is the GPU's own.

Expected values are read from the trace's JSON here, not from tbprof's output.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import breakdown
from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

TRACE = Path(__file__).resolve().parent.parent / "data" / "torch_compile" / "torch_compile.pt.trace.json.gz"


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    with gzip.open(TRACE, "rt") as f:
        return list(json.load(f)["traceEvents"])


@pytest.fixture(scope="module")
def store() -> ProfileStore:
    return read_chrome_trace(TRACE)


def test_the_trace_has_triton_launchers_with_a_stream(events: list[dict[str, Any]]) -> None:
    launchers = [e for e in events if e.get("cat") == "cpu_op" and "stream" in (e.get("args") or {})]
    assert len(launchers) > 100  # the case this file is here for
    assert all(e["name"].startswith("triton_") for e in launchers)


def test_one_gpu_and_the_headline_is_its_own(store: ProfileStore, events: list[dict[str, Any]]) -> None:
    gpu_pids = {e["pid"] for e in events if e.get("cat") == "kernel"}
    assert len(gpu_pids) == 1
    result = breakdown.compute([store], breakdown.TOOLS[0].parse_options({}))
    temporal = result["tables"]["temporal_breakdown"].data
    assert temporal["device"].tolist() == ["/device:GPU:0"]
    assert result["device_idle_percent"] == pytest.approx(float(temporal["idle_time_percent"][0]))
    assert overview.run_environment([store])["device_count"] == 1


def test_every_kernel_counted_once(store: ProfileStore, events: list[dict[str, Any]]) -> None:
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ks = kernel_stats.compute([store], {})
    assert ks["kernel_event_count"] == len(kernels)
