"""The roofline's program point as XProf 2.24.2 builds it (GenerateRooflineModelProgramRecord):
FLOPs and bytes of the innermost ops only - an op of a category that may hold inner ops (call,
conditional, while, megacore fusion) adds nothing, its inner ops being counted already - over the
whole device time; without infeed/outfeed, every category containing either word leaves out
its ops and their time. None of our real profiles runs such an op on a device, so these tests
relabel one op of jax_mlp's real op table and derive the program point from the table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tbprof.analyses.hlo import roofline_model
from tbprof.analyses.hlo.hlo_stats import op_rates
from tbprof.readers.xplane import read_xspace
from tests.conftest import xplane_of


def _program(stores: list, rates, include: bool) -> dict:
    table = roofline_model.roofline_table(stores, rates, (include,))
    names = [c.name for c in table.columns]
    return dict(zip(names, next(iter(table.rows())), strict=True))


@pytest.mark.parametrize("category", ["while", "call", "conditional", "megacore fusion"])
def test_ops_holding_inner_ops_add_nothing_to_the_program(profiles_root: Path, category: str) -> None:
    stores = [read_xspace(xplane_of(profiles_root, "jax_mlp"))]
    rates = op_rates(stores)
    db = rates.db
    top = int(rates.order[np.argmax(db.flops[rates.order])])  # the op with the most FLOPs
    assert db.flops[top] > 0
    types = db.type.copy()
    types[top] = category
    relabelled = replace(rates, db=replace(db, type=types))
    got = _program(stores, relabelled, include=True)
    # Derivation: every other op's FLOPs over the whole device time (the op's time stays in).
    others = np.setdiff1d(rates.order, [top])
    time_s = float(db.total_time_ps) / 1e12
    assert got["measured_flop_rate"] == pytest.approx(db.flops[others].sum() / time_s / 1e9, rel=1e-12)
    assert got["total_time"] == pytest.approx(float(db.total_time_ps) / 1e6, rel=1e-12)
    before = _program(stores, rates, include=True)
    assert got["measured_flop_rate"] < before["measured_flop_rate"]


def test_infeed_and_outfeed_are_matched_inside_a_category(profiles_root: Path) -> None:
    stores = [read_xspace(xplane_of(profiles_root, "jax_mlp"))]
    rates = op_rates(stores)
    db = rates.db
    op = int(rates.order[0])
    types = db.type.copy()
    types[op] = "host infeed"
    relabelled = replace(rates, db=replace(db, type=types))
    got = _program(stores, relabelled, include=False)
    others = np.setdiff1d(rates.order, [op])
    time_ps = float(db.total_time_ps) - float(db.time_ps[op])
    assert got["total_time"] == pytest.approx(time_ps / 1e6, rel=1e-12)
    assert got["measured_flop_rate"] == pytest.approx(db.flops[others].sum() / (time_ps / 1e12) / 1e9, rel=1e-12)
    table = roofline_model.roofline_table(stores, relabelled, (False,))
    assert db.name[op] not in list(table.data["operation"])


def test_ops_whose_bytes_the_cost_analysis_does_not_know(profiles_root: Path) -> None:
    """jax_2hosts' HLO holds an all-gather and all-reduce-start ops (XLA's GPU rules for their
    bytes are not reproduced, docs/formulas.md) beside ops whose bytes are; an op that is not in
    its program is not flagged, nor one whose events state bytes."""
    store = read_xspace(xplane_of(profiles_root, "jax_2hosts", "worker0"))
    names = ["all-gather.3", "all-reduce-start", "all-reduce.13", "loop_subtract_fusion", "no-such-op", "all-gather.3"]
    programs = [12597, 16572, 16572, 16572, 16572, 12597]
    stated = np.array([0, 0, 0, 0, 0, 1024], dtype=np.float64)
    got = roofline_model.bytes_undetermined([store], names, programs, stated)
    assert got.tolist() == [True, True, False, False, False, False]


@pytest.mark.parametrize("profile", ["jax_mlp", "tpu_inference"])
def test_every_op_of_our_profiles_has_its_bytes(profiles_root: Path, profile: str) -> None:
    # The op points agree with XProf's bytes (test_hlo_tools_parity.py): none is undetermined.
    from tests.helpers import store_of

    out = roofline_model.compute([store_of(profiles_root, profile)], {})
    assert out["undetermined_bytes"] == {"op_count": 0, "time_fraction": 0.0, "ops": []}
