"""Headlines that said something false or unexplained (#29 §3), on the sample profiles."""

from __future__ import annotations

from pathlib import Path

from tbprof.analyses.input import input_pipeline, tf_data
from tbprof.analyses.overview import overview
from tbprof.analyses.steps import breakdown as sb
from tbprof.readers.xplane import read_xspace
from tests.conftest import xplane_of


def test_tf_data_listed_only_for_runs_with_iterators(profiles_root: Path) -> None:
    jax = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    keras = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    # The tool's own diagnosis on jax_mlp: no pipeline at all.
    assert tf_data.compute([jax], {})["pipelines"] == []
    assert not tf_data.TOOLS[0].available(jax)
    assert tf_data.compute([keras], {})["pipelines"] and tf_data.TOOLS[0].available(keras)


def test_tf_data_hint_does_not_contradict_the_verdict(profiles_root: Path) -> None:
    """Keras: half the root's GetNext calls are slow, but the steps are not input-bound."""
    keras = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    verdict = input_pipeline.compute([keras], {})["verdict"]
    pipes = tf_data.compute([keras], {})["pipelines"]
    assert verdict["input_bound"] == "no" and any(p["slow_call_percent"] >= 50 for p in pipes)
    for pipe in pipes:
        assert "waits for input" not in pipe["input_bound_hint"]


def test_possibly_input_bound_names_its_reason(profiles_root: Path) -> None:
    """jax_2hosts is "possibly input-bound" with ~0 % input: the reason is the all-others share."""
    stores = [read_xspace(xplane_of(profiles_root, "jax_2hosts", h)) for h in ("worker0", "worker1")]
    out = overview.compute(stores, {})
    rec, pct = out["recommendation"], out["performance_summary"]["percent_of_step_time"]
    assert rec["input_bound"] == "potential"
    input_pct, all_others_pct = pct["input_percent"], pct["all_others_percent"]
    assert input_pct is not None and all_others_pct is not None
    assert input_pct < sb.INPUT_MODERATE_PERCENT <= all_others_pct
    assert rec["input_bound_reason"].startswith(f"'all others' {pct['all_others_percent']:.1f}% of step time")
    assert input_pipeline.compute(stores, {})["verdict"]["input_bound_reason"] == rec["input_bound_reason"]
