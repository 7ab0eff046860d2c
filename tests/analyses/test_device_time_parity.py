"""``device_time_attribution`` against XProf 2.24.2's agent CLI ``get_device_time_attribution``.

Goldens: ``tests/golden/xprof_agent/<profile>/<host>/get_device_time_attribution.json``
(make_xprof_agent_goldens.py). XProf cuts each event's start and duration to whole nanoseconds
(``int(event.start_ns)``, ``int(event.duration_ns)``); tbprof keeps the file's picoseconds
(docs/differences.md). The GPU files' times are whole nanoseconds: they agree to 1 ns. The TPU
file's are not: each interval's two cuts move its end by under 2 ns, so the tolerance is 2 ns per
event of the line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.gpu import device_time
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "xprof_agent"
CASES = sorted((p.parent.parent.name, p.parent.name) for p in GOLDEN.glob("*/*/get_device_time_attribution.json"))
NS_US = 1e-3
SUB_NS_PROFILES = ("tpu_inference",)  # event times with picoseconds below the nanosecond


def test_goldens_cover_gpu_and_tpu() -> None:
    assert {name for name, _ in CASES} == {"jax_mlp", "jax_2hosts", "tpu_inference"}


@pytest.mark.parametrize(("profile", "host"), CASES)
def test_busy_time_per_line_and_total_equal_xprof(profile: str, host: str, sample_profiles: Path) -> None:
    want = json.loads((GOLDEN / profile / host / "get_device_time_attribution.json").read_text())
    path = next((sample_profiles / profile).rglob(f"{host}.xplane.pb"))
    result = device_time.compute([read_xspace(path)], {})
    store_host = result["hosts"][0]
    got = result["by_line_name_us"][store_host]
    lines = result["tables"]["lines"]
    events = {n: int(lines.data["events"][lines.data["line"] == n].sum()) for n in got}
    kernel_events = int(lines.data["events"][lines.data["kernel_line"]].sum())
    per_event = 2 * NS_US if profile in SUB_NS_PROFILES else 0.0
    assert sorted(got) == sorted(want["by_line_duration_ns"])
    for line, ns in want["by_line_duration_ns"].items():
        assert got[line] == pytest.approx(ns / 1000, abs=max(NS_US, per_event * events[line])), line
    assert result["total_device_time_us"][store_host] == pytest.approx(
        want["total_device_duration_us"], abs=max(NS_US, per_event * kernel_events))


def test_device_rows_add_up(sample_profiles: Path) -> None:
    path = next((sample_profiles / "jax_mlp").rglob("vm.xplane.pb"))
    result = device_time.compute([read_xspace(path)], {})
    lines, devices = result["tables"]["lines"], result["tables"]["devices"]
    for i, dev in enumerate(devices.data["device"].tolist()):
        mine = (lines.data["device"] == dev) & lines.data["kernel_line"]
        busy = lines.data["busy_us"][mine]
        assert devices.data["kernel_line_busy_sum_us"][i] == pytest.approx(float(busy.sum()))
        # A union is at least its largest part and at most the sum of its parts.
        assert float(busy.max()) <= devices.data["device_time_us"][i] <= float(busy.sum()) + NS_US
        assert (lines.data["busy_percent_of_device"][mine] <= 100 + 1e-9).all()


def test_pytorch_counts_device_work_not_annotations(sample_profiles: Path) -> None:
    """On a Kineto trace a stream's busy time is the union of its kernels, memcpys and memsets
    (the events with a ``stream`` argument), derived here from the JSON; the
    ``gpu_user_annotation`` spans on the same stream lines are left out."""
    path = next((sample_profiles / "torch_ddp").glob("rank0.*.pt.trace.json"))
    result = device_time.compute([read_chrome_trace(path)], {})
    events = json.loads(path.read_text())["traceEvents"]
    spans: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and isinstance(e.get("args", {}).get("stream"), int):
            spans.setdefault(e["args"]["stream"], []).append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    lines = result["tables"]["lines"]
    got = {int(str(n).split()[1]): b for n, b in zip(lines.data["line"].tolist(), lines.data["busy_us"].tolist(),
                                                       strict=True)}
    assert sorted(got) == sorted(spans)
    for stream, sp in spans.items():
        merged: list[list[float]] = []
        for s, e in sorted(sp):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        # Float microseconds near 4.8e12 hold about 1 ns; summed over a stream's intervals.
        assert got[stream] == pytest.approx(sum(e - s for s, e in merged), abs=0.001 * len(merged))
