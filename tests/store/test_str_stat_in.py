"""``Plane.str_stat_in``: the events whose text stat is one of some strings, as testing
``dense_str_ids`` event by event gives them, whether the stat is the metadata's (a Chrome
trace's "cat") or the events' own (a Kineto operator's "Input type")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.readers.chrome_trace import read_chrome_trace

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(("trace", "stat"), [
    ("kineto_op_rules/eager.pt.trace.json", "cat"),
    ("kineto_with_stack/cpu.pt.trace.json", "cat"),
    ("kineto_with_stack/cpu.pt.trace.json", "Input type"),  # recorded with record_shapes
    ("kineto_op_rules/eager.pt.trace.json", "no such stat"),
])
def test_str_stat_in_equals_the_dense_test(trace: str, stat: str) -> None:
    store = read_chrome_trace(str(DATA / trace))
    sid = store.stat_id(stat)
    for plane in store.planes:
        ids = plane.dense_str_ids(sid)
        present = np.unique(ids[ids >= 0])
        for wanted in (present[:1], present[1::2], present, np.zeros(0, np.int64), np.array([-1])):
            assert np.array_equal(plane.str_stat_in(sid, wanted), np.isin(ids, wanted)), (plane.name, wanted)
    if stat != "no such stat":  # the metadata's ("cat") or the events' own ("Input type"): both read
        own = any(p.stat_column(sid).rows.shape[0] for p in store.planes)
        assert own == (stat == "Input type")
