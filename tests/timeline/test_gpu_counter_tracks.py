"""HTA's counters as trace-viewer counter tracks (``generate_trace_with_counters``): each GPU of a
Kineto or CUPTI profile gets "CUDA queue length" (a series per stream) and "Memory bandwidth"
(GiB/s, a series per copy type). Expected values come from HTA 0.5.0's own series (the goldens
of tests/golden/make_hta_goldens.py): a track holds HTA's value after all the changes of each
timestamp."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import query_window

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta"
PS_PER_US = 1_000_000


def _hta_last_per_ts(records: list[dict[str, float]], value: str) -> tuple[np.ndarray, np.ndarray]:
    ts = np.array([r["ts"] for r in records], np.float64)
    v = np.array([r[value] for r in records], np.float64)
    last = np.ones(ts.shape[0], bool)
    last[:-1] = ts[1:] != ts[:-1]
    return np.round((ts[last] - ts[0]) * PS_PER_US).astype(np.int64), v[last]


def test_torch_ddp_counter_tracks(sample_profiles: Path) -> None:
    hta = json.loads((GOLDEN / "torch_ddp.json").read_text())
    for rank, path in enumerate(sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))):
        store = read_chrome_trace(path)
        index = track_index(store)
        by_name = {t.name: t for t in index.tracks if t.kind == "counter"}
        queue = by_name["CUDA queue length"]
        device_group = next(g for g in index.groups if queue.id in g.tracks)
        assert device_group.kind == "device"
        assert queue.counter is not None and set(queue.counter.values) == {"stream 7"}
        want_t, want_v = _hta_last_per_ts(hta["queue_length_series"][str(rank)], "queue_length")
        got_t = queue.counter.time_ps
        assert np.array_equal(got_t - got_t[0], want_t)
        assert np.array_equal(queue.counter.values["stream 7"], want_v)
        bw = by_name["Memory bandwidth"]
        assert bw.counter is not None and bw.counter.unit == "GiB/s"
        assert set(bw.counter.values) == {r["name"] for r in hta["memory_bw_series"][str(rank)]}
        for name, values in bw.counter.values.items():
            records = [r for r in hta["memory_bw_series"][str(rank)] if r["name"] == name]
            _, hta_values = _hta_last_per_ts(records, "memory_bw_gbps")
            # HTA's GB/s (10^9 bytes/s) in GiB/s (2^30 bytes/s), the dashboard's one unit.
            assert values.max() == pytest.approx(hta_values.max() * 1e9 / 2**30, rel=1e-12)
        # The window query answers the tracks like any counter.
        result = query_window(store, None, None, 1000)
        assert result.counters[queue.id].in_window == queue.counter.time_ps.shape[0]


def test_no_gpu_counters_without_device_events(sample_profiles: Path) -> None:
    """A TF1 timeline has no CUDA streams: no queue or bandwidth track."""
    path = sorted((sample_profiles / "tf1_timeline").rglob("*.json"))[0]
    store = read_chrome_trace(path)
    names = {t.name for t in track_index(store).tracks}
    assert "CUDA queue length" not in names and "Memory bandwidth" not in names
