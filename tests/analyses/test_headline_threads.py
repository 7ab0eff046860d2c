"""The headline of a large Chrome trace computes its device shares on a second thread beside its
steps (analyses/overview/headline.py ``_side_by_side``), and its steps type the device and host
events on threads beside the linking (steps/assignment.py ``_Aside``): the same headline and
steps as in one thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.overview import headline as headline_mod
from tbprof.analyses.steps import assignment
from tbprof.analyses.steps.table import step_table
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
    monkeypatch.setenv("TBPROF_THREADS", "3")  # the operators' times beside the steps too
    assert headline_mod.headline([read_chrome_trace(str(p)) for p in RANKS]) == one_thread


@pytest.mark.parametrize("path", [*RANKS, *sorted((REPO / "demo_logs" / "torch_cnn").glob("*.pt.trace.json"))],
                         ids=lambda p: p.parent.name + "/" + p.name[:5])
def test_steps_typed_aside_give_the_one_thread_steps(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """The device and host events typed on threads beside the steps' linking
    (steps/assignment.py ``_Aside``): the same headline and step table as on one thread."""
    monkeypatch.setenv("TBPROF_THREADS", "1")
    one_store = read_chrome_trace(str(path))
    one = (headline_mod.headline([one_store]), step_table([one_store]))
    pools: list[int] = []
    real = assignment.ThreadPoolExecutor

    def counting(*args: Any, **kwargs: Any) -> Any:
        pools.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(assignment, "ThreadPoolExecutor", counting)
    monkeypatch.setattr(assignment, "ASIDE_MIN_EVENTS", 0)  # the demo traces are small
    monkeypatch.setenv("TBPROF_THREADS", "3")
    store = read_chrome_trace(str(path))
    aside = (headline_mod.headline([store]), step_table([store]))
    assert pools  # the typing really ran beside the linking
    assert aside[0] == one[0]
    assert aside[1].n_steps == one[1].n_steps > 0
    assert aside[1].names == one[1].names
    assert np.array_equal(aside[1].step_time_ms, one[1].step_time_ms)
    for category, per_step in one[1].category_ms.items():
        assert np.array_equal(aside[1].category_ms[category], per_step), category
    for mine, theirs in zip(aside[1].per_host, one[1].per_host, strict=True):
        for pi in range(len(store.planes)):
            assert np.array_equal(mine.event_step(pi), theirs.event_step(pi))
