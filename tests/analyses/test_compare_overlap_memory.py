"""Compare (#29 §4): it says how many ops the two sides share and warns when few do, and its
memory part makes the memory page's statement: a PyTorch run's memory (which the memory page
shows) is compared, its "capacity" named as the page names it (reserved by the allocator)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tbprof.analyses.compare.report import OVERLAP_WARN_BELOW
from tbprof.analyses.memory.memory_profile import capacity_meaning
from tbprof.analyses.results.compare import CompareResult
from tbprof.service.comparisons import SideSpec, compare_pair
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, select_hosts


@pytest.fixture(scope="module")
def profiles(profiles_root: Path, sample_profiles: Path, tmp_path_factory: pytest.TempPathFactory) -> Profiles:
    root = tmp_path_factory.mktemp("cmp_overlap")
    for name in ("keras_cnn", "jax_mlp"):
        shutil.copytree(profiles_root / name, root / name)
    for name in ("torch_cnn", "torch_ddp"):
        shutil.copytree(sample_profiles / name, root / name)
    return Profiles(root, cache_dir=tmp_path_factory.mktemp("cmp_overlap_cache"))


def _run(profiles: Profiles, prefix: str) -> str:
    return next(name for name in profiles.index.runs() if name.startswith(prefix))


def _status_counts(result: CompareResult, table: str) -> tuple[int, int, int]:
    status = np.asarray(result["tables"][table].data["status"], dtype=object)
    both = int(np.sum(status == "both"))
    return both, both + int(np.sum(status == "removed")), both + int(np.sum(status == "added"))


def test_unrelated_runs_warn_with_counts(profiles: Profiles) -> None:
    """A Keras CPU run against a JAX GPU run: no op in common, and the page is told so."""
    result = compare_pair(profiles, SideSpec(_run(profiles, "keras_cnn")), SideSpec(_run(profiles, "jax_mlp")))
    both, n_base, n_cand = _status_counts(result, "ops")
    assert result["overlap"]["ops"] == {"both": both, "baseline": n_base, "candidate": n_cand}
    assert both < OVERLAP_WARN_BELOW * min(n_base, n_cand)
    (warning,) = result["warnings"]
    assert f"Only {both} ops appear on both sides (the baseline has {n_base}, the candidate {n_cand})" in warning


def test_related_runs_do_not_warn(profiles: Profiles) -> None:
    """A run against itself: every op on both sides, no warning."""
    run = _run(profiles, "jax_mlp")
    result = compare_pair(profiles, SideSpec(run), SideSpec(run))
    both, n_base, n_cand = _status_counts(result, "ops")
    assert both == n_base == n_cand > 0
    assert result["warnings"] == []


def test_pytorch_memory_is_compared_in_the_memory_pages_words(profiles: Profiles) -> None:
    """The memory page shows torch_ddp's memory profile (Kineto [memory] events); compare used to
    say 'tbprof has no memory analysis for pytorch runs'."""
    torch_ddp, torch_cnn = _run(profiles, "torch_ddp"), _run(profiles, "torch_cnn")
    run = profiles.run(torch_ddp)
    page = profiles.compute(run, select_hosts(run, ALL_HOSTS)[:1], profiles.tool("memory_profile"), {})
    assert page["memory_ids"]
    result = compare_pair(profiles, SideSpec(torch_cnn), SideSpec(torch_ddp, ALL_HOSTS))
    assert "memory" not in result["unavailable"]
    rows = result["tables"]["memory_allocators"]
    label, meaning = capacity_meaning(page["allocators"][page["memory_ids"][0]]["capacity_source"])
    assert label == "Reserved by the allocator"
    assert set(rows.data["capacity_is"].tolist()) == {f"{label}: {meaning}"}
    assert {m["capacity_label"] for m in result["memory"]["candidate"]} == {label}
