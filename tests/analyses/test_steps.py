"""Steps found, inferred or missing; odd inputs give a diagnosis; the step tools over HTTP and CLI."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from werkzeug.test import Client

from tbprof._core import kernels
from tbprof.analyses.input import tf_data
from tbprof.analyses.overview import overview
from tbprof.analyses.pod import pod_viewer
from tbprof.analyses.steps import breakdown as step_breakdown
from tbprof.analyses.steps.assignment import DROP_BOUNDARY_ABOVE, compute_steps, steps_of
from tbprof.cli.main import main as cli_main
from tbprof.http.app import create_app
from tbprof.readers.xplane import read_xspace
from tbprof.store.memo import Memo
from tbprof.store.strings import StringTable
from tbprof.store.tables import Plane, ProfileStore, StatTable
from tests.conftest import xplane_of

API = "/data/plugin/tbprof/"
STEP_TOOLS = ("overview_page", "input_pipeline_analyzer", "pod_viewer", "tf_data_bottleneck_analysis")


def _keep_rows(plane: Plane, keep: np.ndarray) -> Plane:
    """The plane with only the events in the boolean mask ``keep`` (stats follow their events)."""
    new_row = np.cumsum(keep) - 1
    own = keep[plane.stats.owner]
    stats = StatTable(new_row[plane.stats.owner[own]].astype(np.int32), plane.stats.stat_id[own],
                      plane.stats.kind[own], plane.stats.value[own])
    counts = np.bincount(plane.line_idx[keep], minlength=plane.n_lines)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cols = {k: getattr(plane, k)[keep] for k in ("start_ps", "dur_ps", "meta_idx", "name_id", "depth", "line_idx")}
    return dataclasses.replace(plane, line_offsets=offsets, stats=stats, _columns={}, **cols)


def derived_store(store: ProfileStore, keep: dict[str, np.ndarray] | None = None,
                  dur_override: dict[str, np.ndarray] | None = None) -> ProfileStore:
    """A copy of a real store with events removed (``keep`` masks per plane) or durations changed."""
    planes = []
    for p in store.planes:
        q = p
        if dur_override and p.name in dur_override:
            q = dataclasses.replace(q, dur_ps=dur_override[p.name], _columns={})
        if keep and p.name in keep:
            q = _keep_rows(q, keep[p.name])
        planes.append(q)
    return dataclasses.replace(store, planes=planes, strings=StringTable(store.strings.as_list()), _memo=Memo())


@pytest.fixture(scope="module")
def custom_loop(profiles_root: Path) -> ProfileStore:
    return read_xspace(xplane_of(profiles_root, "custom_loop"))


@pytest.fixture(scope="module")
def keras(profiles_root: Path) -> ProfileStore:
    return read_xspace(xplane_of(profiles_root, "keras_cnn"))


def test_keras_steps_are_inferred_from_profile_batch(keras: ProfileStore) -> None:
    # TensorBoard(profile_batch=(5, 12)) profiles batches 5..12: 8 batches. tbprof applies the
    # boundary rule of marked steps (more than 5 steps: drop the first and the last), so 6.
    profiled_batches = 12 - 5 + 1
    expected = profiled_batches - 2 if profiled_batches > DROP_BOUNDARY_ABOVE else profiled_batches
    st = steps_of(keras)
    assert st.source == "inferred"
    assert st.candidate_count == profiled_batches
    assert st.n_steps == expected
    assert st.method == "step_num_annotation"
    # Keras numbers batches from 0: batches 5..12 are step_num 4..11; the middle six remain.
    assert st.step_nums.tolist() == list(range(5, 11))
    r = overview.compute([keras], {})
    assert (r["performance_summary"]["step_time_ms"]["avg"] or 0) > 0
    input_pct = r["performance_summary"]["input_percent"]
    assert input_pct is not None and 0 <= input_pct < 100
    assert r["recommendation"]["input_bound"] in ("high", "moderate", "potential", "no")


def test_keras_repeated_function_inference_without_step_num(keras: ProfileStore) -> None:
    # Without the step_num stat, the step is the function Keras runs once per batch.
    sid = keras.stat_id("step_num")
    host = keras.plane("/host:CPU")
    assert host is not None
    st_plane = dataclasses.replace(host, stats=StatTable(*(a[host.stats.stat_id != sid] for a in (
        host.stats.owner, host.stats.stat_id, host.stats.kind, host.stats.value))), _columns={})
    stripped = dataclasses.replace(keras, planes=[st_plane if p is host else p for p in keras.planes], _memo=Memo())
    st = compute_steps(stripped)
    assert st.source == "inferred" and st.method == "repeated_function"
    # TensorBoard(profile_batch=(5, 12)) traced batches 5..12: 8 runs of the function; XProf's
    # boundary rule drops the first and the last (possibly cut) step: 6 remain.
    assert st.candidate_count == 12 - 5 + 1 and st.n_steps == 8 - 2


def test_custom_loop_markers_and_breakdown_add_up(custom_loop: ProfileStore) -> None:
    st = steps_of(custom_loop)
    # Trace("train", step_num=s, _r=1) around steps 0..9; XProf's boundary rule drops 0 and 9.
    assert st.source == "markers" and st.candidate_count == 10
    assert st.names == [f"train {i}" for i in range(1, 9)]
    # Every picosecond of a step is in exactly one category.
    assert np.array_equal(st.type_ps.sum(axis=1), st.duration_ps)
    assert not st.has_device


def test_memo_second_call_is_the_same_object(custom_loop: ProfileStore) -> None:
    assert steps_of(custom_loop) is steps_of(custom_loop)


def test_events_are_assigned_to_steps(custom_loop: ProfileStore) -> None:
    st = steps_of(custom_loop)
    host = custom_loop.plane("/host:CPU")
    assert host is not None
    es = st.event_step(custom_loop.planes.index(host))
    # Events of the tf.data iterator threads are in steps too (through context links or time).
    it_lines = [i for i, n in enumerate(host.line_names) if n.startswith("tf_data_iterator")]
    on_it = np.isin(host.line_idx, it_lines)
    assert np.any(es[on_it] >= 0)
    # An assigned event starts inside its step or belongs to its step's group.
    assert set(np.unique(es[es >= 0]).tolist()) <= set(range(st.n_steps))


def test_no_steps_gives_a_diagnosis(custom_loop: ProfileStore) -> None:
    # Only the tf.data threads: no markers, nothing that repeats across the thread.
    host = custom_loop.plane("/host:CPU")
    assert host is not None
    keep = np.array([host.line_names[i].startswith("tf_data_private") for i in host.line_idx.tolist()])
    odd = derived_store(custom_loop, keep={"/host:CPU": keep})
    st = compute_steps(odd)
    assert st.source == "none" and st.n_steps == 0
    assert "StepTraceAnnotation" in st.diagnosis and "_r=1" in st.diagnosis
    r = overview.compute([odd], {})
    assert r["recommendation"]["input_bound"] == "unknown"
    assert r["steps"]["diagnosis"] == st.diagnosis
    assert r["tables"]["steps"].n_rows == 0


def test_one_step_gives_a_diagnosis(custom_loop: ProfileStore) -> None:
    host = custom_loop.plane("/host:CPU")
    assert host is not None
    first = steps_of(custom_loop)  # step 'train 1' spans [begin, end)
    b, e = int(first.begin_ps[0]), int(first.end_ps[0])
    keep = (host.start_ps >= b) & (host.start_ps + host.dur_ps <= e)
    st = compute_steps(derived_store(custom_loop, keep={"/host:CPU": keep}))
    assert st.n_steps == 1
    assert "Only one step" in st.diagnosis
    assert st.duration_ps[0] == e - b


def test_zero_length_markers_give_a_diagnosis(custom_loop: ProfileStore) -> None:
    host = custom_loop.plane("/host:CPU")
    assert host is not None
    names = np.array(custom_loop.strings.lookup(host.name_id))
    # The 10 "train" markers lose their length: they mark nothing, so the steps are inferred from
    # the Python function the loop calls once per step ('step', 10 runs; boundary rule: 8).
    st = compute_steps(derived_store(custom_loop, dur_override={"/host:CPU": np.where(names == "train", 0,
                                                                                     host.dur_ps)}))
    assert (st.source, st.method, st.candidate_count, st.n_steps) == ("inferred", "repeated_function", 10, 8)
    assert any("10 step markers were found" in n for n in st.notes)
    # Every host event zero-length: nothing to infer either; the diagnosis names the markers.
    st = compute_steps(derived_store(custom_loop, dur_override={"/host:CPU": np.zeros_like(host.dur_ps)}))
    assert st.source == "none" and st.n_steps == 0
    assert st.diagnosis.startswith("10 step markers were found but none holds host compute")
    r = overview.compute([derived_store(custom_loop, dur_override={"/host:CPU": np.zeros_like(host.dur_ps)})], {})
    assert r["recommendation"]["input_bound"] == "unknown"


def test_cpu_only_host_ranks_host_ops(custom_loop: ProfileStore) -> None:
    r = overview.compute([custom_loop], {})
    assert r["run_environment"]["hardware_type"] == "CPU_ONLY"
    assert r["top_ops_side"] == "host"
    top = r["tables"]["top_ops"]
    assert 0 < top.n_rows <= overview.TOP_OPS
    pct = top.data["self_time_percent"]
    assert np.all(np.diff(pct) <= 0) and top.data["cumulative_percent"][-1] <= 100.0 + 1e-9


def test_breakdown_through_rows_equals_the_gathered_columns() -> None:
    """Events read through ``rows`` (their step order) with the types divided in the kernel give
    the breakdown of the columns gathered in that order; an event-less step is all unknown."""
    rng = np.random.default_rng(7)
    n, n_steps = 500, 6
    step = rng.integers(0, n_steps - 1, n)  # the last step has no event
    start = rng.integers(0, 1000, n)
    end = start + rng.integers(0, 300, n)
    kinds = np.array([step_breakdown.DEVICE_COMPUTE_32, step_breakdown.DEVICE_COLLECTIVES,
                      step_breakdown.HOST_COMPUTE])
    types = kinds[rng.integers(0, kinds.shape[0], n)]
    begin, stop = np.arange(n_steps) * 200, np.arange(n_steps) * 200 + 400
    order = np.argsort(step, kind="stable")
    want = step_breakdown.nonoverlapped_type_ps(step[order], start[order], end[order], types[order] // 10, begin,
                                                stop, step_breakdown.N_TYPES)
    got = step_breakdown.nonoverlapped_type_ps(step, start, end, types, begin, stop, step_breakdown.N_TYPES,
                                               rows=order, type_divisor=10)
    assert np.array_equal(got, want)
    assert got[n_steps - 1, 0] == stop[-1] - begin[-1] and got[n_steps - 1, 1:].sum() == 0
    with pytest.raises(IndexError):
        step_breakdown.nonoverlapped_type_ps(step, start, end, types, begin, stop, step_breakdown.N_TYPES,
                                             rows=np.array([n]), type_divisor=10)


def _plain_sweep(step: np.ndarray, start: np.ndarray, end: np.ndarray, types: np.ndarray, begin: np.ndarray,
                 stop: np.ndarray, n_types: int) -> np.ndarray:
    """The breakdown's rule written out: a step's events clipped to it, their boundaries in time
    order (ties in input order, a begin before its own end), each stretch between two boundaries
    to the highest type then covering it, the rest of the step unknown (type 0)."""
    out = np.zeros((begin.shape[0], n_types), np.int64)
    for s in range(begin.shape[0]):
        b0, b1 = int(begin[s]), int(stop[s])
        bounds = []
        for k, i in enumerate(np.flatnonzero(step == s).tolist()):
            a = max(int(start[i]), b0)
            e = max(min(int(end[i]), b1), a)
            bounds += [(a, 2 * k, int(types[i]), 1), (e, 2 * k + 1, int(types[i]), -1)]
        counts = [0] * n_types
        prev, covered = b0, 0
        for t, _, ty, delta in sorted(bounds):
            top = max((u for u in range(n_types) if counts[u] > 0), default=-1)
            if top >= 0 and t > prev:
                out[s, top] += t - prev
                covered += t - prev
            prev = t
            counts[ty] += delta
        out[s, 0] += (b1 - b0) - covered
        if out[s].sum() == 0:
            out[s, 0] = b1 - b0
    return out


@pytest.mark.parametrize(("origin_ps", "span_ps"), [
    (0, 1_000),  # many ties: 400 events of a step on 1000 distinct times
    (10**15, 7 * 10**9),  # a PyTorch step of 7 ms, 15 minutes into a trace
    (-(2**62), 2**62),  # offsets too wide to pack with the boundary's index: the comparison sort
])
def test_breakdown_equals_the_plain_sweep(origin_ps: int, span_ps: int) -> None:
    rng = np.random.default_rng(11)
    n, n_steps = 2_000, 5
    step = rng.integers(0, n_steps, n)
    start = origin_ps + rng.integers(-span_ps // 8, span_ps, n)
    end = start + rng.integers(0, span_ps // 4, n)
    end[::17] = start[::17]  # instants
    types = rng.integers(0, step_breakdown.N_TYPES, n)
    begin = origin_ps + np.zeros(n_steps, np.int64)
    stop = begin + span_ps
    order = np.argsort(step, kind="stable")
    got = step_breakdown.nonoverlapped_type_ps(step, start, end, types, begin, stop, step_breakdown.N_TYPES,
                                               rows=order)
    assert np.array_equal(got, _plain_sweep(step, start, end, types, begin, stop, step_breakdown.N_TYPES))


def test_span_index_is_numpys_last_span_starting_before() -> None:
    """``span_index``: numpy's ``searchsorted(begin, t, "right") - 1`` where ``t`` is before that
    span's end, else -1; for times in order (the previous span tried first) and shuffled, and
    read through ``rows``. Spans share starts and ends, one is empty, and times fall before
    the first, in gaps and after the last."""
    begin = np.array([10, 20, 20, 35, 50, 50, 80])
    end = np.array([20, 20, 30, 40, 50, 70, 90])
    t = np.arange(0, 100)
    k = np.searchsorted(begin, t, side="right") - 1
    want = np.where((k >= 0) & (t < end[np.clip(k, 0, None)]), k, -1)
    assert np.array_equal(kernels.span_index(begin, end, t), want)
    shuffled = np.random.default_rng(3).permutation(t.shape[0])
    assert np.array_equal(kernels.span_index(begin, end, t[shuffled]), want[shuffled])
    assert np.array_equal(kernels.span_index(begin, end, t, rows=shuffled), want[shuffled])
    assert np.array_equal(kernels.span_index(begin[:0], end[:0], t), np.full(t.shape[0], -1))
    with pytest.raises(IndexError):
        kernels.span_index(begin, end, t, rows=np.array([t.shape[0]]))


def test_breakdown_on_threads_equals_one_thread() -> None:
    """Rows in step order cut at steps into ranges on several threads (1 M events: 3 ranges)
    give the one-thread breakdown; rows out of step order stay on one thread, the same."""
    rng = np.random.default_rng(13)
    n, n_steps = 1 << 20, 300
    step = rng.integers(0, n_steps, n)
    start = step * 10_000 + rng.integers(-500, 10_000, n)
    end = start + rng.integers(0, 3_000, n)
    types = rng.integers(0, step_breakdown.N_TYPES, n)
    begin = np.arange(n_steps) * 10_000
    stop = begin + 10_000
    order = np.argsort(step, kind="stable")
    args = (step, start, end, types, begin, stop, step_breakdown.N_TYPES)
    one = step_breakdown.nonoverlapped_type_ps(*args, rows=order, threads=1)
    assert np.array_equal(step_breakdown.nonoverlapped_type_ps(*args, rows=order, threads=3), one)
    assert np.array_equal(step_breakdown.nonoverlapped_type_ps(*args, threads=3),
                          step_breakdown.nonoverlapped_type_ps(*args, threads=1))


@pytest.mark.parametrize(("step", "type_idx"), [(3, 0), (-1, 0), (0, -1), (0, 10 * step_breakdown.N_TYPES)])
def test_breakdown_refuses_indices_outside_its_tables(step: int, type_idx: int) -> None:
    """A step outside the steps or a type outside [0, n_types) (before or after dividing) is an
    IndexError, not a read outside the sort buffer or the table."""
    with pytest.raises(IndexError):
        step_breakdown.nonoverlapped_type_ps(np.array([0, step]), np.array([0, 5]), np.array([10, 20]),
                                             np.array([0, type_idx]), np.array([0, 100]), np.array([50, 150]),
                                             step_breakdown.N_TYPES, type_divisor=10)


def test_counting_order_is_the_stable_argsort() -> None:
    keys = np.random.default_rng(5).integers(0, 40, 5_000)
    assert np.array_equal(kernels.counting_order(keys, 40), np.argsort(keys, kind="stable"))
    assert kernels.counting_order(keys[:0], 0).shape == (0,)
    with pytest.raises(IndexError):
        kernels.counting_order(keys, 39)


def test_breakdown_counts_overlap_once_for_the_top_priority() -> None:
    # Two events of one step: compute 32-bit [0, 10), collectives [5, 20); step [0, 30).
    out = step_breakdown.nonoverlapped_type_ps(
        np.array([0, 0]), np.array([0, 5]), np.array([10, 20]),
        np.array([step_breakdown.DEVICE_COMPUTE_32 // 10, step_breakdown.DEVICE_COLLECTIVES // 10]),
        np.array([0]), np.array([30]), step_breakdown.N_TYPES)
    # Compute wins 0..10 (priority 140 > 100); collectives keep 10..20; 10 ps unknown.
    assert out[0, step_breakdown.DEVICE_COMPUTE_32 // 10] == 10
    assert out[0, step_breakdown.DEVICE_COLLECTIVES // 10] == 10
    assert out[0, 0] == 10


@pytest.mark.parametrize(("input_pct", "all_other_pct", "expected"), [
    (25.0, 0.0, "high"), (20.0, 0.0, "high"), (19.9, 0.0, "moderate"), (5.0, 0.0, "moderate"),
    (4.9, 3.0, "potential"), (4.9, 2.9, "no"),
])
def test_input_bound_thresholds(input_pct: float, all_other_pct: float, expected: str) -> None:
    step = np.array([100.0])
    cats = {k: np.array([0.0]) for k in step_breakdown.CATEGORY_KEYS}
    cats["input_ms"] = np.array([input_pct])
    cats["all_others_ms"] = np.array([all_other_pct])
    cats["device_compute_ms"] = np.array([100.0 - input_pct - all_other_pct])
    assert step_breakdown.bottleneck_analysis(cats, step)["input_bound"] == expected


def test_tf_data_pipeline_critical_path(custom_loop: ProfileStore) -> None:
    r = tf_data.compute([custom_loop], {})
    (pipe,) = r["pipelines"]
    assert pipe["root"] == "Iterator::Root"
    assert pipe["root_calls"] == 10  # one GetNext per train step
    # The repeat's input "[0]" hangs below ForeverRepeat: the path reaches the tensor slices.
    assert pipe["critical_path"][-1].endswith("::Shuffle::TensorSlice")
    assert tf_data.iterator_kind(pipe["bottleneck"]) not in tf_data.WAITING_KINDS
    assert pipe["suggestion"]
    it = r["tables"]["iterators"]
    assert it.n_rows == 7 and bool(it.data["on_critical_path"].all())


def test_pod_viewer_device_columns(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    r = pod_viewer.compute([store], {"step": 2})
    assert list(r["steps"]["index"]) == [2]
    assert r["tables"]["pod_stats"].n_rows == 3  # all devices + 2 GPUs
    assert all(len(c["total_duration_us"]) == 1 for c in r["cores"])


def _client(logdir: Path, cache_dir: Path) -> Client:
    return Client(create_app(logdir, cache_dir=cache_dir))


def _run_of(client: Client, prefix: str) -> str:
    runs = client.get(API + "runs").get_json()["runs"]
    return next(r["run"] for r in runs if r["run"].startswith(prefix))


@pytest.mark.parametrize("tool", STEP_TOOLS)
def test_tools_over_http_json_and_csv(profiles_root: Path, cache_dir: Path, tool: str) -> None:
    client = _client(profiles_root, cache_dir)
    run = _run_of(client, "custom_loop")
    r = client.get(API + "data", query_string={"run": run, "tool": tool})
    assert r.status_code == 200
    body = r.get_json()
    assert body["schema_version"] == 1 and body["tool"] == tool
    for name in body["tables"]:
        c = client.get(API + "csv", query_string={"run": run, "tool": tool, "table": name})
        assert c.status_code == 200
        rows = list(csv.reader(io.StringIO(c.get_data(as_text=True))))
        assert rows[0] == [col["name"] for col in body["tables"][name]["columns"]]
        assert len(rows) - 1 == body["tables"][name]["total_rows"]


def test_all_hosts_with_a_broken_host_file(logdir_copy: Path, cache_dir: Path) -> None:
    session = next(logdir_copy.glob("jax_2hosts/**/worker0.xplane.pb")).parent
    (session / "worker2.xplane.pb").write_bytes(b"\x0a\x05broken, not an XSpace")
    client = _client(logdir_copy, cache_dir)
    run = _run_of(client, "jax_2hosts")
    r = client.get(API + "data", query_string={"run": run, "tool": "overview_page", "host": "__all__"})
    assert r.status_code == 200
    body = r.get_json()
    assert body["hosts"] == ["worker0", "worker1"]
    assert [e["host"] for e in body["host_errors"]] == ["worker2"]
    assert body["steps"]["step_count"] == 8
    bad = client.get(API + "data", query_string={"run": run, "tool": "overview_page", "host": "worker2"})
    assert bad.status_code == 422


def test_summary_cli_json(profiles_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "one"
    shutil.copytree(profiles_root / "jax_mlp", logdir)
    assert cli_main(["summary", str(logdir), "--json", "--cache-dir", str(tmp_path / "c")]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("step_source", "step_count", "avg_step_time_ms", "stddev_step_time_ms", "input_percent",
                "input_bound", "device_type", "device_count", "host_count", "top_ops"):
        assert key in out, key
    assert out["step_source"] == "markers" and out["step_count"] == 8
    assert out["device_type"] == "GPU" and out["device_count"] == 2 and out["host_count"] == 1
    assert out["input_bound"] == "potential"  # XProf: POTENTIALLY input-bound (80 % all-others)
    assert set(out["top_ops"][0]) == {"name", "type", "self_time_us", "occurrences"}
    assert out["top_ops"][0]["self_time_us"] >= out["top_ops"][-1]["self_time_us"]


@pytest.mark.parametrize(("name", "host"), [("jax_mlp", "vm"), ("jax_2hosts", "worker1")])
def test_linked_events_grouping_equals_full_grouping_on_devices(profiles_root: Path, name: str, host: str) -> None:
    # GPU runs group only the events that carry links; device groups must equal the full grouping.
    from tbprof.domain.event_groups import compute_groups

    store = read_xspace(xplane_of(profiles_root, name, host))
    full, reduced = compute_groups(store, full=True), compute_groups(store, full=False)
    assert full.n_groups == reduced.n_groups == 10  # 10 StepTraceAnnotation roots
    assert full.group_names == reduced.group_names
    for i, p in enumerate(store.planes):
        if p.name.startswith("/device:"):
            assert np.array_equal(full.group_of[i], reduced.group_of[i])
        else:
            linked = reduced.group_of[i] >= 0
            assert np.array_equal(full.group_of[i][linked], reduced.group_of[i][linked])


def test_group_id_stats_in_the_file_are_used(profiles_root: Path) -> None:
    # An XSpace that was already grouped (group_id stats on device events) keeps its groups:
    # jax_mlp with the computed groups written as stats and the _r root flags removed gives
    # the same steps.
    from tbprof.domain.event_groups import compute_groups
    from tbprof.store.tables import KIND_INT64

    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    expected = compute_steps(store)
    groups = compute_groups(store)
    gid = store.strings.intern("group_id")
    r_id = store.stat_id("_r")
    planes = []
    for i, p in enumerate(store.planes):
        keep = p.stats.stat_id != r_id
        owner, sid, kind, value = (a[keep] for a in (p.stats.owner, p.stats.stat_id, p.stats.kind, p.stats.value))
        if p.name.startswith("/device:"):
            rows = np.nonzero(groups.group_of[i] >= 0)[0]
            owner = np.concatenate([owner, rows.astype(np.int32)])
            sid = np.concatenate([sid, np.full(len(rows), gid, np.int32)])
            kind = np.concatenate([kind, np.full(len(rows), KIND_INT64, np.int8)])
            value = np.concatenate([value, groups.group_of[i][rows]])
            order = np.argsort(owner, kind="stable")
            owner, sid, kind, value = owner[order], sid[order], kind[order], value[order]
        planes.append(dataclasses.replace(p, stats=StatTable(owner, sid, kind, value), _columns={}))
    regrouped = dataclasses.replace(store, planes=planes, _memo=Memo())
    assert compute_groups(regrouped).n_groups == 0  # no roots left to group from
    got = compute_steps(regrouped)
    assert got.source == "markers" and got.n_steps == expected.n_steps
    assert np.array_equal(got.begin_ps, expected.begin_ps) and np.array_equal(got.end_ps, expected.end_ps)


def test_gpu_steps_inferred_from_repeated_module_launches(profiles_root: Path) -> None:
    # jax_mlp without its StepTraceAnnotation stats (_r, step_num): each launch of the XLA module
    # with the most device time (jit_train_step, once per step) becomes a step: 10 runs -> 8.
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    drop = {store.stat_id("_r"), store.stat_id("step_num")}
    planes = []
    for p in store.planes:
        keep = ~np.isin(p.stats.stat_id, list(drop))
        planes.append(dataclasses.replace(p, stats=StatTable(*(a[keep] for a in (
            p.stats.owner, p.stats.stat_id, p.stats.kind, p.stats.value))), _columns={}))
    st = compute_steps(dataclasses.replace(store, planes=planes, _memo=Memo()))
    assert (st.source, st.method, st.candidate_count, st.n_steps) == ("inferred", "repeated_module", 10, 8)
    assert "jit_train_step" in st.detail
    marked = steps_of(store)
    # A module launch spans the step's device compute, so it is at most the marked device step.
    assert np.all(st.duration_ps <= marked.duration_ps + 1)


def _aligned_by_definition(per_host: list) -> np.ndarray:
    """The all-hosts step alignment as the module docstring defines it: the step numbers every
    host ran, by number when each host's numbers are unique, else by position."""
    common = per_host[0].step_nums
    for s in per_host[1:]:
        common = np.intersect1d(common, s.step_nums)
    if len(common) and all(len(np.unique(s.step_nums)) == s.n_steps for s in per_host):
        return np.stack([np.argsort(s.step_nums, kind="stable")[np.searchsorted(np.sort(s.step_nums), common)]
                         for s in per_host])
    n = min(s.n_steps for s in per_host)
    return np.stack([np.arange(n) for _ in per_host])


