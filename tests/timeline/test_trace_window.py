"""Window queries: every event of a window is either returned or counted in a density box.

The expected sets are computed here straight from the store's columns with the plain
definition of "in the window" (starts before its end and ends after its start; an instant
counts when it lies inside), independently of the compiled scan under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import SliceWindow, query_window, resolution_for
from tests.conftest import xplane_of


@pytest.fixture(scope="module")
def stores(profiles_root: Path) -> dict[str, ProfileStore]:
    return {name: read_xspace(xplane_of(profiles_root, name)) for name in ("jax_mlp", "custom_loop")}


def _expected(store: ProfileStore, plane_index: int, rows: np.ndarray, start_ps: int, end_ps: int,
              resolution_ps: int) -> tuple[set[int], dict[tuple[int, int], int], int]:
    plane = store.planes[plane_index]
    s = plane.start_ps[rows]
    d = plane.dur_ps[rows]
    inside = (s < end_ps) & ((s + d > start_ps) | ((d == 0) & (s >= start_ps)))
    visible = set(rows[inside & (d >= resolution_ps)].tolist())
    small = rows[inside & (d < resolution_ps)]
    boxes: dict[tuple[int, int], int] = {}
    keys, counts = np.unique(np.stack([plane.depth[small].astype(np.int64), plane.start_ps[small] // resolution_ps]),
                             axis=1, return_counts=True)
    for (depth, bucket), n in zip(keys.T.tolist(), counts.tolist(), strict=True):
        boxes[(depth, bucket)] = n
    return visible, boxes, int(inside.sum())


def _check_track(store: ProfileStore, track_id: int, got: SliceWindow, start_ps: int, end_ps: int,
                 resolution_ps: int) -> None:
    track = track_index(store).tracks[track_id]
    plane = store.planes[track.plane]
    if track.derived is not None:
        d = track.derived
        inside = (d.start_ps < end_ps) & (d.start_ps + d.dur_ps > start_ps)
        assert got.in_window == int(inside.sum()) == got.rows.shape[0] + got.merged
        assert set(got.rows.tolist()) == set(np.nonzero(inside & (d.dur_ps >= resolution_ps))[0].tolist())
        return
    if track.rows is not None:
        rows = track.rows
    else:
        rows = np.arange(plane.line_offsets[track.line], plane.line_offsets[track.line + 1])
    visible, boxes, in_window = _expected(store, track.plane, rows, start_ps, end_ps, resolution_ps)
    assert set(got.rows.tolist()) == visible, track.name
    assert got.in_window == in_window
    assert got.rows.shape[0] + got.merged == in_window  # returned + merged accounts for every event
    if track.rows is None:  # derived tracks (Steps) have depths of their own
        got_boxes = {(int(dep), int(b)): int(c) for dep, b, c in zip(got.box_depth, got.box_bucket, got.box_count,
                                                                     strict=True)}
        assert got_boxes == boxes, track.name
    # Returned events carry the store's values.
    assert np.array_equal(got.start_ps, plane.start_ps[got.rows])
    assert np.array_equal(got.dur_ps, plane.dur_ps[got.rows])
    assert np.array_equal(got.name_id, plane.name_id[got.rows])
    # Busy time never exceeds what the merged events last.
    assert np.all(got.box_busy_ps <= got.box_count * resolution_ps)


@pytest.mark.parametrize("name", ["jax_mlp", "custom_loop"])
@pytest.mark.parametrize(("frac_start", "frac_end", "width_px"), [
    (None, None, 2000),  # the whole span
    (0.30, 0.31, 1500),  # a zoomed window cutting through long events
    (0.5, 0.5001, 800),  # deep zoom: nearly everything visible
    (0.0, 1.0, 37),  # a very narrow canvas: nearly everything merged
])
def test_window_returns_or_merges_every_event(stores: dict[str, ProfileStore], name: str, frac_start: float | None,
                                              frac_end: float | None, width_px: int) -> None:
    store = stores[name]
    start = None if frac_start is None else int(store.span_ps * frac_start)
    end = None if frac_end is None else int(store.span_ps * frac_end)
    result = query_window(store, start, end, width_px)
    a = 0 if start is None else start
    b = store.span_ps if end is None else end
    # The resolution is the largest power of two not above span/width ps per pixel.
    res = result.resolution_ps
    assert res & (res - 1) == 0 and res <= max((b - a) // width_px, 1) < 2 * res
    assert set(result.slices) | set(result.counters) == set(range(len(result.index.tracks)))
    total_in_window = 0
    for tid, got in result.slices.items():
        _check_track(store, tid, got, a, b, res)
        total_in_window += got.in_window
    assert result.in_window == total_in_window == result.returned + result.merged


def test_whole_span_holds_every_event_once(stores: dict[str, ProfileStore]) -> None:
    """Over the whole span, line tracks account for every event of every shown plane exactly once."""
    for store in stores.values():
        result = query_window(store, None, None, 2000)
        index = result.index
        line_tracks = [t for t in index.tracks if t.kind == "slices" and t.line >= 0]
        shown_planes = {g.plane for g in index.groups}
        want = sum(store.planes[p].n_events for p in shown_planes)
        assert sum(result.slices[t.id].in_window for t in line_tracks) == want


def test_resolution_for() -> None:
    assert resolution_for(2_000_000, 2000) == 512  # 1000 ps/px -> 512
    assert resolution_for(2048 * 1000, 1000) == 2048
    assert resolution_for(10, 2000) == 1  # never below one picosecond


def test_memory_counters_match_xprof_peaks(stores: dict[str, ProfileStore]) -> None:
    """Memory-in-use counter maxima equal XProf's peak_bytes_in_use (tests/golden memory_profile)."""
    # XProf 2.24.2 (oracle goldens): custom_loop bfc_cpu_allocator_for_gpu 114 554 624 B from
    # 4342 + 4342 (de)allocation events; jax_mlp GPU_0_bfc 474 089 728 B (280 + 278),
    # GPU_1_bfc 509 447 680 B (150 + 148), xla_gpu_host_bfc 512 B (30 + 30).
    want = {"custom_loop": {"bfc_cpu_allocator_for_gpu": (114_554_624, 8684)},
            "jax_mlp": {"GPU_0_bfc": (474_089_728, 558), "GPU_1_bfc": (509_447_680, 298),
                        "xla_gpu_host_bfc": (512, 60)}}
    for name, allocators in want.items():
        store = stores[name]
        counters = {t.name.removeprefix("Memory in use: "): t for t in track_index(store).tracks
                    if t.kind == "counter" and t.name.startswith("Memory in use: ")}
        assert set(counters) == set(allocators)
        for allocator, (peak, samples) in allocators.items():
            series = counters[allocator].counter
            assert series is not None
            assert series.time_ps.shape[0] == samples
            assert np.all(np.diff(series.time_ps) >= 0)
            assert int(series.values["in_use_bytes"].max()) == peak


