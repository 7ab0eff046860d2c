"""All-hosts tools from per-host partials (analyses/partials.py) give exactly the answers the
tools give from the full stores: on jax_2hosts' two real hosts and on a pod of copies of them,
in-process and through a real 2-worker process pool, with default and other options; the
server answers from partials without loading a store, also after a restart (partials persisted
next to the stores), and uses the stores when a partial cannot serve (chosen up front: a damaged
partial is refused when decoded, never in a tool)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod
from tbprof.analyses import partials as partials_module
from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.analyses.partials import (
    ALL_PARTS,
    CARRIED,
    CARRIED_BY_NAME,
    HostPartial,
    decode_partials,
    encode_partials,
    partial_from_bytes,
)
from tbprof.analyses.steps.assignment import STEPS, compute_steps
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools as registry
from tbprof.service.executor import ProcessPool
from tbprof.service.partials import DECODED_BYTES_PER_BLOB_BYTE, make_partial
from tbprof.service.profiles import Profiles
from tbprof.service.summary import summary
from tbprof.store.view import CarriedValue

POD_HOSTS = 6
# Options besides the defaults: a partial holds per-host values, not one option's result.
OPTION_SETS: dict[str, list[dict[str, str]]] = {
    "overview_page": [{}], "input_pipeline_analyzer": [{}], "kernel_stats": [{}],
    "framework_op_stats": [{}, {"include_idle": "true"}],
    "pod_viewer": [{}, {"step": "0"}, {"step": "2"}],
}


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six hosts: copies of jax_2hosts' two real host files (bench/make_pod.py)."""
    root = tmp_path_factory.mktemp("pod")
    make_pod(root, POD_HOSTS)
    return root


@pytest.fixture(autouse=True)
def _workers_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _from_stores(logdir: Path, cache: Path) -> dict[str, Any]:
    """The reference: every covered tool computed by the tool itself over the full stores."""
    profiles = Profiles(logdir, cache_dir=cache)
    run = next(iter(profiles.index.runs().values()))
    stores = [profiles.store(run, h) for h in run.hosts]
    out: dict[str, Any] = {}
    for name, option_sets in OPTION_SETS.items():
        tool = profiles.tool(name)
        for raw in option_sets:
            out[f"{name}{raw}"] = tool.compute(stores, tool.parse_options(raw))
    return json.loads(to_json_bytes(out))


def _through_service(profiles: Profiles) -> dict[str, Any]:
    run = next(iter(profiles.index.runs().values()))
    out: dict[str, Any] = {}
    for name, option_sets in OPTION_SETS.items():
        for raw in option_sets:
            out[f"{name}{raw}"] = profiles.compute(run, list(run.hosts), profiles.tool(name), raw)
    return json.loads(to_json_bytes(out))


@pytest.fixture(scope="module")
def two_hosts(profiles_root: Path) -> Path:
    return profiles_root / "jax_2hosts"


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    pool = ProcessPool(2)
    pool.start()  # as a server starts it: a small pod would otherwise convert in-process
    yield pool
    pool.close()


def test_every_carried_value_is_carried() -> None:
    """Every CarriedValue an analysis defines (what a tool typed on StoreView may derive) is in
    CARRIED, so a partial holds it: scanned over every analyses module a tool imports. CARRIED
    holds the analysis's own value, or one under its memo key that computes through it (the
    analyses a pod's summary does not read, imported on first use): a store then memoises one
    value under that key, whichever of the two derived it first."""
    import importlib
    import pkgutil

    import tbprof.analyses
    from tbprof.analyses import partials

    for info in pkgutil.walk_packages(tbprof.analyses.__path__, "tbprof.analyses."):
        importlib.import_module(info.name)
    defined = {id(v): (f"{name}.{attr}", v) for name, module in list(sys.modules.items())
               if name.startswith("tbprof.") and name != partials.__name__
               for attr, v in vars(module).items() if isinstance(v, CarriedValue)}
    assert len(defined) >= 7
    carried_keys = {c.key for c in CARRIED}
    assert sorted(n for n, v in defined.values() if v.key not in carried_keys) == []
    by_key = {v.key: v for _, v in defined.values()}
    assert len(by_key) == len(defined)  # one analysis value per key
    proxies = [c for c in CARRIED if id(c.value) not in defined and c.memoised]
    assert {c.name for c in proxies} == {"kernel_reports", "precision"}
    for c in proxies:
        assert c.key in by_key and c.value is not by_key[c.key]


