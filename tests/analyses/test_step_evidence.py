"""Inferred steps only where the evidence is good (docs/formulas.md "Step inference").

Every demo profile keeps its steps; the Cloud TPU inference profile (XProf's public test data,
demo_logs/tpu_inference) gets none and no verdict, as XProf says "No step time measured"; a
profile whose only repeated span is the profiler's own annotation, or that records inference
requests, gets none either. Those two are real demo xplanes edited through the XSpace proto.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tbprof.analyses.overview import overview
from tbprof.analyses.overview.headline import headline
from tbprof.analyses.steps.assignment import (
    MIN_BUSY_COVERAGE,
    MIN_SIMILAR_SHARE,
    STEP_SPREAD_FACTOR,
    compute_steps,
    is_profiler_annotation,
    weak_evidence,
)
from tbprof.cli.main import main as cli_main
from tbprof.protos import xplane_pb2
from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import ProfileStore
from tests.conftest import SAMPLE_PROFILES, xplane_of
from tests.helpers import golden

TPU = SAMPLE_PROFILES / "tpu_inference"
ANNOTATION = "$profiler.py:226 trace"  # JAX's jax.profiler.trace context manager, as its Python tracer names it


def _tpu_store() -> ProfileStore:
    return read_xspace(xplane_of(SAMPLE_PROFILES, "tpu_inference", "tpu_inference_2"))


# (profile, host, step_confidence, steps kept): XSpace demo profiles.
XSPACE_STEPS = [("custom_loop", "vm", "markers"), ("jax_mlp", "vm", "markers"), ("keras_cnn", "vm", "annotated"),
                ("jax_2hosts", "worker0", "markers"), ("jax_2hosts", "worker1", "markers")]


@pytest.mark.parametrize(("profile", "host", "confidence"), XSPACE_STEPS)
def test_demo_profiles_keep_their_steps(profiles_root: Path, profile: str, host: str, confidence: str) -> None:
    st = compute_steps(read_xspace(xplane_of(profiles_root, profile, host)))
    assert st.n_steps > 0 and st.confidence == confidence
    # The kept steps pass the spread bound the rule states.
    d = st.duration_ps.astype(np.float64)
    similar = (d >= np.median(d) / STEP_SPREAD_FACTOR) & (d <= np.median(d) * STEP_SPREAD_FACTOR)
    assert np.mean(similar) >= MIN_SIMILAR_SHARE


def test_chrome_trace_demo_profiles_keep_their_steps(sample_profiles: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("torch_cnn", "torch_ddp", "tf1_timeline"):
        assert cli_main(["summary", str(sample_profiles / name), "--json",
                         "--cache-dir", str(tmp_path / "cache")]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["step_count"] > 0 and out["step_confidence"] == "markers", name


def test_tpu_inference_has_no_steps_and_no_verdict() -> None:
    store = _tpu_store()
    st = compute_steps(store)
    # XProf 2.24.2 measures no step on this profile (its golden's step table is empty).
    assert golden("tpu_inference", "overview_page")["step_count"] == 0
    assert (st.source, st.n_steps, st.confidence) == ("none", 0, "none")
    # One sentence why: the 100 PjitFunction(f) calls are 31 dispatches of ~0.05 ms and 67 blocking
    # calls of ~784 ms (98 after the boundary rule), far from "similar durations".
    why = st.diagnosis.split(". ")[0]
    assert why.startswith("No steps: the 98 runs of 'PjitFunction(f)'") and "within 2x of their median" in why
    fields = headline([store])
    assert fields["step_confidence"] == "none" and fields["input_bound"] == "unknown"
    assert fields["avg_step_time_ms"] is None and fields["input_percent"] is None
    r = overview.compute([store], {})
    assert r["steps"]["step_confidence"] == "none"
    assert r["recommendation"]["input_bound"] == "unknown"
    assert r["recommendation"]["statement"].startswith("No steps: ")


def _space(path: Path) -> xplane_pb2.XSpace:
    """The XSpace proto of a file (tbprof's schema keeps names as bytes)."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def _write(space: xplane_pb2.XSpace, path: Path) -> ProfileStore:
    path.write_bytes(space.SerializeToString())
    return read_xspace(path)


def test_profiler_annotation_is_never_a_step(profiles_root: Path, tmp_path: Path) -> None:
    """keras_cnn as an old JAX program without markers would look: its 8 "Profiled batch" events
    renamed to the profiler's annotation, the step_num and _r stats removed, and every other host
    event renamed to a name of its own. The only repeated span left is the annotation (8 spans of
    similar length covering the busy time, which the old rule took as 6 steps)."""
    space = _space(xplane_of(profiles_root, "keras_cnn"))
    host = next(p for p in space.planes if p.name == b"/host:CPU")
    batch_id = next(k for k, m in host.event_metadata.items() if m.name == b"Profiled batch")
    host.event_metadata[batch_id].name = ANNOTATION.encode()
    markers = {k for k, m in host.stat_metadata.items() if m.name in (b"step_num", b"_r")}
    next_id = max(host.event_metadata) + 1
    for line in host.lines:
        for ev in line.events:
            kept = [s for s in ev.stats if s.metadata_id not in markers]
            del ev.stats[:]
            ev.stats.extend(kept)
            if ev.metadata_id != batch_id:
                old = host.event_metadata[ev.metadata_id].name
                host.event_metadata[next_id].id = next_id
                host.event_metadata[next_id].name = old + f" #{next_id}".encode()
                ev.metadata_id = next_id
                next_id += 1
    st = compute_steps(_write(space, tmp_path / "vm.xplane.pb"))
    assert (st.source, st.n_steps, st.confidence) == ("none", 0, "none")
    assert st.diagnosis.startswith(f"No steps: the only repeated span, '{ANNOTATION}', is the profiler's own")


def test_inference_requests_are_never_steps(profiles_root: Path, tmp_path: Path) -> None:
    """keras_cnn whose "Profiled batch" events also carry a request_id stat (what a serving runtime
    writes per request): the repeated unit is a request, so no step is inferred."""
    space = _space(xplane_of(profiles_root, "keras_cnn"))
    host = next(p for p in space.planes if p.name == b"/host:CPU")
    batch_id = next(k for k, m in host.event_metadata.items() if m.name == b"Profiled batch")
    request_stat = max(host.stat_metadata) + 1
    host.stat_metadata[request_stat].id = request_stat
    host.stat_metadata[request_stat].name = b"request_id"
    n = 0
    for line in host.lines:
        for ev in line.events:
            if ev.metadata_id == batch_id:
                ev.stats.add(metadata_id=request_stat, int64_value=n)
                n += 1
    assert n == 8
    st = compute_steps(_write(space, tmp_path / "vm.xplane.pb"))
    assert (st.source, st.confidence) == ("none", "none")
    assert "inference requests" in st.diagnosis.split(". ")[0]


@pytest.mark.parametrize(("name", "expected"), [
    ("$profiler.py:226 trace", True), ("$jax/_src/profiler.py:333 start_trace", True),
    ("$profiler_v2.py:120 start", True), ("$trace.py:58 __enter__", True),
    ("$train.py:12 train_step", False), ("PjitFunction(train_step)", False), ("profiler.py", False),
])
def test_profiler_annotation_names(name: str, expected: bool) -> None:
    assert is_profiler_annotation(name) is expected


def test_steps_must_cover_most_of_the_busy_time(profiles_root: Path) -> None:
    """keras_cnn's 8 "Profiled batch" spans cover 99.8 % of the host's busy time and pass; the
    first 3 alone (similar durations, no boundary rule below 6) cover well under 80 % and fail."""
    keras = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    host = keras.plane("/host:CPU")
    assert host is not None
    rows = np.flatnonzero(np.array([keras.strings[int(n)] == "Profiled batch" for n in host.name_id]))
    rows = rows[np.argsort(host.start_ps[rows])]
    assert len(rows) == compute_steps(keras).candidate_count == 8
    begin, end = host.start_ps[rows], host.start_ps[rows] + host.dur_ps[rows]
    assert weak_evidence(keras, "step_num_annotation", "Profiled batch", begin, end, (end - begin)[1:-1], []) == ""
    why = weak_evidence(keras, "step_num_annotation", "Profiled batch", begin[:3], end[:3], (end - begin)[:3], [])
    assert why.startswith("The repeated 'Profiled batch' covers only ")
    assert f"at least {100 * MIN_BUSY_COVERAGE:.0f}%" in why
