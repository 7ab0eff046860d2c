"""Device compute precision from HLO element types (#29 §3): XProf 2.24.2 reports 0 % 16-bit on
the JAX samples (no TensorFlow tensor shapes, bf16 kernels not named "fp16") although their HLO
computes in bf16; tbprof reads the HLO ops' element types and says "unknown" where nothing tells."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tbprof.analyses.hlo import hlo_stats
from tbprof.analyses.ops.headline import COLLECTIVE_CATEGORIES
from tbprof.analyses.overview import overview
from tbprof.readers.xplane import read_xspace
from tests.conftest import xplane_of
from tests.helpers import golden

# The first float type after "=" in an HLO expression ("%dot.3 = bf16[8,4]{1,0} dot(...)",
# tuples "(bf16[...], s32[])").
_FIRST_FLOAT = re.compile(r"=\s*\(?\s*(?:[a-z0-9]+\[[^\]]*\](?:\{[^}]*\})?,\s*)*?(bf16|f16|f32|f64)\[")


@pytest.mark.parametrize("sel", ("jax_mlp", "jax_2hosts"))
def test_precision_from_hlo_element_types(profiles_root: Path, sel: str) -> None:
    assert golden(sel, "overview_page")["analysis"]["device_compute_16bit_percent"] == 0.0  # XProf
    stores = ([read_xspace(xplane_of(profiles_root, "jax_2hosts", h)) for h in ("worker0", "worker1")]
              if sel == "jax_2hosts" else [read_xspace(xplane_of(profiles_root, sel))])
    # Expected: hlo_stats' rows (every HLO op with its printed expression and self time), by the
    # first float type of the expression; collectives and data movement are not compute.
    table = hlo_stats.compute(stores, {})["tables"]["hlo_ops"]
    low = high = 0.0
    for cat, expr, self_time in zip(table.data["category"], table.data["hlo_op_expression"],
                                    table.data["total_self_time"], strict=True):
        if cat in COLLECTIVE_CATEGORIES or cat == "data formatting":
            continue
        m = _FIRST_FLOAT.search(str(expr))
        if m is None:
            continue
        if m.group(1) in ("bf16", "f16"):
            low += float(self_time)
        else:
            high += float(self_time)
    assert low > 0  # both samples run bf16 HLO
    perf = overview.compute(stores, {})["performance_summary"]
    assert perf["device_compute_precision_source"] == "hlo_element_types"
    assert perf["device_compute_16bit_percent"] == pytest.approx(100 * low / (low + high), abs=0.05)


def test_unknown_when_nothing_tells(profiles_root: Path) -> None:
    """Keras on CPU: no device, no HLO, no tensor shapes: unknown, and no bf16 advice."""
    store = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    out = overview.compute([store], {})
    assert out["performance_summary"]["device_compute_precision_source"] == "unknown"
    assert out["performance_summary"]["device_compute_16bit_percent"] is None
    assert out["recommendation"]["precision_statement"] == ""
