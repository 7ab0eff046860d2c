"""Combining a pod's partials in a tree (issue #28): a batch of consecutive hosts converts in one
worker task, which combines the batch's op tables; the server then merges one table per batch
(``PodPartials``) instead of one per host. Every all-hosts tool on partials and ``tbprof
summary`` must give the JSON that combining host by host gives (the same per-host partials,
as a plain list: today's combine), and the stores' answer where it is cheap to get, with every
host carried back in its batch's binary frame (analyses/partial_batches.py): on
jax_2hosts, on a pod of all the demo XSpace hosts (different programs, so the op tables differ
from host to host and their order matters), and on a generated 300-host pod; in-process, on a
process pool and on a real Dask ``LocalCluster``."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod
from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.ops import op_metrics
from tbprof.analyses.partial_batches import FRAMED
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.analyses.partials import PodPartials
from tbprof.service import tools as registry
from tbprof.service.executor import BATCHES_PER_WORKER, DaskExecutor, Executor, InProcess, ProcessPool, batches
from tbprof.service.profiles import Profiles
from tbprof.service.summary import of_hosts, summary

# Options besides the defaults (as tests/service/test_partials.py).
OPTION_SETS: dict[str, list[dict[str, str]]] = {
    "overview_page": [{}], "input_pipeline_analyzer": [{}], "kernel_stats": [{}],
    "framework_op_stats": [{}, {"include_idle": "true"}],
    "pod_viewer": [{}, {"step": "0"}],
}
DEMO_XSPACE = ("keras_cnn", "custom_loop", "jax_mlp", "jax_2hosts")


@pytest.fixture(autouse=True)
def _workers_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))


# Memo keys for which a PodPartials answered combined tables (``_record_combined``).
USED: list[Any] = []
# How each host of every batch frame the server decoded travelled (``_record_frames``).
MODES: list[int] = []


@pytest.fixture(autouse=True)
def _record_combined(monkeypatch: pytest.MonkeyPatch) -> None:
    combined = PodPartials.combined

    def recording(self: PodPartials, key: Any) -> Any:
        value = combined(self, key)
        if value is not None:
            USED.append(key)
        return value

    USED.clear()
    monkeypatch.setattr(PodPartials, "combined", recording)


@pytest.fixture(autouse=True)
def _record_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """The frames the server decoded (in this process, whichever executor converted)."""
    from tbprof.analyses import partial_batches
    from tbprof.analyses.partial_frames import Frame

    decode = partial_batches.decode_batch

    def recording(frame: bytes, hosts: Any) -> Any:
        MODES.extend(Frame(frame).get("mode", "<u1").tolist())
        return decode(frame, hosts)

    MODES.clear()
    monkeypatch.setattr(partial_batches, "decode_batch", recording)


def _framed(hosts: int) -> None:
    """Every converted host came back in a batch frame, as arrays (none as its blob alone)."""
    assert MODES.count(FRAMED) == len(MODES) == hosts


@pytest.fixture(scope="module")
def mixed_pod(tmp_path_factory: pytest.TempPathFactory, profiles_root: Path) -> Path:
    """Eleven hosts: the demo XSpace hosts (five files of four programs), copied round-robin."""
    sources = sorted(f for name in DEMO_XSPACE for f in (profiles_root / name).rglob("*.xplane.pb"))
    assert len(sources) == 5
    root = tmp_path_factory.mktemp("mixed")
    make_pod(root, 11, sources)
    return root


@pytest.fixture(scope="module")
def pod300(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 hosts: copies of jax_2hosts' two real host files (bench/make_pod.py)."""
    root = tmp_path_factory.mktemp("pod300")
    make_pod(root, 300)
    return root


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    pool = ProcessPool(2)
    pool.start()  # as a server starts it: a small pod would otherwise convert in-process
    yield pool
    pool.close()


