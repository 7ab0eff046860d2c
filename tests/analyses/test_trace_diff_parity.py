"""HTA's op-level trace diff (``analyses/gpu/trace_diff.py``) against HTA 0.5.0's
``TraceDiff.compare_traces`` / ``ops_diff``.

Goldens: ``trace_diff`` of ``tests/golden/hta/<profile>.json`` (make_hta_goldens.py; re-run by
``test_goldens_are_current``). Counts must be equal; totals within 1 us per name: HTA rounds
each event's float ``ts`` and ``ts + dur`` to whole microseconds in float64, tbprof in integer
picoseconds, and one event of torch_cnn's last step lands on the other side of a microsecond.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import trace_diff
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta"
PROFILES = ("torch_cnn", "torch_ddp")
US_TOL = 1.0


def _first_rank(sample_profiles: Path, profile: str) -> ProfileStore:
    return read_chrome_trace(sorted((sample_profiles / profile).glob("*.pt.trace.json"))[0])


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def _check(base: trace_diff.OpSummary, cand: trace_diff.OpSummary, want: list[dict[str, Any]]) -> None:
    table, summary = trace_diff.diff(base, cand)
    got = {r["name"]: r for r in _rows(table)}
    assert sorted(got) == sorted(w["name"] for w in want)
    for w in want:
        g = got[w["name"]]
        assert g["baseline_count"] == w["control_counts"] and g["candidate_count"] == w["test_counts"], w["name"]
        assert g["diff_count"] == w["diff_counts"]
        assert g["baseline_total_us"] == pytest.approx(w["control_total_duration"], abs=US_TOL)
        assert g["candidate_total_us"] == pytest.approx(w["test_total_duration"], abs=US_TOL)
        assert g["diff_duration_us"] == pytest.approx(w["diff_duration"], abs=2 * US_TOL)
        # HTA's ops_diff categories, from its counts (same rules as its ops_diff()).
        c, t = w["control_counts"], w["test_counts"]
        want_change = ("added" if c == 0 else "deleted" if t == 0 else
                       "increased" if t > c else "decreased" if t < c else "unchanged")
        assert g["change"] == want_change
    assert sum(summary.values()) == len(want)


@pytest.mark.parametrize("profile", PROFILES)
def test_iterations_of_one_run(sample_profiles: Path, profile: str) -> None:
    golden = json.loads((GOLDEN / f"{profile}.json").read_text())["trace_diff"]["first_vs_second_iteration"]
    store = _first_rank(sample_profiles, profile)
    first, second = golden["iterations"]
    base = trace_diff.op_summary(store, first)
    cand = trace_diff.op_summary(store, second)
    assert base.iteration == first and cand.iteration == second
    _check(base, cand, golden["rows"])


def test_two_runs(sample_profiles: Path) -> None:
    """torch_ddp (rank 0) against torch_cnn: HTA's defaults, the first iteration of each."""
    golden = json.loads((GOLDEN / "torch_ddp.json").read_text())["trace_diff"]["vs_torch_cnn"]
    base = trace_diff.op_summary(_first_rank(sample_profiles, "torch_ddp"))
    cand = trace_diff.op_summary(_first_rank(sample_profiles, "torch_cnn"))
    _check(base, cand, golden["rows"])
    _, summary = trace_diff.diff(base, cand)
    assert summary["added"] > 0 and summary["deleted"] > 0  # DDP's collectives exist only in the baseline


def test_no_iterations_no_rows(sample_profiles: Path) -> None:
    """A TF1 timeline has no ProfilerStep: nothing to diff (and no error)."""
    store = read_chrome_trace(sorted((sample_profiles / "tf1_timeline").glob("timeline-*.json"))[0])
    summary = trace_diff.op_summary(store)
    assert summary.iteration is None and summary.counts == {}
