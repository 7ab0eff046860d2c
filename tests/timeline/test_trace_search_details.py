"""Search over the whole trace and event details (decoded stats, linked events)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import KIND_REF, KIND_STR, ProfileStore
from tbprof.timeline.details import event_details
from tbprof.timeline.search import SearchError, find_all, search
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import query_window
from tests.conftest import xplane_of


@pytest.fixture(scope="module")
def stores(profiles_root: Path) -> dict[str, ProfileStore]:
    return {name: read_xspace(xplane_of(profiles_root, name)) for name in ("jax_mlp", "custom_loop")}


def _matches_by_hand(store: ProfileStore, needle: str) -> set[tuple[int, int]]:
    """Events whose name, display name or any string stat (own or metadata) contains ``needle``."""
    needle = needle.lower()
    shown = {g.plane for g in track_index(store).groups}
    out: set[tuple[int, int]] = set()
    for p in shown:
        plane = store.planes[p]
        texts = [s.lower() for s in store.strings.as_list()]
        hit = np.array([needle in t for t in texts])
        hit[0] = False
        rows = set(np.nonzero(hit[plane.name_id])[0].tolist())
        meta_hit = hit[plane.meta_display_name_id].copy()
        ms = plane.meta_stats
        for owner, kind, value in zip(ms.owner.tolist(), ms.kind.tolist(), ms.value.tolist(), strict=True):
            if kind in (KIND_STR, KIND_REF) and hit[value]:
                meta_hit[owner] = True
        rows |= set(np.nonzero(meta_hit[plane.meta_idx])[0].tolist())
        st = plane.stats
        text = (st.kind == KIND_STR) | (st.kind == KIND_REF)
        rows |= set(st.owner[text][hit[st.value[text]]].tolist())
        out |= {(p, r) for r in rows}
    return out


@pytest.mark.parametrize(("name", "query"), [("jax_mlp", "fusion"), ("jax_mlp", "jit_train_step"),
                                             ("custom_loop", "iterator"), ("custom_loop", "TRAIN")])
def test_search_counts_every_match(stores: dict[str, ProfileStore], name: str, query: str) -> None:
    store = stores[name]
    want = _matches_by_hand(store, query)
    got = find_all(store, query)
    assert len(want) > 0
    assert set(zip(got.plane.tolist(), got.row.tolist(), strict=True)) == want
    assert np.all(np.diff(got.start_ps) >= 0)  # time order


def test_search_pages_through_all_matches(stores: dict[str, ProfileStore]) -> None:
    store = stores["jax_mlp"]
    total = search(store, "fusion", limit=1)["total"]
    seen = []
    offset: int | None = 0
    while offset is not None:
        page = search(store, "fusion", offset=offset, limit=97)
        seen += [(m["plane"], m["row"]) for m in page["matches"]]
        offset = page["next_offset"]
    assert len(seen) == total == len(set(seen))
    # Previous from the last page walks back.
    last = search(store, "fusion", offset=total - 5, limit=97)
    assert last["prev_offset"] == max(total - 5 - 97, 0) and last["next_offset"] is None
    # from_ps jumps to the first match at or after a time.
    mid = seen[total // 2]
    mid_start = int(store.planes[mid[0]].start_ps[mid[1]])
    jumped = search(store, "fusion", from_ps=mid_start, limit=3)
    assert jumped["matches"][0]["start_ps"] == mid_start


def test_search_finds_matches_outside_the_window(stores: dict[str, ProfileStore]) -> None:
    store = stores["custom_loop"]
    # A window of the first 1 % of the trace: 10 step markers "train" lie all over the trace.
    window = query_window(store, 0, store.span_ps // 100, 1000)
    steps = window.index.steps_track
    assert steps is not None
    assert window.slices[steps].in_window <= 1
    page = search(store, "train", limit=100)
    outside = [m for m in page["matches"] if m["start_ps"] >= store.span_ps // 100]
    assert len(outside) >= 9
    assert all(m["track"] >= 0 for m in page["matches"])


def test_regex_search_and_errors(stores: dict[str, ProfileStore]) -> None:
    store = stores["jax_mlp"]
    got = find_all(store, r"^gemm_fusion_dot_1[78]$", regex=True)
    # Only kernel names match (their hlo_op stat names the command buffer), on both GPUs.
    want = sum(1 for p in (store.planes[2], store.planes[3])
               for n in store.strings.lookup(p.name_id) if re.fullmatch(r"gemm_fusion_dot_1[78]", n))
    assert want > 0 and got.row.shape[0] == want
    with pytest.raises(SearchError):
        find_all(store, "([", regex=True)
    with pytest.raises(SearchError):
        find_all(store, "")


def _kernel_details_by_hand(text: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in text.split())


def test_details_decode_kernel_details(stores: dict[str, ProfileStore]) -> None:
    store = stores["jax_mlp"]
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None
    col = gpu.event_stat(store.stat_id("kernel_details"))
    for row in col.rows[:: max(len(col.rows) // 15, 1)].tolist():
        d = event_details(store, gpu.index, row)
        raw = next(s["value"] for s in d["stats"] if s["name"] == "kernel_details")
        parts = _kernel_details_by_hand(raw)
        k = d["decoded"]["kernel"]
        assert k["registers_per_thread"] == int(parts["regs"])
        assert k["shared_memory_bytes"] == int(parts["static_shared"]) + int(parts["dynamic_shared"])
        assert k["grid"] == [int(x) for x in parts["grid"].split(",")]
        assert k["block"] == [int(x) for x in parts["block"].split(",")]
        assert k["occupancy_pct"] == float(parts["occ_pct"])
        assert d["event"]["name"] == store.strings[int(gpu.name_id[row])]


def test_gpu_kernels_link_to_their_launches(stores: dict[str, ProfileStore]) -> None:
    """jax_mlp: each GPU event with a correlation_id links to the host events carrying that id."""
    store = stores["jax_mlp"]
    cid = store.stat_id("correlation_id")
    host = store.plane("/host:CPU")
    assert host is not None
    host_corr = host.event_stat(cid)
    host_rows_of: dict[int, set[int]] = {}
    for r, v in zip(host_corr.rows.tolist(), host_corr.value.tolist(), strict=True):
        host_rows_of.setdefault(v, set()).add(r)
    checked = 0
    for gpu_name in ("/device:GPU:0", "/device:GPU:1"):
        gpu = store.plane(gpu_name)
        assert gpu is not None
        col = gpu.event_stat(cid)
        for row, corr in list(zip(col.rows.tolist(), col.value.tolist(), strict=True))[::25]:
            d = event_details(store, gpu.index, row)
            launches = {(e["plane"], e["row"]) for e in d["links"].get("launched_by", [])}
            assert launches == {(host.index, r) for r in host_rows_of.get(corr, set())}
            for e in d["links"].get("launched_by", []):
                assert e["start_ps"] <= d["event"]["start_ps"]  # a launch precedes its kernel
                # ... and the launch links back to this kernel.
                back = event_details(store, e["plane"], e["row"])
                assert (gpu.index, row) in {(x["plane"], x["row"]) for x in back["links"]["launches"]}
            checked += 1
    assert checked >= 40


def test_custom_loop_producer_consumer_flows(stores: dict[str, ProfileStore]) -> None:
    store = stores["custom_loop"]
    plane = store.planes[0]
    p_col = plane.event_stat(store.stat_id("_p"))
    row = int(p_col.rows[0])
    value = int(p_col.value[0])
    c_col = plane.event_stat(store.stat_id("_c"))
    consumers = set(c_col.rows[c_col.value == value].tolist())
    d = event_details(store, 0, row)
    assert {e["row"] for e in d["links"]["flow_to"]} == consumers - {row}
    back = event_details(store, 0, sorted(consumers)[0])
    assert row in {e["row"] for e in back["links"]["flow_from"]}


def test_step_marker_lists_its_events(stores: dict[str, ProfileStore]) -> None:
    store = stores["custom_loop"]
    index = track_index(store)
    assert index.steps_track is not None
    steps = index.tracks[index.steps_track]
    assert steps.rows is not None
    row = int(steps.rows[3])
    d = event_details(store, steps.plane, row)
    plane = store.planes[steps.plane]
    s, e = int(plane.start_ps[row]), int(plane.start_ps[row] + plane.dur_ps[row])
    want = int(((plane.start_ps < e) & (plane.start_ps + plane.dur_ps > s)).sum())
    assert sum(c["count"] for c in d["links"]["step_events"]) == want
    # An event inside the step links back to it.
    inside = int(np.nonzero((plane.start_ps > s) & (plane.start_ps < e) & (plane.depth > 0))[0][0])
    assert event_details(store, steps.plane, inside)["links"]["step"][0]["row"] == row


def test_pytorch_kernel_details_and_flows(sample_profiles: Path) -> None:
    store = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    gpu = store.plane("/device:GPU:0")
    cpu = store.plane("/host:CPU")
    assert gpu is not None and cpu is not None
    cat = gpu.event_stat(store.stat_id("cat")).dense_str(gpu.n_events)
    row = int(np.nonzero(cat == store.strings.id("kernel"))[0][0])
    d = event_details(store, gpu.index, row)
    k = d["decoded"]["kernel"]
    values = {s["name"]: s["value"] for s in d["stats"]}
    assert k["registers_per_thread"] == values["registers per thread"]
    assert k["grid"] == [int(x) for x in re.findall(r"\d+", values["grid"])]
    launcher = d["links"]["launched_by"][0]
    assert launcher["plane"] == cpu.index
    # The ac2g flow links the same pair.
    assert (cpu.index, launcher["row"]) in {(e["plane"], e["row"]) for e in d["links"]["flow_from"]}


def test_search_points_at_the_first_device_match(stores: dict[str, ProfileStore]) -> None:
    """#29 §5: a kernel's name is on its CPU launch too, earlier in time; the viewer starts at
    the first match on a device plane."""
    from tbprof.domain.planes import device_planes_of

    store = stores["jax_mlp"]
    devices = set(device_planes_of(store))
    m = find_all(store, "sm90_xmma_gemm")
    on_device = [k for k, p in enumerate(m.plane.tolist()) if p in devices]
    assert on_device and m.plane[0] not in devices  # the first match in time is the CPU launch
    page = search(store, "sm90_xmma_gemm", limit=1)
    assert page["first_device_offset"] == on_device[0]
    assert search(stores["custom_loop"], "Iterator", limit=1)["first_device_offset"] is None  # no device
