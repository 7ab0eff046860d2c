"""A plane's stats read in bulk: ``Plane.str_stat_in`` (the events whose text stat is one of some
strings, as testing ``dense_str_ids`` event by event gives them, whether the stat is the
metadata's, a Chrome trace's "cat", or the events' own, a Kineto operator's "Input type") and
the gathering of several stats' columns at once (``kernels.bucket_gather``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof._core import kernels
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


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_bucket_gather_in_ranges_is_the_per_stat_selection(threads: int) -> None:
    """``bucket_gather`` (what ``prefetch_stat_columns`` reads): per wanted stat, its rows'
    owner, kind and value in table order, as selecting them stat by stat gives; on several
    threads (a table of 3 M rows: three ranges) the same."""
    rng = np.random.default_rng(9)
    n = 3 << 20
    stat_id = rng.integers(0, 50, n).astype(np.int32)
    owner = np.sort(rng.integers(0, n // 4, n)).astype(np.int32)
    kind = rng.integers(0, 5, n).astype(np.int8)
    value = rng.integers(-(2**40), 2**40, n)
    want = np.array([3, 17, 49])
    lut = np.full(50, -1, np.int32)
    lut[want] = np.arange(want.shape[0], dtype=np.int32)
    got_owner, got_kind, got_value, bounds = kernels.bucket_gather(stat_id, lut, want.shape[0], owner, kind, value,
                                                                   threads=threads)
    for k, sid in enumerate(want.tolist()):
        sel = stat_id == sid
        part = slice(int(bounds[k]), int(bounds[k + 1]))
        assert np.array_equal(got_owner[part], owner[sel])
        assert np.array_equal(got_kind[part], kind[sel])
        assert np.array_equal(got_value[part], value[sel])
    assert bounds[-1] == np.isin(stat_id, want).sum()
