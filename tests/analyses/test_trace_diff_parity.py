"""HTA's op-level trace diff (``analyses/gpu/trace_diff.py``) against HTA 0.5.0's
``TraceDiff.compare_traces`` / ``ops_diff``.

Goldens: ``trace_diff`` of ``tests/golden/hta/<profile>.json`` (make_hta_goldens.py; re-run by
``test_goldens_are_current``). Counts must be equal; totals within 1 us per name: HTA rounds
each event's float ``ts`` and ``ts + dur`` to whole microseconds in float64, tbprof in integer
picoseconds, and one event of torch_cnn's last step lands on the other side of a microsecond.
An event inside one microsecond, which the rounding makes end before it starts, is -1 us in
HTA's totals and 0 in tbprof's (docs/differences.md): a name's total is then HTA's plus at most
1 us per such event of that name in the trace (counted here from the decimal text).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import trace_diff
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta"
PROFILES = ("torch_cnn", "torch_ddp")
US_TOL = 1.0


def _first_path(sample_profiles: Path, profile: str) -> Path:
    return sorted((sample_profiles / profile).glob("*.pt.trace.json"))[0]


def _first_rank(sample_profiles: Path, profile: str) -> ProfileStore:
    return read_chrome_trace(_first_path(sample_profiles, profile))


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def _rounded_to_nothing(*paths: Path) -> Counter[str]:
    """Per name: the complete events of these traces that end before they start once rounded
    inward to whole microseconds (start up, end down) from their decimal ``ts``/``dur``."""
    out: Counter[str] = Counter()
    for path in paths:
        for e in json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]:
            if e.get("ph") == "X" and "dur" in e:
                ts, dur = Decimal(e["ts"]), Decimal(e["dur"])
                if math.floor(ts + dur) < math.ceil(ts):
                    out[str(e.get("name"))] += 1
    return out


def _total(got: float, hta: float, negative: int) -> None:
    assert got >= 0
    assert hta - US_TOL <= got <= hta + negative + US_TOL


def _check(base: trace_diff.OpSummary, cand: trace_diff.OpSummary, want: list[dict[str, Any]],
           negative: Counter[str]) -> None:
    table, summary = trace_diff.diff(base, cand)
    got = {r["name"]: r for r in _rows(table)}
    assert sorted(got) == sorted(w["name"] for w in want)
    for w in want:
        g = got[w["name"]]
        assert g["baseline_count"] == w["control_counts"] and g["candidate_count"] == w["test_counts"], w["name"]
        assert g["diff_count"] == w["diff_counts"]
        n_neg = negative[w["name"]]
        _total(g["baseline_total_us"], w["control_total_duration"], n_neg)
        _total(g["candidate_total_us"], w["test_total_duration"], n_neg)
        assert g["diff_duration_us"] == pytest.approx(w["diff_duration"], abs=2 * US_TOL + n_neg)
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
    _check(base, cand, golden["rows"], _rounded_to_nothing(_first_path(sample_profiles, profile)))


def test_two_runs(sample_profiles: Path) -> None:
    """torch_ddp (rank 0) against torch_cnn: HTA's defaults, the first iteration of each."""
    golden = json.loads((GOLDEN / "torch_ddp.json").read_text())["trace_diff"]["vs_torch_cnn"]
    base = trace_diff.op_summary(_first_rank(sample_profiles, "torch_ddp"))
    cand = trace_diff.op_summary(_first_rank(sample_profiles, "torch_cnn"))
    _check(base, cand, golden["rows"], _rounded_to_nothing(_first_path(sample_profiles, "torch_ddp"),
                                                          _first_path(sample_profiles, "torch_cnn")))
    _, summary = trace_diff.diff(base, cand)
    assert summary["added"] > 0 and summary["deleted"] > 0  # DDP's collectives exist only in the baseline


def test_no_iterations_no_rows(sample_profiles: Path) -> None:
    """A TF1 timeline has no ProfilerStep: nothing to diff (and no error)."""
    store = read_chrome_trace(sorted((sample_profiles / "tf1_timeline").glob("timeline-*.json"))[0])
    summary = trace_diff.op_summary(store)
    assert summary.iteration is None and summary.counts == {}
