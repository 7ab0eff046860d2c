"""A Chrome trace larger than the memory budget is built in the disk cache (readers/chrome_stream.py)
and reads exactly as the in-memory reader reads it.

Tiny chunks, windows and drains put every step of the builder on a chunk boundary somewhere
(phases, lines, the time order of a thread, metadata rows, stat placement, flow parts); the
streamed store must have the in-memory store's semantic digest (tests/core/chrome_digest.py:
independent of string numbering, which the chunking changes) on every demo trace and every
dialect fixture, and with chunks larger than the file its exact columns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.cache.disk_cache import PLANE_ARRAYS, STAT_ARRAYS, DiskCache
from tbprof.errors import MemoryRefusal
from tbprof.readers import chrome_stream
from tbprof.readers.chrome_stream import stream_chrome_trace
from tbprof.readers.chrome_trace import read_chrome_trace
from tests.core.chrome_digest import FIXTURES, demo_files, fixture_bytes, semantic_digest
from tests.readers.stream_memory import measure

KEY = "0123456789abcdef0123456789abcdef"
REPO = Path(__file__).resolve().parents[2]
DDP_RANK0 = next((REPO / "demo_logs" / "torch_ddp").glob("rank0.*.pt.trace.json"))


def _stream(path: Path, tmp: Path, budget_bytes: int = 1 << 30, **kw: Any) -> Any:
    return stream_chrome_trace(path, DiskCache(tmp / "cache"), KEY, budget_bytes, **kw)


@pytest.mark.parametrize("path", demo_files(), ids=lambda p: p.name)
def test_every_demo_trace_streams_to_the_same_store(path: Path, tmp_path: Path) -> None:
    want = semantic_digest(read_chrome_trace(path))
    # 8 MB: several drains of the scanner's columns per file, flows in parts where there are many.
    got = _stream(path, tmp_path, 8 << 20, chunk_events=5, window_bytes=64 << 10)
    assert isinstance(got.planes[0].start_ps, np.memmap)
    assert semantic_digest(got) == want


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_dialect_fixture_streams_to_the_same_store(name: str, tmp_path: Path) -> None:
    path = tmp_path / "f.trace.json"
    path.write_bytes(fixture_bytes(name))
    want = semantic_digest(read_chrome_trace(path))
    for chunk in (1, 2, 3):
        assert semantic_digest(_stream(path, tmp_path / str(chunk), 1 << 20, chunk_events=chunk)) == want


def test_large_chunks_give_the_in_memory_columns_exactly(tmp_path: Path) -> None:
    mem = read_chrome_trace(DDP_RANK0)
    got = _stream(DDP_RANK0, tmp_path)
    assert got.strings.as_list() == mem.strings.as_list()
    assert (got.origin_ps, got.span_ps, got.warnings, got.metadata) == \
        (mem.origin_ps, mem.span_ps, mem.warnings, mem.metadata)
    assert [(p.name, p.line_names, p.plane_stats) for p in got.planes] == \
        [(p.name, p.line_names, p.plane_stats) for p in mem.planes]
    for g, m in zip(got.planes, mem.planes, strict=True):
        for name in PLANE_ARRAYS:
            assert np.array_equal(getattr(g, name), getattr(m, name)), name
        for name in STAT_ARRAYS:
            assert np.array_equal(getattr(g.stats, name), getattr(m.stats, name)), name
            assert np.array_equal(getattr(g.meta_stats, name), getattr(m.meta_stats, name)), name


def test_flows_in_parts_bind_as_in_one(tmp_path: Path) -> None:
    """Flow points are bound in parts of at most a chunk, split by identity (torch_ddp rank 0 has
    hundreds of launch -> kernel flows): with chunks of 1, 64 and 4096 points the same chains
    bind to the same events."""
    mem = read_chrome_trace(DDP_RANK0)
    assert sum(int((p.stats.stat_id == mem.strings.id("flow_id")).sum()) for p in mem.planes) > 500
    for chunk in (1, 64, 4096):
        got = _stream(DDP_RANK0, tmp_path / str(chunk), chunk_events=chunk)
        assert semantic_digest(got) == semantic_digest(mem)


def test_a_repeated_trace_events_key_after_a_drain_keeps_the_last(tmp_path: Path) -> None:
    first = [{"ph": "X", "name": f"old{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"i": i}}
             for i in range(3000)]
    last = [{"ph": "X", "name": f"new{i}", "pid": 2, "tid": 1, "ts": i, "dur": 1, "args": {"j": i}}
            for i in range(50)]
    text = '{"traceEvents": ' + json.dumps(first) + ', "traceEvents": ' + json.dumps(last) + "}"
    path = tmp_path / "twice.trace.json"
    path.write_text(text)
    mem = read_chrome_trace(path)
    assert mem.n_events == 50
    # 64 KiB windows and a 128 KiB drain: the first array is drained to disk before the second key
    # (a budget of 1 MiB: its ~3,100 distinct names and values take ~0.85 MB of it).
    got = _stream(path, tmp_path, 1 << 20, chunk_events=7, window_bytes=64 << 10)
    assert got.n_events == 50
    assert semantic_digest(got) == semantic_digest(mem)


def test_a_gzip_bomb_is_refused_before_it_fills_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    path = tmp_path / "bomb.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (64 << 20) + b"]}"))  # ~64 KB, 1000x
    with pytest.raises(MemoryRefusal) as err:
        _stream(path, tmp_path / "ratio")
    assert "expands beyond" in err.value.reason and "gzip bomb" in err.value.reason
    monkeypatch.setattr(chrome_stream, "_MAX_GZIP_RATIO", 1 << 20)
    monkeypatch.setattr(chrome_stream, "_JSON_DISK_SHARE", 1 << 40)  # as if the disk had ~nothing free
    with pytest.raises(MemoryRefusal) as err:
        _stream(path, tmp_path / "disk")
    assert "expands beyond" in err.value.reason and "disk cache" in err.value.reason
    for case in ("ratio", "disk"):
        assert not any((tmp_path / case / "cache" / "stores").iterdir())  # nothing half-written is left


def test_a_real_gzip_trace_streams(tmp_path: Path) -> None:
    """A real trace in gzip (a JAX trace.json.gz, ~9x) is within the ratio and streams like its JSON."""
    path = next((REPO / "demo_logs" / "jax_mlp").rglob("*.trace.json.gz"))
    want = semantic_digest(read_chrome_trace(path))
    assert semantic_digest(_stream(path, tmp_path, 8 << 20, chunk_events=64)) == want


def _repeated(src: Path, dst: Path, k: int) -> None:
    """A larger trace made from a real one (as shared/tools/big_kineto.py does): its timed events
    repeated ``k`` times, each copy after the previous one, with the ids that link events
    (correlation, External id, flow ids) offset per copy so that links stay within a copy."""
    doc = json.loads(src.read_text())
    events = doc.pop("traceEvents")
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    meta = [e for e in events if e not in timed]
    t0 = min(float(e["ts"]) for e in timed)
    span = max(float(e["ts"]) + float(e.get("dur", 0) or 0) for e in timed) - t0 + 1
    offset = 1 + max(int(v) for e in timed for v in [e.get("id"), *(e.get("args") or {}).values()]
                     if isinstance(v, int) and not isinstance(v, bool))
    steps = [int(str(e["name"]).rsplit("#", 1)[1]) for e in timed if str(e.get("name", "")).startswith("ProfilerStep#")]
    step_span = max(steps) - min(steps) + 1
    with open(dst, "w") as f:
        f.write('{"traceEvents": [')
        f.write(", ".join(json.dumps(e) for e in meta))
        for c in range(k):
            for e in timed:
                e2 = dict(e, ts=float(e["ts"]) + c * span)
                if str(e2.get("name", "")).startswith("ProfilerStep#"):  # each copy its own step numbers
                    e2["name"] = f"ProfilerStep#{int(str(e2['name']).rsplit('#', 1)[1]) + c * step_span}"
                if isinstance(e2.get("id"), int):
                    e2["id"] += c * offset
                args = dict(e2.get("args") or {})
                for a in ("correlation", "External id"):
                    if isinstance(args.get(a), int):
                        args[a] += c * offset
                if args:
                    e2["args"] = args
                f.write(", " + json.dumps(e2))
        f.write("], " + ", ".join(f"{json.dumps(key)}: {json.dumps(v)}" for key, v in doc.items()) + "}")


@pytest.fixture(scope="module")
def repeated_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "rank0.pt.trace.json"
    _repeated(DDP_RANK0, path, 12)  # ~26 MB, ~120 k events
    return path


def test_streaming_stays_within_its_budget(repeated_trace: Path, tmp_path: Path) -> None:
    """$TBPROF_CONVERT_MEMORY_BYTES = 16 MB: the 26 MB trace needs ~3x its size in memory, so it
    streams (with half of it, 8 MB); its anonymous memory grows by less than the 16 MB stated."""
    budget = 16 << 20
    report = measure(repeated_trace, "stream", tmp_path, DDP_RANK0, budget_bytes=budget, timeout_s=600)
    assert report["streamed"] is True
    assert 0 < report["peak_anon_growth_bytes"] <= budget, report
    assert report["samples"] > 20  # the sampler saw the conversion, not just its end


def test_summary_of_a_streamed_trace_equals_the_in_memory_one(repeated_trace: Path, tmp_path: Path) -> None:
    """End to end: ``tbprof summary`` of a run whose trace streams answers as in memory."""
    def summary(budget: str | None, cache: str) -> dict[str, Any]:
        env = dict(os.environ, TBPROF_CACHE_DIR=str(tmp_path / cache))
        env.pop("TBPROF_CONVERT_MEMORY_BYTES", None)
        if budget is not None:
            env["TBPROF_CONVERT_MEMORY_BYTES"] = budget
        out = subprocess.run([sys.executable, "-m", "tbprof.cli", "summary", str(repeated_trace.parent), "--json",
                              "--workers", "1"], env=env, capture_output=True, text=True, timeout=600, check=True)
        return dict(json.loads(out.stdout))

    streamed = summary(str(32 << 20), "small")
    in_memory = summary(None, "large")
    entries = list((tmp_path / "small" / "stores").iterdir())
    assert entries and all(not e.name.startswith(".") for e in entries)
    assert streamed == in_memory
    # 12 copies of rank 0's steps (several each), read from the streamed store's ProfilerStep markers.
    assert streamed["step_source"] == "markers" and streamed["step_count"] > 12


def test_an_executor_task_streams_a_trace_over_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``convert_host`` (process pool and Dask workers) takes the cache's decision: a PyTorch trace
    over the budget streams into the shared disk cache, and its summary is the in-memory one's."""
    from tbprof.analyses.overview.profile_summary import summarize_store
    from tbprof.cache.memory_guard import LIMIT_ENV
    from tbprof.service.executor import HostTask, convert_host

    want = summarize_store(read_chrome_trace(DDP_RANK0))
    monkeypatch.setenv(LIMIT_ENV, str(DDP_RANK0.stat().st_size))  # the in-memory reader needs ~3x
    result = convert_host(HostTask("rank0", str(DDP_RANK0), "pytorch", str(tmp_path / "cache")))
    assert "error" not in result, result
    assert result["summary"] == want
    store = DiskCache(tmp_path / "cache").load(result["key"])
    assert store is not None and isinstance(store.planes[0].start_ps, np.memmap)