@pytest.mark.parametrize(("name", "module", "own"), [("kernel_reports", "kernel_stats", "kernel_reports"),
                                                      ("precision", "precision", "host_precision")])
def test_a_value_carried_through_its_analysis_is_the_analysiss(profiles_root: Path, name: str, module: str,
                                                                own: str) -> None:
    """The partial's stand-in for an analysis imported on first use computes by that analysis's
    own code and shares its memo entry: derived through the stand-in, the analysis's own accessor
    finds the same object; on another store of the same host, the other order gives equal JSON."""
    import importlib

    analysis = importlib.import_module(f"tbprof.analyses.ops.{module}")
    path = next((profiles_root / "jax_mlp").rglob("*.xplane.pb"))
    store = read_xspace(str(path))
    through = store.derive(CARRIED_BY_NAME[name].value)
    assert getattr(analysis, own)(store) is through
    other = read_xspace(str(path))
    direct = getattr(analysis, own)(other)
    assert other.derive(CARRIED_BY_NAME[name].value) is direct
    assert to_json_bytes(CARRIED_BY_NAME[name].pack(through)) == to_json_bytes(CARRIED_BY_NAME[name].pack(direct))


@pytest.mark.parametrize("name", ["jax_2hosts", "jax_mlp", "keras_cnn", "custom_loop", "tpu_inference"])
def test_a_partials_summary_is_the_hosts_summary(name: str) -> None:
    """A partial's header carries ``summarize_store``'s ``SUMMARY_KEYS``, computed without
    summarising every plane: the same values on every demo XSpace host (GPU, CPU-only, TPU)."""
    from tbprof.analyses.overview.profile_summary import summarize_store

    for path in sorted((Path(__file__).resolve().parents[2] / "demo_logs" / name).rglob("*.xplane.pb")):
        store = read_xspace(path)
        whole: dict[str, Any] = dict(summarize_store(store))
        fields = partials_module.build_partial(store, None, frozenset())
        assert fields["summary"] == {k: whole[k] for k in partials_module.SUMMARY_KEYS}
        assert list(fields["summary"]) == [k for k in whole if k in partials_module.SUMMARY_KEYS]


def test_covered_tools_are_registered_multi_host_tools() -> None:
    # The tools with a compute typed on StoreView (store/view.py) are the ones that run on partials.
    assert registry.partial_tools() == {"overview_page", "input_pipeline_analyzer", "framework_op_stats",
                                        "kernel_stats", "pod_viewer"}
    assert set(OPTION_SETS) == registry.partial_tools()
    for name in registry.partial_tools():
        tool = registry.get(name)
        assert tool is not None and tool.multi_host and tool.compute_partials is tool.compute
    # The service chooses partials or stores up front: no exception drives a fallback any more.
    assert not hasattr(partials_module, "MissingPartial")


def test_two_real_hosts_in_process_equal_stores(two_hosts: Path, tmp_path: Path) -> None:
    reference = _from_stores(two_hosts, tmp_path / "c1")
    profiles = Profiles(two_hosts, cache_dir=tmp_path / "c2")
    assert _through_service(profiles) == reference
    # The answers came from partials: one per host was written next to the stores.
    assert len(list((tmp_path / "c2" / "partials").glob("*.bin"))) == 2
    # A restarted server with only the partials in its cache (no stores) gives the same answers
    # and loads no store.
    (tmp_path / "c3").mkdir()
    shutil.copytree(tmp_path / "c2" / "partials", tmp_path / "c3" / "partials")
    restarted = Profiles(two_hosts, cache_dir=tmp_path / "c3")
    assert _through_service(restarted) == reference
    run = next(iter(restarted.index.runs().values()))
    assert not any(restarted.is_loaded(run, h) for h in run.hosts)
    # Damaged partial files (a step's begin changed, bytes the header does not cover): refused
    # when read, so the server converts the hosts again and answers as from the stores.
    (tmp_path / "c4").mkdir()
    shutil.copytree(tmp_path / "c2" / "partials", tmp_path / "c4" / "partials")
    for f in (tmp_path / "c4" / "partials").glob("*.bin"):
        f.write_bytes(_damaged(f.read_bytes()))
    assert _through_service(Profiles(two_hosts, cache_dir=tmp_path / "c4")) == reference


