"""The comparison's declared type (analyses/results/compare.py ``CompareResult``, the return type
of ``report.compare`` that mypy checks the producer against, and the TypeScript the compare page
reads) holds for real comparisons of the sample profiles: as ``compare`` returns it and as JSON,
on every branch (steps or none, breakdown, memory, HTA's trace diff, a pod, a step selection)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, get_args

import pytest

from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.results.compare import CompareResult, Direction, StepChange
from tbprof.service.comparisons import SideSpec, compare_pair
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS
from tests.conftest import SAMPLE_PROFILES
from tests.helpers import conforms

# (baseline, candidate): run-name prefixes, host (None: the default one) and step selection.
PAIRS: list[tuple[tuple[str, str | None, str], tuple[str, str | None, str]]] = [
    (("keras_cnn", None, ""), ("custom_loop", None, "")),  # faster, with breakdown and memory
    (("jax_mlp", None, ""), ("jax_mlp", None, "")),  # identical
    (("keras_cnn", None, ""), ("jax_mlp", None, "")),  # few ops in common: a warning
    (("keras_cnn", None, "5:7"), ("keras_cnn", None, "8:")),  # step selections
    (("torch_ddp", ALL_HOSTS, ""), ("torch_cnn", None, "")),  # HTA's trace diff
    (("tf1_timeline", None, ""), ("torch_cnn", None, "")),  # a TF1 timeline against PyTorch
    (("jax_2hosts", ALL_HOSTS, ""), ("jax_2hosts", "worker1", "")),  # a pod's hosts
    (("tpu_inference", None, ""), ("jax_mlp", None, "")),  # no steps on one side
]


def _run(profiles: Profiles, prefix: str) -> str:
    return next(name for name in profiles.index.runs() if name.split("/")[0] == prefix)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, CompareResult]]:
    profiles = Profiles(Path(SAMPLE_PROFILES), cache_dir=tmp_path_factory.mktemp("cache"))
    out = []
    for (b, bh, bsel), (c, ch, csel) in PAIRS:
        base = SideSpec(_run(profiles, b), bh, bsel)
        cand = SideSpec(_run(profiles, c), ch, csel)
        out.append((f"{base} vs {cand}", compare_pair(profiles, base, cand)))
    return out


def test_every_comparison_has_its_type(results: list[tuple[str, CompareResult]]) -> None:
    for pair, result in results:
        assert conforms(result, CompareResult, wire=False) == [], pair
        assert conforms(json.loads(to_json_bytes(result)), CompareResult) == [], pair


def test_the_pairs_reach_every_branch_of_the_type(results: list[tuple[str, CompareResult]]) -> None:
    """The pairs exercise each optional part, so its type is checked on a real value."""
    answers = [r for _, r in results]
    assert any(r["step_time"] is None for r in answers) and any(r["step_time"] is not None for r in answers)
    assert any(r["trace_diff"] is not None for r in answers)
    assert any("baseline_input_bound" in r["breakdown"] for r in answers)
    assert any("baseline" in r["memory"] for r in answers)
    assert any(r["warnings"] for r in answers) and any(r["identical"] for r in answers)
    assert any(r["baseline"]["steps"] for r in answers)
    assert {r["verdict"]["kind"] for r in answers} >= {"faster", "no change", "unknown"}


def test_a_drifted_comparison_fails_the_check(results: list[tuple[str, CompareResult]]) -> None:
    """The check is not vacuous: a renamed key and a retyped value of a real answer are caught."""
    result = next(r for _, r in results if r["step_time"] is not None)
    renamed: dict[str, Any] = copy.deepcopy(dict(result))
    renamed["verdict"]["headline"] = renamed["verdict"].pop("summary")
    assert conforms(renamed, CompareResult, wire=False) == ["$.verdict.summary: missing"]
    retyped = json.loads(to_json_bytes(result))
    retyped["step_time"]["change"]["direction"] = "quicker"
    (message,) = conforms(retyped, CompareResult)
    assert message.startswith("$.step_time: ")  # a StepTimeChange | None: fits neither
    assert conforms(retyped["step_time"]["change"], StepChange) == [
        f"$.direction: 'quicker' is not one of {get_args(Direction)}"]
