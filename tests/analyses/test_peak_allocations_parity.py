"""``peak_allocations`` against XProf 2.24.2's agent CLI ``get_peak_allocations --limit=0``.

Goldens: ``tests/golden/xprof_agent/<profile>/<host>/get_peak_allocations.json``
(make_xprof_agent_goldens.py). Every module's total allocation (MiB, float: equal to 1e-6) and
the order of the modules; the grouped buffers tbprof lists per module (its ten largest) are
XProf's, label and size. XProf lists the module's buffers from its buffer assignment and, without
one, the buffers live at the heap peak (its fallback); tbprof always the buffers live at the peak,
which is what both show on these profiles (docs/differences.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.hlo import peak_allocations
from tbprof.analyses.table import Table
from tbprof.readers.xplane import read_xspace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "xprof_agent"
CASES = sorted((p.parent.parent.name, p.parent.name) for p in GOLDEN.glob("*/*/get_peak_allocations.json"))


def _rows(table: Table) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def test_goldens_cover_gpu_and_tpu() -> None:
    assert {name for name, _ in CASES} == {"jax_mlp", "jax_2hosts", "tpu_inference"}


@pytest.mark.parametrize(("profile", "host"), CASES)
def test_modules_and_buffers_equal_xprof(profile: str, host: str, sample_profiles: Path) -> None:
    want = json.loads((GOLDEN / profile / host / "get_peak_allocations.json").read_text())
    tool = peak_allocations.TOOLS[0]
    got = tool.compute([read_xspace(next((sample_profiles / profile).rglob(f"{host}.xplane.pb")))],
                       tool.parse_options({}))
    modules = _rows(got["tables"]["modules"])
    assert got["module_count"] == want["summary"]["total_modules"] == len(want["modules"])
    want_total = {m["module_name"]: m["total_hbm_mib"] for m in want["modules"]}
    assert {m["module"] for m in modules} == set(want_total)
    for m in modules:
        assert m["total_allocation_mib"] == pytest.approx(want_total[str(m["module"])], abs=1e-6)
    totals = [m["total_allocation_mib"] for m in modules]
    assert totals == sorted(totals, reverse=True)
    buffers = _rows(got["tables"]["buffers"])
    for w in want["modules"]:
        xprof = {b["instruction"]: b["size_mib"] for b in w["top_buffers"]}
        mine = [b for b in buffers if b["module"] == w["module_name"]]
        assert mine, w["module_name"]
        for b in mine:
            assert b["buffer"] in xprof, (w["module_name"], b["buffer"])
            assert b["size_mib"] == pytest.approx(xprof[str(b["buffer"])], abs=1e-6)
