"""``host_boundness``: XProf 2.24.2's ``check_host_boundness`` question for GPU runs.

XProf answers it from TPU counters; on a GPU it never says "host-bound" (its MXU idleness is 0:
tests/golden/xprof_agent, make_xprof_agent_goldens.py). Its idle time is the steps' time minus the
HLO ops' *summed* time per core, where ops on several streams at once count twice; tbprof's is the
time inside the steps with no device event running (docs/differences.md). So the test compares
with XProf what both count alike (the steps, their total time within XProf's rounding of the
average to 0.1 ms) and derives the busy time from the raw XSpace events.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.gpu import host_boundness
from tbprof.analyses.steps.assignment import steps_of
from tbprof.protos import xplane_pb2
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "xprof_agent"
GPU_CASES = [("jax_mlp", "vm"), ("jax_2hosts", "worker0"), ("jax_2hosts", "worker1")]


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _raw_device_spans_ps(path: Path) -> dict[str, list[tuple[int, int]]]:
    """Per GPU plane: the spans (absolute ps) of the stream events with a correlation_id."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    out: dict[str, list[tuple[int, int]]] = {}
    for plane in space.planes:
        if not _text(plane.name).startswith("/device:GPU"):
            continue
        corr = {k for k, m in plane.stat_metadata.items() if _text(m.name) == "correlation_id"}
        for line in plane.lines:
            if line.id >= 0xDEADBEEF:
                continue
            for ev in line.events:
                if any(s.metadata_id in corr for s in ev.stats):
                    start = line.timestamp_ns * 1000 + ev.offset_ps
                    out.setdefault(_text(plane.name), []).append((start, start + ev.duration_ps))
    return out


@pytest.mark.parametrize(("profile", "host"), GPU_CASES)
def test_gpu_answer_against_xprof_and_the_raw_events(profile: str, host: str, sample_profiles: Path) -> None:
    want = json.loads((GOLDEN / profile / host / "check_host_boundness.json").read_text())
    assert want["status"] == "NOT_HOST_BOUND" and want["metrics"]["mxu_idleness_percent"] == 0.0
    path = next((sample_profiles / profile).rglob(f"{host}.xplane.pb"))
    store = read_xspace(path)
    got = host_boundness.compute([store], {})
    t = got["tables"]["devices"]
    rows = [dict(zip([c.name for c in t.columns], r, strict=True)) for r in t.rows()]
    assert {r["steps"] for r in rows} == {want["metrics"]["number_of_steps"]}
    for r in rows:
        assert r["total_ms"] == pytest.approx(want["metrics"]["total_duration_ms"], abs=0.05 * r["steps"] + 0.005)
    # Busy = the union of the device's events inside the steps, from the protobuf's own times.
    steps = steps_of(store)
    origin = store.origin_ps
    for plane, spans in _raw_device_spans_ps(path).items():
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        busy = sum(max(0, min(e - origin, hi) - max(s - origin, lo)) for s, e in merged
                   for lo, hi in zip(steps.begin_ps.tolist(), steps.end_ps.tolist(), strict=True))
        row = next(r for r in rows if r["device"] == plane)
        assert row["busy_ms"] == pytest.approx(busy / 1e9, abs=1e-9)


def test_rows_add_up_and_the_verdict_follows_its_rule(sample_profiles: Path) -> None:
    paths = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))
    got = host_boundness.compute([read_chrome_trace(p) for p in paths], {})
    t = got["tables"]["devices"]
    names = [c.name for c in t.columns]
    rows = [dict(zip(names, r, strict=True)) for r in t.rows()]
    assert len(rows) == 2
    for r in rows:
        assert r["busy_ms"] + r["idle_ms"] == pytest.approx(r["total_ms"])
        assert 0 <= r["idle_time_ratio_percent"] <= 100 and 0 <= r["host_wait_share_percent"] <= 100
        assert r["host_bound"] == (r["idle_time_ratio_percent"] > 10 and r["host_wait_share_percent"] >= 50)
    mean_idle = sum(r["idle_time_ratio_percent"] for r in rows) / 2
    assert got["idle_time_ratio_percent"] == pytest.approx(mean_idle)
    assert got["status"] in ("HOST_BOUND", "NOT_HOST_BOUND") and len(got["reasons"]) == 2


def test_without_steps_the_data_is_insufficient(sample_profiles: Path) -> None:
    want = json.loads((GOLDEN / "tpu_inference" / "tpu_inference_2" / "check_host_boundness.json").read_text())
    assert want["status"] == "INSUFFICIENT_DATA"
    got = host_boundness.compute([read_xspace(next((sample_profiles / "tpu_inference").rglob("*.xplane.pb")))], {})
    assert got["status"] == "INSUFFICIENT_DATA" and got["idle_time_ratio_percent"] is None
    assert "TPU" in got["reasons"][0]  # no GPU device events: the reason says so, not "no steps"