def _tree_and_flat(profiles: Profiles) -> tuple[dict[str, Any], dict[str, Any], PodPartials]:
    """Every covered tool and the summary through the service (the tree), and the same tools
    over the same partials as a plain list (host by host)."""
    run = next(iter(profiles.index.runs().values()))
    hosts = list(run.hosts)
    parts = profiles.host_partials(run, hosts)
    assert parts is not None and not parts[1]
    tree: dict[str, Any] = {"summary": summary(profiles, run)}
    flat: dict[str, Any] = {"summary": of_hosts(run, list(parts[0]), [])}
    for name, option_sets in OPTION_SETS.items():
        tool = profiles.tool(name)
        for raw in option_sets:
            tree[f"{name}{raw}"] = profiles.compute(run, hosts, tool, raw)
            flat[f"{name}{raw}"] = tool.compute(list(parts[0]), tool.parse_options(raw))
    return json.loads(to_json_bytes(tree)), json.loads(to_json_bytes(flat)), parts[0]


def _check(profiles: Profiles, reference: dict[str, Any] | None = None) -> PodPartials:
    tree, flat, parts = _tree_and_flat(profiles)
    assert tree == flat
    if reference is not None:
        assert tree == reference
    # The tree was used: runs of hosts with combined tables, and the tools took both combined
    # tables from them (a run's tables stand for all its hosts); the summary the device ops'
    # times (``DEVICE_OP_TIMES``), from the same combined device tables.
    assert parts.segments and sum(e - s for s, e, _ in parts.segments) > len(parts) // 2
    assert set(USED) == {op_metrics.HOST_KEY, op_metrics.DEVICE_KEY, op_metrics.DEVICE_TIMES_KEY}
    return parts


def _from_stores(logdir: Path, cache: Path) -> dict[str, Any]:
    """The reference where it is cheap: every tool and the summary over the full stores."""

    class StoresOnly(Profiles):
        def host_partials(self, run: Any, hosts: Any, parts: Any = None) -> None:
            return None

    profiles = StoresOnly(logdir, cache_dir=cache)
    run = next(iter(profiles.index.runs().values()))
    hosts = list(run.hosts)
    out: dict[str, Any] = {"summary": summary(profiles, run)}
    for name, option_sets in OPTION_SETS.items():
        for raw in option_sets:
            out[f"{name}{raw}"] = profiles.compute(run, hosts, profiles.tool(name), raw)
    return json.loads(to_json_bytes(out))


def test_covers_every_partial_tool() -> None:
    assert set(OPTION_SETS) == registry.partial_tools()


def test_batches_are_runs_of_consecutive_hosts() -> None:
    from tbprof.service.executor import HostTask

    for hosts in (1, 3, 11, 256, 1024):
        tasks = [HostTask(f"h{i}", "", "xspace", "") for i in range(hosts)]
        for workers in (1, 2, 3, 16, 64):
            got = batches(tasks, workers)
            assert [t for b in got for t in b] == tasks  # in order, each once
            sizes = [len(b) for b in got]
            # Falling (a host more than the batch before at most: rounding), never ending larger.
            assert all(b <= a + 1 for a, b in itertools.pairwise(sizes)) and sizes[-1] <= sizes[0]
            if hosts >= 8 * len(got):  # hosts enough to tell: the last batch is the first's quarter
                assert 2 * sizes[-1] <= sizes[0]
            assert min(hosts, workers) <= len(got) <= BATCHES_PER_WORKER * workers  # every worker has work
            if hosts >= 2 * workers:  # hosts enough: no batch of one host, which combines nothing
                assert min(map(len, got)) >= 2


@pytest.mark.parametrize("batch_hosts", [2, 3, 4])
def test_demo_pods_in_process(mixed_pod: Path, profiles_root: Path, tmp_path: Path, batch_hosts: int) -> None:
    reference = _from_stores(mixed_pod, tmp_path / "ref")
    MODES.clear()
    _check(Profiles(mixed_pod, cache_dir=tmp_path / "c", executor=InProcess(batch_hosts)), reference)
    # The last batch may hold one host (converted without a frame: nothing to combine).
    assert len(MODES) >= 11 - 1 and set(MODES) == {FRAMED}
    two = profiles_root / "jax_2hosts"
    if batch_hosts == 2:
        _check(Profiles(two, cache_dir=tmp_path / "c2", executor=InProcess(2)), _from_stores(two, tmp_path / "r2"))


