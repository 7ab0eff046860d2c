"""The headline of a large Chrome trace computes its device shares on a second thread beside its
steps (analyses/overview/headline.py ``_side_by_side``): the same headline as in one thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.overview import headline as headline_mod
from tbprof.readers.chrome_trace import read_chrome_trace

REPO = Path(__file__).resolve().parents[2]
RANKS = sorted((REPO / "demo_logs" / "torch_ddp").glob("rank*.pt.trace.json"))


def test_side_by_side_gives_the_one_thread_headline(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(RANKS) == 2
    one_thread = headline_mod.headline([read_chrome_trace(str(p)) for p in RANKS])
    stores = [read_chrome_trace(str(p)) for p in RANKS]  # fresh: nothing memoised
    assert not headline_mod._side_by_side(stores)  # 2 small ranks: below the threshold
    monkeypatch.setattr(headline_mod, "SIDE_BY_SIDE_EVENTS", 0)
    monkeypatch.setenv("TBPROF_THREADS", "1")
    assert not headline_mod._side_by_side(stores)  # one thread asked for
    monkeypatch.setenv("TBPROF_THREADS", "2")
    assert headline_mod._side_by_side(stores)
    side_by_side = headline_mod.headline(stores)
    assert side_by_side == one_thread
    assert "device_idle_percent" in side_by_side and "communication_percent" in side_by_side