@pytest.mark.parametrize("order", ["alike", "mixed"])
def test_all_hosts_step_table_by_definition(profiles_root: Path, order: str) -> None:
    """A pod's step table (issue #28 computes the alignment once when every host numbers its
    steps alike, and the breakdown of the critical hosts only): each step's index in each host,
    its time (the slowest host's) and its breakdown (that host's) are what the definition gives,
    on jax_2hosts' real hosts repeated (numbered alike) and mixed with custom_loop's host."""
    from tbprof.analyses.steps.table import step_table

    two = [read_xspace(p) for p in sorted((profiles_root / "jax_2hosts").rglob("*.xplane.pb"))]
    stores = two * 3 if order == "alike" else [*two, read_xspace(xplane_of(profiles_root, "custom_loop")), two[0]]
    per_host = [steps_of(s) for s in stores]
    if order == "alike":
        assert all(np.array_equal(s.step_nums, per_host[0].step_nums) for s in per_host)
    st = step_table(stores)
    idx = _aligned_by_definition(per_host)
    assert np.array_equal(st.step_index, idx) and st.step_index.dtype == idx.dtype and st.n_steps == idx.shape[1]
    times = np.stack([s.duration_ps[idx[h]] / 1e9 for h, s in enumerate(per_host)])
    crit = np.argmax(times, axis=0)
    assert np.array_equal(st.host_index, crit) and np.array_equal(st.step_time_ms, times[crit, np.arange(st.n_steps)])
    every = [step_breakdown.categories_ms(s.type_ps[idx[h]]) for h, s in enumerate(per_host)]
    assert set(st.category_ms) == set(every[0])
    for k, column in st.category_ms.items():
        assert np.array_equal(column, np.array([every[int(crit[j])][k][j] for j in range(st.n_steps)]))
