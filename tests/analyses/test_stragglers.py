"""``stragglers``: HTA 0.5.0's straggler analysis, and torch-tb-profiler's collective waiting as
the evidence where HTA's metric has none.

HTA (golden ``stragglers`` of tests/golden/hta/torch_ddp.json, run on a copy whose NCCL kernels
carry the ``ncclKernel`` names HTA looks for) raises "Encountered all NA values" on torch_ddp: rank
1 arrives last at every all-reduce, so its all-reduce kernels are short (~17 us, under 1 % of an
iteration) and no collective kernel is long on both ranks. tbprof's HTA metric reports none too,
with a message; the rank table then names rank 1 from the collectives' synchronizing time, whose
numbers are checked against torch-tb-profiler in test_collectives_parity.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.gpu import stragglers
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def _ddp(sample_profiles: Path) -> list[ProfileStore]:
    return [read_chrome_trace(p) for p in sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))]


def test_hta_finds_none_and_the_collectives_name_rank_1(sample_profiles: Path) -> None:
    hta = json.loads((GOLDEN / "hta" / "torch_ddp.json").read_text())["stragglers"]
    result = stragglers.compute(_ddp(sample_profiles), {"num_candidates": 1})
    assert all("error" in v for v in hta.values())  # HTA has no answer on this profile
    assert result["stragglers"] == [] and result["message"]
    # torch-tb-profiler's synchronizing time per rank (its goldens: latency - transfer, all collectives).
    tbp = json.loads((GOLDEN / "tb_profiler" / "torch_ddp.json").read_text())["distributed"]["comm_ops"]
    waits = {}
    for file_name, table in tbp.items():
        col = {c: i for i, c in enumerate(table["columns"])}
        waits[file_name.removesuffix(".pt.trace.json")] = sum(
            r[col["Total Latency (us)"]] - r[col["Data Transfer Time (us)"]] for r in table["rows"])
    t = result["tables"]["ranks"]
    rows = {h: (r, w, s) for r, h, w, s in zip(t.data["rank"].tolist(), t.data["host"].tolist(),
                                              t.data["waited_for"].tolist(), t.data["synchronizing_us"].tolist(),
                                              strict=True)}
    for host, wait in waits.items():
        assert rows[host][2] == pytest.approx(wait, abs=0.05)
    least = min(waits, key=lambda h: waits[h])
    assert rows[least][1] is True and result["waited_for"] == rows[least][0] == 1


def test_metric_path_by_hand(sample_profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTA's 1 % duration floor lowered to 0, every NCCL kernel is a candidate; derived here with
    a plain loop: per iteration, the rank whose last all-reduce kernel starts later is flagged."""
    monkeypatch.setattr(stragglers, "MIN_NORMALIZED_DURATION", 0.0)
    ranked = list(enumerate(_ddp(sample_profiles)))
    found = stragglers.analyse(ranked, 1)
    assert found is not None and found["metric_kernel"].startswith("ncclDevKernel")
    by_iteration: dict[int, dict[int, float]] = {}
    for rank, it, norm_start, *_ in found["evidence"]:
        by_iteration.setdefault(it, {})[rank] = norm_start
    for it, starts in by_iteration.items():
        latest = max(starts, key=lambda r: starts[r])
        assert found["flags"][(latest, it)] and sum(found["flags"][(r, it)] for r in starts) == 1
    counts = {r: sum(1 for (rr, _), f in found["flags"].items() if rr == r and f) for r, _ in ranked}
    assert found["stragglers"] == [max(counts, key=lambda r: (counts[r], -r))]


def test_one_rank_has_no_stragglers(sample_profiles: Path) -> None:
    store = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    result = stragglers.compute([store], {})
    assert result["stragglers"] == [] and result["waited_for"] is None
    assert not stragglers.has_steps_and_collectives(store)
