"""``critical_path`` against HTA 0.5.0's ``critical_path_analysis``.

Goldens: ``tests/golden/hta/<profile>.critical_path.json`` (HTA with
``HTA_DISABLE_NS_ROUNDING=1``: nanoseconds, tbprof's default) and ``.critical_path_us.json``
(HTA's default rounding to whole microseconds: tbprof's ``times=us``), written by
``tests/golden/make_hta_critical_path_goldens.py`` from HTA's own output (HTA's critical path
needs pandas < 3: the script's docstring says how). For every rank and every ``ProfilerStep``
instance: the same graph size, the same path (edge by edge: type, bound, the events of its two
nodes), and the same length and breakdown.

Tolerance: HTA's times are float64 microseconds of the trace's absolute clock (~4.8e12 us in these
files: doubles 2**-10 us apart). A start is within half a spacing of the nanoseconds tbprof keeps,
an end (HTA adds ts + dur) within one, so each HTA edge weight is within two spacings of tbprof's
and a sum of n edges within 2n.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.gpu import critical_path
from tbprof.analyses.tool import OptionError
from tbprof.errors import ProfileReadError
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta"
PROFILES = ("torch_cnn", "torch_ddp", "kineto_cuda_sync", "kineto_event_sync", "kineto_cuda_graph")
# kineto_cuda_graph (its make_trace.py): a cudaGraphLaunch runs four kernels; HTA links one of them
# to the launch, which tbprof reproduces with hta_compat (its own graph has all four: see below).
HTA_COMPAT = {"kineto_cuda_graph"}


def _stores(sample_profiles: Path, profile: str) -> list[ProfileStore]:
    folder = sample_profiles / profile
    if not folder.is_dir():  # traces written from Kineto's documented fields (cuda_sync events)
        folder = Path(__file__).resolve().parent.parent / "data" / profile
    return [read_chrome_trace(p) for p in sorted(folder.glob("*.pt.trace.json"))]


@pytest.fixture(scope="module", params=PROFILES)
def case(request: pytest.FixtureRequest, sample_profiles: Path) -> tuple[list[ProfileStore], dict[str, Any]]:
    golden = json.loads((GOLDEN / f"{request.param}.critical_path.json").read_text())
    return _stores(sample_profiles, request.param), golden


@pytest.fixture(scope="module", params=PROFILES)
def case_us(request: pytest.FixtureRequest, sample_profiles: Path) -> tuple[list[ProfileStore], dict[str, Any]]:
    """HTA's default (times rounded inward to whole microseconds) against ``times=us``."""
    golden = json.loads((GOLDEN / f"{request.param}.critical_path_us.json").read_text())
    assert golden["times"] == "us"
    return _stores(sample_profiles, request.param), golden


def _spacing_us(stores: list[ProfileStore]) -> float:
    """The spacing of float64 microseconds at the latest absolute time of the profile."""
    latest_ps = max(s.origin_ps + max(int((p.start_ps + p.dur_ps).max()) for p in s.planes if p.n_events)
                    for s in stores)
    return float(np.spacing(latest_ps / 1e6))


def _rows(result: Mapping[str, Any], table: str) -> list[dict[str, Any]]:
    t = result["tables"][table]
    names = [c.name for c in t.columns]
    return [dict(zip(names, r, strict=True)) for r in t.rows()]


def test_every_instance_matches_hta(case: tuple[list[ProfileStore], dict[str, Any]]) -> None:
    stores, golden = case
    per_edge = 2 * _spacing_us(stores)
    assert per_edge <= 2.0**-8  # at most ~2 ns: the comparison still tells nanoseconds apart
    _check(stores, golden, {}, per_edge)


def test_every_instance_matches_hta_rounded(case_us: tuple[list[ProfileStore], dict[str, Any]]) -> None:
    # Whole microseconds on both sides: exact up to float64 sums of integers (tolerance ~0).
    stores, golden = case_us
    _check(stores, golden, {"times": "us"}, 1e-9)


def _check(stores: list[ProfileStore], golden: dict[str, Any], options: dict[str, Any], per_edge: float) -> None:
    checked = 0
    options = {**options, "hta_compat": golden["profile"] in HTA_COMPAT}
    for rank, instances in golden["critical_path"].items():
        listed = critical_path.compute(stores, {"rank": int(rank), **options})["instances"]
        assert [g["step"] for g in instances] == listed
        for g in instances:
            assert g["ok"] and g["step_category"] == "user_annotation"
            got = critical_path.compute(stores, {"rank": int(rank), "instance": g["instance"], **options})
            assert got["step_name"] == g["step"]
            assert (got["nodes"], got["edges"]) == (g["nodes"], g["edges"])
            path = _rows(got, "path")
            assert len(path) == len(g["path"])
            for mine, theirs in zip(path, g["path"], strict=True):
                assert (mine["type"], mine["bound_by"], mine["from_event"], mine["to_event"]) == (
                    theirs["type"], theirs["bound_by"] or "", theirs["src"], theirs["dst"])
                # HTA keeps an edge between -1 and 0 us at its negative weight; tbprof shows 0
                # there (docs/differences.md), the path and its total stay HTA's.
                assert mine["duration_us"] == pytest.approx(max(theirs["weight_us"], 0.0), abs=per_edge)
            tol = len(path) * per_edge
            assert got["total_us"] == pytest.approx(g["total_us"], abs=tol)
            breakdown = {r["bound_by"]: r["duration_us"] for r in _rows(got, "breakdown")}
            assert breakdown.keys() == g["bound_by_us"].keys()
            for bound, us in g["bound_by_us"].items():
                assert breakdown[bound] == pytest.approx(us, abs=tol)
                # HTA's summary(): the share of the path's length (part and whole each off by <= tol).
                share_tol = 100 * 2 * tol / g["total_us"]
                assert got["breakdown_percent"][bound] == pytest.approx(100 * us / g["total_us"], abs=share_tol)
            checked += 1
    assert checked >= 1


