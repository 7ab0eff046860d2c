"""One byte budget for every memo (issue #15 item 10): bounds, single flight, no leftovers."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import numpy as np
import pytest

from tbprof.analyses.compare.stats import _pairwise, kth_difference, shift
from tbprof.service.profiles import Profiles
from tbprof.store.memo import Memo, MemoryBudget, estimate_bytes


def test_estimates_follow_the_payload() -> None:
    arr = np.zeros(1000, np.int64)  # 8000 bytes of data
    assert 8000 <= estimate_bytes(arr) < 8000 + 200
    assert 10_000 <= estimate_bytes(b"x" * 10_000) < 10_100
    # A result-like dict: two arrays and some text, counted once each even if shared.
    result = {"a": arr, "b": arr, "names": [f"op{i}" for i in range(100)]}
    assert 8000 + 100 * 49 < estimate_bytes(result) < 8000 + 100 * 49 + 2000


def test_budget_evicts_least_recently_used_by_bytes() -> None:
    budget = MemoryBudget(max_bytes=10_000)
    memo = Memo(budget)
    for i in range(5):
        memo.get(i, lambda: b"x" * 3000)  # ~3 KB each: three fit in 10 KB
    assert budget.used_bytes <= 10_000 and len(budget) == 3
    assert not memo.contains(0) and memo.contains(4)
    memo.get(2, lambda: pytest.fail("2 was cached"))  # a hit refreshes 2 ...
    memo.get(5, lambda: b"x" * 3000)
    assert memo.contains(2) and not memo.contains(3)  # ... so 3 is the oldest now


def test_a_transient_memo_sizes_only_what_its_caller_sizes() -> None:
    """``estimate=False`` (ProfileStore.skip_memo_sizes: a worker's store, dropped after its
    partial): no walk over the values; a size the caller gives still counts."""
    budget = MemoryBudget(max_bytes=10_000)
    memo = Memo(budget, estimate=False)
    memo.get("a", lambda: b"x" * 3000)
    assert budget.used_bytes == 0 and memo.contains("a")
    memo.get("b", lambda: b"x" * 3000, len)
    assert budget.used_bytes == 3000


def test_many_memos_share_one_budget_and_leave_nothing_behind() -> None:
    budget = MemoryBudget(max_bytes=50_000)
    memos = [Memo(budget) for _ in range(10)]
    for m in memos:
        for k in range(20):
            m.get(k, lambda: np.zeros(250, np.int64))  # 2 KB each, 400 KB asked in all
    assert budget.used_bytes <= 50_000
    used = budget.used_bytes
    del m, memos
    gc.collect()
    assert budget.used_bytes == 0 and used > 0  # collected memos drop their values
    # Single flight left no per-key locks or futures behind (they used to grow per key).
    memo = Memo(budget)
    for k in range(1000):
        memo.get(k, lambda: 1)
    assert memo._inflight == {}


def test_single_flight_and_failures_are_not_cached() -> None:
    memo = Memo(MemoryBudget(1 << 20))
    gate = threading.Event()
    calls = []

    def slow() -> int:
        calls.append(1)
        gate.wait(10)
        return 42

    out: list[int] = []
    threads = [threading.Thread(target=lambda: out.append(memo.get("k", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(30)
    assert out == [42] * 8 and len(calls) == 1

    def boom() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError):
        memo.get("bad", boom)
    assert memo.get("bad", lambda: 7) == 7  # the failure was not remembered


def test_tool_option_variants_stay_in_the_budget(profiles_root: Path, tmp_path: Path) -> None:
    """50 option variants of one tool used to add 34 MB to a count-bounded memo."""
    profiles = Profiles(profiles_root, cache_dir=tmp_path / "cache")
    budget = MemoryBudget(max_bytes=3 << 20)
    profiles._results = Memo(budget)
    run = next(r for r in profiles.index.runs().values() if r.name.startswith("jax_mlp"))
    tool = profiles.tool("op_profile")
    for i in range(50):
        profiles.compute(run, list(run.hosts), tool, {"min_self_time_us": str(i / 1000)})
    assert budget.used_bytes <= 3 << 20
    assert 0 < len(budget) < 50


@pytest.mark.parametrize(("n", "m"), [(1, 1), (3, 7), (40, 55), (200, 300)])
def test_kth_difference_equals_the_sorted_matrix(n: int, m: int) -> None:
    rng = np.random.default_rng(n * 1000 + m)
    a = np.sort(rng.normal(10, 2, n).round(3))  # rounded: ties, as step times have
    b = np.sort(rng.normal(11, 2, m).round(3))
    d = _pairwise(a, b)
    for k in sorted(k for k in {1, 2, n * m // 2, n * m // 2 + 1, n * m} if 1 <= k <= n * m):
        assert kth_difference(a, b, k) == pytest.approx(float(d[k - 1]), abs=1e-12)


def test_large_samples_need_no_matrix() -> None:
    """30 k steps a side: the n x m matrix would be 7 GB; the shift is still the HL shift.
    Baseline uniform on [0, 1), candidate the same plus 0.25: the true shift is 0.25."""
    rng = np.random.default_rng(15)
    a = rng.random(30_000)
    b = rng.random(30_000) + 0.25
    s = shift(a, b)
    assert s.estimate == pytest.approx(0.25, abs=0.01)
    assert s.low is not None and s.high is not None and s.low < s.estimate < s.high
    assert s.method == "hodges_lehmann_normal"


def test_evicting_a_value_that_owns_a_memo_does_not_deadlock() -> None:
    """A store is a value of the stores memo and owns a Memo of the same budget: evicting (or
    dropping) it runs that Memo's finalizer inside the budget's own calls."""
    budget = MemoryBudget(max_bytes=20_000)
    outer = Memo(budget)

    class Store:
        def __init__(self) -> None:
            self.memo = Memo(budget)
            self.memo.get("derived", lambda: b"d" * 1000)

    def churn() -> None:
        for i in range(50):
            outer.get(("store", i), Store)  # each new store evicts older ones
        outer.clear()

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "deadlock in MemoryBudget"
    gc.collect()
    assert budget.used_bytes == 0


def test_a_worker_store_keeps_its_values_to_itself(profiles_root: Path) -> None:
    """``ProfileStore.keep_memo_private`` (a worker's store, dropped after its partial): the
    values are computed once and held by the store, none in the shared budget; a store whose
    memo was used already keeps it, with sizes skipped."""
    from tbprof.readers.xplane import read_xspace
    from tbprof.store.memo import PrivateMemo
    from tests.conftest import xplane_of

    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    store.keep_memo_private()
    assert isinstance(store._memo, PrivateMemo)
    calls: list[str] = []

    def compute(name: str) -> list[str]:
        calls.append(name)
        return [name]

    first = store.memo("k", lambda: compute("first"))
    assert store.memo("k", lambda: compute("second")) is first and calls == ["first"]

    used = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    budget = MemoryBudget(max_bytes=1 << 30)
    used._memo = Memo(budget)
    used.memo("before", lambda: b"x" * 100)
    used.keep_memo_private()
    assert isinstance(used._memo, Memo) and not used._memo.estimate
    assert used.memo("before", lambda: pytest.fail("kept")) == b"x" * 100
