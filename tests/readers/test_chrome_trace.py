"""Chrome trace JSON import: every sample of demo_logs/, counted independently.

Expected counts come from plain ``json`` parsing in the test: an event of the store is an
``X`` slice, a ``B`` slice, an ``i``/``I`` instant, a ``C`` counter sample or an object
lifetime (one per ``N``); ``M`` metadata and ``s``/``t``/``f`` flow points are not events.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.errors import ProfileReadError
from tbprof.readers.chrome_trace import chrome_trace_from_bytes, host_of, read_chrome_trace
from tbprof.service.logdir import discover
from tbprof.store.markers import FLOW_ID_STAT, is_counter_line
from tbprof.store.tables import KIND_STR, ProfileStore


def _events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _expected_counts(events: list[dict[str, Any]]) -> Counter[Any]:
    """Events per pid, counted the way the module docstring says they are stored."""
    counts: Counter[Any] = Counter()
    for e in events:
        ph = e.get("ph")
        if ph in ("X", "B", "i", "I", "C", "N"):
            pid = "Global instant events" if ph in ("i", "I") and e.get("s") == "g" else e.get("pid")
            counts[pid] += 1
    return counts


def _store_counts(store: ProfileStore) -> Counter[Any]:
    return Counter({p.plane_stats["pid"]: p.n_events for p in store.planes})


def _samples(sample_profiles: Path, jax_mlp_trace: Path) -> list[Path]:
    return [*sorted((sample_profiles / "tf1_timeline").glob("timeline-*.json")),
            sample_profiles / "tf1_timeline" / "tfprof_timeline.json_3",
            *sorted((sample_profiles / "torch_cnn").glob("*.pt.trace.json")),
            jax_mlp_trace]


@pytest.fixture(scope="module")
def jax_mlp_trace(profiles_root: Path) -> Path:
    found = sorted((profiles_root / "jax_mlp").rglob("vm.trace.json.gz"))
    assert found
    return found[0]


def test_every_sample_imports_with_independent_counts(sample_profiles: Path, jax_mlp_trace: Path) -> None:
    samples = _samples(sample_profiles, jax_mlp_trace)
    assert len(samples) == 9  # 6 TF1 timelines, 1 tfprof timeline, 1 PyTorch trace, 1 JAX trace
    for path in samples:
        store = read_chrome_trace(path)
        expected = _expected_counts(_events(path))
        assert _store_counts(store) == expected, path.name
        assert store.format == "chrome_trace"
        assert store.warnings == [], (path.name, store.warnings)
        for plane in store.planes:
            # The store's invariant: rows sorted by (line, start, -dur), offsets per line.
            key = np.lexsort((-plane.dur_ps, plane.start_ps, plane.line_idx))
            assert np.array_equal(key, np.arange(plane.n_events))
            assert plane.line_offsets[-1] == plane.n_events
            assert plane.start_ps.min() >= 0


def test_times_are_relative_picoseconds(jax_mlp_trace: Path) -> None:
    events = [e for e in _events(jax_mlp_trace) if e.get("ph") == "X"]
    t0_us = min(e["ts"] for e in events)
    store = read_chrome_trace(jax_mlp_trace)
    # The longest event of the trace, found independently, keeps its start and duration
    # (microseconds with 3 decimals -> whole nanoseconds -> ps).
    longest = max(events, key=lambda e: e["dur"])
    want_start_ps = round((longest["ts"] - t0_us) * 1e3) * 1000
    want_dur_ps = round(longest["dur"] * 1e3) * 1000
    found = [(p, int(np.argmax(p.dur_ps))) for p in store.planes if p.n_events]
    plane, row = max(found, key=lambda pr: pr[0].dur_ps[pr[1]])
    assert int(plane.dur_ps[row]) == want_dur_ps
    assert int(plane.start_ps[row]) == want_start_ps
    assert store.strings[int(plane.name_id[row])] == longest["name"]
    assert store.span_ps == max(round((e["ts"] + e["dur"] - t0_us) * 1e3) * 1000 for e in events)


def test_process_and_thread_names(sample_profiles: Path) -> None:
    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    store = read_chrome_trace(path)
    # A Kineto trace: the GPU process (label "GPU 0") and the profiled process (label "CPU")
    # get XSpace's names; process_name "python3" plus the label stays as a plane stat.
    names = [p.name for p in store.planes]
    assert "/host:CPU" in names and "/device:GPU:0" in names
    # process_sort_index orders planes: 623 (CPU, 623) before 0 (GPU 0, 5000000).
    assert names.index("/host:CPU") < names.index("/device:GPU:0")
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None and gpu.line_names == ["stream 7 "]
    assert gpu.plane_stats["process_name"] == "python3 (GPU 0)"


def test_pytorch_flows_link_launches_to_kernels(sample_profiles: Path) -> None:
    """ac2g flows join a CPU cudaLaunchKernel to its GPU kernel; both carry one correlation id."""
    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    store = read_chrome_trace(path)
    flow_stat = store.stat_id(FLOW_ID_STAT)
    corr_stat = store.stat_id("correlation")
    events_of_flow: dict[int, list[tuple[int, int]]] = {}
    for plane in store.planes:
        col = plane.stat_column(flow_stat)
        for row, chain in zip(col.rows.tolist(), col.value.tolist(), strict=True):
            events_of_flow.setdefault(chain, []).append((plane.index, row))
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None
    gpu_corr = gpu.event_stat(corr_stat).dense_int(gpu.n_events)
    cpu = store.plane("/host:CPU")
    assert cpu is not None
    cpu_corr = cpu.event_stat(corr_stat).dense_int(cpu.n_events)
    checked = 0
    for members in events_of_flow.values():
        planes = {p for p, _ in members}
        if planes == {cpu.index, gpu.index} and len(members) == 2:
            (_, a), (_, b) = sorted(members, key=lambda m: m[0] != cpu.index)
            assert cpu_corr[a] == gpu_corr[b] != -1
            checked += 1
    # Every ac2g flow whose 'f' lands on the GPU stream: the file has 276 such 'f' points.
    want = sum(1 for e in _events(path) if e.get("ph") == "f" and e.get("cat") == "ac2g" and e.get("pid") == 0)
    assert checked == want == 276


def test_counters_become_counter_lines(sample_profiles: Path) -> None:
    path = sample_profiles / "tf1_timeline" / "timeline-1.json"
    events = _events(path)
    samples = [e for e in events if e.get("ph") == "C"]
    store = read_chrome_trace(path)
    allocators = store.plane("Allocators")
    assert allocators is not None
    counter_lines = [i for i in range(allocators.n_lines) if is_counter_line(allocators, i)]
    assert sorted(allocators.line_names[i] for i in counter_lines) == sorted({e["name"] for e in samples})
    # The last sample of "mklcpu" keeps its value as a stat of the last event of that line.
    mkl = [e for e in samples if e["name"] == "mklcpu"]
    last = max(mkl, key=lambda e: e["ts"])
    line = allocators.line_names.index("mklcpu")
    rows = allocators.line_rows(line)
    assert rows.stop - rows.start == len(mkl)
    col = allocators.stat_column(store.stat_id("mklcpu"))
    values = dict(zip(col.rows.tolist(), col.as_float().tolist(), strict=True))
    assert values[rows.stop - 1] == last["args"]["mklcpu"]


def test_args_become_stats(sample_profiles: Path) -> None:
    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    kernel = next(e for e in _events(path) if e.get("cat") == "kernel")
    store = read_chrome_trace(path)
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None
    t0 = min(e["ts"] for e in _events(path) if e.get("ph") in ("X", "i"))
    row = int(np.searchsorted(gpu.start_ps, round((kernel["ts"] - t0) * 1e3) * 1000))
    got: dict[str, Any] = {}
    for i in range(*gpu.stats.rows_of(row).indices(len(gpu.stats))):
        name = store.strings[int(gpu.stats.stat_id[i])]
        kind = int(gpu.stats.kind[i])
        value = int(gpu.stats.value[i])
        got[name] = store.strings[value] if kind == KIND_STR else value
    assert got["registers per thread"] == kernel["args"]["registers per thread"]
    assert json.loads(got["grid"]) == kernel["args"]["grid"]
    assert gpu.event_stat(store.stat_id("cat")).dense_str(gpu.n_events)[row] == store.strings.id("kernel")


# --- malformed and edge-case inputs (deliberately constructed) -------------------------------

def _read(obj: Any) -> ProfileStore:
    return chrome_trace_from_bytes(json.dumps(obj).encode(), "test.json", "test")


def test_begin_end_matched_per_thread() -> None:
    store = _read({"traceEvents": [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "B", "name": "other", "pid": 1, "tid": 2, "ts": 1.5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 2, "args": {"result": 7}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
        # Back to back at one timestamp: the E closes "a", not "b".
        {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 6},
        {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 6},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 7},
    ]})
    plane = store.planes[0]
    got = {store.strings[int(n)]: (int(s), int(d), int(dep))
           for n, s, d, dep in zip(plane.name_id, plane.start_ps, plane.dur_ps, plane.depth, strict=True)}
    us = 1_000_000
    assert got == {"outer": (0, 3 * us, 0), "inner": (1 * us, 1 * us, 1), "other": (int(1.5 * us), int(2.5 * us), 0),
                   "a": (5 * us, 1 * us, 0), "b": (6 * us, 1 * us, 0)}
    assert store.warnings == []
    result = plane.stat_column(store.stat_id("result"))
    assert result.value.tolist() == [7]


def test_unmatched_begin_end_and_negative_durations_are_reported() -> None:
    store = _read([
        {"ph": "E", "pid": 1, "tid": 1, "ts": 0},  # nothing open
        {"ph": "B", "name": "never ends", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "X", "name": "negative", "pid": 1, "tid": 1, "ts": 2, "dur": -5},
        {"ph": "X", "name": "fine", "pid": 1, "tid": 1, "ts": 3, "dur": 7},
        {"ph": "X", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
        {"ph": "b", "name": "async", "pid": 1, "tid": 1, "ts": 3, "id": 1},
    ])
    plane = store.planes[0]
    names = store.strings.lookup(plane.name_id)
    assert sorted(names) == ["fine", "never ends"]
    never = names.index("never ends")
    # The unclosed B runs to the end of the trace: the end of "fine", 3 + 7 us.
    assert int(plane.start_ps[never] + plane.dur_ps[never]) == 10 * 1_000_000 - 0
    text = " | ".join(store.warnings)
    assert "1 end ('E') events without an open begin" in text
    assert "1 begin ('B') events were never ended" in text
    assert "1 complete ('X') events with a negative" in text
    assert "1 complete ('X') events without a numeric 'ts'" in text
    assert "phase 'b'" in text


def test_an_event_ending_past_the_span_limit_is_dropped_not_wrapped() -> None:
    # Both starts lie within the span limit of the first event (9e12 us), but the second
    # event's end does not: its end in int64 picoseconds would wrap around to a negative time.
    from tbprof.readers.chrome_events import MAX_SPAN_US

    store = _read([
        {"ph": "X", "name": "first", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"ph": "X", "name": "late", "pid": 1, "tid": 1, "ts": MAX_SPAN_US // 2, "dur": MAX_SPAN_US // 2},
        {"ph": "X", "name": "too long", "pid": 1, "tid": 1, "ts": MAX_SPAN_US // 2, "dur": MAX_SPAN_US},
    ])
    plane = store.planes[0]
    assert sorted(store.strings.lookup(plane.name_id)) == ["first", "late"]
    assert store.span_ps == MAX_SPAN_US * 1_000_000  # the end of "late", exactly
    assert int((plane.start_ps + plane.dur_ps).min()) >= 0
    assert any("1 complete ('X') events ending more than" in w for w in store.warnings)


def test_unterminated_array_format_is_accepted() -> None:
    text = b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1},\n'
    store = chrome_trace_from_bytes(text, "t.json", "t")
    assert store.n_events == 1


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "empty"),
    (b"{\"traceEvents\": [", "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"{\"foo\": 1}", "not a Chrome trace"),
    (b"{\"traceEvents\": 3}", "'traceEvents' is not a list"),
    (b"42", "not a Chrome trace"),
    (gzip.compress(b'{"traceEvents": []}')[:15], "gzip stream is damaged"),
])
def test_malformed_inputs_raise_clear_errors(data: bytes, reason: str) -> None:
    with pytest.raises(ProfileReadError) as err:
        chrome_trace_from_bytes(data, "bad.trace.json", "bad")
    assert reason in err.value.reason
    assert err.value.path == "bad.trace.json"


def test_empty_trace_is_an_empty_store() -> None:
    store = _read({"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "p"}}]})
    assert store.n_events == 0 and store.planes == [] and store.span_ps == 0


def test_host_names() -> None:
    assert host_of(Path("vm.trace.json.gz")) == "vm"
    assert host_of(Path("worker0.pt.trace.json")) == "worker0"
    assert host_of(Path("timeline-3.json")) == "timeline-3"


def test_detector_finds_standalone_traces_only(tmp_path: Path, jax_mlp_trace: Path) -> None:
    session = tmp_path / "run_a" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    (session / "solo.trace.json.gz").write_bytes(jax_mlp_trace.read_bytes())
    # A trace beside its own xplane is not a separate run (the xplane is read instead).
    (session / "vm.trace.json.gz").write_bytes(jax_mlp_trace.read_bytes())
    (session / "vm.xplane.pb").write_bytes(b"")
    # PyTorch traces belong to the PyTorch run kind, not to generic Chrome traces.
    (session / "w.pt.trace.json").write_text("[]")
    runs = discover(tmp_path)
    chrome = [r for r in runs.values() if r.kind == "chrome_trace"]
    assert len(chrome) == 1
    assert sorted(chrome[0].hosts) == ["solo"]
    assert chrome[0].name == "run_a/2026_01_01_00_00_00 (chrome_trace)"
