"""A multi-rank PyTorch run in one timeline (#29 §5): demo_logs/torch_ddp's two Kineto traces as
one store, rank by rank, on the traces' common time base, with the trace viewer's windows,
details and routes working on it.

Expectations come from the trace files themselves (read with json: ``baseTimeNanoseconds`` and
each event's ``ts``) and from each rank's own store, never from the combined output.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.combine import LINK_ID_OFFSET, combine_stores, combined
from tbprof.store.tables import ProfileStore
from tbprof.timeline.details import event_details
from tbprof.timeline.tool import compute as trace_viewer
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import query_window


def _files(sample_profiles: Path) -> list[Path]:
    return sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))


@pytest.fixture(scope="module")
def ranks(sample_profiles: Path) -> list[ProfileStore]:
    return [read_chrome_trace(p) for p in _files(sample_profiles)]


def _absolute_ps(doc: dict[str, Any], ts: Any) -> int:
    """An event's time on the shared clock: baseTimeNanoseconds + ts (us), in ps, to the ns."""
    return int(doc["baseTimeNanoseconds"]) * 1000 + int(Decimal(str(ts)) * 1000) * 1000


def test_ranks_are_process_groups_in_rank_order(ranks: list[ProfileStore]) -> None:
    # Given in reverse: the combined store still puts rank 0 first.
    store = combine_stores(list(reversed(ranks)))
    names = [g.name for g in track_index(store).groups]
    assert names[0] == "rank 0 · /device:GPU:0 (NVIDIA H200)"
    assert names[1] == "rank 0 · Host CPU"
    first_rank1 = next(i for i, n in enumerate(names) if n.startswith("rank 1 · "))
    assert all(n.startswith("rank 0 · ") for n in names[:first_rank1])
    assert all(n.startswith("rank 1 · ") for n in names[first_rank1:])
    assert names[first_rank1] == "rank 1 · /device:GPU:1 (NVIDIA H200)"
    # Every rank's events, each exactly once.
    assert store.n_events == sum(s.n_events for s in ranks)
    per_rank = [len(track_index(s).tracks) for s in ranks]
    assert len(track_index(store).tracks) == sum(per_rank)