def test_cuda_graph_launch_runs_every_kernel(sample_profiles: Path) -> None:
    """tbprof's own graph of kineto_cuda_graph: every kernel of the graph launch is a node (HTA's
    graph, reproduced by hta_compat, holds the last one only). Derived from make_trace.py: per step
    one aten::mm, three runtime calls, one sgemm kernel and the graph's four kernels, 9 events ->
    18 nodes; the graph's kernels run back to back (3 us apart), so the path from the sgemm kernel
    runs through all four, each compute-bound for its own duration (50, 75, 100, 125 us)."""
    stores = _stores(sample_profiles, "kineto_cuda_graph")
    golden = json.loads((GOLDEN / "kineto_cuda_graph.critical_path.json").read_text())["critical_path"]["0"][0]
    compat = critical_path.compute(stores, critical_path.TOOLS[0].parse_options({"hta_compat": "true"}))
    own = critical_path.compute(stores, {})
    assert compat["hta_compat"] and not own["hta_compat"]
    assert compat["nodes"] == golden["nodes"] == 12
    assert own["nodes"] == 18
    path = _rows(own, "path")
    graph_kernels = [r for r in path
                     if r["type"] == "operator" and r["event"].startswith(("triton_", "ampere_sgemm_64"))]
    assert [r["duration_us"] for r in graph_kernels] == [50.0, 75.0, 100.0, 125.0]
    assert own["breakdown_percent"]["gpu_compute_bound"] > compat["breakdown_percent"]["gpu_compute_bound"]


def test_step_option_picks_the_named_step(case: tuple[list[ProfileStore], dict[str, Any]]) -> None:
    stores, golden = case
    g = golden["critical_path"]["0"][-1]
    step = int(g["step"].rsplit("#", 1)[1])
    got = critical_path.compute(stores, {"step": step})
    assert got["step_name"] == g["step"] and got["instance"] == g["instance"]
    assert got["total_us"] == pytest.approx(g["total_us"], abs=2 * len(g["path"]) * _spacing_us(stores))
    with pytest.raises(OptionError, match="step=999"):
        critical_path.compute(stores, {"step": 999})
    with pytest.raises(OptionError, match="instance=99"):
        critical_path.compute(stores, {"instance": 99})
    with pytest.raises(OptionError, match="rank=42"):
        critical_path.compute(stores, {"rank": 42})


def test_overlay_names_the_path_events(case: tuple[list[ProfileStore], dict[str, Any]]) -> None:
    stores, _ = case
    got = critical_path.compute(stores, {})
    store = stores[0]
    path = _rows(got, "path")
    events = got["overlay"]["events"]
    keys = {(e[0], e[1]) for e in events}
    # An operator edge runs inside one event (start to end, or between its children): the event
    # it is attributed to has a node on the path, so the overlay draws it.
    spans = {(r["plane"], r["row"]) for r in path if r["type"] == "operator" and r["from_event"] == r["to_event"]}
    assert spans and spans <= keys
    for plane, row, line, start_ps, dur_ps, depth in events:
        p = store.planes[plane]
        assert (int(p.line_idx[row]), int(p.start_ps[row]), int(p.dur_ps[row]), int(p.depth[row])) == (
            line, start_ps, dur_ps, depth)
    # One arrow per path edge of another type than operator (those stay inside a call stack).
    between = [r for r in path if r["type"] != "operator"]
    assert len(got["overlay"]["flows"]) <= len(between)
    for a, b, a_ps, b_ps in got["overlay"]["flows"]:
        assert 0 <= a < len(events) and 0 <= b < len(events) and a != b
        assert a_ps <= b_ps + 10**6  # forward in time (HTA counts an edge above -1 us)
    assert between


def test_a_cyclic_graph_is_an_unreadable_profile(case: tuple[list[ProfileStore], dict[str, Any]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    stores, _ = case
    real = critical_path.build_graph

    def with_cycle(store: ProfileStore, ev: Any, window: tuple[int, int],
                   hta_compat: bool = False) -> critical_path.Graph:
        g = real(store, ev, window, hta_compat)
        # The first edge, back again: a cycle of two edges.
        return critical_path.Graph(g.node_event, g.node_is_start, g.node_ps, np.append(g.src, g.dst[0]),
                                   np.append(g.dst, g.src[0]), np.append(g.weight_ps, 0),
                                   np.append(g.edge_type, 1).astype(np.int8), np.append(g.attributed, -1))

    monkeypatch.setattr(critical_path, "build_graph", with_cycle)
    with pytest.raises(ProfileReadError, match="not acyclic"):
        critical_path.compute([stores[0]], {"annotation": "ProfilerStep#"})