def test_pod_on_a_process_pool_equals_stores(pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    reference = _from_stores(pod, tmp_path / "c1")
    profiles = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
    progress: list[tuple[int, int]] = []
    profiles.progress = lambda done, total: progress.append((done, total))
    assert _through_service(profiles) == reference
    # Each host converted once, by a worker; the server holds partials, no store.
    assert progress == [(i, POD_HOSTS) for i in range(1, POD_HOSTS + 1)]
    run = next(iter(profiles.index.runs().values()))
    assert not any(profiles.is_loaded(run, h) for h in run.hosts)
    assert all(profiles.is_ready(run, h) for h in run.hosts)
    # A restarted server finds the workers' partial files itself (its one listing): it hands no
    # host out, the workers no longer looking each one up again.
    restarted = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
    again: list[tuple[int, int]] = []
    restarted.progress = lambda done, total: again.append((done, total))
    assert _through_service(restarted) == reference
    assert again == []


def test_pod_in_process_equals_stores(pod: Path, tmp_path: Path) -> None:
    assert _through_service(Profiles(pod, cache_dir=tmp_path / "c2")) == _from_stores(pod, tmp_path / "c1")


def _summary_from_stores(logdir: Path, cache: Path) -> dict[str, Any]:
    """``tbprof summary`` with partials out of play: a one-host Profiles per host is not it, so
    hand summary() a Profiles whose host_partials has nothing (the store path)."""

    class StoresOnly(Profiles):
        def host_partials(self, run: Any, hosts: Any, parts: Any = None) -> None:
            return None

    profiles = StoresOnly(logdir, cache_dir=cache)
    run = next(iter(profiles.index.runs().values()))
    return json.loads(to_json_bytes({"summary": summary(profiles, run), "tools": profiles.tools(run)}))


def test_summary_and_tool_list_of_a_pod_from_partials(pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    reference = _summary_from_stores(pod, tmp_path / "c1")
    # jax_2hosts has GPUs: the summary's GPU fields (idle %, communication %) come from partials too.
    assert "device_idle_percent" in reference["summary"] and reference["summary"]["host_count"] == POD_HOSTS
    for executor in (None, pool):
        cache = tmp_path / f"c-{executor is None}"
        profiles = Profiles(pod, cache_dir=cache, executor=executor)
        run = next(iter(profiles.index.runs().values()))
        got = json.loads(to_json_bytes({"summary": summary(profiles, run), "tools": profiles.tools(run)}))
        assert got == reference
        if executor is not None:
            assert not any(profiles.is_loaded(run, h) for h in run.hosts)


def test_a_summarys_workers_compute_the_headlines_parts_and_a_tool_gets_the_rest(
        pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    """``tbprof summary`` of a pod asks for what the headline reads (``HEADLINE_PARTS``): its
    partials, in memory and on disk, hold those only, and its answer is the stores' answer. A tool
    then asked for the same pod gets its hosts converted again, complete (its answer the stores'
    too), and a summary after it uses those complete partials without converting anything."""
    reference = _summary_from_stores(pod, tmp_path / "c1")["summary"]
    tool_reference = _from_stores(pod, tmp_path / "c0")["kernel_stats{}"]
    for executor in (None, pool):
        cache = tmp_path / f"c-{executor is None}"
        profiles = Profiles(pod, cache_dir=cache, executor=executor)
        progress: list[tuple[int, int]] = []
        profiles.progress = lambda done, total, progress=progress: progress.append((done, total))
        run = next(iter(profiles.index.runs().values()))
        assert json.loads(to_json_bytes(summary(profiles, run, HEADLINE_PARTS))) == reference
        files = sorted((cache / "partials").glob("*.bin"))
        assert len(files) == POD_HOSTS
        assert all(partial_from_bytes(f.read_bytes()).parts() == HEADLINE_PARTS for f in files)
        held = profiles.host_partials(run, list(run.hosts), HEADLINE_PARTS)
        assert held is not None and all(p.parts() == HEADLINE_PARTS for p in held[0])
        converted = len(progress)
        got = profiles.compute(run, list(run.hosts), profiles.tool("kernel_stats"), {})
        assert json.loads(to_json_bytes(got)) == tool_reference
        assert len(progress) > converted  # the lean partials could not serve: converted again
        assert all(partial_from_bytes(f.read_bytes()).parts() == ALL_PARTS for f in files)
        converted = len(progress)
        assert json.loads(to_json_bytes(summary(profiles, run, HEADLINE_PARTS))) == reference
        assert len(progress) == converted
        if executor is not None:
            assert not any(profiles.is_loaded(run, h) for h in run.hosts)


def test_a_broken_host_is_named_as_on_the_store_path(pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    broken = tmp_path / "pod"
    shutil.copytree(pod, broken)
    next(broken.rglob("host0001.xplane.pb")).write_bytes(b"\x0a\xff\xff")
    for executor in (None, pool):
        profiles = Profiles(broken, cache_dir=tmp_path / f"c-{executor is None}", executor=executor)
        run = next(iter(profiles.index.runs().values()))
        out = profiles.compute(run, list(run.hosts), profiles.tool("overview_page"), {})
        assert [e["host"] for e in out["host_errors"]] == ["host0001"]
        assert out["run_environment"]["host_count"] == POD_HOSTS - 1


def test_arrays_round_trip_exactly() -> None:
    arrays = [np.array([1.0 / 3, np.nan, np.inf, -0.0, 1e-300]), np.arange(6, dtype=np.int64).reshape(2, 3),
              np.array(["a", "", "é"], dtype=object), np.zeros(0, dtype=object), np.array([True, False]),
              np.zeros((0, 4)), np.array([2**62], dtype=np.int64), np.array([0.1], dtype=np.float32)]
    for a in arrays:
        b = _round_trip(a)
        assert b.dtype == a.dtype and b.shape == a.shape
        assert a.tobytes() == b.tobytes() if a.dtype != object else a.tolist() == b.tolist()


def _round_trip(a: np.ndarray) -> np.ndarray:
    """An array through a host partial's binary form (as a plane stat of a one-plane host)."""
    from tbprof.analyses.partials import pack_value

    host = {"host": "h", "format": "xspace", "source_path": "", "span_ps": 0, "hostnames": [], "errors": [],
            "warnings": [], "metadata": pack_value({}), "summary": {}, "available_tools": [], "carried": {},
            "planes": [{"name": "p", "n_events": 0, "plane_stats": pack_value({"a": a})}]}
    part = decode_partials(encode_partials([host])).hosts[0]
    out = part.planes[0].plane_stats["a"]
    assert isinstance(out, np.ndarray)
    return out


def test_a_partial_refuses_what_it_does_not_carry(two_hosts: Path, tmp_path: Path) -> None:
    profiles = Profiles(two_hosts, cache_dir=tmp_path / "c")
    run = next(iter(profiles.index.runs().values()))
    blob = make_partial(profiles.event_store(run, next(iter(run.hosts))))
    assert blob is not None
    part = partial_from_bytes(blob)
    assert isinstance(part, HostPartial)
    # StoreView.derive takes CarriedValues only (a Derived such as DEVICE_FRAMEWORK_OPS is a
    # mypy error); one that CARRIED does not list is refused by name, not with a wrong value.
    assert part.derive(STEPS) is part.derive(STEPS) and part.derive(STEPS).names
    with pytest.raises(LookupError, match="does not carry"):
        part.derive(CarriedValue(("not", "carried"), compute_steps))
    # A partial of another version, or damaged bytes, is refused when decoded, never later when
    # a tool reads a carried value: a byte changed in a carried value's text (decoded on first
    # use) is caught by the checksum.
    with pytest.raises(ValueError):
        partial_from_bytes(blob[:4] + (99).to_bytes(4, "little") + blob[8:])
    for damaged in (b"", blob[:20], b"XXXX" + blob[4:], blob[:-8], _damaged(blob), _damaged(blob, text=True)):
        with pytest.raises(ValueError):
            partial_from_bytes(damaged)


def _damaged(blob: bytes, text: bool = False) -> bytes:
    """``blob`` with one byte changed in a carried value that is decoded on first use: byte 5 of
    the first step's begin (+2**40 ps: every step time changes) or, ``text``, the first ``"`` of
    the steps' JSON text (no longer JSON). Either passes the checks of the header."""
    from tbprof.analyses.partials import _ALIGN, _PREFIX

    _, _, table_len, header_len, _ = _PREFIX.unpack_from(blob)
    table = json.loads(blob[_PREFIX.size:_PREFIX.size + table_len])
    header = json.loads(blob[_PREFIX.size + table_len:_PREFIX.size + table_len + header_len])
    end = _PREFIX.size + table_len + header_len
    data_start = end + (-end % _ALIGN)
    offset, length = header["hosts"][0]["carried"]["steps"]
    if text:
        at = data_start + offset + blob[data_start + offset:data_start + offset + length].index(b'"')
        return blob[:at] + b"[" + blob[at + 1:]
    steps = json.loads(blob[data_start + offset:data_start + offset + length])
    dtype, array_offset, count = table[steps["begin_ps"]["__array__"]["data"]["__buf__"]]
    assert dtype == "<i8" and count > 0
    at = data_start + array_offset + 5
    return blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1:]


def test_partial_memory_is_within_its_accounted_size(two_hosts: Path, tmp_path: Path) -> None:
    """The server's byte budget counts a partial as DECODED_BYTES_PER_BLOB_BYTE x its binary
    form; what decoding it, every carried value included, really allocates (tracemalloc) must
    not exceed that."""
    profiles = Profiles(two_hosts, cache_dir=tmp_path / "c")
    run = next(iter(profiles.index.runs().values()))
    for host in run.hosts:
        blob = make_partial(profiles.event_store(run, host))
        assert blob is not None
        tracemalloc.start()
        part = partial_from_bytes(blob)
        for key in list(part.lazy):
            part.carried(key)
        assert all(isinstance(p.plane_stats, dict) for p in part.planes)
        allocated, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert part.host == host and not part.lazy
        assert allocated <= DECODED_BYTES_PER_BLOB_BYTE * len(blob)


def test_an_unreadable_host_is_read_once_per_version_of_its_file(pod: Path, tmp_path: Path) -> None:
    broken = tmp_path / "pod"
    shutil.copytree(pod, broken)
    bad = [next(broken.rglob(f"host000{i}.xplane.pb")) for i in (2, 3)]
    for f in bad:
        f.write_bytes(b"\x0a\xff\xff")
    profiles = Profiles(broken, cache_dir=tmp_path / "c")
    batches: list[int] = []  # hosts sent to the executor per batch (the progress total)
    profiles.progress = lambda done, total: batches.append(total) if done == 1 else None
    run = next(iter(profiles.index.runs().values()))
    first = profiles.host_partials(run, list(run.hosts))
    assert first is not None and [e["host"] for e in first[1]] == ["host0002", "host0003"]
    assert batches == [POD_HOSTS]
    # Asked again (another tool of the page): the broken files are not sent to be read again.
    again = profiles.host_partials(run, list(run.hosts))
    assert again is not None and again[1] == first[1] and batches == [POD_HOSTS]
    # Fixed (the files change, so their cache keys do): read again, and now they have partials.
    for f in bad:
        shutil.copyfile(next(pod.rglob(f.name)), f)
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    fixed = profiles.host_partials(run, list(run.hosts))
    assert fixed is not None and fixed[1] == [] and len(fixed[0]) == POD_HOSTS
    assert batches == [POD_HOSTS, 2]


def test_summary_waits_for_the_background_partials(pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    """``tbprof summary`` starts the hosts converting while it imports (load_in_background):
    the summary then uses those partials instead of sending the pod to the workers again."""
    profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=pool)
    progress: list[tuple[int, int]] = []
    profiles.progress = lambda done, total: progress.append((done, total))
    run = next(iter(profiles.index.runs().values()))
    loading = profiles.load_in_background(run, list(run.hosts), parts=HEADLINE_PARTS)  # as the command asks
    out = summary(profiles, run, HEADLINE_PARTS)
    loading.join()
    assert out["host_count"] == POD_HOSTS
    assert progress == [(i, POD_HOSTS) for i in range(1, POD_HOSTS + 1)]  # each host converted once
    assert not any(profiles.is_loaded(run, h) for h in run.hosts)


def test_compare_of_a_pod_from_partials_equals_the_stores(pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    """compare of two pods (here a pod with itself, a subset of its steps on one side): every
    section, memory included, from the hosts' partials equals the comparison from the stores,
    and the partial path loads no store."""
    from tbprof.service.comparisons import SideSpec, compare_pair

    class StoresOnly(Profiles):
        def host_partials(self, run: Any, hosts: Any, parts: Any = None) -> None:
            return None

    def comparison(profiles: Profiles) -> dict[str, Any]:
        run = next(iter(profiles.index.runs().values()))
        base = SideSpec(run=run.name, host="__all__")
        cand = SideSpec(run=run.name, host="__all__", steps="5:8")  # the pod's steps are 4..11
        return json.loads(to_json_bytes(compare_pair(profiles, base, cand)))

    want = comparison(StoresOnly(pod, cache_dir=tmp_path / "c1"))
    # Every section was compared, memory included (jax_2hosts' hosts have two allocators each).
    assert not want.get("unavailable"), want.get("unavailable")
    assert {"steps", "ops", "kernels", "memory_allocators", "allocations"} <= set(want["tables"])
    profiles = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
    assert comparison(profiles) == want
    run = next(iter(profiles.index.runs().values()))
    assert not any(profiles.is_loaded(run, h) for h in run.hosts)