def test_common_time_base_is_kineto_base_time_plus_ts(sample_profiles: Path, ranks: list[ProfileStore]) -> None:
    docs = [json.loads(p.read_text()) for p in _files(sample_profiles)]
    store = combine_stores(ranks)
    # The earliest event of all ranks is time 0; each rank's first kernel sits at its absolute
    # time minus that.
    t0 = min(_absolute_ps(d, e["ts"]) for d in docs for e in d["traceEvents"] if "ts" in e)
    for rank, doc in enumerate(docs):
        kernel = min((e for e in doc["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: Decimal(str(e["ts"])))
        want_ps = _absolute_ps(doc, kernel["ts"]) - t0
        gpu = next(p for p in store.planes if p.name == f"/device:GPU:{rank}")
        name_id = store.strings.id(kernel["name"])
        rows = (gpu.name_id == name_id).nonzero()[0]
        # The reader rounds each ts to the nanosecond from its first ts: within 1 ns.
        assert abs(int(gpu.start_ps[rows].min()) - want_ps) <= 1000, rank
    # The two ranks overlap in time (one training job), so one window shows both.
    ends = [s.origin_ps + s.span_ps for s in ranks]
    assert min(ends) > max(s.origin_ps for s in ranks)


def test_windows_keep_level_of_detail_per_rank(ranks: list[ProfileStore]) -> None:
    """The whole span at 2000 px: every track of every rank answers, and per rank the events
    in the window (returned + merged into density boxes) are all of that rank's events (the
    windows end past the last event: an instant event at a span's very end counts too)."""
    store = combine_stores(ranks)
    index = track_index(store)
    result = query_window(store, 0, store.span_ps + 1, 2000, None)
    labels = store.metadata["plane_labels"]
    for rank, own in enumerate(ranks):
        own_result = query_window(own, 0, own.span_ps + 1, 2000, None)
        own_in = sum(w.in_window for w in own_result.slices.values())
        ours = sum(w.in_window for tid, w in result.slices.items()
                   if labels[index.tracks[tid].plane] == f"rank {rank}")
        assert ours == own_in > 0, rank
        for w in result.slices.values():
            assert w.rows.shape[0] + w.merged == w.in_window


def test_links_stay_within_a_rank(ranks: list[ProfileStore]) -> None:
    """Correlation ids repeat across ranks: rank 1's kernel links to rank 1's launch."""
    store = combine_stores(ranks)
    gpu1 = next(p for p in store.planes if p.name == "/device:GPU:1")
    rank1 = {p.index for p in store.planes if store.metadata["plane_labels"][p.index] == "rank 1"}
    host1 = next(p for p in store.planes if p.name == "/host:CPU" and p.index in rank1)
    own_gpu = next(p for p in ranks[1].planes if p.name == "/device:GPU:1")
    rank0_ids = {v for p in ranks[0].planes for v in p.event_stat(ranks[0].stat_id("correlation")).as_int().tolist()}
    ids = own_gpu.event_stat(ranks[1].stat_id("correlation"))
    # The first kernel of rank 1 whose correlation id rank 0 uses too (334 of ~1590 ids repeat).
    row = next(int(r) for r, v in zip(ids.rows.tolist(), ids.as_int().tolist(), strict=True) if v in rank0_ids)
    own = event_details(ranks[1], own_gpu.index, row)
    details = event_details(store, gpu1.index, row)
    assert details["event"]["name"] == own["event"]["name"]
    launch_keys = [k for k, v in own["links"].items() if isinstance(v, list) and v]
    assert launch_keys, own["links"]
    for key in launch_keys:
        # The same links as in rank 1's own store, on rank 1's planes of the combined one.
        assert {ref["plane"] for ref in details["links"][key]} <= rank1
        assert [ref["name"] for ref in details["links"][key]] == [ref["name"] for ref in own["links"][key]]
    assert any(ref["plane"] == host1.index for key in launch_keys for ref in details["links"][key])
    corr = next(s["value"] for s in details["stats"] if s["name"] == "correlation")
    assert corr == next(s["value"] for s in own["stats"] if s["name"] == "correlation") + LINK_ID_OFFSET


def test_trace_viewer_tool_and_combined_memo(ranks: list[ProfileStore]) -> None:
    out = trace_viewer(ranks, {})
    assert out["hosts"] == [s.host for s in ranks]
    assert [g["name"].split(" · ")[0] for g in out["groups"]][:2] == ["rank 0", "rank 0"]
    assert combined(ranks) is combined(ranks)
    assert combined(ranks[:1]) is ranks[0]


@pytest.fixture(scope="module")
def client(sample_profiles: Path, profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    logdir = tmp_path_factory.mktemp("ranks_logdir")
    shutil.copytree(sample_profiles / "torch_ddp", logdir / "torch_ddp")
    shutil.copytree(profiles_root / "jax_2hosts", logdir / "jax_2hosts")
    # A run whose second rank's trace is cut short: the other rank still opens.
    broken = logdir / "torch_broken"
    broken.mkdir()
    first = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))[0]
    shutil.copy(first, broken / "rank0.pt.trace.json")
    (broken / "rank1.pt.trace.json").write_bytes(first.read_bytes()[:200_000])
    return Client(create_app(logdir, cache_dir=tmp_path_factory.mktemp("ranks_cache")))


def _run(client: Client, prefix: str) -> dict[str, Any]:
    return next(r for r in client.get("/runs").get_json()["runs"] if r["run"].startswith(prefix))


def test_routes_serve_all_ranks_and_keep_xspace_pods_per_host(client: Client) -> None:
    torch = _run(client, "torch_ddp")
    assert "trace_viewer" in torch["multi_host_tools"]
    tools = {t["name"]: t for t in client.get("/tools", query_string={"run": torch["run"]}).get_json()["tools"]}
    assert tools["trace_viewer"]["multi_host"] is True
    head = client.get("/data", query_string={"run": torch["run"], "host": "__all__", "tool": "trace_viewer"}).get_json()
    assert len(head["hosts"]) == 2
    window = client.get("/trace", query_string={"run": torch["run"], "host": "__all__", "width_px": 1500,
                                                 "format": "json"})
    assert window.status_code == 200, window.get_data(as_text=True)
    body = window.get_json()
    groups = {t["group"] for t in body["tracks"]}
    assert len(groups) == len(head["groups"]) or len(groups) > len(head["groups"]) // 2
    found = client.get("/trace_search", query_string={"run": torch["run"], "host": "__all__", "q": "ncclDevKernel"})
    assert found.status_code == 200
    planes = {m["plane"] for m in found.get_json()["matches"]}
    labels = {g["plane"]: g["name"].split(" · ")[0] for g in head["groups"]}
    assert {labels[p] for p in planes} == {"rank 0", "rank 1"}
    # One rank alone still works (the host picker's per-rank choice).
    one = client.get("/trace", query_string={"run": torch["run"], "host": torch["hosts"][1], "format": "json"})
    assert one.status_code == 200
    # An XSpace pod stays one host at a time.
    jax = _run(client, "jax_2hosts")
    assert "trace_viewer" not in jax["multi_host_tools"]
    refused = client.get("/trace", query_string={"run": jax["run"], "host": "__all__"})
    assert refused.status_code == 400


def test_an_unreadable_rank_is_left_out_and_named(client: Client) -> None:
    run = _run(client, "torch_broken")
    assert len(run["hosts"]) == 2
    head = client.get("/data", query_string={"run": run["run"], "host": "__all__", "tool": "trace_viewer"}).get_json()
    assert [e["host"] for e in head["host_errors"]] == [h for h in run["hosts"] if h.startswith("rank1")]
    window = client.get("/trace", query_string={"run": run["run"], "host": "__all__", "format": "json"})
    assert window.status_code == 200, window.get_data(as_text=True)
    assert {t["group"] for t in window.get_json()["tracks"]} <= {g["id"] for g in head["groups"]}
