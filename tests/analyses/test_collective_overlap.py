"""``collective_overlap`` against its rule, derived here from the raw events of the files.

No anchor answers per-collective overlap on GPU (HTA gives one percentage per rank, XProf's
``analyze_async_overlap`` knows only TPU's XLA async ops), so the expected numbers come from the
rule of docs/formulas.md ("Per-collective overlap"), applied with plain Python to the events as the
file has them: the Kineto JSON of torch_ddp (DDP all-reduces) and the XSpace protobuf of jax_mlp
(JAX data-parallel over NCCL, its collectives beside the next layer's kernels, as FSDP overlaps
them). Tolerance 0.002 us: Kineto's times are float microseconds with three decimals, read to
whole nanoseconds.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import collective_overlap
from tbprof.protos import xplane_pb2
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace

TOL_US = 0.002

# An event: (device, stream, name, start_us, end_us).
Event = tuple[str, int, str, float, float]


def _is_collective(name: str) -> bool:
    return name.startswith("nccl") and "Kernel" in name[4:]


def _is_compute(name: str) -> bool:
    # HTA's computation kernel: not communication, not a memory event, no Memcpy/Sync inside.
    return (not _is_collective(name) and not name.startswith(("Memcpy", "Memset", "dma"))
            and "Memcpy" not in name and "Sync" not in name)


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _expected(events: list[Event]) -> list[tuple[str, int, float, float]]:
    """(name, stream, covered_us, duration_us) of every collective, by the rule, in start order."""
    out = []
    for device, stream, name, start, end in sorted(events, key=lambda e: e[3]):
        if not _is_collective(name):
            continue
        cover = _union([(s, e) for d, st, n, s, e in events if d == device and st != stream and _is_compute(n)])
        covered = sum(max(0.0, min(end, e) - max(start, s)) for s, e in cover)
        out.append((name, stream, covered, end - start))
    return out


def _kineto_events(path: Path) -> list[Event]:
    # Decimal: the file's microseconds near 4.8e12 exactly (float64 keeps ~1 ns there, and the
    # covered time sums many spans); shifted by the first event to keep the floats small.
    trace = json.loads(path.read_text(), parse_float=Decimal)
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("args", {}).get("stream"), int)]
    origin = min(Decimal(e["ts"]) for e in xs)
    return [(str(e.get("pid")), e["args"]["stream"], e["name"], float(Decimal(e["ts"]) - origin),
             float(Decimal(e["ts"]) - origin + Decimal(e["dur"]))) for e in xs]


def _text(value: str | bytes) -> str:
    # tbprof's xplane.proto declares names as bytes (a profile's text need not be UTF-8).
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _xspace_events(path: Path) -> list[Event]:
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    out: list[Event] = []
    for plane in space.planes:
        if not _text(plane.name).startswith("/device:GPU"):
            continue
        corr = [k for k, m in plane.stat_metadata.items() if _text(m.name) == "correlation_id"]
        for line in plane.lines:
            if line.id >= 0xDEADBEEF:  # XProf's derived lines
                continue
            for ev in line.events:
                if not any(s.metadata_id in corr for s in ev.stats):
                    continue
                start_us = (line.timestamp_ns * 1000 + ev.offset_ps) / 1e6
                out.append((_text(plane.name), line.id, _text(plane.event_metadata[ev.metadata_id].name),
                            start_us, start_us + ev.duration_ps / 1e6))
    return out


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def _check(result: Any, host: str, events: list[Event]) -> int:
    want = _expected(events)
    got = sorted((r for r in _rows(result["tables"]["events"]) if r["host"] == host and r["kind"] == "collective"),
                 key=lambda r: r["start_us"])
    assert len(got) == len(want) > 0
    classes = set()
    for g, (name, stream, covered, dur) in zip(got, want, strict=True):
        assert (g["name"], g["stream"]) == (name, stream)
        assert g["duration_us"] == pytest.approx(dur, abs=TOL_US)
        assert g["covered_us"] == pytest.approx(covered, abs=TOL_US)
        assert g["exposed_us"] == pytest.approx(dur - covered, abs=TOL_US)
        assert 0 <= g["covered_percent"] <= 100
        # XProf's analyze_async_overlap thresholds on the covered fraction.
        ratio = covered / dur if dur > 0 else 0.0
        expected_class = "hidden" if ratio >= 0.9 else "exposed" if ratio <= 0.1 else "partially hidden"
        assert g["overlap"] == expected_class
        classes.add(expected_class)
    return len(classes)


def test_overlap_of_torch_ddp_follows_the_rule(sample_profiles: Path) -> None:
    paths = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))
    result = collective_overlap.compute([read_chrome_trace(p) for p in paths], {})
    assert result["ranks"] == [0, 1]
    for path in paths:
        _check(result, path.name.removesuffix(".pt.trace.json"), _kineto_events(path))
    # The headline: every collective's exposed time, summed over the ranks.
    rows = [r for r in _rows(result["tables"]["events"]) if r["kind"] == "collective"]
    assert result["collective_count"] == len(rows)
    assert result["collective_exposed_us"] == pytest.approx(sum(r["exposed_us"] for r in rows))
    # The most exposed first, and each with the ProfilerStep it ran in (DDP's all-reduces run in steps).
    exposed = [r["exposed_us"] for r in _rows(result["tables"]["events"])]
    assert exposed == sorted(exposed, reverse=True)
    assert any(r["step"] >= 0 for r in rows)


def test_overlap_of_jax_data_parallel_xspace_follows_the_rule(sample_profiles: Path) -> None:
    path = next((sample_profiles / "jax_mlp").rglob("vm.xplane.pb"))
    result = collective_overlap.compute([read_xspace(path)], {})
    _check(result, result["hosts"][0], _xspace_events(path))


def test_summary_adds_up_the_events(sample_profiles: Path) -> None:
    paths = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))
    result = collective_overlap.compute([read_chrome_trace(p) for p in paths], {})
    events = _rows(result["tables"]["events"])
    for s in _rows(result["tables"]["summary"]):
        mine = [e for e in events if (e["host"], e["device"], e["kind"]) == (s["host"], s["device"], s["kind"])]
        assert s["count"] == len(mine)
        assert s["covered_us"] == pytest.approx(sum(e["covered_us"] for e in mine))
        assert s["hidden"] + s["partially_hidden"] + s["exposed"] == len(mine)


GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "xprof_agent"


def test_tpu_async_ops_equal_xprof_analyze_async_overlap(sample_profiles: Path) -> None:
    """TPU: XProf 2.24.2's ``analyze_async_overlap`` (tests/golden/xprof_agent, written by
    make_xprof_agent_goldens.py) per device: windows, their summed span and exposed time to the
    picosecond (1 ps per window for the float microseconds), and the hidden/partial/exposed counts."""
    want = json.loads((GOLDEN / "tpu_inference" / "tpu_inference_2" / "analyze_async_overlap.json").read_text())
    path = next((sample_profiles / "tpu_inference").rglob("*.xplane.pb"))
    result = collective_overlap.compute([read_xspace(path)], {})
    rows = _rows(result["tables"]["events"])
    assert want["by_plane"]
    for plane, w in want["by_plane"].items():
        mine = [r for r in rows if r["device"] == plane]
        assert len(mine) == w["count"], plane
        assert sum(r["duration_us"] for r in mine) * 1e6 == pytest.approx(w["span_ps"], abs=len(mine))
        assert sum(r["exposed_us"] for r in mine) * 1e6 == pytest.approx(w["exposed_ps"], abs=len(mine))
        counts = {c: sum(r["overlap"] == c for r in mine) for c in ("hidden", "partially hidden", "exposed")}
        assert counts == {"hidden": w["hidden"], "partially hidden": w["partial"], "exposed": w["exposed"]}
    kinds = {r["kind"] for r in rows}
    assert kinds == set(want["by_op"])
    # The most exposed window is XProf's first: same device, name and span.
    top = want["top_exposed"][0]
    assert (rows[0]["device"], rows[0]["name"]) == (top["plane"], top["name"])
    assert rows[0]["duration_us"] * 1e6 == pytest.approx(top["span_ps"], abs=1)


def test_gpu_profiles_have_no_xla_async_windows_in_xprof(sample_profiles: Path) -> None:
    """On GPU, XProf's analyze_async_overlap finds nothing (it knows only TPU's lines), while the
    NCCL collectives are there: tbprof answers them by the GPU rule above."""
    want = json.loads((GOLDEN / "jax_mlp" / "vm" / "analyze_async_overlap.json").read_text())
    assert want["status"] == "NO_DEVICE_TIMELINE_EVENTS"
    path = next((sample_profiles / "jax_mlp").rglob("vm.xplane.pb"))
    assert collective_overlap.compute([read_xspace(path)], {})["collective_count"] > 0


@pytest.mark.parametrize("prefetch_us", [0, 250])
def test_overlap_of_an_fsdp2_run_follows_the_rule(tmp_path: Path, prefetch_us: int) -> None:
    """The FSDP2-style fixture of tests/kineto_llm.py (written from Kineto's documented fields):
    all-gathers and reduce-scatters on streams of their own, rank 1 a step behind; with
    ``prefetch_us`` each all-gather after the first starts that much earlier."""
    from tests import kineto_llm

    paths = []
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.1.pt.trace.json"
        path.write_text(json.dumps(kineto_llm.rank_trace(rank, prefetch_us=prefetch_us)))
        paths.append(path)
    result = collective_overlap.compute([read_chrome_trace(p) for p in paths], {})
    for path in paths:
        _check(result, path.name.removesuffix(".pt.trace.json"), _kineto_events(path))
    # Every all-gather and reduce-scatter of both ranks is there (4 steps each).
    rows = [r for r in _rows(result["tables"]["events"]) if r["kind"] == "collective"]
    assert len(rows) == 2 * 2 * len(kineto_llm.STEPS)