def test_counter_window_keeps_extremes(stores: dict[str, ProfileStore]) -> None:
    store = stores["custom_loop"]
    track = next(t for t in track_index(store).tracks if t.kind == "counter" and t.name.startswith("Memory in use"))
    assert track.counter is not None
    full = track.counter.values["in_use_bytes"]
    result = query_window(store, None, None, 100)  # 8684 samples on 100 px: decimated
    got = result.counters[track.id]
    assert got.decimated
    assert got.in_window == full.shape[0]
    assert got.series_max["in_use_bytes"].max() == full.max()
    assert got.series_min["in_use_bytes"].min() == full.min()
    # A narrow window starts with the sample in force at its start.
    t = track.counter.time_ps
    mid = int(t[t.shape[0] // 2]) + 1
    narrow = query_window(store, mid, mid + 1_000_000, 1000).counters[track.id]
    assert int(narrow.time_ps[0]) < mid
    assert narrow.series_last["in_use_bytes"][0] == full[t.shape[0] // 2]


def test_steps_track(stores: dict[str, ProfileStore]) -> None:
    """custom_loop and jax_mlp each annotate 10 steps (profiles/README.md)."""
    for store in stores.values():
        index = track_index(store)
        assert index.steps_track is not None
        steps = index.tracks[index.steps_track]
        assert steps.name == "Steps" and steps.event_count == 10
        plane = store.planes[steps.plane]
        assert steps.rows is not None
        assert set(store.strings.lookup(plane.name_id[steps.rows])) == {"train"}


def test_pytorch_memory_counters(sample_profiles: Path) -> None:
    """Kineto's [memory] instants become one counter per device (values from plain JSON parsing)."""
    import json

    from tbprof.readers.chrome_trace import read_chrome_trace

    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("name") == "[memory]"]
    store = read_chrome_trace(path)
    counters = {t.name: t for t in track_index(store).tracks if t.kind == "counter"}
    gpu = [e for e in events if e["args"]["Device Id"] == 0]
    track = counters["Memory: device 0"]
    assert track.counter is not None
    assert track.event_count == len(gpu)
    assert track.counter.values["allocated_bytes"].max() == max(e["args"]["Total Allocated"] for e in gpu)
    # Samples in time order, the last one is the last allocation/free of the file.
    last = sorted(gpu, key=lambda e: e["ts"])[-1]
    assert track.counter.values["allocated_bytes"][-1] == last["args"]["Total Allocated"]


def test_disk_cached_store_answers_the_same(profiles_root: Path, cache_dir: Path) -> None:
    """A store reopened from the disk cache (memory-mapped, read-only columns) gives the same window."""
    from tbprof.cache.profile_cache import ProfileCache
    from tbprof.timeline.details import event_details
    from tbprof.timeline.search import find_all

    path = xplane_of(profiles_root, "jax_mlp")
    first = ProfileCache(cache_dir)
    fresh = first.get(path, read_xspace)
    first.flush()
    reopened = ProfileCache(cache_dir).get(path, read_xspace)
    assert reopened is not fresh
    a = query_window(fresh, None, None, 1500)
    b = query_window(reopened, None, None, 1500)
    assert (a.in_window, a.returned, a.merged, a.boxes) == (b.in_window, b.returned, b.merged, b.boxes)
    assert np.array_equal(find_all(fresh, "fusion").row, find_all(reopened, "fusion").row)
    gpu = reopened.plane("/device:GPU:0")
    assert gpu is not None
    kernel = event_details(reopened, gpu.index, 1)["decoded"]["kernel"]
    assert kernel == event_details(fresh, gpu.index, 1)["decoded"]["kernel"]


def test_derived_xla_lines_match_xprof(stores: dict[str, ProfileStore]) -> None:
    """XLA Modules / XLA Ops / Framework Ops / Framework Name Scope / Command Buffers under each
    GPU stream, as XProf derives them.

    Golden: XProf 2.24.2's trace_viewer@ on jax_mlp for 50-60 ms at resolution 2000
    (tests/golden/jax_mlp/trace_viewer_derived_50_60ms.json, its derived lines only). Every
    derived event at least one of our buckets long is ours too, with the same line, name, start
    and duration to the nanosecond; shorter ones are in our density boxes.
    """
    import json

    golden = json.loads((Path(__file__).resolve().parents[1] / "golden" / "jax_mlp" /
                         "trace_viewer_derived_50_60ms.json").read_text())["derived_events"]
    store = stores["jax_mlp"]
    origin = store.origin_ps
    result = query_window(store, 50 * 10**9 - origin, 60 * 10**9 - origin, 2000)
    ours: dict[tuple[str, str], set[tuple[int, int]]] = {}
    merged_by_line: dict[str, int] = {}
    for tid, got in result.slices.items():
        track = result.index.tracks[tid]
        if track.derived is None:
            continue
        for start, dur, name in zip(got.start_ps.tolist(), got.dur_ps.tolist(), got.name_id.tolist(), strict=True):
            ours.setdefault((track.name, store.strings[name]), set()).add((round(start / 1000), round(dur / 1000)))
        merged_by_line[track.name] = got.merged
    long_events = [e for e in golden if e["dur_us"] * 1e6 >= result.resolution_ps]
    assert len(long_events) == 114  # of the golden's 171 derived events, those >= 4 194 304 ps
    for e in long_events:
        key = (round(e["ts_us"] * 1000 - origin / 1000), round(e["dur_us"] * 1000))
        assert key in ours.get((e["line"], e["name"]), set()), e
    for line in {e["line"] for e in golden if e["dur_us"] * 1e6 < result.resolution_ps}:
        assert merged_by_line.get(line, 0) > 0, line


def test_device_planes_start_with_steps_and_xla_modules_rows(stores: dict[str, ProfileStore]) -> None:
    """Each GPU plane's first rows are "Steps" and "XLA Modules" over all its streams (as XProf's).

    Expected values derived here with plain loops over the store's columns: a device event
    belongs to the last host step marker (event with step_num) starting at or before it; a
    device step spans its events' first start to their last end. XLA Modules: the plane's
    events in time order that carry hlo_module, runs of one (module, program) within a step.
    """
    from tbprof.analyses.steps.assignment import steps_of

    store = stores["jax_mlp"]
    index = track_index(store)
    host = store.plane("/host:CPU")
    assert host is not None
    sid = store.stat_id("step_num")
    step_col = host.event_stat(sid)
    markers = sorted((int(host.start_ps[r]), f"{store.strings[int(host.name_id[r])]} {n}")
                     for r, n in zip(step_col.rows.tolist(), step_col.as_int().tolist(), strict=True))
    for group in (g for g in index.groups if g.kind == "device"):
        plane = store.planes[group.plane]
        first, second = (index.tracks[t] for t in group.tracks[:2])
        assert (first.name, second.name) == ("Steps", "XLA Modules")
        spans: dict[int, list[int]] = {}
        for start, dur in zip(plane.start_ps.tolist(), plane.dur_ps.tolist(), strict=True):
            k = sum(1 for m, _ in markers if m <= start)
            if k:
                span = spans.setdefault(k - 1, [start, start + dur])
                span[0], span[1] = min(span[0], start), max(span[1], start + dur)
        # Steps the step analysis leaves out (boundary steps) are marked so (#29 §5).
        counted = set(steps_of(store).names)
        want = sorted((s, e - s, markers[k][1] if markers[k][1] in counted
                       else f"{markers[k][1]} (partial, not counted)") for k, (s, e) in spans.items())
        assert first.derived is not None and second.derived is not None
        got = sorted(zip(first.derived.start_ps.tolist(), first.derived.dur_ps.tolist(),
                         [store.strings[int(i)] for i in first.derived.name_id.tolist()], strict=True))
        assert got == want and len(want) > 0
        # Every module run lies inside the plane's span and names a module of the HLO protos.
        assert second.event_count > 0 and all(store.strings[int(i)].endswith(")") for i in second.derived.name_id)
        result = query_window(store, None, None, 1000)
        assert result.slices[first.id].in_window == len(want)


def test_active_range_is_where_the_devices_ran(profiles_root: Path) -> None:
    """#29 §5: the viewer opens on the device planes' events, not the profiler's whole span."""
    from tbprof.domain.planes import device_planes_of
    from tbprof.timeline.encoding import active_range_ps

    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    planes = [store.planes[i] for i in device_planes_of(store)]
    first = min(int(p.start_ps.min()) for p in planes if p.n_events)
    last = max(int((p.start_ps + p.dur_ps).max()) for p in planes if p.n_events)
    assert active_range_ps(store) == [first, last]
    assert 0 < first and last < store.span_ps  # jax_mlp: the host ran before and after
    cpu = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    assert active_range_ps(cpu) == [0, cpu.span_ps]  # no device: the whole span


def test_steps_track_marks_the_steps_the_overview_leaves_out(profiles_root: Path) -> None:
    """#29 §5: jax_mlp's markers are train 3-12; the step analysis drops the two boundary steps
    (held only in part), so the Steps track names them so."""
    from tbprof.analyses.steps.assignment import steps_of
    from tbprof.domain.planes import device_planes_of
    from tbprof.timeline.derived import device_plane_lines

    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    counted = steps_of(store).names
    plane = store.planes[device_planes_of(store)[0]]
    steps = dict(device_plane_lines(store, plane))["Steps"]
    names = {store.strings[int(i)] for i in np.unique(steps.name_id)}
    assert set(counted) <= names
    partial = names - set(counted)
    assert partial and all(n.endswith(" (partial, not counted)") for n in partial)
    assert len(partial) == steps_of(store).dropped_boundary_steps