def test_demo_pod_on_a_pool_with_cached_hosts_between(mixed_pod: Path, tmp_path: Path, pool: ProcessPool) -> None:
    """Hosts whose partials are cached already are not converted: the batches then cover runs
    of the others, and the cached hosts between them are combined one by one."""
    reference = _from_stores(mixed_pod, tmp_path / "ref")
    MODES.clear()
    _check(Profiles(mixed_pod, cache_dir=tmp_path / "c", executor=pool), reference)
    _framed(11)
    # Hosts 0003 and 0007 converted alone first (their partials cached), then the whole pod.
    cache = tmp_path / "c2"
    single = tmp_path / "single"
    for h in ("host0003", "host0007"):
        f = next(mixed_pod.rglob(f"{h}.xplane.pb"))
        (single / h / "plugins" / "profile" / "s").mkdir(parents=True)
        shutil.copy2(f, single / h / "plugins" / "profile" / "s" / f.name)
    first = Profiles(mixed_pod, cache_dir=cache, executor=InProcess())
    run = next(iter(first.index.runs().values()))
    first.host_partials(run, ["host0003", "host0007"])
    profiles = Profiles(mixed_pod, cache_dir=cache, executor=pool)
    parts = _check(profiles, reference)
    assert all(not (s <= 3 < e) and not (s <= 7 < e) for s, e, _ in parts.segments)


@pytest.mark.slow
def test_300_hosts_in_process_on_a_pool_and_on_dask(pod300: Path, tmp_path: Path, pool: ProcessPool) -> None:
    from distributed import LocalCluster

    results = []
    executors: list[Executor] = [InProcess(37), pool]
    for i, executor in enumerate(executors):
        MODES.clear()
        results.append(_tree_and_flat(Profiles(pod300, cache_dir=tmp_path / f"c{i}", executor=executor)))
        _framed(300)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        dask = DaskExecutor(cluster.scheduler_address)
        try:
            MODES.clear()
            results.append(_tree_and_flat(Profiles(pod300, cache_dir=tmp_path / "cd", executor=dask)))
            _framed(300)
            # ``tbprof summary``'s own request: the workers compute the headline's parts only.
            lean = Profiles(pod300, cache_dir=tmp_path / "cl", executor=dask)
            lean_summary = json.loads(to_json_bytes(summary(lean, next(iter(lean.index.runs().values())),
                                                            HEADLINE_PARTS)))
        finally:
            dask.close()
    assert lean_summary == results[0][1]["summary"]
    for tree, flat, parts in results:
        assert tree == flat == results[0][1]
        assert len(parts) == 300 and parts.segments
    assert set(USED) == {op_metrics.HOST_KEY, op_metrics.DEVICE_KEY, op_metrics.DEVICE_TIMES_KEY}
    assert results[0][0]["summary"]["host_count"] == 300


@pytest.mark.slow
def test_300_hosts_through_the_command_on_a_forked_pool(pod300: Path, tmp_path: Path) -> None:
    """``tbprof summary`` of a pod worth a pool forks its workers itself (issue #28: before it
    imports, while it has no other thread), and leaves at once after the answer: the JSON is the
    in-process command's, the exit clean (no warning on stderr: a forked pool leaves no named
    semaphores behind)."""
    import subprocess

    def command(workers: int, cache: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, TBPROF_CACHE_DIR=str(tmp_path / cache))
        return subprocess.run([sys.executable, "-m", "tbprof.cli", "summary", str(pod300), "--json", "--workers",
                               str(workers)], env=env, capture_output=True, text=True, timeout=600)

    single, pooled = command(1, "c1"), command(2, "c2")
    assert single.returncode == 0 and pooled.returncode == 0, pooled.stderr
    assert json.loads(pooled.stdout) == json.loads(single.stdout)
    assert json.loads(pooled.stdout)["host_count"] == 300
    assert pooled.stderr == ""
    # The workers were forked from the command (not the fork server's).
    probe = f"""
from tbprof.service.executor import ProcessPool
pool = ProcessPool(2)
assert pool.start_early({str(pod300)!r})
pool.wait_ready()
print(pool.forked)
pool.close(wait=False)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "True", out.stderr
