"""``compare`` of two PyTorch runs carries HTA's trace diff (``tables["trace_diff"]``): the
first rank's first iteration of each side, as HTA 0.5.0's ``TraceDiff.compare_traces`` with its
defaults (golden ``trace_diff.vs_torch_cnn`` of tests/golden/hta/torch_ddp.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tbprof.service.comparisons import SideSpec, compare_pair
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta" / "torch_ddp.json"


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Profiles:
    root = tmp_path_factory.mktemp("cmp_td")
    for name in ("torch_ddp", "torch_cnn", "tf1_timeline"):
        shutil.copytree(sample_profiles / name, root / "logs" / name)
    return Profiles(root / "logs", cache_dir=root / "cache")


def test_two_pytorch_runs(profiles: Profiles) -> None:
    # All ranks of the baseline: HTA's default is still the first rank (rank 0).
    result = compare_pair(profiles, SideSpec("torch_ddp", ALL_HOSTS), SideSpec("torch_cnn"))
    table = result["tables"]["trace_diff"]
    names = [c.name for c in table.columns]
    got = {r[names.index("name")]: r for r in table.rows()}
    want = json.loads(GOLDEN.read_text())["trace_diff"]["vs_torch_cnn"]["rows"]
    assert sorted(got) == sorted(w["name"] for w in want)
    for w in want:
        row = got[w["name"]]
        assert (row[names.index("baseline_count")], row[names.index("candidate_count")]) == \
            (w["control_counts"], w["test_counts"])
    summary = result["trace_diff"]
    assert summary is not None
    changes = summary["changes"]
    assert sum(changes.values()) == len(want)
    # HTA's default iteration: each side's first (the goldens' first_vs_second_iteration lists them).
    first = {p: json.loads((GOLDEN.parent / f"{p}.json").read_text())["trace_diff"]["first_vs_second_iteration"]
             ["iterations"][0] for p in ("torch_ddp", "torch_cnn")}
    assert summary["baseline_iteration"] == first["torch_ddp"]
    assert summary["candidate_iteration"] == first["torch_cnn"]


def test_pytorch_against_a_timeline(profiles: Profiles) -> None:
    """A TF1 timeline side is not a PyTorch run: no trace diff, nothing claimed about it."""
    result = compare_pair(profiles, SideSpec("torch_cnn"), SideSpec("tf1_timeline"))
    assert "trace_diff" not in result["tables"] and result["trace_diff"] is None
